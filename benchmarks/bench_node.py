"""End-to-end benchmark of ``sensor_node`` over real DDS on this host.

Three processes:

* the node under test, started exactly as ``ros2 run`` would
  (``python -m vsf_sensor_ros.ros.sensor_node --ros-args --params-file ...``),
  configured with :func:`node_params`: Punyo pressure + Punyo dense force,
  both publishing sparse Jacobians, on the real Punyo mesh attached to the
  Kinova Gen3 (or the embedded world's bubble when the fixture is absent);
* :mod:`benchmarks.bench_publisher`: joint states + contact clouds with
  barycentric contacts at fixed rates, headers stamped with the wall clock
  at send;
* this process: subscribes (raw, no deserialisation) to every output the
  node publishes per step and records the wall clock at receipt, and samples
  the node's CPU time and resident memory with psutil every 0.1 s.

Per phase (one rate, a fixed message count) it reports messages sent and
received per output topic, the end-to-end latency ``receipt of the step's
*last* output - contacts stamp`` (p50 / p99 / max), the node's CPU share in
cores over the phase and its RSS at the start and end of the phase.

QoS (every endpoint): reliable, keep-last, depth 1000, volatile -- deep
enough that nothing is dropped by history overflow at 1 kHz for a second of
backlog, so every missing message is a real loss.  Discovery is confined to
this host on a leased free ``ROS_DOMAIN_ID`` (``vsf_sensor_ros.demo.ros_env``).
Markers are disabled (an rviz aid, rate-limited to 10 Hz by default; they
are not part of the per-step cost a consumer of predictions waits for).
"""
from __future__ import annotations

import json
import os
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import yaml

from benchmarks import assets

ROOT = Path(__file__).resolve().parents[1]
SENSORS = ("punyo_pressure", "punyo_force")
QOS_DEPTH = 1000
QOS_TEXT = f"reliable, keep_last depth {QOS_DEPTH}, volatile (publisher, node inputs, node outputs, receiver)"


def fixtures_dir() -> Optional[Path]:
    """The Kinova/Punyo assets (``$VSF_ASSETS``, else ``../shared/fixtures/kinova_punyo`` beside
    the clone: :mod:`benchmarks.assets`), or None when neither holds the URDF and the Punyo mesh."""
    return assets.kinova_punyo_dir()


def node_params(world_kind: str, assets_dir: Optional[Path], jacobians: bool = True) -> Dict[str, Any]:
    """``ros__parameters`` of the node under test (flat dotted keys).

    Args:
        world_kind: ``'kinova'`` (Kinova Gen3 + real Punyo mesh on
            ``EndEffector_Link``; needs ``assets_dir``) or ``'embedded'``.
        assets_dir: the fixture folder for ``'kinova'``.
        jacobians: both sensors publish ``<s>/jacobian`` (the benchmark's configuration).
    """
    from benchmarks.bench_publisher import CONTACT_BODY_NAMES
    p: Dict[str, Any] = {}
    if world_kind == "kinova":
        if assets_dir is None:
            raise ValueError("world 'kinova' needs the fixture folder")
        p.update({
            "robot_description_path": "kinova_gen3.urdf",
            "assets_dir": str(assets_dir),
            "bodies": ["punyo"],
            "punyo.mesh": "punyo_mesh_complete.ply",
            "punyo.parent_link": "EndEffector_Link",
            "punyo.transform_file": "punyo2end_effector_transform.json",
            "punyo.transform_key": "punyo2ee",
        })
    elif world_kind != "embedded":
        raise ValueError(f"world_kind must be 'kinova' or 'embedded', got {world_kind!r}")
    p.update({
        "world_frame": "world",
        "contact_body_names": list(CONTACT_BODY_NAMES),
        "qos.inputs.reliability": "reliable",
        "qos.inputs.depth": QOS_DEPTH,
        "qos.outputs.reliability": "reliable",
        "qos.outputs.depth": QOS_DEPTH,
        "diagnostics_period": 1.0,
        "sensors": list(SENSORS),
        "punyo_pressure.type": "PunyoPressureSensor",
        "punyo_pressure.attachment": "punyo",
        "punyo_pressure.publish_jacobian": jacobians,
        "punyo_pressure.publish_markers": False,
        "punyo_force.type": "PunyoDenseForceSensor",
        "punyo_force.attachment": "punyo",
        "punyo_force.publish_jacobian": jacobians,
        "punyo_force.publish_markers": False,
    })
    return p


