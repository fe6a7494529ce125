"""mujoco_contact_node over real DDS (loopback only, leased ROS_DOMAIN_ID), its command line, and the
demo's MuJoCo backend (configuration, simulator command, the vs_mujoco summary numbers)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2
from std_msgs.msg import Bool

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.demo.analysis import Series
from vsf_sensor_ros.demo.demo import build_parser
from vsf_sensor_ros.demo.config import SensorInfo, check_pairing, resolve_config
from vsf_sensor_ros.demo.session import sim_command
from vsf_sensor_ros.demo.summary import vs_mujoco
from vsf_sensor_ros.contact_sources.mujoco_contact_node import MujocoContactNode, main
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
from vsf_sensor_ros.sensor.errors import SettingError
from test.ros.node_helpers import spin_until

ROOT = Path(__file__).resolve().parents[2]
G = 9.81
BODIES = ["punyo", "object", "table"]


@pytest.fixture
def ros(private_ros):
    """A private rclpy context on a leased domain (see the root conftest)."""
    return private_ros


def test_node_publishes_mujocos_state_contacts_and_sensors_over_dds(ros):
    ctx, executor, _ = ros
    got = {k: [] for k in ("joints", "contacts", "pose", "pressure", "pad", "load", "done")}
    probe = Node("probe", context=ctx)
    qos = QoSProfile(depth=300, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for key, typ, topic in (("joints", JointState, "joint_states"), ("contacts", PointCloud2, "contacts"),
                            ("pose", PoseStamped, "object/pose"),
                            ("pressure", FluidPressure, "punyo_pressure/measured"),
                            ("pad", WrenchStamped, "punyo_pad/measured"),
                            ("load", WrenchStamped, "object_load/measured")):
        probe.create_subscription(typ, topic, lambda m, k=key: got[k].append(m), qos)
    probe.create_subscription(Bool, "sim_done", lambda m: got["done"].append(m.data), latched)
    # a short press: contact-free tare second, then 0.3 s approach to touching and 0.3 s of press
    sim = MujocoContactNode(context=ctx, parameter_overrides=[
        Parameter("duration_s", value=2.0), Parameter("rate_hz", value=0.0),
        Parameter("trajectory.tare_s", value=1.0), Parameter("trajectory.approach_s", value=0.3),
        Parameter("trajectory.press_s", value=0.3), Parameter("trajectory.hold_s", value=0.4),
        Parameter("trajectory.clearance", value=0.01),
        Parameter("sensors", value=["punyo_pressure", "punyo_pad", "object_load"]),
        Parameter("punyo_pad.noise_std", value=0.0), Parameter("object_load.noise_std", value=0.0),
        Parameter("wait_for_subscribers", value=1), Parameter("start_delay_s", value=0.3)])
    executor.add_node(probe)
    executor.add_node(sim)
    try:
        # every stream complete: the last step's messages of one topic may still be in flight
        streams = ("joints", "contacts", "pose", "pressure", "pad", "load")
        assert spin_until(executor, lambda: True in got["done"] and all(len(got[k]) >= 200 for k in streams),
                          timeout=30.0)
    finally:
        executor.remove_node(sim)
        sim.destroy_node()
        probe.destroy_node()

    # 2 s at sim_dt 0.01: 200 steps, one message of each kind per step, stamped 0.01 .. 2.00 s
    for key in ("joints", "contacts", "pose", "pressure", "pad", "load"):
        assert len(got[key]) == 200, key
    stamps = [m.header.stamp.sec * 10 ** 9 + m.header.stamp.nanosec for m in got["contacts"]]
    assert stamps == [10_000_000 * (k + 1) for k in range(200)]
    assert [m.header.stamp for m in got["joints"]] == [m.header.stamp for m in got["contacts"]]
    assert list(got["joints"][-1].name) == ew.EMBEDDED_JOINTS

    # At rest (step 50, t = 0.5 s, contact-free): only the box on the table, m g on each side.
    rest = pointcloud2_to_contacts(got["contacts"][49], BODIES).contacts
    assert set(rest) == {("object", "table"), ("table", "object")}
    np.testing.assert_allclose(rest[("table", "object")].forces.sum(0).numpy(), [0, 0, -0.3 * G], atol=1e-3)
    pose = got["pose"][49].pose.position
    assert (pose.x, pose.y) == pytest.approx(ew.OBJECT_POSITION[:2], abs=1e-4)
    assert pose.z == pytest.approx(ew.OBJECT_SIZE[2] / 2, abs=1e-3)    # resting: half its height up
    pad_rest = got["pad"][49].wrench.force
    assert (pad_rest.x, pad_rest.y, pad_rest.z) == pytest.approx((0.05, 0.05, 0.05), abs=1e-9)  # offset only

    # Pressed (last step): the bubble pushes the box; MuJoCo's own sensors see the same force.
    last = pointcloud2_to_contacts(got["contacts"][-1], BODIES).contacts
    on_bubble = last[("punyo", "object")].forces.sum(0).numpy()
    np.testing.assert_allclose(last[("object", "punyo")].forces.sum(0).numpy(), -on_bubble)
    assert on_bubble[2] > 1.0                            # the box pushes the bubble up
    table = last[("table", "object")].forces.sum(0).numpy()
    assert table[2] == pytest.approx(-(0.3 * G + on_bubble[2]), rel=0.05)   # weight + press, quasi-static
    pad = got["pad"][-1]
    assert pad.header.frame_id == "punyo_pad_frame"
    # the pad frame z is the outward membrane normal, pointing down: minus the upward force
    assert pad.wrench.force.z - 0.05 == pytest.approx(-on_bubble[2], rel=0.02)
    load = got["load"][-1].wrench.force
    assert np.linalg.norm([load.x, load.y, load.z]) - 0.05 == pytest.approx(on_bubble[2], rel=0.05)


def test_help_prints_usage_and_exits_zero_without_a_ros_participant(default_context_free):
    res = subprocess.run([sys.executable, "-m", "vsf_sensor_ros.contact_sources.mujoco_contact_node",
                          "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: mujoco_contact_node") and "mj_contactForce" in res.stdout
    with pytest.raises(SystemExit) as exc:
        main(["mujoco_contact_node", "-h"])
    assert exc.value.code == 0
    assert not rclpy.ok()                   # the default context was never initialised


def test_main_runs_and_reports_a_configuration_error_with_exit_code_2(ros, default_context_free):
    code = main(["mujoco_contact_node", "--ros-args", "-p", "duration_s:=0.05", "-p", "rate_hz:=0.0",
                 "-p", "start_delay_s:=0.0", "-p", "linger_s:=0.0", "-p", "sensors:=['object_load']"])
    assert code == 0
    assert main(["mujoco_contact_node", "--ros-args", "-p", "sim_dt:=0.01", "-p", "physics_dt:=0.003"]) == 2
    assert main(["mujoco_contact_node", "--ros-args", "-p", "contact_body_names:=[punyo,moon]"]) == 2


def test_bad_parameters_are_named(ros):
    ctx, _, _ = ros
    for name, value, setting, named in (("physics_dt", 0.02, "physics_dt", 0.02),
                                        ("sensors", ["punyo_pad", "punyo_pad"], "sensors", ["punyo_pad"] * 2),
                                        ("measured_source", "both", "measured_source", "both"),
                                        ("contact_body_names", ["punyo", "punyo"], "contact_body_names",
                                         ["punyo", "punyo"]),
                                        ("bubble.solref", [0.0, 1.0], "solref", (0.0, 1.0))):
        with pytest.raises(SettingError) as err:
            MujocoContactNode(context=ctx, parameter_overrides=[Parameter(name, value=value)])
        assert (err.value.setting, err.value.value) == (setting, named)


def test_the_demo_mujoco_backend_labels_measured_streams_and_starts_the_mujoco_node(tmp_path):
    args = build_parser().parse_args(["--backend", "mujoco"])
    cfg = resolve_config(args)
    assert cfg.backend == "mujoco" and cfg.out == Path("demo_out") / "mujoco"
    assert {s.name: s.measured_source for s in cfg.sensors} == {
        "punyo_pressure": "synthetic-model", "punyo_force": "synthetic-model",
        "punyo_pad": "mujoco-force-sensor", "object_load": "mujoco-touch-sensor"}
    assert check_pairing(cfg) == []            # the shipped file models MuJoCo's sensors too
    cmd = sim_command(cfg)
    # 50 Hz: 0.02 s steps of 20 MuJoCo steps of 1 ms; 30 Hz: 34 steps of 0.98 ms
    assert {"vsf_sensor_ros.contact_sources.mujoco_contact_node", "contact_body_names:=[punyo,object,table]",
            "physics_dt:=0.001", "sim_dt:=0.02"} <= set(cmd), cmd
    cfg30 = resolve_config(build_parser().parse_args(["--backend", "mujoco", "--rate", "30"]))
    dt = [float(a.split(":=")[1]) for a in sim_command(cfg30) if a.startswith("physics_dt")][0]
    assert (1 / 30) / dt == pytest.approx(34)
    with pytest.raises(ValueError):
        resolve_config(build_parser().parse_args(["--backend", "mujoco", "--world", "kinova",
                                                  "--assets", str(tmp_path)]))


def test_vs_mujoco_compares_after_the_tare_and_reports_the_peak():
    cfg = resolve_config(build_parser().parse_args(["--backend", "mujoco"]))
    cfg.sensors = [SensorInfo("punyo_pad", "ContactSensor", "wrench", attachment="punyo",
                              measured_source="mujoco-force-sensor"),
                   SensorInfo("punyo_pressure", "PunyoPressureSensor", "pressure", attachment="punyo",
                              measured_source="synthetic-model")]
    stamps = np.arange(1, 6, dtype=np.int64) * 10_000_000
    sent = np.arange(1, 6, dtype=np.int64) * 1000          # the tare answer arrives at 1500 ns
    pred = Series(stamps, sent, [np.array([0.0, 0.0, -v]) for v in (0.0, 1.0, 2.0, 4.0, 0.0)], sent)
    meas = Series(stamps, sent, [np.array([9.0, 0.0, -v]) for v in (0.0, 1.5, 2.5, 5.0, 0.0)], sent)
    out = vs_mujoco(cfg, {"punyo_pad": (pred, meas), "punyo_pressure": (None, None)}, 1500, stamps[1:4])
    assert list(out) == ["punyo_pad"]                      # synthetic streams are not compared
    pad = out["punyo_pad"]
    # after the tare: samples 2..5 (published at 2000 ns and later); in contact: 2..4,
    # residual z = -0.5, -0.5, -1
    assert pad["after_tare"]["samples"] == 4 and pad["in_contact"]["samples"] == 3
    assert pad["in_contact"]["mean"]["force_z"] == pytest.approx((-0.5 - 0.5 - 1.0) / 3)
    assert pad["in_contact"]["mean"]["force_x"] == pytest.approx(9.0)
    peak = pad["peak"]                                      # largest measured |f| in contact: sample 4
    assert peak["sim_time_s"] == pytest.approx(0.04)
    assert peak["measured"] == {"force_x": 9.0, "force_y": 0.0, "force_z": -5.0}
    m, p = np.hypot(9.0, 5.0), 4.0
    assert peak["relative_difference"] == pytest.approx((m - p) / m)
    cfg.backend, cfg.sensors[0].measured_source = "klampt", "klampt-native-contact-sensor"
    assert vs_mujoco(cfg, {"punyo_pad": (pred, meas)}, 1500, stamps) is None


def test_docs_list_every_parameter_of_the_node():
    from vsf_sensor_ros.contact_sources.mujoco_contact_node import PARAMS
    text = (ROOT / "docs" / "mujoco.md").read_text()
    missing = [name for name in PARAMS if f"| `{name}` |" not in text]
    assert missing == []
