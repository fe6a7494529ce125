"""Record every topic of a session as raw CDR bytes and write a rosbag2 MCAP bag with ``rosbags`` (a type
it does not know is left out and reported)."""
from __future__ import annotations

import importlib
import shutil
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription


def passes_message_info() -> bool:
    """Whether rclpy calls a two-argument callback ``(msg, info)`` (Iron and newer; not Humble)."""
    kinds = getattr(Subscription, "CallbackType", None)
    return kinds is not None and hasattr(kinds, "WithMessageInfo")


_HAS_MESSAGE_INFO = passes_message_info()

#: Bag format version written: rosbag2 Jazzy/Kilted read 8, Humble ignores the newer keys.
BAG_VERSION = 8


def message_class(msgtype: str) -> type:
    """The class of ``msgtype`` (``"pkg/msg/Name"``).  Raises ValueError: another form, or not importable."""
    parts = msgtype.split("/")
    if len(parts) != 3 or parts[1] != "msg" or not all(parts):
        raise ValueError(f"message type must look like 'pkg/msg/Name', got {msgtype!r}")
    try:
        return getattr(importlib.import_module(f"{parts[0]}.msg"), parts[2])
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import message type {msgtype!r}: {exc}") from exc


def header_stamp_ns(data: bytes) -> int:
    """``header.stamp`` (int ns) of CDR bytes starting with a Header (after the 4-byte encapsulation: int32
    sec, uint32 nanosec).  Raises ValueError: fewer than 12 bytes, or nanosec >= 1e9 (no header first)."""
    if len(data) < 12:
        raise ValueError(f"serialized message of {len(data)} bytes is too short to hold a header stamp")
    fmt = "<iI" if data[1] & 1 else ">iI"
    sec, nanosec = struct.unpack_from(fmt, data, 4)
    if nanosec >= 1_000_000_000:
        raise ValueError(f"header stamp nanosec {nanosec} >= 1e9: message does not start with a Header")
    return sec * 1_000_000_000 + nanosec


def cloud_point_count(data: bytes) -> int:
    """``height * width`` of a serialized PointCloud2 (after the stamp and ``frame_id``).  Raises ValueError:
    the bytes end before ``width``."""
    e = "<" if data[1] & 1 else ">"
    if len(data) < 16:
        raise ValueError(f"serialized PointCloud2 of {len(data)} bytes is too short")
    n = struct.unpack_from(e + "I", data, 12)[0]
    off = 16 + n + (-n) % 4
    if len(data) < off + 8:
        raise ValueError(f"serialized PointCloud2 of {len(data)} bytes ends before its width field")
    height, width = struct.unpack_from(e + "II", data, off)
    return int(height) * int(width)


@dataclass
class TopicLog:
    """What arrived on ``topic`` in order: wall receive times ``recv_ns`` (the middleware's where rclpy
    gives it), CDR ``data``, DDS send times
    ``sent_ns`` (empty on Humble), and the QoS its publishers offered when last seen."""

    topic: str
    msgtype: str
    recv_ns: List[int] = field(default_factory=list)
    data: List[bytes] = field(default_factory=list)
    qos: List[QoSProfile] = field(default_factory=list)
    sent_ns: List[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.data)

    def stamps_ns(self) -> List[int]:
        """``header.stamp`` of every message (ns); see :func:`header_stamp_ns`."""
        return [header_stamp_ns(d) for d in self.data]

    def decode(self, indices: Optional[Iterable[int]] = None) -> list:
        """Deserialize messages (all, or those at ``indices``) into message objects."""
        from rclpy.serialization import deserialize_message
        cls = message_class(self.msgtype)
        idx = range(len(self.data)) if indices is None else indices
        return [deserialize_message(self.data[i], cls) for i in idx]


def _subscription_qos(offered: List[QoSProfile]) -> QoSProfile:
    # `ros2 bag record`'s rule: reliable / transient-local only when every publisher offers it
    reliable = all(q.reliability == ReliabilityPolicy.RELIABLE for q in offered)
    latched = bool(offered) and all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


