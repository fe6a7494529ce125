"""One recorded demo run: the two children, the recorder, the tare, and a clean stop.

:class:`DemoSession` owns everything a run creates and releases it in :meth:`DemoSession.stop`, on
every way out (errors, timeout, Ctrl-C).
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from vsf_sensor_ros.demo.config import DemoConfig, DemoError, SensorInfo, press_body_indices
from vsf_sensor_ros.demo.tare import TARE_STRETCH_S, TareResult, tare_due, tare_outcome, tare_succeeded
from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command

SIM_MODULE = "vsf_sensor_ros.contact_sources.contact_sim_node"
MUJOCO_SIM_MODULE = "vsf_sensor_ros.contact_sources.mujoco_contact_node"
NODE_MODULE = "vsf_sensor_ros.ros.sensor_node"
LINK_FRAMES_MODULE = "vsf_sensor_ros.demo.link_frames_node"
STARTUP_TIMEOUT_S = 90.0   # python + torch + klampt imports on a busy 2-core machine
DRAIN_S = 1.5              # after the simulator ends, wait this long for the last predictions
CALL_TIMEOUT_S = 10.0      # a Trigger service of the node answers within this


@dataclass
class SessionResult:
    """What a session produced, before analysis."""

    logs: Dict[str, Any]
    skipped: Dict[str, str]
    tare: TareResult
    wall_s: float
    sim_exit: Optional[int]
    node_exit: Optional[int]
    node_died: bool = False
    sim_died: bool = False
    errors: List[str] = field(default_factory=list)


class Progress:
    """One status line per second on stdout (plain lines: they survive logs and pipes)."""

    def __init__(self, stream: Optional[Any] = None) -> None:
        self.stream = stream or sys.stdout
        self.last = 0.0

    def say(self, text: str) -> None:
        """Print a line now."""
        print(text, file=self.stream, flush=True)

    def tick(self, text_fn: Callable[[], str]) -> None:
        """Print ``text_fn()`` if a second has passed since the last tick."""
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            self.say(text_fn())


def demo_child_env(domain_id: int, assets: Optional[Path]) -> Dict[str, str]:
    """Environment of the demo's children: this host only, ``domain_id``, the package on the path."""
    from vsf_sensor_ros.demo.ros_env import localhost_env
    env = child_env(localhost_env(domain_id))
    if assets is not None:
        env["VSF_ASSETS"] = str(assets)
    return env


# Input queue of the demo's sensor node: seconds of simulator steps at the default rate.
INPUT_QUEUE_DEPTH = 500


def node_command(cfg: DemoConfig) -> List[str]:
    """argv of the sensor node child.

    The node keeps its calibration in ``<out>/calibration.yaml`` (written by
    ``save_calibration`` after the tare) and does not tare on its own.  Its
    inputs are reliable with a deep queue: a recorded session should predict
    every simulator step, even when the node falls behind for a moment on a
    busy machine (the live default, best effort depth 5, drops stale steps).
    """
    cmd = module_command(NODE_MODULE, ["--params-file", str(cfg.params_file)])
    cmd += ["-p", f"calibration_file:={(cfg.out / 'calibration.yaml').resolve()}",
            "-p", "tare_on_start:=false",
            "-p", "qos.inputs.reliability:=reliable", "-p", f"qos.inputs.depth:={INPUT_QUEUE_DEPTH}"]
    if cfg.assets is not None:
        cmd += ["-p", f"assets_dir:={cfg.assets}"]
    return cmd


def link_frames_command(cfg: DemoConfig) -> List[str]:
    """argv of the link-frame publisher child: the URDF the sensor node loads, its link frames on TF.

    robot_state_publisher's job, for the recording: with it the bag places every frame the
    node stamps, the URDF links included (:mod:`vsf_sensor_ros.demo.link_frames_node`).
    """
    args = []
    for key in ("robot_description_path", "frame_prefix"):
        if cfg.base_params.get(key):
            args += ["-p", f"{key}:={cfg.base_params[key]}"]
    if cfg.assets is not None:
        args += ["-p", f"assets_dir:={cfg.assets}"]
    return module_command(LINK_FRAMES_MODULE, args)


