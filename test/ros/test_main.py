"""Executor choice: callbacks run, and spinning stops on shutdown or SIGINT within 2 s (real rclpy)."""
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from vsf_sensor_ros.demo.processes import default_sigint
from vsf_sensor_ros.ros import main as executors

ROOT = Path(__file__).resolve().parents[2]


def test_auto_picks_the_events_executor_where_rclpy_has_it():
    ex = executors.make_executor("auto")
    try:
        try:
            from rclpy.experimental import EventsExecutor  # noqa: F401
            has_events = True
        except ImportError:
            has_events = False
        if has_events:
            assert not isinstance(ex, SingleThreadedExecutor)
            assert type(ex).__name__ == "EventsExecutor"
        else:
            assert isinstance(ex, SingleThreadedExecutor)
    finally:
        ex.shutdown()


@pytest.mark.parametrize("kind", ["auto", "single_threaded"])
def test_spin_runs_timer_and_subscription_callbacks_and_stops_on_shutdown(kind, ros_domain_id):
    ctx = Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"executor_test_{kind}", context=ctx)
    got, ticks = [], []
    pub = node.create_publisher(String, "executor_test/chatter", 10)
    node.create_subscription(String, "executor_test/chatter", got.append, 10)

    def tick() -> None:
        ticks.append(time.monotonic())
        pub.publish(String(data=str(len(ticks))))

    node.create_timer(0.02, tick)
    ex = executors.make_executor(kind, ctx)
    ex.add_node(node)
    worker = threading.Thread(target=executors.spin, args=(ex, ctx))
    worker.start()
    try:
        end = time.monotonic() + 20.0
        while len(got) < 5 and time.monotonic() < end:
            time.sleep(0.02)
        assert len(got) >= 5 and len(ticks) >= 5
        seq = [int(m.data) for m in got]         # the timer's counter, received in order
        assert seq == sorted(seq) and len(set(seq)) == len(seq) and seq[0] >= 1
    finally:
        t0 = time.monotonic()
        rclpy.shutdown(context=ctx)
        worker.join(timeout=10.0)
        stopped_after = time.monotonic() - t0
        ex.shutdown()
        node.destroy_node()
    assert not worker.is_alive()
    assert stopped_after < 2.0


CHILD = """
import rclpy
from vsf_sensor_ros.ros import main as executors
rclpy.init()
node = rclpy.create_node("executor_sigint_test")
node.create_timer(0.05, lambda: print("tick", flush=True))
ex = executors.spin_node(node, "{kind}")
print("stopped", type(ex).__name__, flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""


@pytest.mark.parametrize("kind, sig", [("auto", signal.SIGINT), ("single_threaded", signal.SIGINT),
                                       ("auto", signal.SIGTERM)])
def test_spinning_process_exits_cleanly_within_2_s_of_sigint(kind, sig, ros_domain_id):
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(kind=kind)], cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=default_sigint)
    try:
        first = proc.stdout.readline()        # blocks until the first timer callback ran
        assert first.strip() == "tick", first
        t0 = time.monotonic()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=10.0)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert "stopped" in out
    assert elapsed < 2.0


def test_a_shutdown_while_the_node_is_built_ends_with_0(ros_domain_id):
    """rclpy's SIGINT / SIGTERM handler shuts the context down; an endpoint made after that fails
    (RCLError, InvalidHandle or NotInitialized by timing): a normal end, exit 0, no traceback."""
    code = ("import sys, rclpy\nfrom rclpy.node import Node\nfrom vsf_sensor_ros.ros.main import run_node\n"
            "def make():\n    rclpy.try_shutdown()\n    return Node('late')\n"
            "sys.exit(run_node('late', make, []))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    bug = code.replace("    rclpy.try_shutdown()\n", "    raise RuntimeError('a bug')\n")
    r = subprocess.run([sys.executable, "-c", bug], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1     # while the context is up an exception is a failure, as before
