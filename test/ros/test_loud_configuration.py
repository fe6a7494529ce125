"""A misspelt key, an unmatched parameters file, a silent input and a wrong unit are loud within 10 s.

An in-process ``SensorNode`` (real rclpy + DDS, the package's embedded world: a Punyo pressure
sensor on ``punyo``, moved by the arm's four revolute joints) reports every 0.2 s; a listener on
the same domain reads ``/diagnostics``.  Statuses are looked up by suffix (``: inputs``,
``: pressure``, ``<topic> topic status``).  Expected sentences are the configuration the test
wrote (the key, the file, the topic and type), never the node's own output copied back.
"""
from __future__ import annotations

import json
import math
import time
from typing import Dict, List

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.executors import SingleThreadedExecutor
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.parameter import Parameter
from sensor_msgs.msg import FluidPressure, JointState
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.parameter_table import ConfigError, ConfigErrors
from vsf_sensor_ros.ros.sensor_node import SensorNode

from .node_helpers import bubble_push_cloud, spin_until, write_params

NS = "/loud_test"
JOINTS = ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"]


def _params(**extra):
    p = {"sensors": ["pressure"], "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
         "pressure.publish_markers": False, "pressure.publish_jacobian": False,
         "diagnostics_period": 0.2, "input_timeout": 1.0, "tare_samples": 2}
    p.update(extra)
    return [Parameter(k, value=v) for k, v in p.items()]


class Listener:
    """A node on the same domain recording ``/diagnostics``, spun with the node under test."""

    def __init__(self, node: SensorNode) -> None:
        import rclpy
        self.node = node
        self.probe = rclpy.create_node("loud_listener", namespace=NS)
        self.reports: List[DiagnosticArray] = []
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self.reports.append, 50)
        self.ex = SingleThreadedExecutor()
        self.ex.add_node(node)
        self.ex.add_node(self.probe)

    def status(self, suffix: str, cond=lambda st: True, timeout: float = 10.0) -> DiagnosticStatus:
        """The first status whose name ends with ``suffix`` and satisfies ``cond`` (within ``timeout``)."""
        found: List[DiagnosticStatus] = []

        def look() -> bool:
            for arr in self.reports:
                for st in arr.status:
                    if st.name.endswith(suffix) and cond(st):
                        found.append(st)
                        return True
            self.reports.clear()
            return False
        assert spin_until(self.ex, look, timeout), f"no status '*{suffix}' as expected in {timeout} s"
        return found[0]

    def spin(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.02)

    def close(self) -> None:
        self.ex.remove_node(self.probe)
        self.probe.destroy_node()
        self.ex.shutdown()


def values(st: DiagnosticStatus) -> Dict[str, str]:
    return {kv.key: kv.value for kv in st.values}


def level(st: DiagnosticStatus) -> int:
    return st.level[0] if isinstance(st.level, bytes) else int(st.level)


@pytest.fixture
def make(rclpy_context):
    made = []

    def build(**kwargs):
        n = SensorNode("sensor_node", namespace=NS, **kwargs)
        made.append(n)
        lis = Listener(n)
        made.append(lis)
        return n, lis
    yield build
    for obj in reversed(made):
        if isinstance(obj, Listener):
            obj.close()
        else:
            obj.destroy_node()


def joint_state(sec: int) -> JointState:
    msg = JointState(name=list(JOINTS), position=[0.0] * 4)
    msg.header.stamp.sec = sec
    return msg


def no_contacts(node: SensorNode, sec: int):
    """An empty contacts cloud (nothing touches anything) stamped ``sec`` s."""
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    msg = contacts_to_pointcloud2({}, node.world.body_names, stamp=None, frame_id="world")
    msg.header.stamp.sec = sec
    return msg


def pressure(value: float, sec: int) -> FluidPressure:
    msg = FluidPressure(fluid_pressure=value)
    msg.header.stamp.sec = sec
    msg.header.frame_id = "punyo"
    return msg


# -- a misspelt key -------------------------------------------------------------------------------
def test_a_misspelt_sensor_key_is_a_warning_naming_it_and_the_closest_key(make):
    node, lis = make(parameter_overrides=_params(**{"pressure.measured_scael": 100.0}))
    assert node.get_parameter("pressure.measured_scale").value == 1.0   # the default stayed
    st = lis.status(": inputs", lambda st: level(st) == 1)
    v = values(st)
    assert v["configuration"] == "1"
    assert "did you mean 'pressure.measured_scale'" in v["configuration.problems"]


