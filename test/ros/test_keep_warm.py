"""KeepWarm runs its work only while no real message arrives (real rclpy timer and executor)."""
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from vsf_sensor_ros.ros.keep_warm import KeepWarm


def spin_for(ex, seconds: float, each=None) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.002)
        if each is not None:
            each()


def test_work_runs_while_idle_and_not_while_messages_arrive(rclpy_context):
    node = rclpy.create_node("keep_warm_test")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    calls = []
    # period 0.1 s: a loaded host can stall one spin_once for tens of ms, which
    # must not count as idleness while the "messages" below arrive every loop
    kw = KeepWarm(node, lambda: calls.append(time.monotonic()), period=0.1)
    try:
        spin_for(ex, 0.8)                       # idle: the work keeps running (~7 times)
        assert kw.runs == len(calls) >= 3
        kw.touch()                              # the first "message" arrives before the next spin:
        n = len(calls)                          # a tick due at the boundary is not taken for idleness
        spin_for(ex, 0.5, each=kw.touch)        # a "message" every loop, far more often than 0.1 s
        assert len(calls) == n
        spin_for(ex, 0.5)                       # idle again
        assert len(calls) > n
    finally:
        ex.shutdown()
        node.destroy_node()


def test_failing_work_is_counted_not_raised(rclpy_context):
    node = rclpy.create_node("keep_warm_fail_test")
    ex = SingleThreadedExecutor()
    ex.add_node(node)

    def boom() -> None:
        raise RuntimeError("no input yet")

    kw = KeepWarm(node, boom, period=0.01)
    try:
        spin_for(ex, 0.3)
        assert kw.errors >= 3 and kw.runs == 0
    finally:
        ex.shutdown()
        node.destroy_node()
    with pytest.raises(ValueError, match="0"):
        KeepWarm(node, boom, period=0.0)
