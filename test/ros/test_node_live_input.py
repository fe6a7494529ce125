"""Live parameter requests and messages a remote caller controls must never take the node down.

An in-process ``SensorNode`` (real rclpy, the package's embedded world) with a Punyo pressure
sensor and a Klampt pad.  Requests go through ``set_parameters`` (rclpy's own callbacks, as
``ros2 param set`` would), messages through the subscription callbacks, services are called
directly, so every answer and counter can be read right after each step.  Each refusal must name
the offending value and leave the sensor exactly as it was.
"""
from __future__ import annotations

import math

import pytest
from geometry_msgs.msg import WrenchStamped
from rclpy.parameter import Parameter
from sensor_msgs.msg import FluidPressure
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.sensor_node import SensorNode

from .node_helpers import bubble_push_cloud

A = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)   # the embedded bubble's base area (m^2)
NS = "/live_input_test"


def _overrides():
    params = {"sensors": ["pressure", "pad"],
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.publish_markers": False,
              "pad.type": "ContactSensor", "pad.attachment": "tool_link", "pad.publish_markers": False,
              "pad.patchMin": [-0.05, -0.05], "pad.patchMax": [0.05, 0.05]}
    return [Parameter(k, value=v) for k, v in params.items()]


@pytest.fixture
def node(rclpy_context):
    n = SensorNode("live_input_node", namespace=NS, parameter_overrides=_overrides())
    yield n
    n.destroy_node()


@pytest.mark.parametrize("name, value", [("sensors", ["pressure"]), ("sensors", ["pressure", "pad", "new"]),
                                         ("pressure.type", "PunyoDenseForceSensor"),
                                         ("pad.attachment", "punyo"), ("pad.patchTolerance", 0.01)])
def test_the_sensor_set_and_what_a_model_is_built_from_are_read_only(node, name, value):
    res = node.set_parameters([Parameter(name, value=value)])[0]
    assert not res.successful
    assert name in res.reason and "read-only" in res.reason, res.reason
    assert set(node._handles) == {"pressure", "pad"}
    assert node._handles["pressure"].config.type == "PunyoPressureSensor"
    assert node._handles["pad"].sensor.attachModelName == "tool_link"


def _gain_answer(node: SensorNode) -> str:
    return node.measurements.on_calibrate_gain("pressure", Trigger.Request(), Trigger.Response()).message


def test_a_scale_change_clears_the_contact_samples_of_calibrate_gain(node):
    for sec in range(1, 4):   # three pairs with contact, 1 N .. 3 N (p = F / A)
        node._on_contacts(bubble_push_cloud(node, float(sec), sec))
        m = FluidPressure(fluid_pressure=101325.0 + sec / A)
        m.header.stamp.sec = sec
        node._on_measured("pressure", m)
    assert len(node._handles["pressure"].contact_pairs) == 3
    assert node.set_parameters([Parameter("pressure.measured_scale", value=100.0)])[0].successful
    assert len(node._handles["pressure"].contact_pairs) == 0
    assert "has 0 contact samples" in _gain_answer(node), _gain_answer(node)


def _tare_all(node: SensorNode) -> Trigger.Response:
    return node.measurements.on_tare_all(Trigger.Request(), Trigger.Response())


def _empty(node: SensorNode, sec: int):
    msg = contacts_to_pointcloud2({}, node.world.body_names, stamp=None, frame_id="world")
    msg.header.stamp.sec = sec
    return msg


def test_a_rejected_message_does_not_make_a_measured_stream(node):
    for sec in range(1, 11):   # ten contact-free pairs for the pressure sensor
        node._on_contacts(_empty(node, sec))
        m = FluidPressure(fluid_pressure=101325.0)
        m.header.stamp.sec = sec
        node._on_measured("pressure", m)
    bad = WrenchStamped()
    bad.wrench.force.x = float("nan")
    bad.header.stamp.sec = 10
    node._on_measured("pad", bad)
    assert sum(node._handles["pad"].stats.rejected.values()) == 1
    resp = _tare_all(node)
    assert resp.success, resp.message
    assert resp.message.splitlines()[0].startswith("pressure: tared with 10 of 10 samples")
    assert "skipped (no measured stream): pad" in resp.message


def test_a_refused_global_tare_says_no_line_was_applied(node):
    for sec in range(1, 11):
        node._on_contacts(_empty(node, sec))
        m = FluidPressure(fluid_pressure=101325.0)
        m.header.stamp.sec = sec
        node._on_measured("pressure", m)
    w = WrenchStamped()
    w.header.stamp.sec = 1000   # accepted, but pairs with no prediction: the pad's tare fails
    node._on_measured("pad", w)
    before = node._handles["pressure"].sensor.get_calibration()
    resp = _tare_all(node)
    assert not resp.success
    lines = resp.message.splitlines()
    assert lines[0].startswith("not applied: pressure: tared with 10 of 10 samples"), lines
    assert lines[1].startswith("not applied: pad"), lines
    assert node._handles["pressure"].sensor.get_calibration() == before


def _get(probe, names):
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python
    res = probe.call(GetParameters, "/sensor_node/get_parameters", GetParameters.Request(names=list(names)))
    return [parameter_value_to_python(v) for v in res.values]


def test_live_parameters_of_the_wrong_type_or_range_over_dds_change_nothing(tmp_path, rclpy_context):
    """``ros2 param set`` through the node's SetParameters services (real DDS, a node process):
    every refusal names parameter and value, an atomic request with one bad value sets nothing,
    and the node keeps predicting."""
    from .sensor_node_scene import empty_cloud, stamp, start_node, wait_stamp
    with start_node(tmp_path, "live_types_probe") as (proc, probe, _cal):
        names = ["input_timeout", "pressure.jacobian_decimation", "pressure.measured_delay"]
        before = _get(probe, names)
        assert before == [3.0, 1, 0.0]                     # the table's defaults
        cases = [("input_timeout", "abc", "needs a double, got a string"),
                 ("input_timeout", [1.0, 2.0], "needs a double, got a double array"),
                 ("input_timeout", True, "needs a double, got a bool"),
                 ("pressure.jacobian_decimation", 2.5, "needs an integer, got a double"),
                 ("pressure.measured_delay", "0.07", "needs a double, got a string")]
        for name, value, words in cases:
            res = probe.set_params({name: value})[0]
            assert not res.successful, (name, value)
            assert f"parameter '{name}' = {value!r}" in res.reason and words in res.reason, res.reason
        # out of range: rclpy's own range check names parameter and value
        for name, value in (("input_timeout", 0.0), ("input_timeout", math.nan), ("input_timeout", math.inf),
                            ("pressure.jacobian_decimation", 0)):
            res = probe.set_params({name: value})[0]
            assert not res.successful and name in res.reason and f"value: {value}" in res.reason, res.reason
        # all or nothing: a good value beside a bad one is not set either
        res = probe.set_params({"input_timeout": 7.0, "pressure.measured_delay": "x"}, atomic=True)[0]
        assert not res.successful and "pressure.measured_delay" in res.reason
        assert _get(probe, names) == before
        assert probe.set_params({"input_timeout": 7})[0].successful        # an integer for a double is fine
        assert _get(probe, ["input_timeout"]) == [7.0]
        assert proc.alive()
        probe.send("/contacts", empty_cloud(stamp(80)))
        assert wait_stamp(probe, "/pressure/predicted", stamp(80))