def test_a_misspelt_top_level_key_names_the_closest_key(make):
    node, _ = make(parameter_overrides=_params(tare_sampels=5))
    assert any("'tare_sampels'" in p and "did you mean 'tare_samples'" in p
               for p in node.health.config_problems)


def test_a_misspelt_body_key_is_named_with_the_closest_body_key(make, tmp_path):
    mesh = tmp_path / "tag.obj"   # one 1 cm triangle: a body needs a mesh
    mesh.write_text("v 0 0 0\nv 0.01 0 0\nv 0 0.01 0\nf 1 2 3\n")
    node, _ = make(parameter_overrides=_params(bodies=["tag"], **{
        "tag.parent_link": "tool_link", "tag.mesh": str(mesh), "tag.transfrom": [1.0] * 16}))
    assert "unknown parameter 'tag.transfrom' (body tag); did you mean 'tag.transform'?" \
        in node.health.config_problems


def test_strict_parameters_makes_an_unknown_key_a_start_up_error(rclpy_context):
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS,
                   parameter_overrides=_params(strict_parameters=True, **{"pressure.measured_topik": "/p"}))
    assert (exc.value.parameter, exc.value.value) == ("pressure.measured_topik", "/p")


def test_every_node_wide_problem_is_named_in_the_one_error(rclpy_context):
    """A tare_samples rclpy refuses (out of range), an empty world_frame, an unknown reliability and
    an unknown executor: all four in one error, in that order (the declarations first), where the
    node used to stop at the first and a user fixed one per start."""
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
            tare_samples=0, world_frame="", executor="fast", **{"qos.inputs.reliability": "maybe"}))
    err = exc.value
    assert [e.parameter for e in err.errors] == ["tare_samples", "world_frame", "qos.inputs.reliability",
                                                 "executor"]
    text = str(err)
    assert text.startswith("4 problems: [1] parameter 'tare_samples' = 0: ") and "\n" not in text
    for words in ("[2] parameter 'world_frame' = '': must name the frame",
                  "[3] parameter 'qos.inputs.reliability' = 'maybe': must be 'best_effort' or 'reliable'",
                  "[4] parameter 'executor' = 'fast': must be one of auto, events, single_threaded"):
        assert words in text, text
    # one problem alone is the plain error, as before
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(executor="fast"))
    assert not isinstance(exc.value, ConfigErrors)
    assert str(exc.value) == "parameter 'executor' = 'fast': must be one of auto, events, single_threaded"


def test_a_world_frame_tf2_would_refuse_is_named():
    from vsf_sensor_ros.ros.health import node_value_problems
    base = {"frame_prefix": "", "executor": "auto", "qos.inputs.reliability": "reliable",
            "qos.outputs.reliability": "reliable"}
    for frame in ("", " world", "/world", "my world"):
        problems = node_value_problems({**base, "world_frame": frame})
        assert [(e.parameter, e.value) for e in problems] == [("world_frame", frame)]
    assert node_value_problems({**base, "world_frame": "odom"}) == []


def test_every_sensor_with_a_problem_is_named_in_the_one_error(rclpy_context):
    """Three sensors, two of them wrong (an unknown type, an unknown body): both named, the good one
    between them not."""
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(**{
            "sensors": ["a", "pressure", "b"], "a.type": "NoSuchSensor", "a.attachment": "punyo",
            "b.type": "PunyoPressureSensor", "b.attachment": "nowhere"}))
    assert [(e.parameter, e.value) for e in exc.value.errors] == [("a.type", "NoSuchSensor"),
                                                                  ("b.attachment", "nowhere")]


def test_a_misspelt_key_in_a_live_request_is_named_with_the_closest_key(make, capfd):
    node, _ = make(parameter_overrides=_params())
    with pytest.raises(ParameterNotDeclaredException):
        node.set_parameters([Parameter("tare_sampels", value=3)])
    err = capfd.readouterr().err
    assert "tare_sampels" in err and "did you mean 'tare_samples'" in err, err


# -- an unmatched parameters file, no sensors ---------------------------------------------------------
def test_a_parameters_file_keyed_by_another_name_is_a_warning_naming_file_expected_and_found(make, tmp_path):
    path = write_params(tmp_path / "params.yaml", {"sensors": ["pressure"],
                                                   "pressure.type": "PunyoPressureSensor",
                                                   "pressure.attachment": "punyo"}, node_name="sensor_nod")
    node, lis = make(cli_args=["--ros-args", "--params-file", str(path)],
                     parameter_overrides=[Parameter("diagnostics_period", value=0.2)])
    assert node._handles == {}   # the file applied to nothing
    st = lis.status(": inputs", lambda st: level(st) == 1)
    problems = values(st)["configuration.problems"]
    assert str(path) in problems and f"'{NS}/sensor_node'" in problems and "'sensor_nod'" in problems
    assert values(st)["configuration"] == "2"    # the key mismatch and no sensors


