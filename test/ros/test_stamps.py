"""Stamp conversions; every expected value is written out by hand."""
import pytest
from builtin_interfaces.msg import Time

from vsf_sensor_ros.ros.stamps import (copy_stamp, ns_to_stamp, seconds_to_stamp, stamp_to_ns,
                                       stamp_to_seconds, to_stamp)


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
    assert stamp_to_seconds(Time(sec=2, nanosec=250_000_000)) == 2.25
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="non-negative seconds"):
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
    with pytest.raises(ValueError, match="got str"):
        to_stamp("1.0")
    with pytest.raises(ValueError, match="got bool"):
        to_stamp(True)
    c = copy_stamp(t)
    assert c == t and c is not t
