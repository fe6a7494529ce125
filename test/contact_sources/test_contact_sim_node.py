"""contact_sim_node over real DDS (loopback only, leased ROS_DOMAIN_ID): topics, names, stamps, exit."""

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2
from std_msgs.msg import Bool

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.contact_sources.contact_sim_node import ContactSimNode, main
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields
from test.ros.node_helpers import spin_until

G = 9.8
BODIES = ["punyo", "object", "table"]


@pytest.fixture
def ros(private_ros):
    """A private rclpy context on a leased domain (see the root conftest)."""
    return private_ros


def test_node_publishes_joint_states_contacts_pose_measured_and_done(ros):
    ctx, executor, _ = ros
    got = {k: [] for k in ("joints", "contacts", "pose", "pressure", "force", "pad", "load", "done")}
    probe = Node("probe", context=ctx)
    qos = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for key, typ, topic in (("joints", JointState, "joint_states"), ("contacts", PointCloud2, "contacts"),
                            ("pose", PoseStamped, "object/pose"),
                            ("pressure", FluidPressure, "punyo_pressure/measured"),
                            ("force", PointCloud2, "punyo_force/measured"),
                            ("pad", WrenchStamped, "punyo_pad/measured"),
                            ("load", WrenchStamped, "object_load/measured")):
        probe.create_subscription(typ, topic, lambda m, k=key: got[k].append(m), qos)
    probe.create_subscription(Bool, "sim_done", lambda m: got["done"].append(m.data), latched)
    sim = ContactSimNode(context=ctx, parameter_overrides=[
        Parameter("duration_s", value=0.5), Parameter("rate_hz", value=0.0),
        Parameter("wait_for_subscribers", value=1), Parameter("start_delay_s", value=0.3),
        Parameter("seed", value=7)])
    executor.add_node(probe)
    executor.add_node(sim)
    try:
        assert spin_until(executor, lambda: True in got["done"] and len(got["contacts"]) >= 50)
        assert spin_until(executor, lambda: len(got["load"]) >= 50, timeout=5.0)
    finally:
        executor.remove_node(sim)
        sim.destroy_node()
        probe.destroy_node()

    # 0.5 s at sim_dt 0.01: 50 steps, one message of each kind per step, stamped 0.01 .. 0.50 s.
    assert got["done"][-1] is True
    for key in ("joints", "contacts", "pose", "pressure", "force", "pad", "load"):
        assert len(got[key]) == 50, key
    stamps = [m.header.stamp.sec * 10 ** 9 + m.header.stamp.nanosec for m in got["contacts"]]
    assert stamps == [10_000_000 * (k + 1) for k in range(50)]
    assert [m.header.stamp for m in got["joints"]] == [m.header.stamp for m in got["contacts"]]

    js = got["joints"][-1]
    assert list(js.name) == ew.EMBEDDED_JOINTS           # URDF joint names, not Klampt link names
    assert len(js.position) == 4 and np.all(np.isfinite(js.position))

    # Contacts cloud: world frame, only the box resting on the table (the bubble is still above it).
    last = got["contacts"][-1]
    assert last.header.frame_id == "world"
    decoded = pointcloud2_to_contacts(last, BODIES)
    assert set(decoded.contacts) == {("object", "table"), ("table", "object")}
    f = decoded.contacts[("object", "table")].forces.sum(dim=0).numpy()
    np.testing.assert_allclose(f, [0.0, 0.0, 0.3 * G], atol=0.02)   # 0.3 kg box: m g up on the box
    assert sim.get_parameter("contact_body_names").value == BODIES

    # Box pose: resting with its centre half a height (2 cm) plus the 2.5 mm padding above the table.
    p = got["pose"][-1]
    assert p.header.frame_id == "world"
    assert (p.pose.position.x, p.pose.position.y) == pytest.approx(ew.OBJECT_POSITION[:2], abs=1e-3)
    assert p.pose.position.z == pytest.approx(0.02 + 0.0025, abs=1e-3)

    # Stand-in measured streams before any contact: offset + noise only.
    pres = np.array([m.fluid_pressure for m in got["pressure"]])
    assert got["pressure"][-1].header.frame_id == "punyo"
    assert abs(pres.mean() - 101325.0) < 3.0 and 2.0 < pres.std() < 8.0   # 101325 Pa, noise std 5 Pa
    fz = read_cloud_fields(got["force"][-1], ["x", "y", "z", "fx", "fy", "fz"])
    assert len(fz["fx"]) == len(ew.bubble_mesh().vertices)                  # one point per vertex
    np.testing.assert_allclose(fz["z"].max(), ew.BUBBLE_HEIGHT, atol=1e-6)  # vertices in the bubble frame
    assert abs(np.mean(fz["fz"]) - 0.001) < 0.001                          # 0.001 N offset, 0.002 N noise
    pad_z = np.array([m.wrench.force.z for m in got["pad"]])
    assert got["pad"][-1].header.frame_id == "punyo_pad_frame"       # Klampt's sensor frame (Tsensor)
    assert abs(pad_z.mean() - 0.05) < 0.02
    load = np.array([m.wrench.force.z for m in got["load"]])
    assert got["load"][-1].header.frame_id == "object_load_frame"    # at the load cell's position
    assert abs(load.mean() - 0.05) < 0.03                   # no bubble contact: 0 N + 0.05 N offset