def test_a_parameters_file_keyed_by_the_node_or_a_wildcard_is_no_problem(make, tmp_path):
    path = write_params(tmp_path / "params.yaml", {"tare_samples": 4}, node_name="/**")
    overrides = [prm for prm in _params() if prm.name != "tare_samples"]   # overrides win over files
    node, _ = make(cli_args=["--ros-args", "--params-file", str(path)], parameter_overrides=overrides)
    assert node.get_parameter("tare_samples").value == 4
    assert node.health.config_problems == []


# -- a silent input ------------------------------------------------------------------------------
def test_a_sensor_with_no_contacts_is_warn_naming_topic_and_type_and_its_tare_says_so(make):
    node, lis = make(parameter_overrides=_params())
    st = lis.status(": pressure", lambda st: level(st) == 1 and "contacts" in st.message)
    assert f"no sensor_msgs/msg/PointCloud2 on {NS}/contacts since start" in st.message
    freq = lis.status(f"{NS}/contacts topic status")
    fv = values(freq)
    assert fv["Events since startup"] == "0" and fv["Events in window"] == "0"
    assert {"Duration of window (s)", "Actual frequency (Hz)"} <= set(fv)
    # joint states and pressure flow, contacts do not: the tare names the missing contacts
    for k in range(3):
        node._on_joint_state(joint_state(k + 1))
        node._on_measured("pressure", pressure(101325.0, k + 1))
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not ans.success
    assert f"no sensor_msgs/msg/PointCloud2 received on {NS}/contacts" in ans.message


def test_gain_calibration_without_contacts_names_the_contacts_topic(make):
    node, _ = make(parameter_overrides=_params())
    node._on_measured("pressure", pressure(101325.0, 1))
    ans = node.measurements.on_calibrate_gain("pressure", Trigger.Request(), Trigger.Response())
    assert not ans.success
    assert f"no sensor_msgs/msg/PointCloud2 received on {NS}/contacts" in ans.message


def test_a_sensor_on_a_free_body_needs_its_pose_topic(make):
    # the embedded world's box 'object' is a free body: an Isaac load sensor on it needs object/pose
    node, lis = make(parameter_overrides=_params(
        sensors=["load"], **{"load.type": "IsaacContactSensor", "load.attachment": "object",
                             "load.publish_markers": False, "load.publish_jacobian": False}))
    st = lis.status(": load", lambda st: level(st) == 1 and "pose" in st.message)
    assert f"no geometry_msgs/msg/PoseStamped on {NS}/object/pose since start" in st.message


def test_a_measured_stream_that_stopped_is_warn_naming_it(make):
    node, lis = make(parameter_overrides=_params())
    node._on_measured("pressure", pressure(101325.0, 1))
    st = lis.status(": pressure", lambda st: "pressure/measured" in st.message, timeout=5.0)
    assert level(st) == 1
    assert f"{NS}/pressure/measured (sensor_msgs/msg/FluidPressure) stopped" in st.message


def test_joints_moving_the_sensor_never_received_are_warn_naming_them(make):
    node, lis = make(parameter_overrides=_params())
    for k in range(50):   # the driver never sends wrist_pitch (after 50 joint states it counts)
        msg = JointState(name=JOINTS[:3], position=[0.0] * 3)
        msg.header.stamp.sec = k + 1
        node._on_joint_state(msg)
    st = lis.status(": pressure", lambda st: "joints never received" in st.message)
    assert level(st) == 1
    assert "joints never received (predictions use their initial positions): wrist_pitch" in st.message