def sim_command(cfg: DemoConfig) -> List[str]:
    """argv of the simulator child.

    ``rate_hz`` steps per wall second with ``sim_dt = 1 / rate_hz`` simulated
    seconds each: the simulation runs in real time.  It waits until both the
    sensor node and the recorder subscribe to ``contacts`` before its first
    step, and exits (code 0) after ``duration_s`` simulated seconds.
    """
    cmd = module_command(SIM_MODULE, [
           "-p", f"world:={cfg.world}", "-p", f"rate_hz:={cfg.rate_hz!r}",
           "-p", f"sim_dt:={1.0 / cfg.rate_hz!r}", "-p", f"physics_dt:={min(0.001, 1.0 / cfg.rate_hz)!r}",
           "-p", f"duration_s:={cfg.duration_s!r}", "-p", f"seed:={cfg.seed}",
           "-p", f"trajectory.tare_s:={TARE_STRETCH_S!r}", "-p", f"measured_source:={cfg.measured_source}",
           "-p", "wait_for_subscribers:=2", "-p", "exit_on_done:=true"])
    if cfg.contact_body_names:
        cmd += ["-p", f"contact_body_names:=[{','.join(cfg.contact_body_names)}]"]
    if cfg.assets is not None:
        cmd += ["-p", f"assets_dir:={cfg.assets}"]
    return cmd


def mujoco_sim_command(cfg: DemoConfig) -> List[str]:
    """argv of the MuJoCo simulator child (``--backend mujoco``), timed like :func:`sim_command`.

    MuJoCo integrates in whole steps of at most 1 ms inside each ``1 / rate_hz`` step.
    """
    sim_dt = 1.0 / cfg.rate_hz
    physics_dt = sim_dt / max(1, math.ceil(sim_dt / 0.001 - 1e-9))
    cmd = module_command(MUJOCO_SIM_MODULE, [
           "-p", f"rate_hz:={cfg.rate_hz!r}", "-p", f"sim_dt:={sim_dt!r}",
           "-p", f"physics_dt:={physics_dt!r}",
           "-p", f"duration_s:={cfg.duration_s!r}", "-p", f"seed:={cfg.seed}",
           "-p", f"trajectory.tare_s:={TARE_STRETCH_S!r}", "-p", f"measured_source:={cfg.measured_source}",
           "-p", "wait_for_subscribers:=2", "-p", "exit_on_done:=true"])
    if cfg.contact_body_names:
        cmd += ["-p", f"contact_body_names:=[{','.join(cfg.contact_body_names)}]"]
    return cmd


@dataclass
class ContactWatch:
    """What the recorded ``contacts`` messages say so far (drives the tare schedule and progress).

    Attributes:
        bodies: indices of the bubble's bodies (:func:`press_body_indices`; empty = any body).
        seen: messages looked at.
        free_steps: contact-free messages before the first touch.
        touched: the bubble has touched something.
        stamp_s: newest message stamp (s), ``None`` before the first.
    """

    bodies: List[int]
    seen: int = 0
    free_steps: int = 0
    touched: bool = False
    stamp_s: Optional[float] = None

    def update(self, data: Sequence[bytes]) -> None:
        """Look at the serialised ``contacts`` messages after :attr:`seen` (``data`` = all so far)."""
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import PointCloud2

        from vsf_sensor_ros.demo.analysis import touches
        from vsf_sensor_ros.demo.recorder import cloud_point_count, header_stamp_ns
        for raw in data[self.seen:]:
            if cloud_point_count(raw) > 0 and touches(deserialize_message(raw, PointCloud2), self.bodies):
                self.touched = True
            elif not self.touched:
                self.free_steps += 1
            self.stamp_s = header_stamp_ns(raw) * 1e-9
        self.seen = max(self.seen, len(data))