def output_topics(jacobians: bool = True) -> List[str]:
    """Every topic the node publishes once per contacts message (in publication order)."""
    kinds = ("predicted", "jacobian") if jacobians else ("predicted",)
    return [f"/{s}/{k}" for s in SENSORS for k in kinds]


class Sampler(threading.Thread):
    """Samples a process's CPU time (user + system, s) and RSS (bytes) every ``period`` s."""

    def __init__(self, pid: int, period: float = 0.1) -> None:
        super().__init__(daemon=True)
        import psutil
        self.proc = psutil.Process(pid)
        self.harness = [psutil.Process()]     # this process (the receiver); the publisher is added
        self._harness_last: Dict[int, float] = {}
        self.period = period
        # (wall ns, node cpu s, node rss bytes, host busy cpu s over all cores, harness cpu s)
        self.samples: List[Tuple[int, float, int, float, float]] = []
        self._halt = threading.Event()

    def sample(self) -> None:
        """Take one sample now (ignored once the process is gone)."""
        import psutil
        try:
            with self.proc.oneshot():
                c = self.proc.cpu_times()
                rss = self.proc.memory_info().rss
        except Exception:  # noqa: BLE001 - the process exited: nothing more to sample
            return
        h = psutil.cpu_times()
        busy = h.user + h.nice + h.system + h.irq + h.softirq + getattr(h, "steal", 0.0)
        for p in self.harness:
            try:
                ct = p.cpu_times()
                self._harness_last[p.pid] = ct.user + ct.system
            except Exception:  # noqa: BLE001 - exited: keep its last reading
                pass
        harness = sum(self._harness_last.values())
        self.samples.append((time.time_ns(), c.user + c.system, rss, busy, harness))

    def add_harness_pid(self, pid: int) -> None:
        """Also account the CPU of ``pid`` (the publisher) as the harness's own load."""
        import psutil
        self.harness.append(psutil.Process(pid))

    def run(self) -> None:
        while not self._halt.wait(self.period):
            self.sample()

    def stop(self) -> None:
        """Stop sampling (joins the thread)."""
        self._halt.set()
        self.join(timeout=2.0)

    def window(self, a_ns: int, b_ns: int) -> Dict[str, float]:
        """CPU share (cores) and RSS at the ends of ``[a_ns, b_ns]`` (linear interpolation)."""
        if len(self.samples) < 2:
            return {"cpu_cores": float("nan"), "host_busy_cores": float("nan"), "harness_cores": float("nan"),
                    "rss_start_mb": float("nan"), "rss_end_mb": float("nan")}
        s = np.asarray(self.samples, dtype=np.float64)
        t, cpu, rss, busy, harness = s[:, 0], s[:, 1], s[:, 2], s[:, 3], s[:, 4]
        ca, cb = np.interp([a_ns, b_ns], t, cpu)
        ra, rb = np.interp([a_ns, b_ns], t, rss)
        ha, hb = np.interp([a_ns, b_ns], t, busy)
        xa, xb = np.interp([a_ns, b_ns], t, harness)
        dt = (b_ns - a_ns) * 1e-9
        nan = float("nan")
        return {"cpu_cores": float((cb - ca) / dt) if dt > 0 else nan,
                "host_busy_cores": float((hb - ha) / dt) if dt > 0 else nan,
                "harness_cores": float((xb - xa) / dt) if dt > 0 else nan,
                "rss_start_mb": float(ra / 2**20), "rss_end_mb": float(rb / 2**20)}


def _stamp_of(raw: bytes) -> int:
    """``header.stamp`` (ns) of a serialised stamped message (CDR: 4-byte encapsulation, then
    int32 sec, uint32 nanosec -- the header is the first member of every output type)."""
    little = raw[1] == 1
    sec, nsec = struct.unpack_from("<iI" if little else ">iI", raw, 4)
    return sec * 1_000_000_000 + nsec


