"""``vsf_replay --recording BAG.mcap``: the bag's recorded bytes through the sensor node at their log-time
pace, tared once, with the demo's outputs; docs/demo.md (replaying a bag)."""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from vsf_sensor_ros.demo.config import DemoConfig, DemoError, read_params_file, sensors_from_params
from vsf_sensor_ros.demo.session import STARTUP_TIMEOUT_S, NodeRun

WINDOW = 20                 # contacts messages published ahead of the slowest sensor's predictions
CATCH_UP_S = 30.0           # longest wait for the node to catch up (window, tare, end)


class BagError(ValueError):
    """The bag cannot be replayed with this parameter file: a ``reason`` word (``'unreadable'``,
    ``'no_input'``, ``'wrong_type'``, ...), the ``path``, ``topic`` and ``value`` at fault, or None."""

    def __init__(self, message: str, reason: str, path: Any = None, topic: Optional[str] = None,
                 value: Any = None) -> None:
        super().__init__(message)
        self.reason, self.path, self.topic, self.value = reason, path, topic, value


@dataclass
class BagTopics:
    """What the bag holds: ``topic -> (msgtype, messages)``, and its path as given."""

    path: Path
    topics: Dict[str, Tuple[str, int]]


def open_bag(path: Path) -> BagTopics:
    """The topics of an MCAP bag (``.mcap`` or rosbag2 folder).  Raises BagError: not a readable bag."""
    from rosbags.rosbag2 import Reader
    from rosbags.rosbag2.errors import ReaderError
    try:
        with Reader(path) as reader:
            return BagTopics(Path(path), {c.topic: (c.msgtype, c.msgcount) for c in reader.connections})
    except (ReaderError, OSError) as exc:
        raise BagError(f"{path}: not a readable MCAP bag: {exc}", "unreadable", path) from None


def measured_topic(params: Dict[str, Any], sensor: str) -> str:
    """The fully qualified measured topic of ``sensor`` (``<s>.measured_topic``, default ``<s>/measured``)."""
    topic = str(params.get(f"{sensor}.measured_topic") or f"{sensor}/measured")
    return topic if topic.startswith("/") else "/" + topic


def check_inputs(bag: BagTopics, cfg: DemoConfig, speed: float) -> List[str]:
    """A warning line per sensor the bag leaves unmeasured.  Raises BagError: ``/contacts`` (naming a wrench
    topic instead) or ``/joint_states`` missing, a wrong type, no measured topic, header-less at speed 0."""
    from vsf_sensor_ros.ros.kinds import reading_codecs
    from vsf_sensor_ros.ros.messages.readings import HEADERLESS_MEASURED_TYPES
    own = {f"/{s.name}" for s in cfg.sensors}
    wrenches = [t for t, (kind, n) in bag.topics.items()
                if kind == "geometry_msgs/msg/WrenchStamped" and n and t.rsplit("/", 1)[0] not in own]
    if not bag.topics.get("/contacts", ("", 0))[1] and wrenches:
        # the replay starts no wrench_contact_node: its mounting is not in the parameter file
        raise BagError(f"{bag.path}: no /contacts in the bag, only a wrench ({', '.join(wrenches)}): "
                       "run wrench_contact_node on it (ros2 bag play + ros2 run vsf_sensor_ros "
                       "wrench_contact_node, docs/real_data.md) and record its /contacts",
                       "no_input", bag.path, "/contacts")
    inputs = [("/contacts", str(cfg.base_params.get("contacts_type") or "sensor_msgs/msg/PointCloud2"), None),
              ("/joint_states", "sensor_msgs/msg/JointState", None)]
    measured = [(measured_topic(cfg.base_params, s.name), str(cfg.base_params.get(f"{s.name}.measured_type")
                 or reading_codecs()[s.kind].message_type), s.name) for s in cfg.sensors]
    warnings = []
    for topic, msgtype, sensor in inputs + measured:
        kind, count = bag.topics.get(topic, ("", 0))
        if not count and sensor is None:
            raise BagError(f"{bag.path}: no {topic} messages in the bag (the sensor node's input)",
                           "no_input", bag.path, topic)
        if not count:
            warnings.append(f"{sensor}: no {topic} in the bag: predicted only, no residual")
            continue
        if kind != msgtype:
            reader = "the sensor node" if sensor is None else f"sensor {sensor}"
            raise BagError(f"{bag.path}: {topic} carries {kind}, {reader} reads {msgtype}",
                           "wrong_type", bag.path, topic, kind)
        if msgtype in HEADERLESS_MEASURED_TYPES and speed == 0 and sensor is not None:
            raise BagError(f"{bag.path}: {topic} is {msgtype} (no header): the node pairs it with the "
                           "contacts by receive time, which only the recorded pace reproduces; replay "
                           "with --speed > 0, e.g. --speed 1", "headerless", bag.path, topic, speed)
    if len(warnings) == len(measured):
        raise BagError(f"{bag.path}: none of the measured topics ({', '.join(t for t, _, _ in measured)}) "
                       "is in the bag: nothing to compare the predictions with", "no_measured", bag.path)
    return warnings


