"""What the simulator nodes share: parameter rows, measured streams, outputs, a paced stepping thread.

:class:`SimulatorNode` is the base of ``contact_sim_node`` and ``mujoco_contact_node``.
"""
from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from sensor_msgs.msg import JointState, PointCloud2
from std_msgs.msg import Bool

from vsf_sensor_ros.ros.frames import sensor_frame_name, sensor_frame_transform
from vsf_sensor_ros.ros.kinds import codec_of_type, sensor_layout
from vsf_sensor_ros.ros.main import answer_help, parameter_usage, run_node
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.readings import encode_vector, make_header
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp, stamp_to_ns
from vsf_sensor_ros.ros.parameter_table import Spec, check_value
from vsf_sensor_ros.ros.parameters import declare_spec
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.world import xyz_quat_from_transform

from .sim_sensors import DEMO_SENSORS, DemoSensorSpec, MeasuredStream, check_measured_source

__all__ = ["PACE_PARAMS", "PRESS_TIMING_PARAMS", "SESSION_PARAMS", "SimulatorNode", "finish", "param_spec",
           "run_simulator", "sim_time_msg", "spin_until_done"]

# Parameter rows the simulator nodes share: name -> (default, description, read_only, (lo, hi) or None).
PACE_PARAMS: Dict[str, tuple] = {
    "rate_hz": (100.0, "simulator steps per wall-clock second; 0 = as fast as possible", False, (0.0, 1e6)),
    "sim_dt": (0.01, "simulated seconds per step (one contacts message each)", True, (1e-4, 1.0)),
}
#: the session's length and the press-and-release timing (the same trajectory in both simulators)
PRESS_TIMING_PARAMS: Dict[str, tuple] = {
    "duration_s": (12.0, "simulated seconds to run", True, (0.0, 1e6)),
    "trajectory.tare_s": (2.0, "contact-free hold at the start (s, >= 1: a tare uses it)", True, (1.0, 1e4)),
    "trajectory.approach_s": (1.5, "approach duration (s)", True, (1e-3, 1e4)),
    "trajectory.press_s": (1.0, "press duration (s)", True, (1e-3, 1e4)),
    "trajectory.hold_s": (2.0, "hold duration (s)", True, (1e-3, 1e4)),
    "trajectory.release_s": (1.0, "release duration (s)", True, (1e-3, 1e4)),
    "trajectory.retreat_s": (1.5, "retreat duration (s)", True, (1e-3, 1e4)),
}
#: the output frame and how a run starts and ends
SESSION_PARAMS: Dict[str, tuple] = {
    "world_frame": ("world", "frame of contacts and poses (REP 103)", True, None),
    "start_delay_s": (0.5, "wall seconds to wait before the first step (lets subscribers connect)", True,
                      (0.0, 3600.0)),
    "wait_for_subscribers": (0, "before the first step, wait (up to 30 s) until contacts has this many "
                                "subscribers", True, (0, 1000)),
    "exit_on_done": (True, "exit the process (code 0) once the run is finished", True, None),
    "linger_s": (0.5, "wall seconds to keep the node alive after the last step (message delivery)", True,
                 (0.0, 3600.0)),
}


def sim_time_msg(t: float) -> Time:
    """Simulation seconds -> ``builtin_interfaces/Time`` (rounded to the nanosecond)."""
    return ns_to_stamp(round(t * 1e9))


def param_spec(name: str, default: Any, description: str, read_only: bool, bounds: Optional[tuple]) -> Spec:
    """The ``Spec`` of one parameter row; an infinite ``hi`` of ``bounds`` is checked as ``>= lo`` only."""
    lo, hi = bounds if bounds is not None and not isinstance(default, bool) else (None, None)
    return Spec(name, default, description, read_only=read_only, lo=lo,
                hi=hi if hi is None or math.isfinite(hi) else None)


