"""One-command demo: simulator + sensor node on this host, recorded, tared, summarised.

``python -m vsf_sensor_ros.apps.demo [--world embedded|kinova] [--assets DIR]
[--out demo_out] [--duration S] [--rate HZ] [--seed N]``

What it does:

1. Leases a free ``ROS_DOMAIN_ID`` and confines discovery to loopback
   (:mod:`vsf_sensor_ros.apps.ros_env`), so parallel runs never meet.
2. Checks that the world's parameter file (``config/sensor_node.yaml`` or
   ``config/kinova_punyo.yaml``) pairs with the simulator
   (:func:`check_pairing`: same body table, the simulator's demo sensors with
   the same settings, SI on the wire), starts the sensor node
   (``vsf_sensor_ros.ros.sensor_node``) with that file plus what differs per
   run (``calibration_file``, ``assets_dir``), waits for its ``tare``
   service, subscribes to every topic on the graph, then starts the simulator
   (``vsf_sensor_ros.apps.contact_sim_node``) with the file's body table: two
   separate ROS 2 processes.
   The simulator runs ``--rate`` steps per second of ``1/rate`` simulated
   seconds each (real time when the machine keeps up).
3. Records every topic (:mod:`vsf_sensor_ros.apps.recorder`), prints a
   progress line per second, and calls the ``tare`` service
   (``std_srvs/Trigger``) at simulated time :data:`TARE_AT_S`, mid-way through
   the 2 s contact-free hold that starts the press trajectory (earlier if the
   bubble touches first), then ``save_calibration`` into
   ``<out>/calibration.yaml``.
4. When the simulator has finished (it exits after ``duration_s``), stops both
   children (SIGINT, then SIGTERM/SIGKILL after a grace period; always, also
   on Ctrl-C, errors and the overall timeout) and writes to ``--out``:
   ``run.mcap`` + ``metadata.yaml`` (a rosbag2 bag: ``ros2 bag info <out>``),
   ``pressure.png``, ``force_field.png``, one ``<sensor>.png`` per other
   sensor, ``summary.json`` and ``logs/`` (the children's output).
5. Prints a summary table; exits 1 when a sensor published nothing, the tare
   failed or a child died, 2 on bad arguments, 130 on Ctrl-C.

``summary.json`` definitions (also stored in the file under ``definitions``):
see :data:`DEFINITIONS` and :mod:`vsf_sensor_ros.apps.analysis`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
SIM_MODULE = "vsf_sensor_ros.apps.contact_sim_node"
NODE_MODULE = "vsf_sensor_ros.ros.sensor_node"
WORLD_PARAMS = {"embedded": "sensor_node.yaml", "kinova": "kinova_punyo.yaml"}
STARTUP_TIMEOUT_S = 90.0   # python + torch + klampt imports on a busy 2-core machine
DRAIN_S = 1.5              # after the simulator ends, wait this long for the last predictions
TARE_STRETCH_S = 2.0       # simulated contact-free hold at the start (simulator trajectory.tare_s)
TARE_AT_S = 1.0            # tare at this simulated time: mid-way through the contact-free hold


class DemoError(RuntimeError):
    """A failure the demo reports with a clear message and exit code 1."""


class _Terminated(Exception):
    """SIGTERM received: unwind like Ctrl-C so the children are stopped."""


# -- configuration ---------------------------------------------------------------------------
@dataclass
class SensorInfo:
    """A sensor of the demo world as configured in the node's parameter file.

    Attributes:
        name: sensor name (topic namespace ``<name>/...``).
        type_name: sensor class (``PunyoPressureSensor`` ...).
        kind: ``pressure`` | ``dense_force`` | ``wrench`` | ``load``.
        measured_scale: measured value x scale = SI.
        attachment: body the sensor is attached to.
    """

    name: str
    type_name: str
    kind: str
    measured_scale: float = 1.0
    attachment: str = ""


@dataclass
class DemoConfig:
    """Everything a run needs, resolved from the command line."""

    world: str
    params_file: Path
    assets: Optional[Path]
    out: Path
    duration_s: float
    rate_hz: float
    seed: int
    timeout_s: float
    sensors: List[SensorInfo]
    tare_samples: int
    node_name: str = "sensor_node"
    base_params: Dict[str, Any] = field(default_factory=dict)
    contact_body_names: List[str] = field(default_factory=list)


def config_dir() -> Path:
    """The ``config/`` directory: the source checkout's, else the installed share directory.

    Raises:
        DemoError: neither exists.
    """
    local = PACKAGE_ROOT / "config"
    if local.is_dir():
        return local
    try:
        from ament_index_python.packages import get_package_share_directory
        share = Path(get_package_share_directory("vsf_sensor_ros")) / "config"
        if share.is_dir():
            return share
    except (ImportError, LookupError, ValueError):
        pass
    raise DemoError(f"no config directory found (looked in {local} and the ament index)")


def _flatten(prefix: str, value: Any, out: Dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def read_params_file(path: Path) -> Tuple[str, Dict[str, Any]]:
    """Parameters of the first node entry of a ROS 2 parameter YAML file.

    Nested namespaces are flattened to dotted names (``punyo_pressure.type``).

    Returns:
        ``(node_key, {name: value})`` (``node_key`` as written, e.g. ``sensor_node`` or ``/**``).

    Raises:
        DemoError: unreadable file or no ``ros__parameters`` entry.
    """
    import yaml
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DemoError(f"cannot read parameter file {path}: {exc}") from exc
    for key, val in (doc or {}).items():
        if isinstance(val, dict) and "ros__parameters" in val:
            flat: Dict[str, Any] = {}
            _flatten("", val["ros__parameters"], flat)
            return str(key), flat
        if isinstance(val, dict):  # namespaced: /ns: {node: {ros__parameters: ...}}
            for k2, v2 in val.items():
                if isinstance(v2, dict) and "ros__parameters" in v2:
                    flat = {}
                    _flatten("", v2["ros__parameters"], flat)
                    return str(k2), flat
    raise DemoError(f"parameter file {path} has no 'ros__parameters' entry")


def sensors_from_params(params: Dict[str, Any], path: Path) -> List[SensorInfo]:
    """The ``sensors`` list of a node parameter set, with each sensor's type and kind.

    Raises:
        DemoError: no sensors, or a sensor whose type has no ROS encoding.
    """
    from vsf_sensor_ros.ros.outputs import SENSOR_KINDS
    names = params.get("sensors") or []
    if not names:
        raise DemoError(f"parameter file {path} lists no sensors")
    out = []
    for name in names:
        type_name = params.get(f"{name}.type")
        if type_name not in SENSOR_KINDS:
            raise DemoError(f"sensor {name!r} in {path} has type {type_name!r}; "
                            f"known types: {sorted(SENSOR_KINDS)}")
        out.append(SensorInfo(name, type_name, SENSOR_KINDS[type_name],
                              float(params.get(f"{name}.measured_scale", 1.0)),
                              str(params.get(f"{name}.attachment", ""))))
    return out


def default_assets() -> Optional[Path]:
    """``$VSF_ASSETS``, else the shared Kinova fixture next to the checkout, else ``None``."""
    env = os.environ.get("VSF_ASSETS")
    if env:
        return Path(env)
    shared = PACKAGE_ROOT.parent / "shared" / "fixtures" / "kinova_punyo"
    return shared if shared.is_dir() else None


def build_parser() -> argparse.ArgumentParser:
    """The demo's command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m vsf_sensor_ros.apps.demo",
        description="Run the contact simulator and the sensor node on this host, record every "
                    "topic to a rosbag2 MCAP, tare after the contact-free stretch, and write "
                    "plots and summary.json.")
    p.add_argument("--world", choices=sorted(WORLD_PARAMS), default="embedded",
                   help="embedded: the package's small arm + bubble (no files needed); "
                        "kinova: Kinova Gen3 + Punyo from --assets (default: embedded)")
    p.add_argument("--assets", type=Path, default=None,
                   help="directory with the Kinova/Punyo assets (kinova world; default: $VSF_ASSETS or "
                        "../shared/fixtures/kinova_punyo next to the checkout)")
    p.add_argument("--out", type=Path, default=Path("demo_out"), help="output directory (default: demo_out)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="simulated seconds (real time when the machine keeps up, slower otherwise); "
                        "the press trajectory "
                        "(2 s contact-free, approach, press, hold, release, retreat) takes 9 s (default: 10)")
    p.add_argument("--rate", type=float, default=50.0,
                   help="simulator steps per second, each 1/rate simulated seconds (one contacts message "
                        "each; default: 50)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulated noise (default: 0)")
    p.add_argument("--params-file", type=Path, default=None,
                   help="sensor node parameter file (default: config/<world's file>)")
    p.add_argument("--timeout", type=float, default=None,
                   help="hard limit on the whole run in seconds (default: duration + 150)")
    return p


def resolve_config(args: argparse.Namespace) -> DemoConfig:
    """Check the arguments and find the files they point to.

    Raises:
        ValueError: a numeric argument out of range (named in the message).
        DemoError: missing parameter file or assets.
    """
    if not (math.isfinite(args.duration) and args.duration > 0):
        raise ValueError(f"--duration must be a positive number of seconds, got {args.duration}")
    if not (math.isfinite(args.rate) and 0 < args.rate <= 1000):
        raise ValueError(f"--rate must be in (0, 1000] Hz, got {args.rate}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    timeout = args.timeout if args.timeout is not None else args.duration + 150.0
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    params_file = args.params_file or config_dir() / WORLD_PARAMS[args.world]
    if not Path(params_file).is_file():
        raise DemoError(f"sensor node parameter file {params_file} not found")
    node_key, params = read_params_file(params_file)
    sensors = sensors_from_params(params, params_file)
    assets = args.assets if args.assets is not None else default_assets()
    if args.world != "kinova":
        assets = None  # the embedded world needs no files
    else:
        if assets is None or not Path(assets).is_dir():
            raise DemoError("the kinova world needs its assets: pass --assets DIR (the folder with "
                            f"kinova_gen3.urdf and punyo_mesh_*.ply) or set VSF_ASSETS; got {assets}")
        assets = Path(assets).resolve()
    node_name = node_key.strip("/") if node_key not in ("/**", "**") else "sensor_node"
    return DemoConfig(world=args.world, params_file=Path(params_file).resolve(), assets=assets,
                      out=Path(args.out), duration_s=float(args.duration), rate_hz=float(args.rate),
                      seed=int(args.seed), timeout_s=float(timeout), sensors=sensors,
                      tare_samples=int(params.get("tare_samples", 10)), node_name=node_name or "sensor_node",
                      base_params=params,
                      contact_body_names=[str(b) for b in (params.get("contact_body_names") or [])])


def _same(a: Any, b: Any) -> bool:
    """Parameter values equal (numbers and number lists to 1e-9 relative, others exactly)."""
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-9, atol=0.0))


def check_pairing(cfg: DemoConfig) -> List[str]:
    """What in the node's parameter file does not pair with the simulator's measured streams.

    The simulator (:mod:`vsf_sensor_ros.apps.contact_sim_node`) publishes
    ``<s>/measured`` in SI for the demo sensors of its world
    (:func:`vsf_sensor_ros.apps.sim_sensors.demo_sensor_specs`, whose settings
    depend on the world's bubble mesh).  The shipped files set exactly those
    sensors, ``measured_scale: 1.0`` and the simulator's body table; a custom
    ``--params-file`` that differs still runs, with these differences reported
    as warnings (residuals of a differing sensor compare different models).

    Returns:
        One line per difference (empty when the file pairs).

    Raises:
        DemoError: the file has no ``contact_body_names`` (the simulator would
            index bodies the node does not know), or the world's assets cannot
            be loaded.
    """
    from vsf_sensor_ros.apps.sim_sensors import demo_sensor_specs, sensor_node_sensor_params
    from vsf_sensor_ros.apps.sim_world import load_assets
    if not cfg.contact_body_names:
        raise DemoError(f"{cfg.params_file} sets no contact_body_names: the demo passes the node's body "
                        "table to the simulator, e.g. contact_body_names: [punyo, object, table]")
    try:
        assets = load_assets(cfg.world, None if cfg.assets is None else str(cfg.assets))
    except (OSError, ValueError) as exc:
        raise DemoError(f"cannot load the {cfg.world} world's assets: {exc}") from exc
    expected = sensor_node_sensor_params(list(demo_sensor_specs(assets).values()))
    params = cfg.base_params
    problems: List[str] = []
    for name in expected["sensors"]:
        if name not in (params.get("sensors") or []):
            problems.append(f"the simulator measures {name!r} but {cfg.params_file.name} has no such sensor")
            continue
        for key, want in expected.items():
            if key.startswith(name + ".") and not _same(params.get(key), want):
                problems.append(f"{key} is {params.get(key)!r} in {cfg.params_file.name}; the simulator "
                                f"measures with {want!r}")
        scale = params.get(f"{name}.measured_scale", 1.0)
        if not _same(scale, 1.0):
            problems.append(f"{name}.measured_scale is {scale!r}; the simulator publishes SI (1.0)")
    return problems


# -- the session ------------------------------------------------------------------------------
@dataclass
class TareResult:
    """Outcome of the ``tare`` call.

    Attributes:
        success, message: the ``std_srvs/Trigger`` response.
        request_ns, response_ns: wall clock (``time.time_ns``) when sent / answered.
        sim_time_s: latest ``contacts`` stamp (s) received when the request was sent.
        per_sensor: sensor -> ``{"tare_offset": ..., "tare_samples": ...}`` parsed from the answer.
    """

    success: bool = False
    message: str = ""
    request_ns: Optional[int] = None
    response_ns: Optional[int] = None
    sim_time_s: Optional[float] = None
    per_sensor: Dict[str, Dict[str, Any]] = field(default_factory=dict)


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


def parse_tare_answer(message: str, sensors: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """Per-sensor sample count and offset text from the sensor node's ``tare`` answer.

    The node answers ``"<s>: tared with <used> of <N> samples (...); offset <text>"``
    per sensor, one line each (or ``"<s>: cannot tare: <why>"``; ``"; "``
    between sensors is accepted too).  A single-valued offset
    (``pressure=101325 Pa``) is returned as a float.

    Returns:
        sensor -> ``{"tare_samples": int | None, "tare_offset": float | str | None,
        "tare_status": "tared" | "failed: <why>" | "missing"}`` for every sensor in ``sensors``.
    """
    out: Dict[str, Dict[str, Any]] = {s: {"tare_samples": None, "tare_offset": None, "tare_status": "missing"}
                                      for s in sensors}
    marks = sorted((m.start(), s) for s in sensors
                   for m in re.finditer(rf"(?:^|; |\n){re.escape(s)}: ", message))
    for k, (pos, s) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(message)
        part = message[pos:end]
        why = re.search(r"cannot tare: (.*?)(?:;\s*)?$", part.strip())
        out[s]["tare_status"] = f"failed: {why.group(1)}" if why else "tared"
        used = re.search(r"tared with (\d+)", part)
        if used:
            out[s]["tare_samples"] = int(used.group(1))
        off = re.search(r"offset (.*)$", part.strip())
        if off:
            text = off.group(1).strip().rstrip(";")
            single = re.fullmatch(r"[A-Za-z_][\w\[\]]*=([-+0-9.eEinfa]+)(?: \S+)?", text)
            try:
                out[s]["tare_offset"] = float(single.group(1)) if single else text
            except ValueError:
                out[s]["tare_offset"] = text
    return out


def offsets_from_calibration(path: Path, sensors: Sequence[str],
                             kinds: Optional[Dict[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """Per-sensor tare offset and sample count from the node's ``save_calibration`` YAML.

    File layout (``sensor_node``): ``sensors: {<s>: {samples: n, calibration: {tare: [...],
    tare_sim_avg: [...]}}}``.  The offset is what the model adds, ``tare − tare_sim_avg``
    (``tare`` when there is no average); for the kinds ``wrench`` and ``load`` (``kinds``:
    sensor -> kind) the leading contact indicator entry, which carries no offset, is left
    out.  An offset of one entry is returned as a float, up to 6 entries as a list, more
    (dense force fields) as ``{"entries", "mean", "max_abs"}`` (the full vector stays in the file).

    Returns:
        sensor -> ``{"tare_samples", "tare_offset"}`` for the sensors found in the file.

    Raises:
        DemoError: the file cannot be read or parsed.
    """
    import yaml
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DemoError(f"cannot read calibration file {path}: {exc}") from exc
    out: Dict[str, Dict[str, Any]] = {}
    for s in sensors:
        entry = (doc.get("sensors") or {}).get(s)
        if not isinstance(entry, dict):
            continue
        calib = entry.get("calibration") or {}
        tare = calib.get("tare")
        if tare is None:
            offset: Any = None
        else:
            arr = np.asarray(tare, dtype=np.float64).reshape(-1)
            if calib.get("tare_sim_avg") is not None:
                arr = arr - np.asarray(calib["tare_sim_avg"], dtype=np.float64).reshape(-1)
            if (kinds or {}).get(s) in ("wrench", "load"):
                arr = arr[1:]
            if arr.size == 1:
                offset = float(arr[0])
            elif arr.size <= 6:
                offset = [float(v) for v in arr]
            else:
                offset = {"entries": int(arr.size), "mean": float(arr.mean()),
                          "max_abs": float(np.abs(arr).max())}
        n = entry.get("samples")
        out[s] = {"tare_samples": None if n is None else int(n), "tare_offset": offset}
    return out


def tare_succeeded(service_success: bool, per_sensor: Dict[str, Dict[str, Any]]) -> bool:
    """Whether the demo's tare is done: the node answered ``success`` and every sensor tared.

    The node's global ``tare`` answers ``success`` only when every sensor
    tared; every shipped model has a tare offset and every demo sensor is
    contact-free during the hold (the load sensor's radius leaves out the
    table under the box), so any failed or missing sensor fails the demo.
    """
    return service_success and bool(per_sensor) and all(
        e["tare_status"] == "tared" for e in per_sensor.values())


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


def _child_env(domain_id: int, assets: Optional[Path]) -> Dict[str, str]:
    from vsf_sensor_ros.apps.ros_env import localhost_env
    env = localhost_env(domain_id)
    # The children import the package from this checkout even when it is not installed.
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
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
    cmd = [sys.executable, "-m", NODE_MODULE, "--ros-args", "--params-file", str(cfg.params_file)]
    cmd += ["-p", f"calibration_file:={(cfg.out / 'calibration.yaml').resolve()}",
            "-p", "tare_on_start:=false",
            "-p", "qos.inputs.reliability:=reliable", "-p", f"qos.inputs.depth:={INPUT_QUEUE_DEPTH}"]
    if cfg.assets is not None:
        cmd += ["-p", f"assets_dir:={cfg.assets}"]
    return cmd


def sim_command(cfg: DemoConfig) -> List[str]:
    """argv of the simulator child.

    ``rate_hz`` steps per wall second with ``sim_dt = 1 / rate_hz`` simulated
    seconds each: the simulation runs in real time.  It waits until both the
    sensor node and the recorder subscribe to ``contacts`` before its first
    step, and exits (code 0) after ``duration_s`` simulated seconds.
    """
    cmd = [sys.executable, "-m", SIM_MODULE, "--ros-args",
           "-p", f"world:={cfg.world}", "-p", f"rate_hz:={cfg.rate_hz!r}",
           "-p", f"sim_dt:={1.0 / cfg.rate_hz!r}", "-p", f"physics_dt:={min(0.001, 1.0 / cfg.rate_hz)!r}",
           "-p", f"duration_s:={cfg.duration_s!r}", "-p", f"seed:={cfg.seed}",
           "-p", f"trajectory.tare_s:={TARE_STRETCH_S!r}",
           "-p", "wait_for_subscribers:=2", "-p", "exit_on_done:=true"]
    if cfg.contact_body_names:
        cmd += ["-p", f"contact_body_names:=[{','.join(cfg.contact_body_names)}]"]
    if cfg.assets is not None:
        cmd += ["-p", f"assets_dir:={cfg.assets}"]
    return cmd


def press_body_indices(cfg: DemoConfig) -> List[int]:
    """Indices (into ``contact_body_names``) of the bubble: the bodies of the Punyo sensors.

    "Contact" for the tare timing and the plots' shading means contact on these
    bodies: the box resting on the table is in contact all the time.  Empty
    (= any contact counts) when the demo has no Punyo sensor.
    """
    watched = {s.attachment for s in cfg.sensors if s.kind in ("pressure", "dense_force")}
    return [i for i, b in enumerate(cfg.contact_body_names) if b in watched]


def run_session(cfg: DemoConfig, progress: Progress, domain_id: int, logs_dir: Path) -> SessionResult:
    """Start the children, record, tare, wait for the simulator, stop everything.

    The children are stopped and reaped on every way out of this function.

    Raises:
        DemoError: the node or the simulator did not come up in time, died,
            or the overall timeout passed.
        KeyboardInterrupt / _Terminated: propagated after the children are stopped.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import Trigger

    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    from vsf_sensor_ros.apps.analysis import touches
    from vsf_sensor_ros.apps.processes import ManagedProcess
    from vsf_sensor_ros.apps.recorder import TopicRecorder, cloud_point_count, header_stamp_ns

    env = _child_env(domain_id, cfg.assets)
    node_proc = ManagedProcess("sensor_node", node_command(cfg), env, logs_dir / "sensor_node.log")
    sim_proc = ManagedProcess("contact_sim_node", sim_command(cfg), env, logs_dir / "contact_sim_node.log")
    t0 = time.monotonic()
    deadline = t0 + cfg.timeout_s
    ctx = rclpy.Context()
    try:
        from rclpy.signals import SignalHandlerOptions
        # The demo handles Ctrl-C itself (stop children, then exit); rclpy must not shut down first.
        rclpy.init(context=ctx, domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):
        rclpy.init(context=ctx, domain_id=domain_id)
    node = rclpy.create_node("vsf_demo_recorder", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    recorder = TopicRecorder(node)
    tare = TareResult()
    result = SessionResult({}, {}, tare, 0.0, None, None)
    seen = {"contacts": 0, "free_steps": 0, "contact": False, "stamp_s": None}
    press_bodies = press_body_indices(cfg)

    def check(stage: str) -> None:
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {cfg.timeout_s:.0f} s while {stage}")
        if node_proc.poll() is not None:
            result.node_died = True
            raise DemoError(f"sensor node exited with code {node_proc.poll()} while {stage}:\n"
                            f"{node_proc.tail()}")

    def spin_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.02)

    def call_trigger(client: Any, stage: str, timeout_s: float = 10.0) -> Optional[Any]:
        # Spin (so recording goes on) until the answer arrives.
        future = client.call_async(Trigger.Request())
        end = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.02)
            check(stage)
        return future.result() if future.done() else None

    def pred_count(s: SensorInfo) -> int:
        log = recorder.logs.get(f"/{s.name}/predicted")
        return 0 if log is None else len(log)

    def status() -> str:
        if seen["stamp_s"] is None:
            return f"[{time.monotonic() - t0:5.1f} s] simulator loading its world ..."
        sim_t = f"{seen['stamp_s']:5.2f}"
        preds = "/".join(str(pred_count(s)) for s in cfg.sensors)
        tare_txt = ("ok" if tare.success else "FAILED") if tare.response_ns else "pending"
        return (f"[{time.monotonic() - t0:5.1f} s] sim t={sim_t} s | steps {seen['contacts']:5d} | "
                f"predicted {preds} | tare {tare_txt}")

    def do_tare() -> None:
        if seen["contact"] and seen["free_steps"] < cfg.tare_samples:
            result.errors.append(f"the bubble touched after only {seen['free_steps']} contact-free steps "
                                 f"(tare wants {cfg.tare_samples})")
        tare.sim_time_s = seen["stamp_s"]
        tare.request_ns = time.time_ns()
        resp = call_trigger(tare_client, "waiting for the tare answer")
        tare.response_ns = time.time_ns()
        tare.message = "no answer within 10 s" if resp is None else resp.message
        names = [s.name for s in cfg.sensors]
        tare.per_sensor = parse_tare_answer(tare.message, names)
        tare.success = tare_succeeded(resp is not None and resp.success, tare.per_sensor)
        parts = [f"{n} {e['tare_status']}" + (f" ({e['tare_samples']} samples)" if e["tare_samples"] else "")
                 for n, e in tare.per_sensor.items()]
        progress.say(f"tare (called at sim t={tare.sim_time_s:.2f} s): {'ok' if tare.success else 'FAILED'}: "
                     + "; ".join(parts))
        if any(e["tare_status"] == "tared" for e in tare.per_sensor.values()):
            saved = call_trigger(save_client, "saving the calibration")
            if saved is not None and saved.success:
                try:
                    kinds = {s.name: s.kind for s in cfg.sensors}
                    for name, entry in offsets_from_calibration(cfg.out / "calibration.yaml", names,
                                                                kinds).items():
                        if tare.per_sensor[name]["tare_status"] == "tared":
                            tare.per_sensor[name].update(entry)
                except DemoError as exc:
                    result.errors.append(str(exc))
            else:
                result.errors.append("save_calibration failed: "
                                     + ("no answer" if saved is None else saved.message))

    try:
        progress.say(f"ROS_DOMAIN_ID={domain_id} (localhost only); children's output in {logs_dir}/")
        progress.say(f"starting sensor node ({cfg.params_file.name}) ...")
        node_proc.start()
        tare_client = node.create_client(Trigger, "/tare")
        save_client = node.create_client(Trigger, "/save_calibration")
        while not tare_client.service_is_ready():
            spin_for(0.1)
            check("starting")
            if time.monotonic() - t0 > STARTUP_TIMEOUT_S:
                raise DemoError(f"sensor node offered no 'tare' service within {STARTUP_TIMEOUT_S:.0f} s:\n"
                                f"{node_proc.tail()}")
        # Subscribe to everything the node offers or expects (its measured inputs
        # included) before the simulator publishes its first message.
        recorder.refresh()
        spin_for(0.3)
        recorder.refresh()
        progress.say(f"sensor node ready after {time.monotonic() - t0:.1f} s; recording {len(recorder.logs)} "
                     f"topics; starting simulator ({cfg.world} world, {cfg.duration_s:g} s at "
                     f"{cfg.rate_hz:g} Hz, seed {cfg.seed}) ...")
        progress.say("progress: [wall time] simulated time | contacts steps recorded | predictions "
                     f"recorded per sensor ({'/'.join(s.name for s in cfg.sensors)}) | tare")
        sim_proc.start()
        sim_started = time.monotonic()
        last_refresh = 0.0
        while True:
            executor.spin_once(timeout_sec=0.02)
            now = time.monotonic()
            if now - last_refresh > 0.25:
                recorder.refresh()
                last_refresh = now
            contacts = recorder.logs.get("/contacts")
            if contacts is not None and len(contacts) > seen["contacts"]:
                for data in contacts.data[seen["contacts"]:]:
                    if cloud_point_count(data) > 0 and touches(deserialize_message(data, PointCloud2),
                                                               press_bodies):
                        seen["contact"] = True
                    elif not seen["contact"]:
                        seen["free_steps"] += 1
                    seen["stamp_s"] = header_stamp_ns(data) * 1e-9
                seen["contacts"] = len(contacts)
            # Tare mid-way through the contact-free hold, once every sensor has enough
            # samples -- or at the latest when the bubble touches.
            if tare.request_ns is None and seen["contacts"] > 0:
                enough = seen["stamp_s"] >= TARE_AT_S and all(
                    pred_count(s) >= cfg.tare_samples for s in cfg.sensors)
                if enough or seen["contact"]:
                    do_tare()
            progress.tick(status)
            check("the simulation was running")
            sim_code = sim_proc.poll()
            if sim_code is not None:
                result.sim_exit = sim_code
                if sim_code != 0:
                    result.sim_died = True
                    raise DemoError(f"simulator exited with code {sim_code}:\n{sim_proc.tail()}")
                break
            if seen["contacts"] == 0 and now - sim_started > STARTUP_TIMEOUT_S:
                raise DemoError(f"simulator published no contacts within {STARTUP_TIMEOUT_S:.0f} s:\n"
                                f"{sim_proc.tail()}")
        spin_for(DRAIN_S)  # the last predictions of the final steps
        progress.say(status())
        if tare.request_ns is None:
            result.errors.append("the tare service was never called (no contacts received)")
    finally:
        result.sim_exit = sim_proc.stop()
        result.node_exit = node_proc.stop()
        recorder.stop()
        result.logs = dict(recorder.logs)
        result.skipped = dict(recorder.skipped)
        result.wall_s = time.monotonic() - t0
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    return result


# -- outputs ------------------------------------------------------------------------------------
DEFINITIONS = {
    "steps": "contacts messages (simulator steps) recorded",
    "sim_rate_hz": "simulator step rate requested (simulated Hz); achieved_rate_hz = steps / wall "
                   "time between the first and last contacts message",
    "published": "<sensor>/predicted messages recorded",
    "latency_ms": "wall receive time of <sensor>/predicted minus wall receive time of the contacts "
                  "message with the same header.stamp, both taken in the demo's recorder process",
    "residual_rms": "RMS over all entries of measured - predicted (SI units, measured x measured_scale), "
                    "samples matched by header.stamp; before_tare = predictions the node published (DDS "
                    "send time) before the tare request was sent, after_tare = published after its answer "
                    "arrived",
    "tare.sim_time_s": "newest prediction stamp the node had published when its tare answer arrived "
                       "(where the tare took effect, to within a step)",
    "tare_offset": "offset the node reported in its tare answer (SI; list for vector sensors)",
    "tare_samples": "contact-free measured samples the node averaged for the tare",
}


def _series_for(session: SessionResult, s: SensorInfo) -> Tuple[Any, Any]:
    from vsf_sensor_ros.apps.analysis import Series
    pred_log = session.logs.get(f"/{s.name}/predicted")
    meas_log = session.logs.get(f"/{s.name}/measured")
    pred = Series.from_log(pred_log, s.kind) if pred_log is not None and len(pred_log) else None
    meas = Series.from_log(meas_log, s.kind, measured=True, scale=s.measured_scale) \
        if meas_log is not None and len(meas_log) else None
    return pred, meas


def tare_sim_time(response_ns: Optional[int], predicted: Sequence[Any]) -> Optional[float]:
    """Simulation time of the tare: the newest stamp (s) among predictions the node
    published (send time; receive time where unknown) before its tare answer arrived.

    The node answers right after applying the tare, so this is where the tare
    took effect (to within a step).  ``None`` without an answer or such a prediction.
    """
    if response_ns is None:
        return None
    stamps = [p.stamp_ns[p.event_ns < response_ns] for p in predicted if p is not None]
    stamps = [s for s in stamps if s.size]
    return round(float(max(s.max() for s in stamps)) * 1e-9, 9) if stamps else None


def build_summary(cfg: DemoConfig, session: SessionResult, series: Dict[str, Tuple[Any, Any]],
                  bag: Dict[str, Any]) -> Dict[str, Any]:
    """``summary.json`` content (see :data:`DEFINITIONS`)."""
    from vsf_sensor_ros.apps.analysis import sensor_numbers
    contacts = session.logs.get("/contacts")
    c_stamp = np.array(contacts.stamps_ns() if contacts else [], dtype=np.int64)
    c_recv = np.array(contacts.recv_ns if contacts else [], dtype=np.int64)
    steps = int(c_stamp.size)
    tare_t = tare_sim_time(session.tare.response_ns, [p for p, _ in series.values()])
    if tare_t is not None:
        session.tare.sim_time_s = tare_t
    span_s = (c_recv[-1] - c_recv[0]) * 1e-9 if steps > 1 else 0.0
    sensors: Dict[str, Any] = {}
    for s in cfg.sensors:
        pred, meas = series[s.name]
        if pred is None:
            numbers: Dict[str, Any] = {"published": 0, "latency_ms_p50": None, "latency_ms_p99": None,
                                       "residual_rms_before_tare": None, "residual_rms_after_tare": None}
        else:
            numbers = sensor_numbers(pred, meas, c_stamp, c_recv, session.tare.request_ns,
                                     session.tare.response_ns)
        numbers = {"type": s.type_name, **numbers,
                   "measured": 0 if meas is None else len(meas.values), **session.tare.per_sensor.get(
                       s.name, {"tare_offset": None, "tare_samples": None})}
        sensors[s.name] = numbers
    return {
        "world": cfg.world,
        "steps": steps,
        "sim_rate_hz": cfg.rate_hz,
        "achieved_rate_hz": (steps - 1) / span_s if span_s > 0 else None,
        "duration_s": cfg.duration_s,
        "sim_time_span_s": float((c_stamp[-1] - c_stamp[0]) * 1e-9) if steps > 1 else 0.0,
        "seed": cfg.seed,
        "wall_time_s": round(session.wall_s, 3),
        "tare": {"success": session.tare.success, "message": session.tare.message,
                 "sim_time_s": session.tare.sim_time_s,
                 "call_ms": None if session.tare.response_ns is None or session.tare.request_ns is None
                 else (session.tare.response_ns - session.tare.request_ns) / 1e6},
        "sensors": sensors,
        "bag": {"path": str(bag.get("path", "")), "topics": bag.get("counts", {}),
                "left_out": bag.get("left_out", {}), "not_recorded": session.skipped},
        "errors": list(session.errors),
        "definitions": DEFINITIONS,
    }


def make_plots(cfg: DemoConfig, session: SessionResult, series: Dict[str, Tuple[Any, Any]]) -> List[Path]:
    """Write ``pressure.png``, ``force_field.png`` and one ``<sensor>.png`` per other sensor."""
    from vsf_sensor_ros.apps.analysis import cloud_fields, touches
    from vsf_sensor_ros.apps.plots import plot_components, plot_force_field, plot_pressure
    from vsf_sensor_ros.apps.recorder import cloud_point_count
    contacts = session.logs.get("/contacts")
    if contacts is None or not len(contacts):
        return []
    c_stamp = np.array(contacts.stamps_ns(), dtype=np.int64)
    t_origin = int(c_stamp[0])
    bodies = press_body_indices(cfg)
    pressed = np.array([cloud_point_count(d) > 0 and touches(m, bodies)
                        for d, m in zip(contacts.data, contacts.decode())], dtype=bool)
    in_contact = c_stamp[pressed]
    span = None if not in_contact.size else ((in_contact[0] - t_origin) * 1e-9,
                                             (in_contact[-1] - t_origin) * 1e-9)
    tare_t = None if session.tare.sim_time_s is None else session.tare.sim_time_s - t_origin * 1e-9

    def t(series_: Any) -> np.ndarray:
        return (series_.stamp_ns - t_origin) * 1e-9

    written: List[Path] = []
    pressure_done = dense_done = False
    for s in cfg.sensors:
        pred, meas = series[s.name]
        if pred is None:
            continue
        if s.kind == "pressure" and not pressure_done:
            pressure_done = True
            tm = t(meas) if meas is not None else np.zeros(0)
            pm = np.array([v[0] for v in meas.values]) if meas is not None else np.zeros(0)
            written.append(plot_pressure(tm, pm, t(pred), np.array([v[0] for v in pred.values]),
                                         cfg.out / "pressure.png", tare_t, span,
                                         title=f"{s.name}: predicted vs measured ({cfg.world} world)"))
        elif s.kind == "dense_force" and not dense_done:
            dense_done = True
            log = session.logs[f"/{s.name}/predicted"]
            totals = np.array([np.abs(v).sum() for v in pred.values])
            k = int(np.argmax(totals))
            msg = log.decode([k])[0]
            xyz = cloud_fields(msg, ("x", "y", "z"))
            f_pred = pred.values[k].reshape(-1, 3)
            f_meas = None
            if meas is not None:
                j = np.flatnonzero(meas.stamp_ns == pred.stamp_ns[k])
                if j.size and meas.values[j[0]].size == f_pred.size:
                    f_meas = meas.values[j[0]].reshape(-1, 3)
            written.append(plot_force_field(
                xyz, f_pred, cfg.out / "force_field.png", f_meas, frame=msg.header.frame_id,
                title=f"{s.name} at peak contact, sim t={(pred.stamp_ns[k] - t_origin) * 1e-9:.2f} s"))
        else:
            labels = {"pressure": ["pressure"], "dense_force": None,
                      "wrench": ["force_x", "force_y", "force_z"], "load": ["load"]}[s.kind]
            p = np.stack(pred.values)
            if labels is None:  # a second dense sensor: plot its total force per axis
                p = p.reshape(len(p), -1, 3).sum(axis=1)
                labels = ["Σfx", "Σfy", "Σfz"]
                m = None if meas is None else \
                    np.stack(meas.values).reshape(len(meas.values), -1, 3).sum(axis=1)
            else:
                m = None if meas is None else np.stack(meas.values)
            written.append(plot_components(None if meas is None else t(meas), m, t(pred), p, labels,
                                           cfg.out / f"{s.name}.png", tare_t, span,
                                           title=f"{s.name} ({s.type_name})",
                                           unit="Pa" if s.kind == "pressure" else "N"))
    return written


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    if isinstance(v, list):
        return f"[{len(v)} values]"
    if isinstance(v, dict) and "entries" in v:
        return f"[{v['entries']} values]"
    return str(v)


def summary_table(summary: Dict[str, Any]) -> str:
    """A one-screen text table of ``summary.json``."""
    head = (f"world {summary['world']}: {summary['steps']} steps at {summary['sim_rate_hz']:g} Hz "
            f"(achieved {_fmt(summary['achieved_rate_hz'])} Hz), {summary['duration_s']:g} s simulated, "
            f"{summary['wall_time_s']:.1f} s wall; tare "
            f"{'ok' if summary['tare']['success'] else 'FAILED'} "
            f"at sim t={_fmt(summary['tare']['sim_time_s'])} s")
    cols = ["sensor", "predicted/steps", "lat p50 ms", "lat p99 ms", "rms before", "rms after",
            "tare offset", "n tare"]
    rows = [cols]
    for name, s in summary["sensors"].items():
        rows.append([name, f"{s['published']}/{summary['steps']}",
                     _fmt(s["latency_ms_p50"]), _fmt(s["latency_ms_p99"]),
                     _fmt(s["residual_rms_before_tare"]), _fmt(s["residual_rms_after_tare"]),
                     _fmt(s["tare_offset"]), _fmt(s["tare_samples"])])
    widths = [max(len(r[k]) for r in rows) for k in range(len(cols))]
    lines = [head, ""]
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                               for k, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    notes = [f"  {name}: {s['tare_status']}" for name, s in summary["sensors"].items()
             if s.get("tare_status", "tared") != "tared"]
    if notes:
        lines += ["", "not tared:"] + notes
    return "\n".join(lines)


def _clean_out(out: Path) -> None:
    # Remove only what a previous demo run wrote here; other files stay.
    # calibration.yaml must go: the node would load it at start and begin tared.
    for name in ("run.mcap", "metadata.yaml", "summary.json", "pressure.png", "force_field.png",
                 "calibration.yaml"):
        (out / name).unlink(missing_ok=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command-line entry point (``vsf_demo``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = resolve_config(args)
    except (ValueError, DemoError) as exc:
        parser.print_usage(sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from vsf_sensor_ros.apps.recorder import write_bag
    from vsf_sensor_ros.apps.ros_env import apply_localhost_env, free_domain_id, release_domain_id

    def on_sigterm(signum: int, frame: Any) -> None:
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    progress = Progress()
    cfg.out.mkdir(parents=True, exist_ok=True)
    _clean_out(cfg.out)
    logs_dir = cfg.out / "logs"
    try:
        pairing = check_pairing(cfg)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in pairing:
        print(f"warning: {line}", file=sys.stderr)
    domain_id = free_domain_id()
    apply_localhost_env(domain_id)
    session: Optional[SessionResult] = None
    failure: Optional[str] = None
    code = 0
    try:
        try:
            session = run_session(cfg, progress, domain_id, logs_dir)
        except DemoError as exc:
            failure = str(exc)
        if session is None:
            print(f"\ndemo FAILED: {failure}\n(children's output: {logs_dir})", file=sys.stderr)
            return 1
        session.errors[:0] = [f"parameter file does not pair with the simulator: {p}" for p in pairing]
        bag = write_bag(session.logs.values(), cfg.out, "run")
        series = {s.name: _series_for(session, s) for s in cfg.sensors}
        summary = build_summary(cfg, session, series, bag)
        plots = make_plots(cfg, session, series)
        (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        print()
        print(summary_table(summary))
        print()
        print(f"files in {cfg.out}/:")
        print(f"  run.mcap + metadata.yaml  rosbag2 (MCAP) of {len(bag['counts'])} topics, "
              f"{sum(bag['counts'].values())} messages  (ros2 bag info {cfg.out}; PlotJuggler / Foxglove: "
              f"open {bag['path']})")
        for p in plots:
            print(f"  {p.name}")
        print("  summary.json  logs/")
        problems = list(session.errors)
        silent = [n for n, s in summary["sensors"].items() if s["published"] == 0]
        if silent:
            problems.append(f"sensor(s) published nothing: {', '.join(silent)}")
        short = {n: s["published"] for n, s in summary["sensors"].items()
                 if 0 < s["published"] < summary["steps"]}
        if short:
            problems.append("steps without a prediction: " + ", ".join(
                f"{n} {summary['steps'] - k} of {summary['steps']}" for n, k in short.items()))
        if not session.tare.success:
            problems.append(f"tare failed: {session.tare.message or 'no answer'}")
        hard = bool(silent) or not session.tare.success
        if problems:
            kind = "error" if hard else "warning"
            print("\n" + "\n".join(f"{kind}: {p}" for p in problems), file=sys.stderr)
        code = 1 if hard else 0
        return code
    except (KeyboardInterrupt, _Terminated):
        print("\ninterrupted: children stopped", file=sys.stderr)
        return 130
    finally:
        release_domain_id(domain_id)
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