class Receiver:
    """Raw subscriptions on the node's outputs; records ``(receipt ns, serialized bytes head)``."""

    def __init__(self, topics: Sequence[str]) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import FluidPressure, PointCloud2
        self.node = rclpy.create_node("bench_receiver")
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=QOS_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
        types = {"/punyo_pressure/predicted": FluidPressure}
        self.topics = list(topics)
        self.records: Dict[str, List[Tuple[int, bytes]]] = {t: [] for t in self.topics}
        self.diagnostics: List[Any] = []
        self._subs = []
        for t in self.topics:
            rec = self.records[t]
            # raw=True: bytes only, so the callback costs microseconds and the receipt time is honest
            self._subs.append(self.node.create_subscription(
                types.get(t, PointCloud2), t, lambda raw, rec=rec: rec.append((time.time_ns(), raw[:12])),
                qos, raw=True))
        self._subs.append(self.node.create_subscription(
            DiagnosticArray, "/diagnostics", self.diagnostics.append, qos))
        try:
            from rclpy.experimental import EventsExecutor   # Jazzy and newer: far lower overhead
            self.executor = EventsExecutor()
        except ImportError:
            from rclpy.executors import SingleThreadedExecutor
            self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self._running:
            self.executor.spin_once(timeout_sec=0.05)

    def wait_for_publishers(self, timeout: float) -> bool:
        """True once every output topic has a publisher (the node is up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.node.count_publishers(t) >= 1 for t in self.topics):
                return True
            time.sleep(0.1)
        return False

    def stamps(self, topic: str) -> Tuple[np.ndarray, np.ndarray]:
        """``(stamp_ns, receipt_ns)`` int64 arrays of everything received on ``topic``."""
        rec = list(self.records[topic])
        st = np.fromiter((_stamp_of(r) for _, r in rec), dtype=np.int64, count=len(rec))
        rx = np.fromiter((t for t, _ in rec), dtype=np.int64, count=len(rec))
        return st, rx

    def close(self) -> None:
        """Stop spinning and destroy the node."""
        self._running = False
        self._thread.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def summarize_phase(phase: Dict[str, Any], receiver: Receiver, sampler: Sampler,
                    complete_topics: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Loss, latency, CPU and memory of one publisher phase (by its stamp range).

    A step counts as received (``received_complete``) when every topic of
    ``complete_topics`` (default: every recorded topic) carried its stamp;
    its latency is the receipt of the last of those.  With decimated
    Jacobians only the predictions complete a step; the Jacobian topics'
    counts stay in ``received_per_topic``.
    """
    lo, hi = int(phase["first_stamp_ns"]), int(phase["last_stamp_ns"])
    received: Dict[str, int] = {}
    per_topic: Dict[str, Dict[str, float]] = {}
    last_rx: Dict[int, int] = {}
    complete = None
    for t in receiver.topics:
        st, rx = receiver.stamps(t)
        m = (st >= lo) & (st <= hi)
        st, rx = st[m], rx[m]
        uniq = np.unique(st)
        received[t] = int(len(uniq))
        per_topic[t] = {"p50": _pct((rx - st) * 1e-6, 50), "p99": _pct((rx - st) * 1e-6, 99)}
        if complete_topics is not None and t not in complete_topics:
            continue
        for s, r in zip(st.tolist(), rx.tolist()):
            if r > last_rx.get(s, 0):
                last_rx[s] = r
        complete = set(uniq.tolist()) if complete is None else complete & set(uniq.tolist())
    complete = complete or set()
    lat = np.array([(last_rx[s] - s) * 1e-6 for s in sorted(complete)], dtype=np.float64)
    end = max([hi] + [last_rx[s] for s in complete])
    res = {
        "name": phase["name"], "rate_hz": phase["rate_hz"], "sent": int(phase["sent"]),
        "achieved_send_rate_hz": phase["achieved_rate_hz"], "late_sends": phase["late_steps"],
        "received_per_topic": received, "received_complete": len(complete),
        "lost": int(phase["sent"]) - len(complete),
        "latency_ms": {"p50": _pct(lat, 50), "p99": _pct(lat, 99),
                       "max": float(lat.max()) if len(lat) else float("nan"),
                       "mean": float(lat.mean()) if len(lat) else float("nan")},
        "latency_ms_per_topic": per_topic,
        "duration_s": (end - lo) * 1e-9,
    }
    res.update(sampler.window(lo, end))
    # CPU per processed message: unlike the share of wall time it is not capped by what the
    # host leaves the node, so cores_needed = what keeping up with the rate takes.
    if len(complete) and res["cpu_cores"] == res["cpu_cores"]:
        res["cpu_ms_per_msg"] = 1e3 * res["cpu_cores"] * (end - lo) * 1e-9 / len(complete)
        res["cores_needed_at_rate"] = res["cpu_ms_per_msg"] * 1e-3 * float(phase["rate_hz"])
    if res["rss_start_mb"] == res["rss_start_mb"] and res["rss_start_mb"] > 0:
        res["rss_growth_pct"] = 100.0 * (res["rss_end_mb"] - res["rss_start_mb"]) / res["rss_start_mb"]
    return res