class DemoSession:
    """One recorded run of the simulator and the sensor node (docs/demo.md).

    Args:
        cfg: the run's configuration.
        progress: where status lines go.
        domain_id: the leased ``ROS_DOMAIN_ID`` (this host only).
        logs_dir: folder of the children's logs.

    Use :meth:`run`, or :meth:`start` / :meth:`record` / :meth:`stop` with
    ``stop`` in a ``finally``.
    """

    def __init__(self, cfg: DemoConfig, progress: Progress, domain_id: int, logs_dir: Path) -> None:
        self.cfg = cfg
        self.progress = progress
        self.domain_id = domain_id
        self.logs_dir = logs_dir
        env = demo_child_env(domain_id, cfg.assets)
        self.node_proc = ManagedProcess("sensor_node", node_command(cfg), env, logs_dir / "sensor_node.log")
        sim_name, sim_cmd = (("mujoco_contact_node", mujoco_sim_command(cfg)) if cfg.backend == "mujoco"
                             else ("contact_sim_node", sim_command(cfg)))
        self.sim_proc = ManagedProcess(sim_name, sim_cmd, env, logs_dir / f"{sim_name}.log")
        from vsf_sensor_ros.ros.frames import TFMessage
        # the link frames (robot_state_publisher's part), where TF can be published at all
        self.frames_proc: Optional[ManagedProcess] = None if TFMessage is None else ManagedProcess(
            "link_frames_node", link_frames_command(cfg), env, logs_dir / "link_frames_node.log")
        self.tare_result = TareResult()
        self.result = SessionResult({}, {}, self.tare_result, 0.0, None, None)
        self.watch = ContactWatch(press_body_indices(cfg))
        self.t0 = time.monotonic()
        self.deadline = self.t0 + cfg.timeout_s
        self._ctx: Any = None
        self._node: Any = None
        self._executor: Any = None
        self.recorder: Any = None
        self._clients: Dict[str, Any] = {}
        self._stopped = False

    # -- the steps ---------------------------------------------------------------------------
    def run(self) -> SessionResult:
        """:meth:`start`, :meth:`record`, and always :meth:`stop`; the result.

        Raises:
            DemoError: see :meth:`start` and :meth:`record` (children stopped first).
        """
        try:
            self.start()
            self.record()
        finally:
            self.stop()
        return self.result

    def start(self) -> None:
        """Start the recorder and the sensor node, wait for its ``tare`` service, start the simulator.

        Raises:
            DemoError: the node died or offered no ``tare`` service within
                :data:`STARTUP_TIMEOUT_S`, or the overall timeout passed.
        """
        self._open_ros()
        from std_srvs.srv import Trigger
        self.progress.say(f"ROS_DOMAIN_ID={self.domain_id} (localhost only); children's output in "
                          f"{self.logs_dir}/")
        self.progress.say(f"starting sensor node ({self.cfg.params_file.name}) ...")
        self.node_proc.start()
        if self.frames_proc is not None:
            self.frames_proc.start()
        self._clients = {name: self._node.create_client(Trigger, f"/{name}")
                         for name in ("tare", "save_calibration")}
        while not self._clients["tare"].service_is_ready():
            self._spin_for(0.1)
            self._check("starting")
            if time.monotonic() - self.t0 > STARTUP_TIMEOUT_S:
                raise DemoError(f"sensor node offered no 'tare' service within {STARTUP_TIMEOUT_S:.0f} s:\n"
                                f"{self.node_proc.tail()}", "no_tare_service", value=STARTUP_TIMEOUT_S)
        # Subscribe to everything the node offers or expects (its measured inputs
        # included) before the simulator publishes its first message.
        self.recorder.refresh()
        self._spin_for(0.3)
        self.recorder.refresh()
        cfg = self.cfg
        self.progress.say(f"sensor node ready after {time.monotonic() - self.t0:.1f} s; recording "
                          f"{len(self.recorder.logs)} topics; starting {cfg.backend} simulator "
                          f"({cfg.world} world, "
                          f"{cfg.duration_s:g} s at {cfg.rate_hz:g} Hz, seed {cfg.seed}) ...")
        self.progress.say("progress: [wall time] simulated time | contacts steps recorded | predictions "
                          f"recorded per sensor ({'/'.join(s.name for s in cfg.sensors)}) | tare")
        self.sim_proc.start()

    def record(self) -> None:
        """Record until the simulator exits (then :data:`DRAIN_S` more), taring on schedule.

        Raises:
            DemoError: a child died, the simulator published nothing within
                :data:`STARTUP_TIMEOUT_S`, or the overall timeout passed.
        """
        sim_started = time.monotonic()
        last_refresh = 0.0
        while True:
            self._executor.spin_once(timeout_sec=0.02)
            now = time.monotonic()
            if now - last_refresh > 0.25:
                self.recorder.refresh()
                last_refresh = now
            contacts = self.recorder.logs.get("/contacts")
            if contacts is not None and len(contacts) > self.watch.seen:
                self.watch.update(contacts.data)
            if self.tare_result.request_ns is None and tare_due(
                    self.watch.stamp_s, [self._pred_count(s) for s in self.cfg.sensors],
                    self.cfg.tare_samples, self.watch.touched):
                self.tare()
            self.progress.tick(self.status)
            self._check("the simulation was running")
            sim_code = self.sim_proc.poll()
            if sim_code is not None:
                self.result.sim_exit = sim_code
                if sim_code != 0:
                    self.result.sim_died = True
                    raise DemoError(f"simulator exited with code {sim_code}:\n{self.sim_proc.tail()}",
                                    "sim_exited",
                                    value=sim_code)
                break
            if self.watch.seen == 0 and now - sim_started > STARTUP_TIMEOUT_S:
                raise DemoError(f"simulator published no contacts within {STARTUP_TIMEOUT_S:.0f} s:\n"
                                f"{self.sim_proc.tail()}", "no_contacts", value=STARTUP_TIMEOUT_S)
        self._spin_for(DRAIN_S)  # the last predictions of the final steps
        self.progress.say(self.status())
        if self.tare_result.request_ns is None:
            self.result.errors.append("the tare service was never called (no contacts received)")

    def tare(self) -> None:
        """Call ``tare``, then ``save_calibration``; read the outcome from the saved file.

        Recording goes on while the services answer.  Problems (the bubble
        touched too early, no answer, the file not saved) go to
        :attr:`SessionResult.errors`; :attr:`TareResult.success` is
        :func:`~vsf_sensor_ros.demo.tare.tare_succeeded`.
        """
        tare, cfg, watch = self.tare_result, self.cfg, self.watch
        if watch.touched and watch.free_steps < cfg.tare_samples:
            self.result.errors.append(f"the bubble touched after only {watch.free_steps} contact-free steps "
                                      f"(tare wants {cfg.tare_samples})")
        tare.sim_time_s = watch.stamp_s
        tare.request_ns = time.time_ns()
        resp = self._call_trigger("tare", "waiting for the tare answer")
        tare.response_ns = time.time_ns()
        tare.message = f"no answer within {CALL_TIMEOUT_S:g} s" if resp is None else resp.message
        saved = self._call_trigger("save_calibration", "saving the calibration")
        if saved is None or not saved.success:
            why = "no answer" if saved is None else saved.message
            self.result.errors.append(f"save_calibration failed: {why}")
        try:
            tare.per_sensor = tare_outcome(cfg.out / "calibration.yaml", cfg.sensors, tare.message,
                                           saved=saved is not None and saved.success)
        except DemoError as exc:
            self.result.errors.append(str(exc))
            tare.per_sensor = tare_outcome(cfg.out / "calibration.yaml", cfg.sensors, tare.message,
                                           saved=False)
        tare.success = tare_succeeded(resp is not None and resp.success, tare.per_sensor)
        parts = [f"{n} {e['tare_status']}" + (f" ({e['tare_samples']} samples)" if e["tare_samples"] else "")
                 for n, e in tare.per_sensor.items()]
        when = "-" if tare.sim_time_s is None else f"{tare.sim_time_s:.2f}"
        self.progress.say(f"tare (called at sim t={when} s): {'ok' if tare.success else 'FAILED'}: "
                          + "; ".join(parts))

    def stop(self) -> SessionResult:
        """Stop and reap both children, stop recording, close the rclpy context; the result.

        Safe to call more than once and after a failed :meth:`start`.
        """
        if self._stopped:
            return self.result
        self._stopped = True
        self.result.sim_exit = self.sim_proc.stop()
        self.result.node_exit = self.node_proc.stop()
        if self.frames_proc is not None:
            self.frames_proc.stop()
        if self.recorder is not None:
            self.recorder.stop()
            self.result.logs = dict(self.recorder.logs)
            self.result.skipped = dict(self.recorder.skipped)
        self.result.wall_s = time.monotonic() - self.t0
        if self._executor is not None:
            self._executor.shutdown()
        if self._node is not None:
            self._node.destroy_node()
        if self._ctx is not None:
            import rclpy
            rclpy.shutdown(context=self._ctx)
        return self.result

    # -- status ------------------------------------------------------------------------------
    def status(self) -> str:
        """The progress line: wall time, simulated time, steps, predictions per sensor, tare."""
        elapsed = time.monotonic() - self.t0
        if self.watch.stamp_s is None:
            return f"[{elapsed:5.1f} s] simulator loading its world ..."
        preds = "/".join(str(self._pred_count(s)) for s in self.cfg.sensors)
        tare = self.tare_result
        tare_txt = ("ok" if tare.success else "FAILED") if tare.response_ns else "pending"
        return (f"[{elapsed:5.1f} s] sim t={self.watch.stamp_s:5.2f} s | steps {self.watch.seen:5d} | "
                f"predicted {preds} | tare {tare_txt}")

    # -- helpers -----------------------------------------------------------------------------
    def _open_ros(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        from vsf_sensor_ros.demo.recorder import TopicRecorder
        self._ctx = rclpy.Context()
        try:
            from rclpy.signals import SignalHandlerOptions
            # The demo handles Ctrl-C itself (stop children, then exit); rclpy must not shut down first.
            rclpy.init(context=self._ctx, domain_id=self.domain_id,
                       signal_handler_options=SignalHandlerOptions.NO)
        except (ImportError, TypeError):     # Humble: no signal_handler_options
            rclpy.init(context=self._ctx, domain_id=self.domain_id)
        self._node = rclpy.create_node("vsf_demo_recorder", context=self._ctx)
        self._executor = SingleThreadedExecutor(context=self._ctx)
        self._executor.add_node(self._node)
        self.recorder = TopicRecorder(self._node)

    def _check(self, stage: str) -> None:
        if time.monotonic() > self.deadline:
            raise DemoError(f"timed out after {self.cfg.timeout_s:.0f} s while {stage}", "timeout",
                            value=self.cfg.timeout_s)
        if self.node_proc.poll() is not None:
            self.result.node_died = True
            raise DemoError(f"sensor node exited with code {self.node_proc.poll()} while {stage}:\n"
                            f"{self.node_proc.tail()}", "node_exited", value=self.node_proc.poll())

    def _spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._executor.spin_once(timeout_sec=0.02)

    def _call_trigger(self, service: str, stage: str) -> Optional[Any]:
        # Spin (so recording goes on) until the answer arrives.
        from std_srvs.srv import Trigger
        future = self._clients[service].call_async(Trigger.Request())
        end = time.monotonic() + CALL_TIMEOUT_S
        while not future.done() and time.monotonic() < end:
            self._executor.spin_once(timeout_sec=0.02)
            self._check(stage)
        return future.result() if future.done() else None

    def _pred_count(self, s: SensorInfo) -> int:
        log = self.recorder.logs.get(f"/{s.name}/predicted")
        return 0 if log is None else len(log)


def run_session(cfg: DemoConfig, progress: Progress, domain_id: int, logs_dir: Path) -> SessionResult:
    """One :class:`DemoSession`, run start to stop (children stopped on every way out).

    Raises:
        DemoError: the node or the simulator did not come up in time, died,
            or the overall timeout passed.
        KeyboardInterrupt: propagated after the children are stopped.
    """
    return DemoSession(cfg, progress, domain_id, logs_dir).run()