def iter_messages(path: Path, topics: Optional[List[str]] = None) -> Iterator[Tuple[str, int, bytes]]:
    """``(topic, log time ns, CDR bytes)`` of the bag in log-time order (``topics``: only these)."""
    from rosbags.rosbag2 import Reader
    with Reader(path) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        for conn, t, raw in reader.messages(connections=conns):
            yield conn.topic, t, bytes(raw)


def tare_index(stamps_ns: List[int], touching: List[bool], tare_samples: int,
               tare_at_s: Optional[float]) -> int:
    """Index of the contacts message (stamps ns) the replay tares after: the last at or before ``tare_at_s``,
    else the demo's rule (first at ``TARE_AT_S`` with ``tare_samples``, at the latest before the first
    ``touching``).  Raises BagError: ``tare_at_s`` not finite, before the first stamp or after the last
    (a tare there would leave no step after it)."""
    from vsf_sensor_ros.demo.tare import TARE_AT_S
    if tare_at_s is not None:
        first, last = stamps_ns[0] * 1e-9, stamps_ns[-1] * 1e-9
        if not math.isfinite(tare_at_s):
            raise BagError(f"--tare-at must be a finite time in s, got {tare_at_s}", "tare_not_finite",
                           value=tare_at_s)
        k = sum(1 for s in stamps_ns if s <= tare_at_s * 1e9) - 1
        if k < 0:
            raise BagError(f"--tare-at {tare_at_s:g} s is before the first contacts stamp {first:.9g} s",
                           "tare_before_start", value=tare_at_s)
        if tare_at_s * 1e9 > stamps_ns[-1]:
            raise BagError(f"--tare-at {tare_at_s:g} s is after the last contacts stamp {last:.9g} s",
                           "tare_after_end", value=tare_at_s)
        return k
    due = next((k for k, s in enumerate(stamps_ns) if s >= TARE_AT_S * 1e9 and k + 1 >= tare_samples),
               len(stamps_ns) - 1)
    touch = next((k for k, t in enumerate(touching) if t), None)
    return due if touch is None else max(0, min(due, touch - 1))


def scan_contacts(bag: BagTopics, cfg: DemoConfig) -> Tuple[List[int], List[bool]]:
    """Stamps (ns) of the bag's contacts and whether each touches the bubble (PointCloud2 only)."""
    from vsf_sensor_ros.demo.analysis import touches
    from vsf_sensor_ros.demo.config import press_body_indices
    from vsf_sensor_ros.demo.recorder import header_stamp_ns
    cloud = bag.topics["/contacts"][0] == "sensor_msgs/msg/PointCloud2"
    bodies = press_body_indices(cfg)
    stamps, touching = [], []
    for _, _, raw in iter_messages(bag.path, ["/contacts"]):
        stamps.append(header_stamp_ns(raw))
        touching.append(cloud and touches(raw, bodies))
    return stamps, touching


def replay_config(args: argparse.Namespace, bag: BagTopics, params_file: Path) -> DemoConfig:
    """The ``DemoConfig`` of a replay.  Raises DemoError: parameter file unreadable or without sensors."""
    _, params = read_params_file(params_file)
    return DemoConfig(world=f"replay of {bag.path.name}", params_file=params_file.resolve(), assets=None,
                      out=args.out, duration_s=0.0, rate_hz=0.0, seed=0, timeout_s=0.0,
                      sensors=sensors_from_params(params, params_file),
                      tare_samples=int(params.get("tare_samples", 10)),
                      base_params=params, contact_body_names=[str(b) for b in params.get("contact_body_names")
                                                              or []])


