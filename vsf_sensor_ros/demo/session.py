"""One recorded demo run: :class:`NodeRun` (shared with the replays) and :class:`DemoSession`."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from vsf_sensor_ros.demo.config import DemoConfig, DemoError, SensorInfo, press_body_indices
from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command
from vsf_sensor_ros.demo.tare import TARE_STRETCH_S, TareResult, tare_due, tare_outcome, tare_succeeded

SIM_MODULE = "vsf_sensor_ros.contact_sources.contact_sim_node"
MUJOCO_SIM_MODULE = "vsf_sensor_ros.contact_sources.mujoco_contact_node"
NODE_MODULE = "vsf_sensor_ros.ros.sensor_node"
LINK_FRAMES_MODULE = "vsf_sensor_ros.demo.link_frames_node"
STARTUP_TIMEOUT_S = 90.0   # python + torch + klampt imports on a busy 2-core machine
DRAIN_S = 1.5              # after the simulator ends, wait this long for the last predictions
CALL_TIMEOUT_S = 10.0      # a Trigger service of the node answers within this
INPUT_QUEUE_DEPTH = 500    # the node's input queue: seconds of simulator steps at the default rate


@dataclass
class SessionResult:
    """What a session produced, before analysis."""

    logs: Dict[str, Any]
    skipped: Dict[str, str]
    tare: TareResult
    wall_s: float
    errors: List[str] = field(default_factory=list)


class Progress:
    """Status lines on stdout: :meth:`say` now, :meth:`tick` at most one a second."""

    last = 0.0

    def say(self, text: str) -> None:
        """Print ``text`` now."""
        print(text, flush=True)

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


def node_command(cfg: DemoConfig) -> List[str]:
    """argv of the sensor node: calibration in ``<out>``, no tare on start, reliable deep inputs."""
    cmd = module_command(NODE_MODULE, ["--params-file", str(cfg.params_file)])
    cmd += ["-p", f"calibration_file:={(cfg.out / 'calibration.yaml').resolve()}",
            "-p", "tare_on_start:=false",
            "-p", "qos.inputs.reliability:=reliable", "-p", f"qos.inputs.depth:={INPUT_QUEUE_DEPTH}"]
    if cfg.assets is not None:
        cmd += ["-p", f"assets_dir:={cfg.assets}"]
    return cmd


def link_frames_command(cfg: DemoConfig) -> List[str]:
    """argv of :mod:`vsf_sensor_ros.demo.link_frames_node` on the URDF the sensor node loads."""
    args = []
    for key in ("robot_description_path", "frame_prefix"):
        if cfg.base_params.get(key):
            args += ["-p", f"{key}:={cfg.base_params[key]}"]
    if cfg.assets is not None:
        args += ["-p", f"assets_dir:={cfg.assets}"]
    return module_command(LINK_FRAMES_MODULE, args)


def sim_command(cfg: DemoConfig) -> List[str]:
    """argv of ``cfg.backend``'s simulator: ``rate_hz`` steps of ``1 / rate_hz`` s a wall second, physics
    steps of at most 1 ms (MuJoCo: a whole number of them a step); exits 0 at the end."""
    sim_dt = 1.0 / cfg.rate_hz
    if cfg.backend == "mujoco":
        module, physics_dt, extra = MUJOCO_SIM_MODULE, sim_dt / max(1, math.ceil(sim_dt / 0.001 - 1e-9)), []
    else:
        module, physics_dt, extra = SIM_MODULE, min(0.001, sim_dt), ["-p", f"world:={cfg.world}"]
        extra += ["-p", f"assets_dir:={cfg.assets}"] if cfg.assets is not None else []
    cmd = module_command(module, extra + [
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
    """The recorded ``contacts`` so far: :attr:`seen`, contact-free before the first touch of
    :attr:`bodies` (empty = any), :attr:`touched`, newest stamp (s)."""

    bodies: List[int]
    seen: int = 0
    free_steps: int = 0
    touched: bool = False
    stamp_s: Optional[float] = None

    def update(self, data: Sequence[bytes]) -> None:
        """Read the messages of ``data`` (all so far) after :attr:`seen`."""
        from vsf_sensor_ros.demo.analysis import touches
        from vsf_sensor_ros.demo.recorder import header_stamp_ns
        for raw in data[self.seen:]:
            if touches(raw, self.bodies):
                self.touched = True
            elif not self.touched:
                self.free_steps += 1
            self.stamp_s = header_stamp_ns(raw) * 1e-9
        self.seen = max(self.seen, len(data))


def ros_context(domain_id: int) -> Any:
    """A new rclpy context on ``domain_id`` leaving the signals alone (Ctrl-C stops the children first)."""
    import rclpy
    ctx = rclpy.Context()
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(context=ctx, domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):     # Humble: no signal_handler_options
        rclpy.init(context=ctx, domain_id=domain_id)
    return ctx


class NodeRun:
    """A sensor node child recorded from a private context, tared once.  Subclasses set :attr:`node_proc`,
    :attr:`children`, :attr:`watched` and call :meth:`open_ros`; failures raise :attr:`error`."""

    cfg: Optional[DemoConfig]
    node_proc: ManagedProcess
    children: List[ManagedProcess]
    watched: List[ManagedProcess]
    call_timeout_s = CALL_TIMEOUT_S
    error: type = DemoError
    exit_reason = "node_exited"

    def __init__(self, cfg: Optional[DemoConfig], domain_id: int, limit_s: Optional[float] = None) -> None:
        self.cfg, self.domain_id, self.limit_s = cfg, domain_id, limit_s
        self.result = SessionResult({}, {}, TareResult(), 0.0)
        self.t0 = time.monotonic()
        self._ctx = self._node = self._executor = self.recorder = None     # open_ros sets them
        self._clients: Dict[str, Any] = {}
        self._stopped = False

    def open_ros(self, name: str, services: Sequence[str] = ("tare", "save_calibration"),
                 exclude: Sequence[str] = ()) -> None:
        """Context, node ``name``, executor, recorder (less ``exclude``), a ``Trigger`` client per service."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        from vsf_sensor_ros.demo.recorder import TopicRecorder
        self._ctx = ros_context(self.domain_id)
        self._node = rclpy.create_node(name, context=self._ctx)
        self._executor = SingleThreadedExecutor(context=self._ctx)
        self._executor.add_node(self._node)
        self.recorder = TopicRecorder(self._node, exclude=exclude)
        self._clients = {n: self._node.create_client(Trigger, f"/{n}") for n in services}

    def stop(self) -> SessionResult:
        """Stop the children and the recording, close the context; the result.  Idempotent."""
        if self._stopped:
            return self.result
        self._stopped = True
        for p in self.children:
            p.stop()
        if self.recorder is not None:
            self.recorder.stop()
            self.result.logs, self.result.skipped = dict(self.recorder.logs), dict(self.recorder.skipped)
        self.result.wall_s = time.monotonic() - self.t0
        if self._executor is not None:
            self._executor.shutdown()
        if self._node is not None:
            self._node.destroy_node()
        if self._ctx is not None:
            import rclpy
            rclpy.shutdown(context=self._ctx)
        return self.result

    def _spin_for(self, seconds: float) -> None:
        self._wait_until(time.monotonic() + seconds)

    def _wait_until(self, due: float) -> None:   # within 5 ms
        while time.monotonic() < due:
            self._executor.spin_once(timeout_sec=max(0.0, min(0.005, due - time.monotonic())))

    def _spin_until(self, done: Callable[[], bool], stage: str, until: float, step: float = 0.1) -> bool:
        """Spin and record until ``done()`` (True) or the monotonic time ``until`` (False); :meth:`_check`."""
        while not done():
            if time.monotonic() > until:
                return False
            self.recorder.refresh()
            self._spin_for(step)
            self._check(stage)
        return True

    def _wait_ready(self, ready: Callable[[], bool], limit_s: float, failure: str, reason: str,
                    settle_s: float) -> None:
        """Spin until ``ready`` within ``limit_s`` of the start (else :attr:`error` ``reason``), then
        ``settle_s`` more so every topic is subscribed before a message."""
        if not self._spin_until(ready, "starting", self.t0 + limit_s):
            tails = "\n".join(p.tail() for p in self.watched)
            raise self.error(f"{failure} within {limit_s:.0f} s:\n{tails}", reason, value=limit_s)
        self.recorder.refresh()
        self._spin_for(settle_s)
        self.recorder.refresh()

    def _check(self, stage: str) -> None:
        """Raise :attr:`error`: a :attr:`watched` child exited, or :attr:`limit_s` passed (``'timeout'``)."""
        for p in self.watched:
            code = p.poll()
            if code is not None:
                raise self.error(f"{p.name} exited with code {code} while {stage}:\n{p.tail()}",
                                 self.exit_reason, value=code)
        if self.limit_s is not None and time.monotonic() - self.t0 > self.limit_s:
            raise self.error(f"timed out after {self.limit_s:.0f} s while {stage}", "timeout",
                             value=self.limit_s)

    def _call_trigger(self, service: str, stage: str) -> Optional[Any]:
        """Call ``service``, recording on, until it answers or :attr:`call_timeout_s`; None then."""
        from std_srvs.srv import Trigger
        future = self._clients[service].call_async(Trigger.Request())
        end = time.monotonic() + self.call_timeout_s
        while not future.done() and time.monotonic() < end:
            self._executor.spin_once(timeout_sec=0.02)
            self._check(stage)
        return future.result() if future.done() else None

    def _tare_and_save(self, sim_time_s: Optional[float]) -> TareResult:
        """``tare``, ``save_calibration``; the outcome read from the saved file (problems in ``errors``)."""
        tare, cfg = self.result.tare, self.cfg
        tare.sim_time_s = sim_time_s
        tare.request_ns = time.time_ns()
        resp = self._call_trigger("tare", "waiting for the tare answer")
        tare.response_ns = time.time_ns()
        tare.message = f"no answer within {CALL_TIMEOUT_S:g} s" if resp is None else resp.message
        saved = self._call_trigger("save_calibration", "saving the calibration")
        ok_saved = saved is not None and saved.success
        if not ok_saved:
            self.result.errors.append("save_calibration failed: "
                                      + ("no answer" if saved is None else saved.message))
        calibration = cfg.out / "calibration.yaml"
        try:
            tare.per_sensor = tare_outcome(calibration, cfg.sensors, tare.message, saved=ok_saved)
        except DemoError as exc:
            self.result.errors.append(str(exc))
            tare.per_sensor = tare_outcome(calibration, cfg.sensors, tare.message, saved=False)
        tare.success = tare_succeeded(resp is not None and resp.success, tare.per_sensor)
        return tare

    def _pred_count(self, s: SensorInfo) -> int:
        return len(self.recorder.logs.get(f"/{s.name}/predicted", ()))


