"""``builtin_interfaces/Time`` <-> integer nanoseconds / float seconds.

The package pairs messages by stamp in integer nanoseconds (exact, no
float rounding); seconds are for people (logs, plots, parameters).  A
``Time`` is ``sec`` (int32) + ``nanosec`` (uint32, ``< 10**9``); a time
before the epoch is a negative ``sec`` with a non-negative ``nanosec``
(``-0.5 s`` = ``sec -1, nanosec 500000000``), the same normalisation rclpy
uses.
"""
from __future__ import annotations

import math
from typing import Any

from builtin_interfaces.msg import Time

NS_PER_S = 1_000_000_000


def stamp_to_ns(stamp: Time) -> int:
    """``builtin_interfaces/Time`` -> integer nanoseconds (``sec * 10**9 + nanosec``)."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def ns_to_stamp(ns: int) -> Time:
    """Integer nanoseconds -> ``builtin_interfaces/Time`` (``nanosec`` in ``[0, 10**9)``)."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def stamp_to_seconds(stamp: Time) -> float:
    """``builtin_interfaces/Time`` -> float seconds (rounded to the nearest double)."""
    return stamp_to_ns(stamp) / NS_PER_S


def seconds_to_stamp(seconds: float) -> Time:
    """Float seconds -> ``builtin_interfaces/Time``, rounded to the nearest nanosecond.

    Raises:
        ValueError: ``seconds`` is not finite or negative, naming the value.
    """
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"stamp must be finite and non-negative seconds, got {seconds}")
    return ns_to_stamp(int(round(float(seconds) * NS_PER_S)))


def copy_stamp(stamp: Time) -> Time:
    """A new ``Time`` equal to ``stamp`` (messages must not share a mutable stamp)."""
    return Time(sec=stamp.sec, nanosec=stamp.nanosec)


def to_stamp(value: Any) -> Time:
    """Any stamp a caller may hold -> ``builtin_interfaces/Time``.

    Args:
        value: a ``Time`` (returned as is), an rclpy ``Time`` (``to_msg``),
            seconds (int or float, see :func:`seconds_to_stamp`), or ``None``
            (zero).

    Raises:
        ValueError: another type, or seconds that are not finite or negative.
    """
    if value is None:
        return Time()
    if isinstance(value, Time):
        return value
    if hasattr(value, "to_msg"):
        return value.to_msg()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return seconds_to_stamp(value)
    raise ValueError(
        f"stamp must be builtin_interfaces/Time, rclpy Time or seconds, got {type(value).__name__}")