class BagReplay(NodeRun):
    """A replay of ``bag`` with ``cfg``, tared after the contacts stamped ``tare_stamp_ns``, at ``speed`` x
    the recorded pace (0 = as fast as the node keeps up)."""

    def __init__(self, cfg: DemoConfig, bag: BagTopics, tare_stamp_ns: int, speed: float,
                 domain_id: int) -> None:
        from vsf_sensor_ros.demo.processes import ManagedProcess
        from vsf_sensor_ros.demo.session import demo_child_env, node_command
        from vsf_sensor_ros.ros.messages.readings import HEADERLESS_MEASURED_TYPES
        super().__init__(cfg, domain_id)
        self.bag, self.tare_stamp_ns, self.speed = bag, tare_stamp_ns, speed
        # deep outputs: this process also publishes, and the default 10 can overflow meanwhile
        self.node_proc = ManagedProcess("sensor_node", node_command(cfg) + ["-p", "qos.outputs.depth:=500"],
                                        demo_child_env(domain_id, None), cfg.out / "logs" / "sensor_node.log")
        self.children = self.watched = [self.node_proc]
        self.contacts_sent = 0
        self.last_stamp_ns: Optional[int] = None
        self.measured = {s.name: measured_topic(cfg.base_params, s.name) for s in cfg.sensors}
        self.headerless = {t for t, (kind, _) in bag.topics.items() if kind in HEADERLESS_MEASURED_TYPES}
        self.last_measured_ns: Dict[str, int] = {}   # stamped measured topic -> newest stamp published

    def run(self, say: Any = print) -> Any:
        """Start, replay, tare, drain; the node always stopped.  The result.  Raises DemoError."""
        try:
            self.open_ros("vsf_replay")
            self.node_proc.start()
            inputs = self._start(say)
            self._play(inputs, say)
        finally:
            self.stop()
        return self.result

    def _start(self, say: Any) -> Dict[str, Any]:
        """Wait for the node's services and subscriptions; a publisher per replayed topic, matched."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from vsf_sensor_ros.demo.recorder import message_class
        # the node's inputs in the bag, then a second without a new subscription (they show one by one)
        needed = {t for t in ("/contacts", "/joint_states", *self.measured.values())
                  if self.bag.topics.get(t, ("", 0))[1] > 0}
        seen: List[Any] = [set(), time.monotonic()]

        def settled() -> bool:
            now = set(self._node_inputs())
            if now != seen[0]:
                seen[:] = [now, time.monotonic()]
            return (self._clients["tare"].service_is_ready() and needed <= now
                    and time.monotonic() - seen[1] >= 1.0)
        self._wait_ready(settled, STARTUP_TIMEOUT_S, "sensor node not ready", "timeout", 0.0)
        topics = sorted(t for t in self._node_inputs() if self.bag.topics.get(t, ("", 0))[1] > 0)
        qos = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
        pubs = {t: self._node.create_publisher(message_class(self.bag.topics[t][0]), t, qos) for t in topics}
        # a message sent before its publisher has matched the node's subscription is lost
        self._wait_ready(lambda: all(p.get_subscription_count() >= max(1, self._node.count_subscribers(t))
                                     for t, p in pubs.items()),
                         STARTUP_TIMEOUT_S, "the node's subscriptions not matched", "timeout", 0.0)
        say(f"sensor node ready after {time.monotonic() - self.t0:.1f} s; replaying {', '.join(topics)}")
        return pubs

    def _play(self, pubs: Dict[str, Any], say: Any) -> None:
        """Publish in log-time order, a contacts message after the later-logged messages of its stamp; the
        tare before the first message stamped after the tare's stamp."""
        from vsf_sensor_ros.demo.recorder import header_stamp_ns
        self._pace: Optional[Tuple[float, int]] = None     # (wall s, log ns) the pace counts from
        held: Optional[Tuple[int, bytes, int]] = None        # contacts waiting: (log ns, bytes, stamp)
        for topic, log_ns, raw in iter_messages(self.bag.path, list(pubs)):
            stamp = None if topic in self.headerless else header_stamp_ns(raw)
            if held is not None and (topic == "/contacts" or stamp is None or stamp > held[2]):
                self._publish_contacts(pubs["/contacts"], held)
                held = None
            if (not self.result.tare.request_ns and stamp is not None and stamp > self.tare_stamp_ns
                    and held is None):
                self._tare(say)
                self._pace = None      # the pace restarts after the tare's wait
            if topic == "/contacts":
                held = (log_ns, raw, stamp)
                continue
            self._publish(pubs[topic], log_ns, raw)
            if topic in self.measured.values() and stamp is not None:
                self.last_measured_ns[topic] = stamp
        if held is not None:
            self._publish_contacts(pubs["/contacts"], held)
        if not self.result.tare.request_ns:      # the tare falls on the last message
            self._tare(say)
        self._wait_for_node(self.contacts_sent, "draining", paired=True)
        self._spin_for(0.5)     # the last diagnostics and residuals

    def _publish_contacts(self, pub: Any, held: Tuple[int, bytes, int]) -> None:
        self._wait_for_node(self.contacts_sent - WINDOW, "keeping up")
        self._publish(pub, held[0], held[1])
        self.contacts_sent += 1
        self.last_stamp_ns = held[2]

    def _publish(self, pub: Any, log_ns: int, raw: bytes) -> None:
        """Publish at the recorded log time / speed after the pace's origin (at once with speed 0)."""
        if self._pace is None:
            self._pace = (time.monotonic(), log_ns)
        if self.speed > 0:
            self._wait_until(self._pace[0] + (log_ns - self._pace[1]) * 1e-9 / self.speed)
        pub.publish(raw)
        self._check("replaying")

    def _tare(self, say: Any) -> None:
        self._wait_for_node(self.contacts_sent, "waiting for the predictions before the tare", paired=True)
        tare = self._tare_and_save(None if self.last_stamp_ns is None else self.last_stamp_ns * 1e-9)
        say(f"tare after contacts stamp {tare.sim_time_s} s ({self.contacts_sent} messages): "
            + ("ok" if tare.success else "FAILED: " + tare.message))

    def _node_inputs(self) -> List[str]:
        try:
            return [t for t, _ in self._node.get_subscriber_names_and_types_by_node(self.cfg.node_name, "/")]
        except Exception:    # rclpy raises a bare NodeNameNonExistentError before discovery
            return []

    def _behind(self, count: int, paired: bool) -> bool:
        """Some sensor has fewer than ``count`` predictions (``paired``: or a residual older than sent)."""
        from vsf_sensor_ros.demo.recorder import header_stamp_ns
        for s in self.cfg.sensors:
            if len(self.recorder.logs.get(f"/{s.name}/predicted", ())) < count:
                return True
            newest = self.last_measured_ns.get(self.measured[s.name])
            if not paired or newest is None or self.last_stamp_ns is None:
                continue
            res = self.recorder.logs.get(f"/{s.name}/residual")
            if res is None or not len(res) or header_stamp_ns(res.data[-1]) < min(newest, self.last_stamp_ns):
                return True
        return False

    def _wait_for_node(self, count: int, stage: str, paired: bool = False) -> None:
        if not self._spin_until(lambda: not self._behind(count, paired), stage, time.monotonic() + CATCH_UP_S,
                                step=0.01):
            self.result.errors.append(f"the node fell behind while {stage}: went on after {CATCH_UP_S:g} s")


