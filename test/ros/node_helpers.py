"""Test-side helpers: run ``sensor_node`` as a child process and talk to it over real DDS.

The node runs through its console entry point code (``python -m
vsf_sensor_ros.ros.sensor_node --ros-args --params-file ...``), so ``main()``
is exercised exactly as ``ros2 run`` would.  A :class:`Probe` node in the
test process publishes inputs and records every message on the topics it
subscribes to.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters, SetParametersAtomically
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, PointCloud2

from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"
RELIABLE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
BEST_EFFORT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)


def write_params(path: Path, params: Dict[str, Any], node_name: str = "sensor_node") -> Path:
    """Write a ROS 2 parameter file ``{node: {ros__parameters: params}}`` (dotted keys kept flat)."""
    path.write_text(yaml.safe_dump({node_name: {"ros__parameters": params}}, sort_keys=False))
    return path


class NodeProcess(ManagedProcess):
    """``sensor_node`` in a child process, through the package's own process helper.

    :class:`vsf_sensor_ros.demo.processes.ManagedProcess` (the demo's): own
    process group, output to a log file, stopped SIGINT first (clean rclpy
    shutdown) and reaped.
    """

    def __init__(self, params_file: Path, log_path: Path, extra_args: Sequence[str] = (),
                 env: Optional[Dict[str, str]] = None) -> None:
        super().__init__("sensor_node", module_command("vsf_sensor_ros.ros.sensor_node",
                                                       ["--params-file", str(params_file), *extra_args]),
                         child_env(env), log_path, cwd=ROOT)

    def start(self) -> "NodeProcess":
        """Start the child; ``self``."""
        super().start()
        return self

    def alive(self) -> bool:
        """The child is still running."""
        return self.running()

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """SIGINT (clean rclpy shutdown), then SIGTERM / SIGKILL if it hangs; the return code."""
        return super().stop(grace_int_s=timeout)

    def wait(self, timeout: Optional[float] = None) -> int:
        """The child's exit code once it exits; TimeoutExpired."""
        return self.proc.wait(timeout=timeout)


class Probe(Node):
    """A test node: publishes inputs, records outputs per topic, calls services and parameters."""

    def __init__(self, name: str = "probe", target: str = "sensor_node") -> None:
        super().__init__(name)
        self.target = target
        self.received: Dict[str, List[Any]] = {}
        self._subs: Dict[str, Any] = {}
        self._pubs: Dict[str, Any] = {}

    def listen(self, topic: str, msg_type: type, qos: QoSProfile = RELIABLE) -> List[Any]:
        """Record every message on ``topic`` in ``self.received[topic]`` (returned)."""
        if topic not in self._subs:
            self.received[topic] = []
            self._subs[topic] = self.create_subscription(
                msg_type, topic, lambda m, t=topic: self.received[t].append(m), qos)
        return self.received[topic]

    def publisher(self, topic: str, msg_type: type, qos: QoSProfile = RELIABLE):
        """A (cached) publisher on ``topic``."""
        key = f"{topic}|{qos.reliability}"
        if key not in self._pubs:
            self._pubs[key] = self.create_publisher(msg_type, topic, qos)
        return self._pubs[key]

    def spin_until(self, cond: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Spin until ``cond()`` or ``timeout`` (s); the final value of ``cond()``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if cond():
                return True
            rclpy.spin_once(self, timeout_sec=0.02)
        return cond()

    def spin_for(self, seconds: float) -> None:
        """Spin for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rclpy.spin_once(self, timeout_sec=0.02)

    def wait_for_subscriber(self, topic: str, msg_type: type, timeout: float = 15.0,
                            qos: QoSProfile = RELIABLE) -> bool:
        """Wait until the node subscribes ``topic`` (so a publish is not lost).

        Matching is seen from this side first; the short settle afterwards
        lets the node's side of the discovery finish too.
        """
        pub = self.publisher(topic, msg_type, qos)
        ok = self.spin_until(lambda: pub.get_subscription_count() > 0, timeout)
        if ok:
            self.spin_for(0.5)
        return ok

    def send(self, topic: str, msg: Any, qos: QoSProfile = RELIABLE) -> None:
        """Publish ``msg`` on ``topic``; the first time, wait (up to 5 s) for a subscriber to match."""
        key = f"{topic}|{qos.reliability}"
        fresh = key not in self._pubs
        pub = self.publisher(topic, type(msg), qos)
        if fresh:
            self.wait_for_subscriber(topic, type(msg), timeout=5.0, qos=qos)
        pub.publish(msg)

    def call(self, srv_type: type, name: str, request: Any, timeout: float = 15.0) -> Any:
        """Call a service and return the response.

        Raises:
            TimeoutError: service missing or no answer in ``timeout`` s.
        """
        client = self.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f"service {name} not available")
            future = client.call_async(request)
            self.spin_until(future.done, timeout)
            if not future.done():
                raise TimeoutError(f"service {name} did not answer")
            return future.result()
        finally:
            self.destroy_client(client)

    def set_params(self, values: Dict[str, Any], atomic: bool = False) -> List[Any]:
        """Set parameters of the target node through its parameter services; the results."""
        msgs: List[ParameterMsg] = [Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
        if atomic:
            req = SetParametersAtomically.Request(parameters=msgs)
            return [self.call(SetParametersAtomically, f"/{self.target}/set_parameters_atomically",
                              req).result]
        req = SetParameters.Request(parameters=msgs)
        return list(self.call(SetParameters, f"/{self.target}/set_parameters", req).results)

    def diagnostics(self, timeout: float = 5.0, after: Optional[float] = None) -> Dict[str, Dict[str, str]]:
        """The next ``/diagnostics`` report: ``{status name: {key: value}}``."""
        msgs = self.listen("/diagnostics", DiagnosticArray)
        start = len(msgs)
        self.spin_until(lambda: len(msgs) > start, timeout)
        if len(msgs) == start:
            raise TimeoutError("no /diagnostics report")
        return {st.name: {kv.key: kv.value for kv in st.values} for st in msgs[-1].status}


def joint_state(names: Sequence[str], positions: Sequence[float]) -> JointState:
    """A ``JointState`` with only names and positions."""
    return JointState(name=list(names), position=[float(p) for p in positions])


def send_until(probe: Probe, topic: str, msg: Any, cond: Callable[[], bool], timeout: float = 10.0,
               period: float = 1.0) -> bool:
    """Send ``msg`` on ``topic`` every ``period`` s until ``cond()`` holds (at most ``timeout`` s).

    The probe seeing the node's subscription does not mean the node has matched the probe's
    publisher yet: a message sent before that is lost, so one send can go unanswered."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        probe.send(topic, msg)
        if probe.spin_until(cond, min(period, max(0.0, end - time.monotonic()))):
            return True
    return cond()


def latest_status(probe: Probe, name: str) -> Dict[str, str]:
    """``{key: value}`` of status ``name`` in the newest ``/diagnostics`` report that has it ({}
    before any: several nodes may publish reports on the topic)."""
    for report in reversed(probe.received.get("/diagnostics", [])):
        for st in report.status:
            if st.name == name:
                return {kv.key: kv.value for kv in st.values}
    return {}


def deliver_counted(probe: Probe, topic: str, msg: Any, status: str, key: str, timeout: float = 20.0) -> None:
    """Send ``msg`` until the node's diagnostics counter ``key`` of status ``status`` grows.

    A test's first message on a topic can be lost even after the probe has matched the node's
    subscription (the node's side of the discovery may lag on a loaded host); the node's own
    counter tells a lost message from a slow answer.  The message is resent only when no report
    in 3 s shows the counter grown (reports come every ``diagnostics_period``, at most 1 s in
    the tests): a second copy then means the first was lost, or the node stalled for seconds.

    Raises:
        AssertionError: the counter did not grow within ``timeout`` s.
    """
    reports = probe.listen("/diagnostics", DiagnosticArray)
    start = len(reports)   # a report made from now on: its counts include every earlier message
    fresh = lambda: any(st.name == status for r in reports[start:] for st in r.status)  # noqa: E731
    assert probe.spin_until(fresh, 10.0), f"no new /diagnostics status {status!r} in 10 s"
    count = lambda: int(latest_status(probe, status).get(key, "0"))  # noqa: E731
    before = count()
    assert send_until(probe, topic, msg, lambda: count() > before, timeout, period=3.0), \
        f"the node did not count {topic} in {status!r} {key} within {timeout} s"


def wait_count(probe: Probe, topic: str, n: int, timeout: float = 10.0) -> bool:
    """Spin until at least ``n`` messages arrived on ``topic``."""
    return probe.spin_until(lambda: len(probe.received.get(topic, [])) >= n, timeout)


__all__ = ["BEST_EFFORT", "FIXTURES", "NodeProcess", "PointCloud2", "Probe", "RELIABLE", "ROOT",
           "deliver_counted", "joint_state", "latest_status", "send_until", "wait_count", "write_params"]


def spin_until(executor: Any, cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Spin ``executor`` until ``cond()`` or ``timeout`` (s); the final value of ``cond()``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)
        if cond():
            return True
    return bool(cond())


def bubble_push_cloud(node: Any, force: float, sec: int) -> PointCloud2:
    """A contacts message for an in-process node on the embedded world: one contact at vertex 0 of
    the bubble (``elem1`` 0), force ``force`` N along the bubble's -z (into it, the pressure's
    positive direction) in the world frame, header stamp ``sec`` s."""
    import numpy as np
    import torch
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.sensor import ContactState
    T = node.world.body_transform("punyo")
    V = np.asarray(node.world.body_mesh("punyo").vertices)
    p = T[:3, :3] @ V[0] + T[:3, 3]
    f = T[:3, :3] @ np.array([0.0, 0.0, -force])
    cs = {("punyo", "object"): ContactState(torch.tensor(p[None], dtype=torch.float64),
                                            torch.tensor(f[None], dtype=torch.float64),
                                            torch.tensor([0]), torch.tensor([-1]))}
    msg = contacts_to_pointcloud2(cs, node.world.body_names, stamp=None, frame_id="world")
    msg.header.stamp.sec = sec
    return msg