class TopicRecorder:
    """Keeps every topic of ``node``'s graph (but ``exclude``) in :attr:`logs` (:attr:`skipped`: why not).
    :meth:`refresh` subscribes new topics at once, even without a publisher yet, and re-subscribes when the
    publishers' QoS asks for it; receipts in wall ns."""

    def __init__(self, node: Node, exclude: Iterable[str] = ()) -> None:
        self._node = node
        self._exclude = set(exclude)
        self._subs: Dict[str, Tuple[Subscription, QoSProfile]] = {}
        self.logs: Dict[str, TopicLog] = {}
        self.skipped: Dict[str, str] = {}

    def refresh(self) -> List[str]:
        """Subscribe to topics not yet recorded, re-match QoS where publishers changed; the new topics."""
        new: List[str] = []
        for topic, types in self._node.get_topic_names_and_types():
            if topic in self._exclude or topic in self.skipped:
                continue
            if len(types) != 1:
                self.skipped[topic] = f"several types on one topic: {types}"
                continue
            try:
                cls = message_class(types[0])
            except ValueError as exc:
                self.skipped[topic] = str(exc)
                continue
            offered = [i.qos_profile for i in self._node.get_publishers_info_by_topic(topic)]
            qos = _subscription_qos(offered)
            if topic in self._subs:
                sub, current = self._subs[topic]
                if offered:
                    self.logs[topic].qos = offered
                if not offered or (current.reliability == qos.reliability
                                   and current.durability == qos.durability):
                    continue
                self._node.destroy_subscription(sub)
            else:
                self.logs[topic] = TopicLog(topic, types[0], qos=offered)
                new.append(topic)
            sub = self._node.create_subscription(cls, topic, self._callback(self.logs[topic]), qos, raw=True)
            self._subs[topic] = (sub, qos)
        return new

    def _callback(self, log: TopicLog) -> Callable:
        def on_message(data: bytes) -> None:
            log.recv_ns.append(time.time_ns())
            log.data.append(bytes(data))
        if not _HAS_MESSAGE_INFO:
            return on_message

        def on_message_with_info(data: bytes, info: Any) -> None:
            # the middleware's receive stamp (wall clock): callbacks of two topics may run in either order
            log.recv_ns.append(int(info["received_timestamp"]) or time.time_ns())   # 0: the rmw has none
            log.data.append(bytes(data))
            log.sent_ns.append(int(info["source_timestamp"]))
        return on_message_with_info

    def stop(self) -> None:
        """Destroy all subscriptions (what was received is kept)."""
        for sub, _ in self._subs.values():
            self._node.destroy_subscription(sub)
        self._subs.clear()


def _rosbags_qos(profile: QoSProfile) -> Any:
    from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                    QosTime)

    def dur(d: Any) -> QosTime:
        ns = int(getattr(d, "nanoseconds", 0))
        return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)

    return Qos(history=QosHistory(int(profile.history)), depth=int(profile.depth),
               reliability=QosReliability(int(profile.reliability)),
               durability=QosDurability(int(profile.durability)), deadline=dur(profile.deadline),
               lifespan=dur(profile.lifespan), liveliness=QosLiveliness(int(profile.liveliness)),
               liveliness_lease_duration=dur(profile.liveliness_lease_duration),
               avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions))


def write_bag(logs: Iterable[TopicLog], out_dir: Path) -> Dict[str, object]:
    """Write ``out_dir/run.mcap`` + ``metadata.yaml`` (replaced): bytes unchanged, receive time as log
    time, Kilted schemas, zstd chunks.  ``{"path", "counts": {topic: n}, "left_out": {topic: why}}``."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    name, out_dir = "run", Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    typestore = get_typestore(Stores.ROS2_KILTED)
    staging = out_dir / f".{name}_bag_tmp"
    shutil.rmtree(staging, ignore_errors=True)
    bag_dir = staging / name
    counts: Dict[str, int] = {}
    left_out: Dict[str, str] = {}
    rows: List[Tuple[int, int, bytes]] = []
    writer = Writer(bag_dir, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        conns = []
        for log in sorted(logs, key=lambda lg: lg.topic):
            if log.msgtype not in typestore.types:
                left_out[log.topic] = f"type {log.msgtype} unknown to rosbags"
                continue
            conns.append(writer.add_connection(log.topic, log.msgtype, typestore=typestore,
                                               offered_qos_profiles=[_rosbags_qos(q) for q in log.qos]))
            rows.extend((t, len(conns) - 1, d) for t, d in zip(log.recv_ns, log.data))
            counts[log.topic] = len(log)
        rows.sort(key=lambda r: r[0])
        for t, k, d in rows:
            writer.write(conns[k], t, d)
    for fname in (f"{name}.mcap", "metadata.yaml"):
        (bag_dir / fname).replace(out_dir / fname)
    shutil.rmtree(staging)
    return {"path": out_dir / f"{name}.mcap", "counts": counts, "left_out": left_out}