class DemoSession(NodeRun):
    """One recorded run of the simulator and the sensor node: :meth:`run`."""

    def __init__(self, cfg: DemoConfig, progress: Progress, domain_id: int, logs_dir: Path) -> None:
        super().__init__(cfg, domain_id, cfg.timeout_s)
        self.progress, self.logs_dir = progress, logs_dir
        env = demo_child_env(domain_id, cfg.assets)
        self.node_proc = ManagedProcess("sensor_node", node_command(cfg), env, logs_dir / "sensor_node.log")
        sim_name = "mujoco_contact_node" if cfg.backend == "mujoco" else "contact_sim_node"
        self.sim_proc = ManagedProcess(sim_name, sim_command(cfg), env, logs_dir / f"{sim_name}.log")
        self.children, self.watched = [self.sim_proc, self.node_proc], [self.node_proc]
        from vsf_sensor_ros.ros.frames import TFMessage
        if TFMessage is not None:   # the link frames (robot_state_publisher's part), where TF exists
            self.children.append(ManagedProcess("link_frames_node", link_frames_command(cfg), env,
                                                logs_dir / "link_frames_node.log"))
        self.watch = ContactWatch(press_body_indices(cfg))

    def run(self) -> SessionResult:
        """:meth:`start`, :meth:`record`, and always :meth:`stop`; the result (DemoError as they raise)."""
        try:
            self.start()
            self.record()
        finally:
            self.stop()
        return self.result

    def start(self) -> None:
        """Start the recorder and the node, wait for ``tare``, start the simulator.  Raises DemoError."""
        self.open_ros("vsf_demo_recorder")
        cfg, say = self.cfg, self.progress.say
        say(f"ROS_DOMAIN_ID={self.domain_id} (localhost only); children's output in {self.logs_dir}/")
        say(f"starting sensor node ({cfg.params_file.name}) ...")
        for p in self.children[1:]:
            p.start()
        self._wait_ready(self._clients["tare"].service_is_ready, STARTUP_TIMEOUT_S,
                         "sensor node offered no 'tare' service", "no_tare_service", 0.3)
        say(f"sensor node ready after {time.monotonic() - self.t0:.1f} s; recording "
            f"{len(self.recorder.logs)} topics; starting {cfg.backend} simulator ({cfg.world} world, "
            f"{cfg.duration_s:g} s at {cfg.rate_hz:g} Hz, seed {cfg.seed}) ...")
        say("progress: [wall time] simulated time | contacts steps recorded | predictions "
            f"recorded per sensor ({'/'.join(s.name for s in cfg.sensors)}) | tare")
        self.sim_proc.start()

    def record(self) -> None:
        """Record until the simulator exits (then :data:`DRAIN_S`), taring on schedule.  Raises DemoError: a
        child died, no contacts within :data:`STARTUP_TIMEOUT_S`, or the timeout."""
        sim_started = time.monotonic()
        last_refresh = 0.0
        while True:
            self._executor.spin_once(timeout_sec=0.02)
            now = time.monotonic()
            if now - last_refresh > 0.25:
                self.recorder.refresh()
                last_refresh = now
            self.watch.update(getattr(self.recorder.logs.get("/contacts"), "data", []))
            if self.result.tare.request_ns is None and tare_due(
                    self.watch.stamp_s, [self._pred_count(s) for s in self.cfg.sensors],
                    self.cfg.tare_samples, self.watch.touched):
                self.tare()
            self.progress.tick(self.status)
            self._check("the simulation was running")
            sim_code = self.sim_proc.poll()
            if sim_code is not None:
                if sim_code != 0:
                    raise DemoError(f"simulator exited with code {sim_code}:\n{self.sim_proc.tail()}",
                                    "sim_exited", value=sim_code)
                break
            if self.watch.seen == 0 and now - sim_started > STARTUP_TIMEOUT_S:
                raise DemoError(f"simulator published no contacts within {STARTUP_TIMEOUT_S:.0f} s:\n"
                                f"{self.sim_proc.tail()}", "no_contacts", value=STARTUP_TIMEOUT_S)
        self._spin_for(DRAIN_S)  # the last predictions of the final steps
        self.progress.say(self.status())
        if self.result.tare.request_ns is None:
            self.result.errors.append("the tare service was never called (no contacts received)")

    def tare(self) -> None:
        """The tare at the newest contacts stamp; a touch before ``tare_samples`` free steps is an error."""
        cfg, watch = self.cfg, self.watch
        if watch.touched and watch.free_steps < cfg.tare_samples:
            self.result.errors.append(f"the bubble touched after only {watch.free_steps} contact-free steps "
                                      f"(tare wants {cfg.tare_samples})")
        tare = self._tare_and_save(watch.stamp_s)
        parts = [f"{n} {e['tare_status']}" + (f" ({e['tare_samples']} samples)" if e["tare_samples"] else "")
                 for n, e in tare.per_sensor.items()]
        when = "-" if tare.sim_time_s is None else f"{tare.sim_time_s:.2f}"
        self.progress.say(f"tare (called at sim t={when} s): {'ok' if tare.success else 'FAILED'}: "
                          + "; ".join(parts))

    def status(self) -> str:
        """The progress line: wall time, simulated time, steps, predictions per sensor, tare."""
        elapsed = time.monotonic() - self.t0
        if self.watch.stamp_s is None:
            return f"[{elapsed:5.1f} s] simulator loading its world ..."
        preds = "/".join(str(self._pred_count(s)) for s in self.cfg.sensors)
        tare = self.result.tare
        tare_txt = ("ok" if tare.success else "FAILED") if tare.response_ns else "pending"
        return (f"[{elapsed:5.1f} s] sim t={self.watch.stamp_s:5.2f} s | steps {self.watch.seen:5d} | "
                f"predicted {preds} | tare {tare_txt}")