class SimulatorNode(Node):
    """Base of a simulator node: ``params`` (name -> ``(default, description, read_only, (lo, hi) or
    None)``) declared into ``self.p`` and checked, measured streams, publishers, the stepping thread, live
    ``rate_hz``.  Attributes: ``done``, ``failed`` (exception or None), ``step_times`` (wall s).
    A subclass builds its scene, calls :meth:`create_outputs` and :meth:`start_stepping`, and implements
    :meth:`step_once`.  SettingError: a parameter out of range or invalid (named; ``contact_body_names`` not
    distinct non-empty names).
    """

    def __init__(self, node_name: str, params: Dict[str, tuple], **kwargs: Any) -> None:
        # set first: destroy_node() may run on a half-built node (a constructor error)
        self._stop, self.done = threading.Event(), threading.Event()
        self._worker: Optional[threading.Thread] = None
        self.failed: Optional[BaseException] = None
        self.p: Dict[str, Any] = {}
        self.streams: List[MeasuredStream] = []
        self._layouts: List[Any] = []
        self.step_times: List[float] = []
        super().__init__(node_name, **kwargs)
        specs = {name: param_spec(name, *row) for name, row in params.items()}
        self._rate_spec = specs["rate_hz"]
        # declared with the sensor node's Spec machinery (descriptors, int -> double, range checks)
        p = self.p = {name: declare_spec(self, name, spec) for name, spec in specs.items()}
        if p["physics_dt"] > p["sim_dt"]:
            raise SettingError(f"physics_dt={p['physics_dt']} must be <= sim_dt={p['sim_dt']}", "physics_dt",
                               p["physics_dt"], "out_of_range", p["sim_dt"])
        unknown = [s for s in p["sensors"] if s not in DEMO_SENSORS]
        if unknown or len(set(p["sensors"])) != len(p["sensors"]):
            raise SettingError(f"sensors must be distinct names from {list(DEMO_SENSORS)}, "
                               f"got {p['sensors']}", "sensors", list(p["sensors"]), "invalid",
                               list(DEMO_SENSORS))
        check_measured_source(p["measured_source"])
        names = list(p["contact_body_names"])
        if not names or len(set(names)) != len(names) or not all(names):
            raise SettingError(f"contact_body_names must be distinct non-empty names, got {names}",
                               "contact_body_names", names, "invalid")
        self.add_on_set_parameters_callback(self.on_set_parameters)

    def add_stream(self, spec: DemoSensorSpec, model: Any, bubble_vertices: np.ndarray) -> MeasuredStream:
        """Declare ``<s>.offset`` (finite) / ``<s>.noise_std`` (>= 0) into ``self.p`` and ``spec`` (defaults
        from it) and add the measured stream of ``spec`` (attached to ``model``), stamped in the sensor frame
        like the node's prediction; the caller may set its ``source``.  ConfigError: a bad offset or noise
        std; ValueError: the config is rejected."""
        for key, desc, lo in (
                ("offset", "constant added to the physical entries of the measured stream (SI)", None),
                ("noise_std", "std of the Gaussian noise on the measured stream (SI)", 0.0)):
            full = f"{spec.name}.{key}"
            self.p[full] = declare_spec(self, full, Spec(full, float(getattr(spec, key)), desc,
                                                         read_only=True, lo=lo, finite=key == "offset"))
            setattr(spec, key, float(self.p[full]))
        kind, att = spec.config["type"], spec.config["attachment"]
        stream = MeasuredStream(spec, model, int(self.p["seed"]), len(self.streams))
        verts = np.asarray(bubble_vertices) if codec_of_type(kind).per_vertex else None
        T_sensor = sensor_frame_transform(stream.sensor)
        frame = sensor_frame_name(spec.name) if T_sensor is not None else ""
        layout = sensor_layout(kind, att, stream.names, stream.sensor.measurement_errors(), verts, frame,
                               T_sensor)
        stream.slots = layout.slots  # the entries the message carries get offset and noise
        self.streams.append(stream)
        self._layouts.append(layout)
        return stream

    # ------------------------------------------------------------------ outputs
    def create_outputs(self) -> None:
        """Create ``joint_states``, ``object/pose``, ``contacts``, ``<s>/measured`` per stream, the latched
        ``sim_done`` (False now) and, with ``publish_clock``, ``/clock``."""
        # (QoSProfile's defaults: keep last, reliable)
        reliable = QoSProfile(depth=100)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_joints = self.create_publisher(JointState, "joint_states", reliable)
        self.pub_pose = self.create_publisher(PoseStamped, "object/pose", reliable)
        self.pub_contacts = self.create_publisher(PointCloud2, "contacts", reliable)
        self.pub_measured = [self.create_publisher(lay.codec.message, f"{st.spec.name}/measured", reliable)
                             for st, lay in zip(self.streams, self._layouts)]
        self.pub_done = self.create_publisher(Bool, "sim_done", latched)
        self.pub_done.publish(Bool(data=False))
        clock = self.p["publish_clock"]
        self.pub_clock = self.create_publisher(Clock, "/clock", reliable) if clock else None

    def start_stepping(self, thread_name: str) -> None:
        """Start the worker thread that runs the session."""
        self._worker = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._worker.start()

    def step_once(self) -> None:
        """Advance ``sim_dt`` and publish this step's messages."""
        raise NotImplementedError

    # ------------------------------------------------------------------ parameters
    def publish_step(self, stamp: Any, joint_names: Sequence[str], positions: Sequence[float],
                     velocities: Sequence[float], T_object: np.ndarray, contacts: Dict[Any, Any],
                     state: Any) -> None:
        """Publish ``/clock`` (when enabled), joint states, the object pose (``(4, 4)`` ``T_object``, world),
        the contacts and, for ``state`` not None, every measured stream."""
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        frame = self.p["world_frame"]
        self.pub_joints.publish(JointState(header=make_header(stamp, ""), name=list(joint_names),
                                           position=list(positions), velocity=list(velocities)))
        xyz, q = ([float(v) for v in a] for a in xyz_quat_from_transform(T_object))
        pose = Pose(position=Point(x=xyz[0], y=xyz[1], z=xyz[2]),
                    orientation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))
        self.pub_pose.publish(PoseStamped(header=make_header(stamp, frame), pose=pose))
        self.pub_contacts.publish(contacts_to_pointcloud2(contacts, self.p["contact_body_names"], stamp,
                                                          frame))
        if state is not None:
            for stream, layout, pub in zip(self.streams, self._layouts, self.pub_measured):
                pub.publish(encode_vector(layout, stream.measure(state), stamp_to_ns(stamp)))

    def on_set_parameters(self, params: List[Parameter]) -> SetParametersResult:
        """Parameter callback: ``rate_hz`` is live (a number within its bounds); all or nothing."""
        for prm in params:
            if prm.name == "rate_hz":
                try:
                    check_value("rate_hz", self._rate_spec, prm.value)
                except ValueError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
        self.p.update({"rate_hz": float(prm.value) for prm in params if prm.name == "rate_hz"})
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ stepping
    def _wait_start(self) -> None:
        n = int(self.p["wait_for_subscribers"])
        deadline = time.monotonic() + 30.0
        while n > 0 and self.pub_contacts.get_subscription_count() < n and time.monotonic() < deadline:
            if self._stop.wait(0.05):
                return
        self._stop.wait(float(self.p["start_delay_s"]))

    def _run(self) -> None:
        try:
            self._wait_start()
            n_steps = int(round(self.p["duration_s"] / self.p["sim_dt"]))
            t_next = time.monotonic()
            for _ in range(n_steps):
                if self._stop.is_set():
                    return
                t0 = time.perf_counter()
                self.step_once()
                self.step_times.append(time.perf_counter() - t0)
                rate = float(self.p["rate_hz"])
                if rate > 0.0:
                    t_next += 1.0 / rate
                    delay = t_next - time.monotonic()
                    if delay > 0.0:
                        self._stop.wait(delay)
                    else:
                        t_next = time.monotonic()  # behind: do not burst to catch up
            if self.step_times:
                st = np.asarray(self.step_times) * 1e3
                self.get_logger().info(
                    f"done: {len(st)} steps, {len(st) * float(self.p['sim_dt']):.2f} s simulated; step cost "
                    f"mean {st.mean():.2f} ms, p95 {np.percentile(st, 95):.2f} ms")
            self.pub_done.publish(Bool(data=True))
        except Exception as exc:  # noqa: BLE001 - reported, then the node ends
            if self._stop.is_set() or not self.context.ok():
                return  # shutting down: publishers may already be gone
            self.get_logger().error(f"simulation failed: {type(exc).__name__}: {exc}")
            self.failed = exc
        finally:
            self.done.set()

    def stop(self) -> None:
        """Stop the worker thread (idempotent)."""
        self._stop.set()
        if self._worker is not None and self._worker.is_alive():
            self._worker.join(timeout=5.0)

    def destroy_node(self) -> None:
        """Stop stepping, then release the ROS entities."""
        self.stop()
        super().destroy_node()