def run_node_bench(phases: List[Dict[str, Any]], contacts: int = 100, warmup: int = 200,
                   workdir: Optional[Path] = None, log: Any = print, world: str = "auto",
                   node_module: str = "vsf_sensor_ros.ros.sensor_node", jacobians: bool = True,
                   extra_params: Optional[Dict[str, Any]] = None,
                   complete_kinds: Sequence[str] = ("predicted", "jacobian")) -> Dict[str, Any]:
    """Start the node, drive it through ``phases`` and measure; always stops both children.

    Args:
        phases: ``[{"name", "rate", "count"[, "max_seconds"]}]`` (Hz, messages, s).
        contacts: barycentric contacts per cloud.
        warmup: messages at 100 Hz before the first phase (not reported; first-call costs).
        workdir: folder for the params file, logs and the publisher summary (default: temp dir).
        log: progress printer.
        world: ``'auto'`` (Kinova + real Punyo mesh when the fixture is there, else the
            embedded world), ``'kinova'`` or ``'embedded'``.
        node_module: module run with ``python -m`` as the node (the shipped node by
            default; another entry point for experiments, e.g. a different executor).
        jacobians: publish (and receive) the Jacobian topics; False measures predictions only.
        extra_params: node parameters over :func:`node_params` (e.g. ``<s>.jacobian_decimation``).
        complete_kinds: output kinds (``predicted``, ``jacobian``) that must all arrive for a
            step to count as received; ``("predicted",)`` with decimated Jacobians.

    Returns:
        ``{"world", "qos", "contacts", "node_start_s", "phases": [summary...], ...}`` or
        ``{"skipped": reason}`` when the node cannot run.
    """
    from vsf_sensor_ros.demo.processes import ManagedProcess
    from vsf_sensor_ros.demo.ros_env import apply_localhost_env, free_domain_id, localhost_env

    if world not in ("auto", "kinova", "embedded"):
        raise ValueError(f"world must be 'auto', 'kinova' or 'embedded', got {world!r}")
    asset_dir = fixtures_dir()
    if world == "kinova" and asset_dir is None:
        return {"skipped": f"world 'kinova' asked for but the assets are absent ({assets.describe()})"}
    if world == "auto":
        world = "kinova" if asset_dir is not None else "embedded"
        if asset_dir is None:
            log(f"  node: assets absent ({assets.describe()}) -> embedded world (generated bubble)")
    if world == "embedded":
        asset_dir = None
    workdir = Path(workdir or tempfile.mkdtemp(prefix="vsf_bench_node_"))
    workdir.mkdir(parents=True, exist_ok=True)
    params_file = workdir / "node_params.yaml"
    params = {**node_params(world, asset_dir, jacobians), **(extra_params or {})}
    params_file.write_text(yaml.safe_dump({"sensor_node": {"ros__parameters": params}}, sort_keys=False))
    domain = free_domain_id()
    apply_localhost_env(domain)
    env = localhost_env(domain)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                       if p])
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS", "1")

    import rclpy
    rclpy.init()
    node_cmd = [sys.executable, "-m", node_module, "--ros-args",
                "--params-file", str(params_file)]
    node = ManagedProcess("sensor_node", node_cmd, env, workdir / "sensor_node.log", cwd=ROOT)
    all_phases = ([{"name": "warmup", "rate": 100.0, "count": warmup}] if warmup else []) + list(phases)
    pub_out = workdir / "publisher.json"
    pub = ManagedProcess("bench_publisher", [
        sys.executable, "-m", "benchmarks.bench_publisher", "--world", world,
        "--assets", str(asset_dir or ""),
        "--contacts", str(contacts), "--phases", json.dumps(all_phases), "--out", str(pub_out)],
        env, workdir / "publisher.log", cwd=ROOT)
    receiver: Optional[Receiver] = None
    sampler: Optional[Sampler] = None
    result: Dict[str, Any] = {"world": world, "assets": str(asset_dir) if asset_dir else None,
                              "qos": QOS_TEXT,
                              "workdir": str(workdir), "contacts_per_message": contacts,
                              "contacts_mode": "barycentric",
                              "sensors": list(SENSORS), "jacobians": jacobians, "markers": "off",
                              "extra_params": dict(extra_params or {}),
                              "complete_kinds": list(complete_kinds),
                              "ros_domain_id": domain,
                              "rmw": os.environ.get("RMW_IMPLEMENTATION", "default (rmw_fastrtps_cpp)")}
    try:
        receiver = Receiver(output_topics(jacobians))
        t_start = time.monotonic()
        node.start()
        sampler = Sampler(node.pid)
        sampler.start()
        if not receiver.wait_for_publishers(90.0):
            return {**result, "skipped": f"sensor_node did not come up within 90 s (exit code "
                                         f"{node.poll()}); log tail:\n{node.tail()}"}
        result["node_start_s"] = time.monotonic() - t_start
        time.sleep(1.0)
        sampler.sample()
        result["node_rss_idle_mb"] = sampler.samples[-1][2] / 2**20 if sampler.samples else float("nan")
        log(f"  node up in {result['node_start_s']:.1f} s ({world} world); publishing "
            + ", ".join(f"{p['count']} @ {p['rate']:g} Hz" for p in phases))
        budget = sum(float(p.get("max_seconds", 3.0 * p["count"] / p["rate"] + 5.0)) + 2.5
                     for p in all_phases) + 60.0
        pub.start()
        sampler.add_harness_pid(pub.pid)
        deadline = time.monotonic() + budget
        while pub.running() and time.monotonic() < deadline:
            if not node.running():
                break
            time.sleep(0.2)
        time.sleep(1.0)   # outputs of the last steps still in flight
        if pub.running():
            pub.stop()
            return {**result, "skipped": f"publisher exceeded its {budget:.0f} s budget; node alive: "
                                         f"{node.running()}; node log:\n{node.tail()}"}
        if pub.poll() != 0 or not pub_out.is_file():
            return {**result, "skipped": f"publisher failed (exit {pub.poll()}):\n{pub.tail()}\n"
                                         f"node log:\n{node.tail()}"}
        summary = json.loads(pub_out.read_text())
        complete = [t for t in receiver.topics if t.rsplit("/", 1)[-1] in complete_kinds]
        result["phases"] = [summarize_phase(p, receiver, sampler, complete) for p in summary["phases"]
                            if p["name"] != "warmup"]
        if receiver.diagnostics:
            from vsf_sensor_ros.ros.diagnostics import status_values
            last = receiver.diagnostics[-1]
            result["node_diagnostics"] = {"inputs": status_values(last, "/sensor_node: inputs")}
            for name in SENSORS:
                result["node_diagnostics"][name] = status_values(last, f"/sensor_node: {name}")
        return result
    finally:
        # children first: nothing may outlive the benchmark, whatever failed above
        pub.stop()
        result["node_exit_code"] = node.stop()
        if sampler is not None:
            sampler.stop()
        if receiver is not None:
            receiver.close()
        rclpy.try_shutdown()