def headerless_series(session: Any, s: Any, delay_s: float) -> Tuple[Any, Any]:
    """``series_for`` for a header-less measured stream: each message takes the stamp of the contacts
    received nearest its receive time + ``delay_s`` (the node's rule); values ``(1,)`` float64 SI."""
    import numpy as np

    from vsf_sensor_ros.demo.analysis import Series
    pred_log, log = session.logs.get(f"/{s.name}/predicted"), session.logs.get(f"/{s.name}/measured")
    contacts = session.logs.get("/contacts")
    pred = Series.from_log(pred_log, s.kind) if pred_log else None
    if not log or not contacts:
        return pred, None
    recv = np.array(log.recv_ns, dtype=np.int64)
    c_recv = np.array(contacts.recv_ns, dtype=np.int64)
    nearest = np.abs((recv + round(delay_s * 1e9))[:, None] - c_recv[None, :]).argmin(axis=1)
    values = [np.array([m.data * s.measured_scale], dtype=np.float64) for m in log.decode()]   # Float32/64
    return pred, Series(np.array(contacts.stamps_ns(), dtype=np.int64)[nearest], recv, values)


def main(args: argparse.Namespace, usage: Any) -> int:
    """Replay the bag ``args.recording``; 0 done, 1 failed, 2 bad input (``usage()`` first), 130 Ctrl-C."""
    import sys

    from vsf_sensor_ros.demo.recorder import write_bag
    from vsf_sensor_ros.demo.ros_env import run_isolated, usage_error
    from vsf_sensor_ros.demo.summary import (build_summary, clear_outputs, make_plots, series_for,
                                             summary_table)
    out = args.out = args.out if args.out is not None else Path("demo_out/replay")
    try:
        if not (args.speed == 0 or 0.01 <= args.speed <= 1000):
            raise BagError(f"--speed must be 0 (as fast as the node keeps up) or 0.01-1000, got {args.speed}",
                           "bad_speed", value=args.speed)
        json_only = [flag for flag, given in (("--frames", args.frames), ("--lag", args.lag != "auto"),
                                              ("--camera", args.camera != "auto"),
                                              ("--camera-colour", args.camera_colour)) if given]
        if json_only:
            raise BagError(f"{', '.join(json_only)}: for a data.json recording only", "json_only",
                           value=json_only)
        bag = open_bag(args.recording)
        # default: beside the bag, where the demo writes the parameter file it ran with
        folder = args.recording if args.recording.is_dir() else args.recording.parent
        if out.resolve() == folder.resolve():    # its outputs (run.mcap, ...) would replace the input
            raise BagError(f"--out {out} is the bag's own folder", "out_is_input", value=str(out))
        params_file = args.params_file or folder / "sensor_node.yaml"
        if not params_file.is_file():
            raise BagError(f"parameter file {params_file} not found: pass the node's with --params-file",
                           "params_missing", params_file)
        cfg = replay_config(args, bag, params_file)
        warnings = check_inputs(bag, cfg, args.speed)
        stamps, touching = scan_contacts(bag, cfg)
        tare_after = tare_index(stamps, touching, cfg.tare_samples, args.tare_at)
        clear_outputs(out)
    except (BagError, DemoError, ValueError) as exc:
        return usage_error(usage, exc)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    span = (stamps[-1] - stamps[0]) * 1e-9
    cfg.duration_s, cfg.rate_hz = span, (len(stamps) - 1) / span if span > 0 else 0.0
    print(f"{bag.path}: {len(stamps)} contacts messages over {span:.2f} s; tare after stamp "
          f"{stamps[tare_after] * 1e-9:.9g} s; parameters {params_file}")

    def session(domain_id: int) -> int:
        replayer = BagReplay(cfg, bag, stamps[tare_after], args.speed, domain_id)
        result = replayer.run()
        rec = write_bag(result.logs.values(), out)
        series = {}
        for s in cfg.sensors:    # the summary reads <s>/measured: a sensor's own measured topic as that
            topic = replayer.measured[s.name]
            if topic != f"/{s.name}/measured" and topic in result.logs:
                result.logs[f"/{s.name}/measured"] = result.logs[topic]
            delay = float(cfg.base_params.get(f"{s.name}.measured_delay", 0.0))
            series[s.name] = (headerless_series(result, s, delay) if topic in replayer.headerless
                              else series_for(result, s))
        summary = build_summary(cfg, result, series, rec)
        summary["replay"] = {"recording": str(bag.path), "params_file": str(params_file), "speed": args.speed,
                             "tare_after_stamp_s": stamps[tare_after] * 1e-9}
        for key in ("seed", "measured_source_mode", "backend"):   # the simulator's, not the bag's
            summary.pop(key, None)
        plots = make_plots(cfg, result, series)
        (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        print(f"\n{summary_table(summary)}\n\nfiles in {out}/: run.mcap + metadata.yaml, summary.json, "
              + ", ".join(p.name for p in plots) + ", calibration.yaml, logs/")
        problems = result.errors + ([] if result.tare.success else [f"tare failed: {result.tare.message}"])
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 1 if problems else 0
    return run_isolated(session, (DemoError,), "replay", out / "logs", sigterm=False)