def test_a_sensor_is_ok_only_while_predictions_flow_then_warn_when_contacts_stop(make):
    node, lis = make(parameter_overrides=_params())
    sec = [0]

    def feed() -> None:
        sec[0] += 1
        node._on_joint_state(joint_state(sec[0]))
        node._on_contacts(bubble_push_cloud(node, 0.0 if sec[0] % 2 else 1.0, sec[0]))

    end = time.monotonic() + 10.0
    ok = None
    while time.monotonic() < end and ok is None:
        feed()
        lis.spin(0.05)
        for arr in lis.reports:
            for st in arr.status:
                if st.name.endswith(": pressure") and level(st) == 0:
                    ok = st
        lis.reports.clear()
    assert ok is not None, "never OK while contacts and joint states flow"
    assert values(ok)["health"] == "ok"
    # both inputs stop: WARN naming the contacts topic within input_timeout (1 s) + report periods.
    # Each step's joint state arrives before its contacts (and before their prediction), so the
    # joint states always fall silent a little earlier: a report may name them alone first (the
    # longer a step takes, the likelier), never the contacts alone.  Wait for the contacts, then
    # both must be named.
    stopped = f"{NS}/contacts (sensor_msgs/msg/PointCloud2) stopped"
    st = lis.status(": pressure", lambda st: stopped in st.message, timeout=5.0)
    assert level(st) == 1
    assert f"{NS}/joint_states (sensor_msgs/msg/JointState) stopped" in st.message


def test_predictions_failing_on_the_latest_contacts_is_error_until_one_succeeds(make):
    node, lis = make(parameter_overrides=_params())
    # what the node records when a contacts message's predictions fail (its _reject path), then a report
    node._reject("non_finite_prediction", "pressure: pressure = inf")
    st = lis.status(": pressure", lambda st: level(st) == 2)
    assert st.message.startswith("predictions failing: non_finite_prediction (pressure: pressure = inf)")
    node._on_joint_state(joint_state(1))
    node._on_contacts(bubble_push_cloud(node, 1.0, 1))   # a message that predicts: no longer failing
    lis.status(": pressure", lambda st: level(st) != 2)


# -- a wrong unit -------------------------------------------------------------------------------
def test_hpa_read_as_pa_is_a_live_warning_and_a_tare_is_refused_naming_value_unit_and_scale(make):
    node, lis = make(parameter_overrides=_params())
    for k in range(3):   # contact-free steps paired with 1013.25 "Pa": hPa read with measured_scale 1
        node._on_joint_state(joint_state(k + 1))
        node._on_contacts(no_contacts(node, k + 1))
        node._on_measured("pressure", pressure(1013.25, k + 1))
    lis.status(": pressure", lambda st: level(st) == 1 and "hPa" in st.message)
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not ans.success
    assert "1013.25" in ans.message and "hPa" in ans.message and "measured_scale" in ans.message
    assert node._handles["pressure"].sensor.get_calibration().get("tare") is None
    # the unit fixed live (x100): the warning clears with the next plausible value and a tare works
    assert node.set_parameters([Parameter("pressure.measured_scale", value=100.0)])[0].successful
    for k in range(3, 6):
        node._on_joint_state(joint_state(k + 1))
        node._on_contacts(no_contacts(node, k + 1))
        node._on_measured("pressure", pressure(1013.25, k + 1))
    assert node._handles["pressure"].unit_warning is None
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert ans.success, ans.message
    # two contact-free samples of 101325 Pa against a raw prediction of 0 Pa: the tare is 101325 Pa
    assert math.isclose(float(node._handles["pressure"].sensor.get_calibration()["tare"][0]), 101325.0)


def test_every_bad_name_of_the_sensors_list_is_named(rclpy_context):
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
            sensors=["pressure", "9x", "a.b", "tare", "pressure"]))
    details = [(e.value, e.detail) for e in exc.value.errors]
    assert [v for v, _ in details[:2]] == ["9x", "a.b"]
    assert "name 'tare' clashes with a node endpoint" == details[2][1]
    assert "name 'pressure' appears twice" == details[3][1] and len(details) == 4


def test_a_measured_topic_of_the_nodes_own_is_refused_unless_an_output_of_its_type(rclpy_context):
    """Another sensor's prediction of the same type may be a measured stream (comparing two models);
    an input, or a topic of the node's of another type, may not -- rclpy refused those with a
    traceback when the second endpoint was made."""
    two = {"sensors": ["pressure", "other"], "other.type": "PunyoPressureSensor", "other.attachment": "punyo"}
    node = SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
        **two, **{"pressure.measured_topic": "other/predicted"}))
    node.destroy_node()
    for topic, words in (("joint_states", f"topic {NS}/joint_states is this node's own joint states "
                                          "input"),
                         ("object/pose", f"topic {NS}/object/pose is this node's own pose input of body "
                                         "object"),
                         ("/tf", "own output /tf (tf2_msgs/msg/TFMessage), not "
                                 "sensor_msgs/msg/FluidPressure")):
        with pytest.raises(ConfigError) as exc:
            SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
                **two, **{"pressure.measured_topic": topic}))
        assert exc.value.parameter == "pressure.measured_topic" and words in str(exc.value), str(exc.value)
    # two sensors on one measured topic: one type only
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(**{
            "sensors": ["pressure", "pad"], "pad.type": "ContactSensor", "pad.attachment": "tool_link",
            "pad.measured_topic": "pressure/measured"}))
    assert exc.value.parameter == "pad.measured_topic"
    assert "own measured input of sensor pressure (sensor_msgs/msg/FluidPressure), not " \
           "geometry_msgs/msg/WrenchStamped" in str(exc.value)


