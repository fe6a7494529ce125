"""Fuzz: stamp conversions (``ros.messages.stamps``) against exact integer/fraction arithmetic.

Any integer nanoseconds, any ``Time`` the message type can hold, and any
value a caller may pass as a stamp (doubles of every kind, huge integers,
booleans, strings, rclpy times).  A conversion either gives the exact
reference value or raises ``ValueError``; a stamp that ``Time.sec`` (int32)
cannot hold is rejected, never wrapped.
"""
from __future__ import annotations

from fractions import Fraction

import rclpy.time
from builtin_interfaces.msg import Time
from hypothesis import given
from hypothesis import strategies as st

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp, seconds_to_stamp, stamp_to_ns, to_stamp

NS_WIDE = st.one_of(st.integers(-2 ** 31 * 10 ** 9, 2 ** 31 * 10 ** 9), st.integers(-2 ** 80, 2 ** 80),
                    st.integers(2 ** 31 * 10 ** 9 - 5, 2 ** 31 * 10 ** 9 + 5),
                    st.integers(-2 ** 31 * 10 ** 9 - 5, -2 ** 31 * 10 ** 9 + 5))


@given(ns=NS_WIDE, sec=st.integers(-2 ** 31, 2 ** 31 - 1), nanosec=st.integers(0, 2 ** 32 - 1))
def test_nanoseconds_round_trip_or_rejected(ns, sec, nanosec):
    assert stamp_to_ns(Time(sec=sec, nanosec=nanosec)) == sec * 10 ** 9 + nanosec
    want = ref.ns_to_sec_nanosec(ns)
    try:
        got = ns_to_stamp(ns)
    except ValueError as exc:
        record("stamps_ns", "rejected:out_of_range")
        assert isinstance(want, ref.Rejected), f"{ns} ns rejected: {exc}"
        assert str(ns) in str(exc)
        return
    record("stamps_ns", "accepted")
    assert not isinstance(want, ref.Rejected), f"{ns} ns gave {got}"
    assert (got.sec, got.nanosec) == want and stamp_to_ns(got) == ns


class RclpyLike:
    """A stamp holder with ``to_msg`` (as rclpy ``Time`` has) returning any ``Time``."""

    def __init__(self, sec: int, nanosec: int) -> None:
        self.msg = Time(sec=sec, nanosec=nanosec)

    def to_msg(self) -> Time:
        return self.msg


STAMP_VALUES = st.one_of(
    st.floats(0, 4e9), st.floats(), st.integers(-10, 2 ** 40), st.integers(-2 ** 1100, 2 ** 1100),
    st.booleans(), st.none(), st.text(max_size=3), st.just(float("nan")),
    st.builds(Time, sec=st.integers(-2 ** 31, 2 ** 31 - 1), nanosec=st.integers(0, 10 ** 9 - 1)),
    st.builds(lambda ns: rclpy.time.Time(nanoseconds=ns), st.integers(0, 2 ** 63 - 1)),
    st.builds(RclpyLike, st.integers(-2 ** 40, 2 ** 40), st.integers(0, 10 ** 9 - 1)),
)


def reference_stamp(value):
    """``(sec, nanosec)`` the stamp must have, or ``Rejected``."""
    if value is None:
        return (0, 0)
    if isinstance(value, Time):
        return (value.sec, value.nanosec)
    if isinstance(value, rclpy.time.Time):
        return ref.ns_to_sec_nanosec(value.nanoseconds)
    if isinstance(value, RclpyLike):
        return ref.ns_to_sec_nanosec(value.msg.sec * 10 ** 9 + value.msg.nanosec)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ref.Rejected(frozenset({"bad_type"}))
    ns = ref.seconds_to_ns(value)
    return ns if isinstance(ns, ref.Rejected) else ref.ns_to_sec_nanosec(ns)


@given(value=STAMP_VALUES)
def test_any_stamp_value_converts_exactly_or_is_rejected(value):
    want = reference_stamp(value)
    try:
        got = to_stamp(value)
    except ValueError as exc:
        record("stamp_values", "rejected:" + ",".join(sorted(want.reasons)) if isinstance(want, ref.Rejected)
               else "rejected:unexpected")
        assert isinstance(want, ref.Rejected), f"{value!r} rejected: {exc}"
        return
    record("stamp_values", "accepted")
    assert not isinstance(want, ref.Rejected), f"{value!r} gave {got}, expected rejection {want}"
    assert isinstance(got, Time) and (got.sec, got.nanosec) == want, (value, got, want)
    if isinstance(value, Time):
        assert got is value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        assert seconds_to_stamp(value) == got


def test_reference_rounds_epoch_seconds_exactly():
    # 1700000000.1234567 is stored as 1700000000 + 517815 / 2**22 = 1700000000.12345671653747559... s:
    # the nearest nanosecond is ...123456717; the float product s * 1e9 rounds to ...123456768
    s = 1700000000.1234567
    assert Fraction(s) == Fraction(1700000000) + Fraction(517815, 2 ** 22)
    assert int(round(s * 1e9)) == 1_700_000_000_123_456_768
    assert ref.seconds_to_ns(s) == 1_700_000_000_123_456_717
    assert stamp_to_ns(seconds_to_stamp(s)) == 1_700_000_000_123_456_717
