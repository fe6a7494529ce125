"""``<s>/measured_si``: the measured stream as the node understood it, in SI, stamped as paired.

In process (real rclpy and DDS, the embedded world).  A probe subscribes ``<s>/measured_si``,
``<s>/predicted`` and ``<s>/residual``; contacts and measured messages are handed to the node's
callbacks.  Expected values are the stand-in driver's own numbers: a reading in hPa x 100 = Pa,
stamped with the contacts stamp it was paired with (not the measured message's receive time).
"""
from __future__ import annotations

import time

import pytest
from builtin_interfaces.msg import Time
from rclpy.parameter import Parameter
from sensor_msgs.msg import FluidPressure
from std_msgs.msg import Float32

from vsf_sensor_ros.ros.sensor_node import SensorNode

from .node_helpers import Probe, bubble_push_cloud

NS = "/measured_si_test"


def _node(name: str, measured_type: str) -> SensorNode:
    params = {"sensors": ["pressure"], "pressure.type": "PunyoPressureSensor",
              "pressure.attachment": "punyo", "pressure.measured_type": measured_type,
              "pressure.measured_scale": 100.0,
              "pressure.publish_markers": False, "pressure.publish_jacobian": False}
    return SensorNode(name, namespace=NS,
                      parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


def _stamp_ns(stamp: Time) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _probe_for(node: SensorNode) -> Probe:
    probe = Probe(f"probe_{node.get_name()}")
    for suffix, mtype in (("measured_si", FluidPressure), ("predicted", FluidPressure),
                          ("residual", FluidPressure)):
        probe.listen(f"{NS}/pressure/{suffix}", mtype)
    ep = node._handles["pressure"].endpoints
    assert probe.spin_until(lambda: all(p.get_subscription_count() > 0
                                        for p in (ep.measured_si, ep.predicted, ep.residual)))
    return probe


@pytest.fixture
def stamped(rclpy_context):
    node = _node("measured_si_stamped", "sensor_msgs/msg/FluidPressure")
    probe = _probe_for(node)
    yield node, probe
    probe.destroy_node()
    node.destroy_node()


def test_a_stamped_hpa_reading_is_republished_in_pa_with_the_contacts_stamp(stamped):
    node, probe = stamped
    # 2 N pressing the bubble at t = 5 s; the driver's reading of that instant: 1013.25 hPa
    node._on_contacts(bubble_push_cloud(node, 2.0, 5))
    node._on_measured("pressure", FluidPressure(header=bubble_push_cloud(node, 0.0, 5).header,
                                                fluid_pressure=1013.25))
    topic = f"{NS}/pressure/"
    assert probe.spin_until(lambda: all(probe.received[topic + s] for s in
                                        ("measured_si", "predicted", "residual")))
    si, = probe.received[topic + "measured_si"]
    pred, = probe.received[topic + "predicted"]
    res, = probe.received[topic + "residual"]
    assert si.fluid_pressure == pytest.approx(101325.0, abs=1e-9)       # 1013.25 hPa x 100
    assert _stamp_ns(si.header.stamp) == _stamp_ns(pred.header.stamp) == 5_000_000_000
    assert si.header.frame_id == pred.header.frame_id                   # one frame, one unit
    # the residual the node publishes is this measured value minus the prediction of that stamp
    assert res.fluid_pressure == pytest.approx(si.fluid_pressure - pred.fluid_pressure, abs=1e-6)
    assert pred.fluid_pressure > 0.0       # untared: + (force into the bubble) / A_base


def test_a_measured_message_that_pairs_with_nothing_is_not_republished(stamped):
    node, probe = stamped
    node._on_contacts(bubble_push_cloud(node, 0.0, 5))
    # 3 s away from every prediction: never paired, so never republished
    node._on_measured("pressure", FluidPressure(header=bubble_push_cloud(node, 0.0, 8).header,
                                                fluid_pressure=1013.25))
    probe.spin_for(0.5)
    assert probe.received[f"{NS}/pressure/predicted"]
    assert probe.received[f"{NS}/pressure/measured_si"] == []


def test_a_headerless_driver_reading_is_stamped_with_the_paired_contacts_stamp(rclpy_context):
    node = _node("measured_si_headerless", "std_msgs/msg/Float32")
    probe = _probe_for(node)
    try:
        # contacts stamped by a simulator clock (1000 s on) unrelated to the node's receive times;
        # header-less readings pair by receive time, and the republished reading carries the
        # contacts stamp of its pair
        sent = []
        for k in range(30):
            msg = bubble_push_cloud(node, 0.0, 1000 + k)
            sent.append(_stamp_ns(msg.header.stamp))
            node._on_contacts(msg)
            node._on_measured("pressure", Float32(data=1000.0 + k))
            time.sleep(0.01)
        topic = f"{NS}/pressure/measured_si"
        assert probe.spin_until(lambda: len(probe.received[topic]) >= 20)
        for m in probe.received[topic]:
            stamp = _stamp_ns(m.header.stamp)
            assert stamp in sent
            k = sent.index(stamp)
            # paired with the contacts of its own frame or a neighbour's (receive-time pairing)
            # (1000 + j hPa is exact in float32, and x 100 exact in float64)
            assert m.fluid_pressure in {100.0 * (1000.0 + j) for j in (k - 1, k, k + 1)}
    finally:
        probe.destroy_node()
        node.destroy_node()