def test_a_failing_sensors_misspelt_key_is_named_with_its_problem(rclpy_context):
    """'attachement' leaves 'attachment' empty: the start-up error names both, with the closest key
    (the misspelt-key warning alone comes only after a start)."""
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(**{
            "pressure.attachment": "", "pressure.attachement": "punyo"}))
    assert [(e.parameter, e.value) for e in exc.value.errors] == [("pressure.attachment", ""),
                                                                  ("pressure.attachement", "punyo")]
    assert "unknown parameter (sensor pressure); did you mean 'pressure.attachment'?" in str(exc.value)


def test_a_misspelt_body_key_behind_a_scene_error_is_named_with_it(rclpy_context, tmp_path):
    """'tag.transform_kye' leaves transform_key empty, so the whole JSON file is read as the matrix:
    the error about the file comes with the misspelt key and the closest one."""
    mesh = tmp_path / "tag.obj"
    mesh.write_text("v 0 0 0\nv 0.01 0 0\nv 0 0.01 0\nf 1 2 3\n")
    transforms = tmp_path / "transforms.json"
    transforms.write_text(json.dumps({"tag2tool": np.eye(4).tolist()}))
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(bodies=["tag"], **{
            "tag.parent_link": "tool_link", "tag.mesh": str(mesh), "tag.transform_file": str(transforms),
            "tag.transform_kye": "tag2tool", "tare_sampels": 5, "pressure.measured_scael": 2.0}))
    assert [(e.parameter, e.value) for e in exc.value.errors] == [
        ("tag.transform_file", str(transforms)), ("tag.transform_kye", "tag2tool"), ("tare_sampels", 5)]
    text = str(exc.value)
    assert "unknown parameter (body tag); did you mean 'tag.transform_key'?" in text
    # spelt right, the same file gives the body its transform
    node = SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(bodies=["tag"], **{
        "tag.parent_link": "tool_link", "tag.mesh": str(mesh), "tag.transform_file": str(transforms),
        "tag.transform_key": "tag2tool"}))
    node.destroy_node()


def test_a_misspelt_top_level_key_is_named_with_a_node_wide_problem(rclpy_context):
    with pytest.raises(ConfigErrors) as exc:
        SensorNode("sensor_node", namespace=NS,
                   parameter_overrides=_params(executor="fast", world_fame="map"))
    assert [e.parameter for e in exc.value.errors] == ["executor", "world_fame"]
    assert "did you mean 'world_frame'?" in str(exc.value)


def test_a_missing_relative_file_says_what_it_was_resolved_against(rclpy_context, tmp_path, monkeypatch):
    """A fresh clone without the fixtures beside it: kinova_punyo.yaml's relative assets_dir names a
    folder that is not there.  The error shows the path it tried, what it was resolved against
    (the relative assets_dir, in the working directory), and that $VSF_ASSETS would move it."""
    monkeypatch.delenv("VSF_ASSETS", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
            robot_description_path="robot.urdf", assets_dir="../fixtures/kinova_punyo"))
    assert str(exc.value) == (
        f"parameter 'robot_description_path' = 'robot.urdf': file "
        f"'../fixtures/kinova_punyo/robot.urdf' does not exist (resolved from 'robot.urdf' "
        f"against assets_dir = ../fixtures/kinova_punyo in the working directory {tmp_path}; set "
        "VSF_ASSETS to the assets folder, it wins over assets_dir)")
    # through $VSF_ASSETS: named as such, no hint; an absolute path: nothing to add
    monkeypatch.setenv("VSF_ASSETS", str(tmp_path / "assets"))
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS,
                   parameter_overrides=_params(robot_description_path="robot.urdf"))
    assert str(exc.value).endswith(f"does not exist (resolved from 'robot.urdf' against $VSF_ASSETS = "
                                   f"{tmp_path / 'assets'})")
    with pytest.raises(ConfigError) as exc:
        SensorNode("sensor_node", namespace=NS, parameter_overrides=_params(
            robot_description_path=str(tmp_path / "robot.urdf")))
    assert str(exc.value).endswith(f"file '{tmp_path / 'robot.urdf'}' does not exist")
