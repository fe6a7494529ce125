"""Stamp conversions; every expected value is written out by hand."""
import pytest
from builtin_interfaces.msg import Time

from vsf_sensor_ros.ros.messages.stamps import (copy_stamp, ns_to_stamp, seconds_to_stamp, stamp_to_ns,
                                                to_stamp)


def test_nanoseconds_round_trip_including_before_the_epoch():
    assert stamp_to_ns(Time(sec=3, nanosec=250)) == 3_000_000_250
    assert ns_to_stamp(3_000_000_250) == Time(sec=3, nanosec=250)
    # -0.5 s: sec -1, nanosec 500 000 000 (nanosec is never negative)
    assert ns_to_stamp(-500_000_000) == Time(sec=-1, nanosec=500_000_000)
    assert stamp_to_ns(Time(sec=-1, nanosec=500_000_000)) == -500_000_000


def test_seconds_round_to_the_nearest_nanosecond():
    assert seconds_to_stamp(1.5) == Time(sec=1, nanosec=500_000_000)
    # 0.002 s is 0.00200000000000000004... in binary: still 2 000 000 ns
    assert seconds_to_stamp(0.002) == Time(sec=0, nanosec=2_000_000)
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError):
            seconds_to_stamp(bad)


def test_to_stamp_accepts_what_callers_hold():
    t = Time(sec=7, nanosec=9)
    assert to_stamp(t) is t
    assert to_stamp(None) == Time()
    assert to_stamp(2) == Time(sec=2, nanosec=0)
    assert to_stamp(0.25) == Time(sec=0, nanosec=250_000_000)

    class RclpyLikeTime:
        def to_msg(self):
            return Time(sec=1, nanosec=1)
    assert to_stamp(RclpyLikeTime()) == Time(sec=1, nanosec=1)
    for bad in ("1.0", True):                     # a bool is no number of seconds either
        with pytest.raises(ValueError, match=type(bad).__name__):
            to_stamp(bad)
    c = copy_stamp(t)
    assert c == t and c is not t


def test_stamps_past_int32_seconds_are_rejected_not_wrapped():
    # 2**31 s (2038-01-19T03:14:08Z) is one second past the largest Time.sec
    assert ns_to_stamp((2 ** 31 - 1) * 10 ** 9 + 999_999_999) == Time(sec=2 ** 31 - 1, nanosec=999_999_999)
    with pytest.raises(ValueError):
        ns_to_stamp(2 ** 31 * 10 ** 9)
    with pytest.raises(ValueError):
        ns_to_stamp(-(2 ** 31) * 10 ** 9 - 1)     # one ns before the smallest Time
    with pytest.raises(ValueError):
        to_stamp(1e10)
    with pytest.raises(ValueError):
        to_stamp(-(10 ** 400))                   # an int too large for a float is still an error
    with pytest.raises(ValueError):
        to_stamp(10 ** 400)


def test_seconds_round_exactly_to_the_nearest_nanosecond():
    # 1700000000.1234567 is stored as 1700000000 + 517815 / 2**22 s = ...0.123456716537... s
    assert seconds_to_stamp(1700000000.1234567) == Time(sec=1700000000, nanosec=123456717)
    assert seconds_to_stamp(2) == Time(sec=2, nanosec=0)
