"""sensor_node message handling that must neither crash the node nor publish nonsense.

An in-process ``SensorNode`` (real rclpy, the package's embedded world) with a Punyo pressure
sensor and a Punyo dense force sensor on the bubble.  Its subscription callbacks and services are
called directly with real messages, so the counters can be read right after each message.

Hand-derived numbers used below: the embedded bubble's base is a 24-gon of radius 0.05 m, area
``A = 0.5 * 24 * 0.05**2 * sin(2*pi/24) = 7.76e-3 m^2``, and the Punyo pressure of a force ``F``
pressing along the base normal is ``p = F / A`` in magnitude (``1/A = 128.8 m^-2``).  A force at a
vertex with ``elem1`` set loads that vertex of the dense force field with the force in the body
frame, so a component of ``F`` shows up there unchanged.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter
from sensor_msgs.msg import FluidPressure
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.pointcloud import write_cloud
from vsf_sensor_ros.ros.messages.readings import make_header
from vsf_sensor_ros.ros.parameter_table import ConfigError
from vsf_sensor_ros.ros.sensor_node import SensorNode
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import bubble_push_cloud

A = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)   # bubble base area (m^2)


def _overrides(**extra):
    params = {"sensors": ["pressure", "force"],
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.measured_scale": 100.0, "pressure.publish_markers": False,
              "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo",
              "force.publish_markers": False}
    params.update(extra)
    return [Parameter(k, value=v) for k, v in params.items()]


@pytest.fixture
def node(rclpy_context):
    """A node of its own per test: no test sees another's counters, sensors or buffers."""
    n = SensorNode("robust_sensor_node", namespace="/robustness_test", parameter_overrides=_overrides())
    yield n
    n.destroy_node()


def _published(node):
    return {n: h.stats.published for n, h in node._handles.items()}


def test_a_normal_contact_is_published_for_both_sensors(node):
    before, done = _published(node), node.inputs.contacts_processed
    node._on_contacts(bubble_push_cloud(node, 2.0, sec=1))
    assert node.inputs.contacts_processed == done + 1
    assert _published(node) == {n: v + 1 for n, v in before.items()}
    # 2 N along the normal: p = 2 / A = 257.6 Pa (the PLY stores float32 vertices)
    assert node._handles["pressure"].last_values[0] == pytest.approx(2.0 / A, rel=1e-6)


def test_an_unexpected_exception_in_a_model_is_counted_and_the_node_carries_on(node, monkeypatch):
    h = node._handles["force"]

    def broken(*_args, **_kwargs):
        raise KeyError("simulated library fault")

    # fault injection in the sensor model (not in ROS): an exception type the node does not expect
    monkeypatch.setattr(h.sensor, "predict", broken)
    monkeypatch.setattr(h.sensor, "predict_with_jacobian", broken)
    before, done = _published(node), node.inputs.contacts_processed
    node._on_contacts(bubble_push_cloud(node, 2.0, sec=2))          # must not raise
    assert node.inputs.rejected["internal_error"] == 1
    assert node.inputs.contacts_processed == done and _published(node) == before
    monkeypatch.undo()
    node._on_contacts(bubble_push_cloud(node, 2.0, sec=3))
    assert node.inputs.contacts_processed == done + 1


def test_a_force_beyond_float32_rejects_the_message_for_every_sensor(node):
    # F = 1e300 N: pressure 1e300 / A = 1.29e302 Pa is a finite float64, but vertex 0's local
    # force z = -1e300 N does not fit the float32 fields of the dense force cloud (max 3.4e38)
    before, done = _published(node), node.inputs.contacts_processed
    node._on_contacts(bubble_push_cloud(node, 1e300, sec=4))
    assert node.inputs.rejected["out_of_range"] == 1
    assert node.inputs.contacts_processed == done and _published(node) == before


def test_a_finite_force_giving_an_infinite_pressure_rejects_the_message(node):
    # F = 1e308 N: 1e308 / A = 1.29e310 overflows float64 (max 1.797e308) -> inf pressure
    assert 1e308 / A > np.finfo(np.float64).max
    before, done = _published(node), node.inputs.contacts_processed
    node._on_contacts(bubble_push_cloud(node, 1e308, sec=5))
    assert node.inputs.rejected["non_finite_prediction"] == 1
    assert node.inputs.contacts_processed == done and _published(node) == before