def spin_until_done(node: SimulatorNode) -> None:
    """Spin until shutdown, or until the run is done (``exit_on_done``) and ``linger_s`` has passed."""
    while rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.1)
        if node.done.is_set() and node.p["exit_on_done"]:
            end = time.monotonic() + float(node.p["linger_s"])
            while rclpy.ok() and time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
            break


def finish(node: SimulatorNode) -> int:
    """Exit code of a run: 1 when the simulation failed, else 0 (after stopping the worker)."""
    node.stop()
    return 1 if node.failed is not None else 0


def run_simulator(name: str, node_class: Callable[..., SimulatorNode], description: str,
                  params: Dict[str, tuple], examples: Sequence[str], args: Optional[Sequence[str]]) -> int:
    """A simulator executable: ``-h`` / ``--help`` lists ``params`` (live ones marked) with ``description``
    and ``examples`` before touching ROS, then :func:`~vsf_sensor_ros.ros.main.run_node`.  0 when finished
    or interrupted, 1 when the simulation failed, 2 on a configuration error."""
    argv = list(sys.argv if args is None else args)
    rows = [(n, row[0], row[1] + ("" if row[2] else " (live)")) for n, row in params.items()]
    # before rclpy.init: a help request simulates and publishes nothing
    answer_help(argv, parameter_usage(name, description, rows, examples))
    return run_node(name, node_class, argv, config_errors=(ValueError, FileNotFoundError, RuntimeError),
                    spin=spin_until_done, finish=finish)
