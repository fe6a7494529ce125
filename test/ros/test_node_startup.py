"""sensor_node start-up: configuration errors end the process with one message; shipped configs run.

A configuration error is a ConfigError naming the parameter and its value (checked in the node for
every case); the real node process (``main()``) turns it into exit code 2 and exactly one log line,
with no traceback (checked for one case of each way an error arises).
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import FIXTURES, ROOT, NodeProcess, Probe, joint_state, send_until, write_params
from .sensor_node_scene import deliver

MEASURED_S = {"sensors": ["s"], "s.type": "PunyoPressureSensor", "s.attachment": "punyo"}
"""A pressure sensor whose measured stream the cases below get wrong."""

BAD_CONFIGS = {
    "missing_mesh": ({"bodies": ["pad"], "pad.mesh": "/nonexistent/pad.ply", "pad.parent_link": "tool_link"},
                     "pad.mesh", "/nonexistent/pad.ply"),
    "unknown_link": ({"bodies": ["pad"], "pad.mesh": str(FIXTURES / "punyo_mesh_partial.ply"),
                      "pad.parent_link": "no_such_link"}, "pad.parent_link", "no_such_link"),
    "unknown_type": ({"sensors": ["s"], "s.type": "FooSensor", "s.attachment": "punyo"}, "s.type",
                     "FooSensor"),
    "no_triangle_mesh": ({"sensors": ["s"], "s.type": "PunyoDenseForceSensor", "s.attachment": "world"},
                         "s.attachment", "world"),
    "unknown_attachment": ({"sensors": ["s"], "s.type": "PunyoPressureSensor", "s.attachment": "nobody"},
                           "s.attachment", "nobody"),
    "bad_setting": ({"sensors": ["s"], "s.type": "ContactSensor", "s.attachment": "tool_link",
                     "s.fSaturation": [1.0, -2.0, 1.0]}, "s.fSaturation", [1.0, -2.0, 1.0]),
    "missing_urdf": ({"robot_description_path": "/nonexistent/robot.urdf"}, "robot_description_path",
                     "/nonexistent/robot.urdf"),
    "measured_topic_repeated_slash": (dict(MEASURED_S, **{"s.measured_topic": "a//b"}), "s.measured_topic",
                                      "a//b"),
    "measured_topic_trailing_slash": (dict(MEASURED_S, **{"s.measured_topic": "/punyo/pressure/"}),
                                      "s.measured_topic", "/punyo/pressure/"),
    # a topic that carries another type (rcl_interfaces/msg/Log)
    "measured_topic_of_another_type": (dict(MEASURED_S, **{"s.measured_topic": "/rosout"}),
                                       "s.measured_topic", "/rosout"),
    "pose_topic_repeated_slash": ({"bodies": ["pad"], "pad.pose_topic": "a//b"}, "pad.pose_topic", "a//b"),
    # the node's own topics, made after the check (rclpy refused them with a traceback, exit 1)
    "measured_topic_is_the_contacts_input": (dict(MEASURED_S, **{"s.measured_topic": "contacts"}),
                                             "s.measured_topic", "contacts"),
    "measured_topic_is_a_later_sensors_output": (
        dict(MEASURED_S, **{"sensors": ["s", "t"], "s.measured_topic": "t/predicted",
                            "t.type": "ContactSensor", "t.attachment": "tool_link"}),
        "s.measured_topic", "t/predicted"),
    "duplicate_contact_body_names": ({"contact_body_names": ["punyo", "punyo", "table"]},
                                     "contact_body_names", ["punyo", "punyo", "table"]),
    "empty_world_frame": ({"world_frame": ""}, "world_frame", ""),
    "unknown_executor": ({"executor": "fastest"}, "executor", "fastest"),
    "pressure_measured_as_cloud": (dict(MEASURED_S, **{"s.measured_type": "sensor_msgs/msg/PointCloud2"}),
                                   "s.measured_type", "sensor_msgs/msg/PointCloud2"),
    "dense_force_measured_as_wrench": ({"sensors": ["s"], "s.type": "PunyoDenseForceSensor",
                                        "s.attachment": "punyo",
                                        "s.measured_type": "geometry_msgs/msg/WrenchStamped"},
                                       "s.measured_type", "geometry_msgs/msg/WrenchStamped"),
    "load_measured_as_pressure": ({"sensors": ["s"], "s.type": "IsaacContactSensor", "s.attachment": "object",
                                   "s.measured_type": "sensor_msgs/msg/FluidPressure"},
                                  "s.measured_type", "sensor_msgs/msg/FluidPressure"),
    "pad_measured_as_bare_float": ({"sensors": ["s"], "s.type": "ContactSensor", "s.attachment": "tool_link",
                                    "s.measured_type": "std_msgs/msg/Float32"},
                                   "s.measured_type", "std_msgs/msg/Float32"),
    "negative_measured_scale": (dict(MEASURED_S, **{"s.measured_scale": -100.0}), "s.measured_scale", -100.0),
    "joint_name_map_without_colon": ({"joint_name_map": ["joint_1:shoulder_yaw", "joint_2"]},
                                     "joint_name_map", "joint_2"),
    "joint_name_map_to_no_urdf_joint": ({"joint_name_map": ["joint_1:Actuator1"]}, "joint_name_map",
                                        "joint_1:Actuator1"),
}
"""Case -> (parameters, the parameter the error names, its value)."""


def _bad_file_configs(tmp_path):
    """Cases needing files, as :data:`BAD_CONFIGS`."""
    not_a_mesh = tmp_path / "pad.yaml"          # an extension trimesh has no loader for
    not_a_mesh.write_text("a: 1\n")
    empty_ply = tmp_path / "empty.ply"
    empty_ply.write_bytes(b"")
    mesh_dir = tmp_path / "meshes"
    mesh_dir.mkdir()
    body = {"bodies": ["pad"], "pad.parent_link": "tool_link"}
    not_an_entry = tmp_path / "entry_not_a_mapping.yaml"
    not_an_entry.write_text("sensors: {punyo_pressure: hello}\n")
    list_calibration = tmp_path / "list_calibration.yaml"
    list_calibration.write_text("sensors: {punyo_pressure: {type: PunyoPressureSensor, "
                                "calibration: [1, 2]}}\n")
    cal_dir = tmp_path / "calibration_dir"
    cal_dir.mkdir()
    fifo = tmp_path / "calibration_fifo"
    os.mkfifo(fifo)                             # opening it for reading would block the start
    cases = {"calibration_entry_not_a_mapping": not_an_entry, "calibration_a_list": list_calibration,
             "calibration_file_is_a_directory": cal_dir, "calibration_file_is_a_fifo": fifo}
    out = {case: ({"calibration_file": str(f)}, "calibration_file", str(f)) for case, f in cases.items()}
    for case, f in (("unsupported_mesh_type", not_a_mesh), ("empty_ply", empty_ply),
                    ("mesh_is_a_directory", mesh_dir)):
        out[case] = (dict(body, **{"pad.mesh": str(f)}), "pad.mesh", str(f))
    return out


def test_configuration_errors_name_the_parameter_and_its_value(tmp_path, rclpy_context):
    """Every case in the node (no process: ``main`` turning the error into one line is the next test)."""
    from rclpy.parameter import Parameter
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    from vsf_sensor_ros.ros.sensor_node import SensorNode
    cases = dict(BAD_CONFIGS, **_bad_file_configs(tmp_path))
    if not FIXTURES.is_dir():
        cases.pop("unknown_link")
    for i, (case, (params, parameter, value)) in enumerate(cases.items()):
        with pytest.raises(ConfigError) as err:
            SensorNode(f"config_error_node_{i}", parameter_overrides=[Parameter(k, value=v)
                                                                      for k, v in params.items()])
        assert (err.value.parameter, err.value.value) == (parameter, value), case


def test_configuration_errors_stop_the_process_with_one_line(tmp_path, rclpy_context):
    """The executable: exit code 2, one line naming the parameter and its value, no traceback -- for
    an error of the node, one rclpy refuses (a wrong type), a value holding a newline (still one
    line), a parameter file rcl cannot parse ([-0.03, 0] mixes a double and an integer) and a word
    after --ros-args that is no ROS argument (an unquoted value with a space: rclpy's
    UnknownROSArgsError used to end the node in a traceback).  Started together: they share nothing."""
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("sensor_node:\n  ros__parameters:\n    sensors: [pad]\n    pad.type: ContactSensor\n"
                     "    pad.attachment: punyo\n    pad.patchMin: [-0.03, 0]\n")
    cases = {   # case -> (params file, extra arguments, what the line names)
        "missing_mesh": (write_params(tmp_path / "missing_mesh.yaml", BAD_CONFIGS["missing_mesh"][0]), [],
                         ("'pad.mesh'", "/nonexistent/pad.ply")),
        "use_sim_time_not_a_bool": (write_params(tmp_path / "sim_time.yaml", {"use_sim_time": 5}), [],
                                    ("'use_sim_time'", "'5'")),
        "a_newline_in_a_value": (write_params(tmp_path / "newline.yaml",
                                              {"diagnostics_period": "1.0\nsecond line"}), [],
                                 ("'diagnostics_period'", repr("1.0\nsecond line"))),
        "mixed_types": (mixed, [], (str(mixed), "0.0 not 0")),          # the file, and the hint
        "stray_word": (ROOT / "config" / "sensor_node.yaml", ["-p", "input_timeout:=2.0", "stray"],
                       ("stray",)),
    }
    procs = {}
    try:
        for case, (params_file, extra, _) in cases.items():
            procs[case] = NodeProcess(params_file, tmp_path / f"{case}.log", extra_args=extra).start()
        for case, proc in procs.items():
            code = proc.wait(timeout=120)
            out = proc.output()
            lines = [ln for ln in out.splitlines() if "configuration error" in ln]
            assert code == 2 and len(lines) == 1, f"{case}: exited {code}\n{out[-2000:]}"
            for named in cases[case][2]:
                assert named in lines[0], f"{case}: {lines[0]}"
            assert "Traceback" not in out, f"{case}: {out[-3000:]}"
    finally:
        for proc in procs.values():   # none may outlive the test, whatever failed
            proc.stop(timeout=2.0)


def test_shipped_embedded_config_starts_and_predicts(tmp_path, rclpy_context):
    proc = NodeProcess(ROOT / "config" / "sensor_node.yaml", tmp_path / "node.log").start()
    probe = Probe("embedded_config_probe")
    try:
        got = probe.listen("/punyo_pressure/predicted", FluidPressure)
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), proc.output()[-3000:]
        probe.spin_for(0.5)
        from vsf_sensor_ros.embedded_world import embedded_world
        names = embedded_world().body_names
        msg = contacts_to_pointcloud2({}, names, stamp=None, frame_id="world")
        msg.header.stamp.sec = 5
        assert send_until(probe, "/contacts", msg, lambda: len(got) > 0), proc.output()[-3000:]
        # uncalibrated, no contact: zero gauge pressure
        assert got[0].fluid_pressure == 0.0 and got[0].header.stamp.sec == 5
    finally:
        probe.destroy_node()
        code = proc.stop()
    assert code == 0 and "Traceback" not in proc.output()


def test_robot_description_text_with_an_extra_body_on_a_transform(tmp_path, rclpy_context):
    # URDF given as text (the ROS convention); the bubble mesh attached as an extra body 5 cm
    # above tool_link (row-major 4x4 with a translation (0, 0, 0.05)); a pressure sensor on it.
    data = ROOT / "vsf_sensor_ros" / "data"
    T = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.05, 0.0, 0.0, 0.0, 1.0]
    params = {"robot_description": (data / "embedded_arm.urdf").read_text(), "bodies": ["pad"],
              "pad.mesh": str(data / "punyo_bubble.ply"), "pad.parent_link": "tool_link",
              "pad.transform": T, "sensors": ["p"], "p.type": "PunyoPressureSensor", "p.attachment": "pad"}
    proc = NodeProcess(write_params(tmp_path / "p.yaml", params), tmp_path / "node.log").start()
    probe = Probe("text_urdf_probe")
    try:
        got = probe.listen("/p/predicted", FluidPressure)
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), proc.output()[-3000:]
        from vsf_sensor_ros.world import World
        w = World.from_urdf((data / "embedded_arm.urdf").read_text())
        w.attach_body("pad", str(data / "punyo_bubble.ply"), "tool_link", np.array(T).reshape(4, 4))
        assert w.body_names[-1] == "pad"
        # a 3 N push on the pad's base normal (+z of the pad, in the world) at the pad origin
        Tp = w.body_transform("pad")
        f = Tp[:3, :3] @ np.array([0.0, 0.0, 3.0])
        cs = {("pad", "world"): ContactState(torch.tensor(Tp[:3, 3][None], dtype=torch.float64),
                                             torch.tensor(f[None], dtype=torch.float64))}
        msg = contacts_to_pointcloud2(cs, w.body_names, stamp=None, frame_id="world")
        msg.header.stamp.sec = 3
        assert send_until(probe, "/contacts", msg, lambda: len(got) > 0), proc.output()[-3000:]
        # p = -(1/A) (R^T f) . n = -3 / A, A = 24-gon of radius 0.05 (the PLY stores float32
        # vertices, hence the 1e-6 tolerance)
        A = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)
        assert got[0].fluid_pressure == pytest.approx(-3.0 / A, rel=1e-6)
        assert got[0].header.frame_id == "pad"
    finally:
        probe.destroy_node()
        code = proc.stop()
    assert code == 0 and "Traceback" not in proc.output()


def test_kinova_fixture_config_runs(tmp_path, rclpy_context):
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    env = dict(os.environ)
    # VSF_ASSETS wins over assets_dir: point it at a copy to prove the override is used
    assets = tmp_path / "assets"
    shutil.copytree(FIXTURES, assets)
    env["VSF_ASSETS"] = str(assets)
    proc = NodeProcess(ROOT / "config" / "kinova_punyo.yaml", tmp_path / "node.log", env=env).start()
    probe = Probe("kinova_probe")
    try:
        got = probe.listen("/punyo_pressure/predicted", FluidPressure)
        forces = probe.listen("/punyo_force/predicted", PointCloud2)
        jac = probe.listen("/punyo_pressure/jacobian", PointCloud2)
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), proc.output()[-3000:]
        assert probe.wait_for_subscriber("/joint_states", JointState)
        # confirmed by the node's counter: a lost joint state would leave the robot at HOME
        deliver(probe, "/joint_states", joint_state(["Actuator2", "Actuator4"], [0.3, 1.2]),
                "inputs", "joint_states_received")
        from vsf_sensor_ros.embedded_world import kinova_world
        w = kinova_world(assets)
        home_normal = w.body_transform("punyo")[:3, 2]
        w.set_joint_positions(["Actuator2", "Actuator4"], [0.3, 1.2])
        T = w.body_transform("punyo")
        # one contact on vertex 0 of the real mesh, pressing along the mesh's -z (into the bubble)
        V = np.asarray(w.body_mesh("punyo").vertices)
        p = T[:3, :3] @ V[0] + T[:3, 3]
        f = T[:3, :3] @ np.array([0.0, 0.0, -2.0])
        cs = {("punyo", "object"): ContactState(torch.tensor(p[None], dtype=torch.float64),
                                                torch.tensor(f[None], dtype=torch.float64),
                                                torch.tensor([0]), torch.tensor([-1]))}
        # body indices of the simulator's table, which the config shares
        msg = contacts_to_pointcloud2(cs, ["punyo", "object", "table"], stamp=None, frame_id="world")
        msg.header.stamp.sec = 7
        assert send_until(probe, "/contacts", msg, lambda: bool(got and forces and jac)), \
            proc.output()[-3000:]
        assert got[0].header.frame_id == "punyo" and got[0].fluid_pressure > 0.0
        assert forces[0].width == len(V)
        # d p / d f = -(1/A_base) R n, n = +z (base_normal_local): along the posed bubble's -z axis,
        # far from HOME's (so a lost joint state fails); and p = J . f (no tare, gain 1)
        c = read_cloud_fields(jac[0], ["row", "col", "value"])
        entries = {int(k): v for r, k, v in zip(c["row"], c["col"], c["value"]) if int(r) == 0}
        J = np.array([entries.get(k, 0.0) for k in range(3)])
        np.testing.assert_allclose(J / np.linalg.norm(J), -T[:3, 2], atol=1e-9)
        assert np.linalg.norm(home_normal - T[:3, 2]) > 0.3          # 0.47 at this pose
        assert got[0].fluid_pressure == pytest.approx(float(J @ f), rel=1e-9)
    finally:
        probe.destroy_node()
        code = proc.stop()
    assert code == 0 and "Traceback" not in proc.output()


def test_sigterm_while_contacts_flow_ends_the_node_cleanly(tmp_path, rclpy_context):
    # SIGTERM in the middle of a stream of contacts: exit code 0, no internal_error from a publish
    # on the shut-down context, no traceback (the shutdown time is measured by hand, not here)
    import signal
    proc = NodeProcess(ROOT / "config" / "sensor_node.yaml", tmp_path / "node.log").start()
    probe = Probe("sigterm_probe")
    try:
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=60.0), proc.output()[-3000:]
        names = ["punyo", "object", "table"]
        for k in range(200):
            msg = contacts_to_pointcloud2({}, names, stamp=1.0 + 0.01 * k, frame_id="world")
            probe.send("/contacts", msg)
            if k == 150:
                os.kill(proc.pid, signal.SIGTERM)
            probe.spin_for(0.002)
        code = proc.wait(timeout=60)
    finally:
        probe.destroy_node()
        proc.stop()
    out = proc.output()
    assert code == 0, out[-3000:]
    for text in ("internal_error", "Traceback", "context is invalid"):
        assert text not in out, out[-3000:]


def test_a_keyboard_interrupt_escaping_main_still_takes_the_fast_exit():
    # SIGINT raises KeyboardInterrupt at whatever bytecode runs next, which can be main()'s own
    # clean-up (destroying the node) where main() cannot catch it.  run() must still end the
    # process at once with 0: no traceback and no interpreter teardown (an atexit hook of the
    # interpreter would run in a normal teardown; os._exit skips it).
    code = ("import atexit, vsf_sensor_ros.ros.sensor_node as s\n"
            "atexit.register(lambda: print('interpreter teardown ran', flush=True))\n"
            "def interrupted():\n"
            "    print('main ran', flush=True)\n"
            "    raise KeyboardInterrupt\n"
            "s.main = interrupted\n"
            "s.run()\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "main ran" in res.stdout and "interpreter teardown ran" not in res.stdout \
        and "Traceback" not in res.stderr, res.stdout + res.stderr[-2000:]