def test_main_exits_zero_after_the_run(ros, default_context_free):
    _, _, domain = ros
    # main() owns the default context: the environment above already confines it to this host.
    code = main(["contact_sim_node", "--ros-args", "-p", "duration_s:=0.05", "-p", "rate_hz:=0.0",
                 "-p", "start_delay_s:=0.0", "-p", "linger_s:=0.0", "-p", "sensors:=['punyo_pressure']"])
    assert code == 0


def test_main_reports_a_configuration_error_with_exit_code_2(ros, default_context_free):
    code = main(["contact_sim_node", "--ros-args", "-p", "world:=mars"])
    assert code == 2


def test_rate_is_live_and_validated_other_settings_are_read_only(ros):
    ctx, executor, _ = ros
    sim = ContactSimNode(context=ctx, parameter_overrides=[Parameter("duration_s", value=0.0)])
    try:
        assert sim.done.wait(5.0)                      # zero steps: done at once
        assert sim.set_parameters([Parameter("rate_hz", value=-5.0)])[0].successful is False
        assert sim.get_parameter("rate_hz").value == 100.0
        assert sim.set_parameters([Parameter("rate_hz", value=50.0)])[0].successful is True
        assert sim.p["rate_hz"] == 50.0
        assert sim.set_parameters([Parameter("sim_dt", value=0.02)])[0].successful is False
        assert sim.get_parameter("sim_dt").value == 0.01
    finally:
        sim.destroy_node()


def test_publish_clock_gives_the_simulation_time_before_each_steps_messages(ros):
    from rosgraph_msgs.msg import Clock
    ctx, executor, _ = ros
    got = {"clock": [], "joints": [], "done": []}
    probe = Node("clock_probe", context=ctx)
    qos = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
    probe.create_subscription(Clock, "/clock", lambda m: got["clock"].append(m.clock), qos)
    probe.create_subscription(JointState, "joint_states", lambda m: got["joints"].append(m.header.stamp), qos)
    probe.create_subscription(PointCloud2, "contacts", lambda m: None, qos)   # the simulator waits for it
    probe.create_subscription(Bool, "sim_done", lambda m: got["done"].append(m.data), QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    sim = ContactSimNode(context=ctx, parameter_overrides=[
        Parameter("duration_s", value=0.1), Parameter("rate_hz", value=0.0),
        Parameter("publish_clock", value=True),
        Parameter("wait_for_subscribers", value=1), Parameter("start_delay_s", value=0.3),
        Parameter("sensors", value=["punyo_pressure"])])
    executor.add_node(probe)
    executor.add_node(sim)
    try:
        assert spin_until(executor, lambda: True in got["done"] and len(got["joints"]) >= 10)
    finally:
        executor.remove_node(sim)
        sim.destroy_node()
        executor.remove_node(probe)
        probe.destroy_node()
    # sim_dt 0.01 s, 0.1 s: steps at 0.01 ... 0.10 s; /clock carries each step's stamp
    want = [round(0.01 * (k + 1), 9) for k in range(10)]
    assert [c.sec + c.nanosec * 1e-9 for c in got["clock"]] == pytest.approx(want, abs=1e-9)
    assert got["clock"] == got["joints"]
