"""A measured stream that stopped is named as stopped on /diagnostics, never as a clock offset.

An unstamped measured stream (``std_msgs/Float32`` on ``/punyo/pressure``) is stamped on arrival
with the node's clock, the same clock that keys the predictions it pairs with: the two can never
be on different clocks.  When everything pauses and only contacts resume, the pairer's last
recorded gap spans the pause (the pause's length, seconds); that says the measured stream is
stale, which the stopped-stream sentence already says.  The real in-process ``SensorNode`` of
test_loud_configuration.py reports every 0.2 s with ``input_timeout`` 1 s; a fixed pairing
tolerance of 30 ms makes any gap over 3 s (100 tolerances) a would-be clock hint, so a 4 s pause
is one.  The opposite case (the stamped measured stream resuming alone, contacts stopped) is the
same: a stopped stream, no clock hint.
"""
from __future__ import annotations

import time

from std_msgs.msg import Float32
from std_srvs.srv import Trigger

from .node_helpers import bubble_push_cloud
from .test_loud_configuration import _params, joint_state, level, make, no_contacts, values  # noqa: F401

TOPIC = "/punyo/pressure"
FLOAT32 = {"pressure.measured_topic": TOPIC, "pressure.measured_type": "std_msgs/msg/Float32",
           "max_stamp_difference": 0.03}


def _run(node, lis, seconds: float, sec: list, measured: bool, contact: bool = True) -> None:
    """Joint states and contacts (and the Float32 pressure when ``measured``) every ~50 ms;
    ``contact``: a zero push on the bubble (a contact), else no contact at all."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sec[0] += 1
        node._on_joint_state(joint_state(sec[0]))
        node._on_contacts(bubble_push_cloud(node, 0.0, sec[0]) if contact else no_contacts(node, sec[0]))
        if measured:
            node._on_measured("pressure", Float32(data=101325.0))
        lis.spin(0.05)


def test_contacts_resuming_without_the_stopped_float32_stream_give_no_clock_hint(make):  # noqa: F811
    node, lis = make(parameter_overrides=_params(**FLOAT32))
    h = node._handles["pressure"]
    sec = [0]
    _run(node, lis, 1.0, sec, measured=True)
    assert len(h.pairs) > 0                 # the streams paired: same clock, as they must
    lis.spin(4.0)                           # everything pauses 4 s (> input_timeout 1 s) ...
    lis.reports.clear()
    _run(node, lis, 0.5, sec, measured=False)   # ... then only contacts (and joints) resume
    # the pairer alone records the gap across the pause (the scenario is the one at stake) ...
    assert "s behind contacts stamps" in (h.pairer.offset_hint() or "")
    stopped = f"{TOPIC} (std_msgs/msg/Float32) stopped"
    seen = 0
    end = time.monotonic() + 1.5            # ~7 more reports while contacts flow alone
    while time.monotonic() < end:
        _run(node, lis, 0.1, sec, measured=False)
        for arr in lis.reports:
            for st in arr.status:
                if st.name.endswith(": pressure"):
                    seen += 1
                    assert level(st) == 1 and stopped in st.message \
                        and "different clocks" not in st.message, st.message
                    assert values(st)["pairing"] == "ok"
        lis.reports.clear()
    assert seen >= 3
    # a tare with nothing paired (as after a simulator reset) names the stopped stream, not a clock
    h.pairs.clear()
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not ans.success
    assert "different clocks" not in ans.message and f"nothing on {TOPIC} for" in ans.message, ans.message


def test_the_float32_stream_resuming_pairs_again_and_its_status_clears_to_ok(make):  # noqa: F811
    node, lis = make(parameter_overrides=_params(**FLOAT32))
    h = node._handles["pressure"]
    sec = [0]
    _run(node, lis, 0.6, sec, measured=True)
    lis.spin(4.0)
    _run(node, lis, 0.4, sec, measured=False)
    before = len(h.pairs)
    _run(node, lis, 0.8, sec, measured=True)   # the driver is back: pairs again, the status clears
    assert len(h.pairs) > before
    st = lis.status(": pressure", lambda st: level(st) == 0, timeout=5.0)
    assert values(st)["pairing"] == "ok"


def test_a_tare_after_the_measured_stream_stopped_succeeds_and_says_its_samples_are_older(make):  # noqa: F811
    node, lis = make(parameter_overrides=_params(**FLOAT32))
    sec = [0]
    _run(node, lis, 1.0, sec, measured=True, contact=False)
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert ans.success and "note:" not in ans.message, ans.message     # streams flowing: no note
    lis.spin(2.5)                                   # everything pauses (> input_timeout 1 s)
    _run(node, lis, 0.3, sec, measured=False, contact=False)   # contacts resume, the pressure does not
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert ans.success, ans.message                 # the buffered contact-free pairs are still valid
    # contacts flow again: only the stopped stream is named
    assert f"nothing on {TOPIC} for " in ans.message and "/contacts" not in ans.message, ans.message
    end = time.monotonic() + 1.5                    # joint states stop, contacts and pressure flow:
    while time.monotonic() < end:                   # the node predicts with the last joint state,
        sec[0] += 1                                 # so the pairs are fresh and the tare says nothing
        node._on_contacts(no_contacts(node, sec[0]))
        node._on_measured("pressure", Float32(data=101325.0))
        lis.spin(0.05)
    ans = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert ans.success and "note:" not in ans.message, ans.message


def test_a_stamped_measured_stream_resuming_alone_after_a_pause_gives_no_clock_hint(make):  # noqa: F811
    """The opposite case: everything pauses, then only the stamped FluidPressure driver resumes,
    its stamps 10 s on (the pause) from the last contacts stamp.  The pairer records that gap;
    it is a stopped contacts stream, which the sensor's status names, not another clock."""
    from sensor_msgs.msg import FluidPressure
    node, lis = make(parameter_overrides=_params(max_stamp_difference=0.03))   # FluidPressure, Pa
    h = node._handles["pressure"]
    sec = [0]

    def pressure(s: int) -> FluidPressure:
        m = FluidPressure(fluid_pressure=101325.0)
        m.header.stamp.sec = s
        return m

    end = time.monotonic() + 1.0
    while time.monotonic() < end:                   # both flow with the same stamps: pairs
        sec[0] += 1
        node._on_joint_state(joint_state(sec[0]))
        node._on_measured("pressure", pressure(sec[0]))
        node._on_contacts(no_contacts(node, sec[0]))   # the last offer is a prediction
        lis.spin(0.05)
    assert len(h.pairs) > 0
    lis.spin(2.5)                                   # everything pauses (> input_timeout 1 s) ...
    lis.reports.clear()
    sec[0] += 10
    seen = 0
    end = time.monotonic() + 2.0                    # ... then only the pressure resumes
    while time.monotonic() < end:
        sec[0] += 1
        node._on_measured("pressure", pressure(sec[0]))
        lis.spin(0.05)
        for arr in lis.reports:
            for st in arr.status:
                if st.name.endswith(": pressure"):
                    seen += 1
                    assert level(st) == 1 and "/contacts" in st.message \
                        and "different clocks" not in st.message, st.message
                    assert values(st)["pairing"] == "ok"
        lis.reports.clear()
    assert "ahead of contacts stamps" in (h.pairer.offset_hint() or "")   # the pairer alone would say it
    assert seen >= 3