def test_measured_overflowing_after_its_scale_is_rejected_and_counted(node):
    h = node._handles["pressure"]
    m = FluidPressure(fluid_pressure=1e307)      # hPa; x 100 = 1e309 Pa, beyond float64
    m.header.stamp.sec = 6
    node._on_measured("pressure", m)
    assert h.stats.rejected["non_finite"] == 1 and 6_000_000_000 not in h.pairer._meas.stamps


def test_a_dense_residual_beyond_float32_is_not_published_and_is_counted(node):
    h = node._handles["force"]
    # predicted: F = 3e38 N on vertex 0 along the base's -z -> local force (0, 0, -3e38) N, within
    # float32 (max 3.4e38); measured (float64 fields): +1e38 N there -> residual fz = 4e38 N, which
    # the float32 residual cloud cannot carry
    node._on_contacts(bubble_push_cloud(node, 3e38, sec=7))
    assert h.last_values[2] == pytest.approx(-3e38, rel=1e-6)
    nv = len(h.layout.vertices)
    fz = np.zeros(nv)
    fz[0] = 1e38
    m = write_cloud(make_header(Time(sec=7), "punyo"),
                    [("fx", np.zeros(nv)), ("fy", np.zeros(nv)), ("fz", fz)])
    node._on_measured("force", m)
    assert h.stats.rejected["residual_out_of_range"] == 1


def test_save_calibration_with_no_calibrated_sensor_leaves_the_file_unchanged(rclpy_context, tmp_path):
    f = tmp_path / "cal.yaml"
    text = "sensors:\n  pressure: {type: PunyoPressureSensor, calibration: {tare: [12.5]}}\n"
    f.write_text(text)
    n = SensorNode("save_nothing_node", namespace="/robustness_test",
                   parameter_overrides=_overrides(calibration_file=str(f), sensors=["force"]))
    try:
        assert not any(h.sensor.get_calibration() for h in n._handles.values())
        resp = n.measurements.on_save_calibration(Trigger.Request(), Trigger.Response())
    finally:
        n.destroy_node()
    assert resp.success is False
    assert resp.message == f"no sensor is calibrated; {f} left unchanged"
    assert f.read_text() == text


def test_duplicate_contact_body_names_are_a_configuration_error(rclpy_context):
    with pytest.raises(ConfigError) as err:
        SensorNode("dup_names_node", namespace="/robustness_test",
                   parameter_overrides=_overrides(contact_body_names=["punyo", "punyo", "table"]))
    assert err.value.parameter == "contact_body_names" and "'punyo' appears twice" in str(err.value)


def test_contact_body_names_outside_the_world_are_allowed_with_one_warning(rclpy_context, capfd):
    n = SensorNode("ghost_names_node", namespace="/robustness_test",
                   parameter_overrides=_overrides(contact_body_names=["punyo", "object", "ghost"]))
    try:
        # a contact between the bubble and the unmodelled body is decoded and predicted
        T = n.world.body_transform("punyo")
        cs = {("punyo", "ghost"): ContactState(torch.tensor(T[:3, 3][None], dtype=torch.float64),
                                               torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64))}
        msg = contacts_to_pointcloud2(cs, ["punyo", "object", "ghost"], stamp=None, frame_id="world")
        n._on_contacts(msg)
        assert n.inputs.contacts_processed == 1 and not n.inputs.rejected
    finally:
        n.destroy_node()
    err = capfd.readouterr().err
    warnings = [ln for ln in err.splitlines() if "not bodies of the world" in ln]
    assert len(warnings) == 1 and "['ghost']" in warnings[0], err[-2000:]


def test_a_residual_overflowing_float64_is_not_published_and_is_counted(rclpy_context):
    # the pressure sensor alone: the dense force sensor's float32 limit would reject the message
    node = SensorNode("robust_sensor_node", namespace="/robustness_test",
                      parameter_overrides=_overrides(sensors=["pressure"]))
    try:
        h = node._handles["pressure"]
        # predicted p = F / A with F = 1e306 N: 1.288e308 Pa (finite, float64 max 1.797e308);
        # measured -1e306 hPa x 100 = -1e308 Pa; measured - predicted = -2.29e308 -> -inf
        node._on_contacts(bubble_push_cloud(node, 1e306, sec=8))
        assert h.last_values[0] == pytest.approx(1e306 / A, rel=1e-6)
        m = FluidPressure(fluid_pressure=-1e306)
        m.header.stamp.sec = 8
        node._on_measured("pressure", m)
        assert h.stats.rejected["residual_out_of_range"] == 1
    finally:
        node.destroy_node()
