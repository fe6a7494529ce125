"""``builtin_interfaces/Time`` <-> integer nanoseconds (exact, for pairing); seconds -> ``Time``.
A time an int32 ``sec`` cannot hold raises ``ValueError`` rather than wrap."""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

from builtin_interfaces.msg import Time

NS_PER_S = 1_000_000_000
SEC_MIN, SEC_MAX = -2 ** 31, 2 ** 31 - 1
"""Range of ``Time.sec`` (int32)."""


def stamp_to_ns(stamp: Time) -> int:
    """``builtin_interfaces/Time`` -> integer nanoseconds (``sec * 10**9 + nanosec``)."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def ns_to_stamp(ns: int) -> Time:
    """Integer nanoseconds -> ``builtin_interfaces/Time``; ValueError: ``sec`` past int32."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    if not SEC_MIN <= sec <= SEC_MAX:
        raise ValueError(f"stamp of {int(ns)} ns is outside builtin_interfaces/Time "
                         f"(sec {sec} is not an int32)")
    return Time(sec=sec, nanosec=nanosec)


def seconds_to_stamp(seconds: float) -> Time:
    """Seconds (float or integer) -> ``builtin_interfaces/Time``, at the nearest nanosecond, exactly
    (as a fraction, ties to even; ``seconds * 1e9`` is off by up to 128 ns today).  ValueError naming
    it: not a real number, not finite, negative, or past ``Time``'s range."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise ValueError(f"stamp must be seconds as a real number, got {type(seconds).__name__}")
    integral = isinstance(seconds, numbers.Integral)   # exact however large (float() could overflow)
    if not (integral or math.isfinite(seconds)) or seconds < 0:
        raise ValueError(f"stamp must be finite and non-negative seconds, got {seconds}")
    return ns_to_stamp(round(Fraction(int(seconds) if integral else float(seconds)) * NS_PER_S))


def copy_stamp(stamp: Time) -> Time:
    """A new ``Time`` equal to ``stamp`` (messages must not share a mutable stamp)."""
    return Time(sec=stamp.sec, nanosec=stamp.nanosec)


def to_stamp(value: Any) -> Time:
    """A ``Time`` (as is), an rclpy ``Time``, seconds (:func:`seconds_to_stamp`) or ``None`` (zero)
    -> ``builtin_interfaces/Time``; ValueError: another type, or seconds not finite, negative or past
    ``Time``'s range."""
    if value is None:
        return Time()
    if isinstance(value, Time):
        return value
    if hasattr(value, "to_msg"):
        msg = value.to_msg()
        if isinstance(msg, Time) and not SEC_MIN <= int(msg.sec) <= SEC_MAX:
            raise ValueError(f"stamp {value} is outside builtin_interfaces/Time "
                             f"(sec {msg.sec} is not an int32)")
        return msg
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return seconds_to_stamp(value)
    raise ValueError(
        f"stamp must be builtin_interfaces/Time, rclpy Time or seconds, got {type(value).__name__}")
