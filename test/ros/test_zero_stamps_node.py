"""Stamp 0 in sensor_node's pairing: a measured message stamped 0 is rejected, counted per topic and
named on /diagnostics and in the log; contacts stamped 0 are predicted but paired with nothing.

The real in-process ``SensorNode`` of test_loud_configuration.py (reports every 0.2 s, a listener
reads ``/diagnostics`` over DDS).  The pairing tolerance is the widest fixed one (10 s), so that a
measurement taken at its stamp 0 would pair with the oldest kept prediction (5 s: the nearest to
0 within 10 s); it must pair with nothing, and the measurement stamped 6 s still pairs with the
prediction of 6 s.
"""
from __future__ import annotations

from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float32

from .node_helpers import spin_until
from .test_loud_configuration import (_params, joint_state, level, make, no_contacts,  # noqa: F401
                                      pressure, values)

S = 1_000_000_000
TOPIC = "/punyo/pressure"
CONTACTS = "/loud_test/contacts"          # the node's relative 'contacts' in the test's namespace


def test_measured_stamped_0_is_rejected_counted_and_named_never_paired_with_the_oldest_prediction(
        make, capfd):  # noqa: F811
    node, lis = make(parameter_overrides=_params(**{"pressure.measured_topic": TOPIC,
                                                    "max_stamp_difference": 10.0}))
    h = node._handles["pressure"]
    node._on_joint_state(joint_state(1))
    node._on_contacts(no_contacts(node, 5))                      # prediction stamped 5 s
    node._on_measured("pressure", pressure(101325.0, 0))         # a driver that never sets the stamp
    assert len(h.pairs) == 0                                     # not paired with the 5 s prediction
    node._on_contacts(no_contacts(node, 0))                      # contacts stamped 0: predicted ...
    node._on_measured("pressure", pressure(101325.0, 0))         # ... and not paired with this either
    node._on_contacts(no_contacts(node, 6))
    node._on_measured("pressure", pressure(101400.0, 6))
    assert [p.stamp_ns for p in h.pairs] == [6 * S]              # its own instant
    assert h.pairer._pred.stamps == [5 * S]                 # the 0 s prediction was never kept
    assert h.stats.published == 3 and node.inputs.stamp_jumps_backwards == 0    # 0 is no reset

    st = lis.status(": pressure", lambda s: values(s).get(f"zero_stamps.{TOPIC}") == "2")
    v = values(st)
    assert level(st) == 1 and v["measured_stamp_jumps_backwards"] == "0"
    assert f"2 measured messages on {TOPIC} rejected for stamp 0" in st.message
    inputs = lis.status(": inputs", lambda s: f"zero_stamps.{CONTACTS}" in values(s))
    assert values(inputs)[f"zero_stamps.{CONTACTS}"] == "1" and values(inputs)["stamp_jumps_backwards"] == "0"
    err = capfd.readouterr().err
    assert all(line in err for line in (f"{TOPIC}: measured message stamped 0 rejected (1 so far",
                                        f"{CONTACTS}: contacts stamped 0 (1 so far)")), err
    assert err.count(f"{TOPIC}: measured message stamped 0") == 1        # the second within the throttle


def test_a_header_less_measured_message_before_clock_arrives_is_rejected_then_pairs_once_it_has(
        make):  # noqa: F811
    """Under use_sim_time the node clock reads 0 until /clock arrives: a Float32's receive time is no
    time then.  Once /clock says 5 s, the Float32 and the contacts received at 5 s pair."""
    node, lis = make(parameter_overrides=_params(**{
        "pressure.measured_topic": TOPIC, "pressure.measured_type": "std_msgs/msg/Float32",
        "use_sim_time": True}))
    h = node._handles["pressure"]
    assert node.get_clock().now().nanoseconds == 0
    node._on_joint_state(joint_state(1))
    node._on_contacts(no_contacts(node, 1))                      # received at node time 0
    node._on_measured("pressure", Float32(data=101325.0))
    assert len(h.pairs) == 0 and h.stats.zero_stamps[TOPIC] == 1
    assert h.pairer.zero_stamps == {"predicted": 1, "measured": 1}
    clock = lis.probe.create_publisher(Clock, "/clock", 10)
    msg = Clock()
    msg.clock.sec = 5

    def arrived() -> bool:
        clock.publish(msg)
        return node.get_clock().now().nanoseconds == 5 * S
    assert spin_until(lis.ex, arrived)
    node._on_contacts(no_contacts(node, 2))
    node._on_measured("pressure", Float32(data=101325.0))
    assert [p.stamp_ns for p in h.pairs] == [2 * S]             # the contacts stamp of the pair
    st = lis.status(": pressure", lambda s: values(s).get(f"zero_stamps.{TOPIC}") == "1")
    assert "use_sim_time and no /clock yet" in st.message and level(st) == 1
