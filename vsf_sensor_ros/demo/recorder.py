"""Record every topic of a ROS 2 session as raw CDR bytes and write a rosbag2 MCAP bag (``rosbags``).

Message definitions come from those ``rosbags`` ships; a topic of a type it does not know is left
out of the bag and reported.
"""
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
    """Whether rclpy hands a two-argument subscription callback ``(msg, info)``.

    From Iron on, rclpy inspects each callback's signature when the
    subscription is made and records the kind in ``Subscription.CallbackType``
    (``MessageOnly`` or ``WithMessageInfo``); the executor then passes the
    message info dict (``source_timestamp``, ``received_timestamp``, sequence
    numbers) to ``WithMessageInfo`` callbacks.  Humble has no such enum and
    always calls ``callback(msg)``.  The enum member is what rclpy dispatches
    on, so its presence is the feature itself; the ``MessageInfo`` type name
    is not (it is importable only from Kilted on, though Jazzy passes the info).
    """
    kinds = getattr(Subscription, "CallbackType", None)
    return kinds is not None and hasattr(kinds, "WithMessageInfo")


_HAS_MESSAGE_INFO = passes_message_info()

#: Bag format version written.  8 is read by rosbag2 Jazzy/Kilted and by
#: Humble (which ignores the newer keys), PlotJuggler and Foxglove read the MCAP.
BAG_VERSION = 8


def message_class(msgtype: str) -> type:
    """Import the Python class of a ROS message type.

    Args:
        msgtype: ``"pkg/msg/Name"`` (the form the ROS graph reports).

    Returns:
        The generated message class, e.g. ``sensor_msgs.msg.FluidPressure``.

    Raises:
        ValueError: ``msgtype`` is not ``pkg/msg/Name`` or its package or class
            cannot be imported.
    """
    parts = msgtype.split("/")
    if len(parts) != 3 or parts[1] != "msg" or not all(parts):
        raise ValueError(f"message type must look like 'pkg/msg/Name', got {msgtype!r}")
    try:
        return getattr(importlib.import_module(f"{parts[0]}.msg"), parts[2])
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import message type {msgtype!r}: {exc}") from exc


def header_stamp_ns(data: bytes) -> int:
    """``header.stamp`` of a serialized message whose first field is a ``std_msgs/Header``.

    CDR layout: a 4-byte encapsulation header (byte 1 = 1 for little endian),
    then ``stamp.sec`` (int32) and ``stamp.nanosec`` (uint32).  Reading the two
    integers avoids deserializing large clouds just to match stamps.

    Args:
        data: serialized message bytes (CDR, as a raw subscription delivers them).

    Returns:
        The stamp in integer nanoseconds, ``sec * 10**9 + nanosec``.

    Raises:
        ValueError: fewer than 12 bytes, or a ``nanosec`` field >= 10**9 (so
            the message does not start with a header).
    """
    if len(data) < 12:
        raise ValueError(f"serialized message of {len(data)} bytes is too short to hold a header stamp")
    fmt = "<iI" if data[1] & 1 else ">iI"
    sec, nanosec = struct.unpack_from(fmt, data, 4)
    if nanosec >= 1_000_000_000:
        raise ValueError(f"header stamp nanosec {nanosec} >= 1e9: message does not start with a Header")
    return sec * 1_000_000_000 + nanosec


def cloud_point_count(data: bytes) -> int:
    """``height * width`` of a serialized ``sensor_msgs/PointCloud2``, read from its CDR bytes.

    Layout after the 4-byte encapsulation header: ``header.stamp`` (8 bytes),
    ``header.frame_id`` (uint32 length incl. NUL, then the bytes), padding to
    a multiple of 4 relative to the payload start, ``height``, ``width`` (uint32).

    Raises:
        ValueError: the bytes end before ``width``.
    """
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
    """Everything received on one topic.

    Attributes:
        topic: fully qualified topic name.
        msgtype: ``"pkg/msg/Name"``.
        recv_ns: wall-clock receive times (``time.time_ns()``), one per message.
        data: serialized CDR bytes, one per message, in receive order.
        sent_ns: publisher-side send times (DDS source timestamp, wall clock of the
            publishing host, ns) per message; empty when the ROS distribution's
            rclpy cannot report them (Humble).
        qos: QoS profiles the topic's publishers offered when last seen.
    """

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
    # Same rule as `ros2 bag record`: reliable / transient-local only when every
    # publisher offers it, so the subscription is compatible with all of them.
    reliable = bool(offered) and all(q.reliability == ReliabilityPolicy.RELIABLE for q in offered)
    latched = bool(offered) and all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered)
    if not offered:
        reliable = True  # the rclpy/rclcpp default publisher QoS
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=1000,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


class TopicRecorder:
    """Subscribe to every topic on the graph and keep what arrives (raw bytes + wall receive time).

    Call :meth:`refresh` periodically (e.g. from a timer of ``node``) to pick
    up topics that appear later; a topic seen with only subscribers is
    subscribed at once (reliable, volatile), so the first messages of a
    publisher that starts later are not lost to discovery latency.  When its
    publishers turn out to offer best-effort or transient-local QoS the
    subscription is re-created to match them.

    Args:
        node: the ``rclpy`` node that owns the subscriptions (spun by the caller).
        exclude: topic names not to record.
        clock_ns: wall clock used for receive stamps (default ``time.time_ns``).

    Attributes:
        logs: topic -> :class:`TopicLog`.
        skipped: topic -> reason, for topics that could not be subscribed.
    """

    def __init__(self, node: Node, exclude: Iterable[str] = (),
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._node = node
        self._exclude = set(exclude)
        self._clock_ns = clock_ns
        self._subs: Dict[str, Tuple[Subscription, QoSProfile]] = {}
        self.logs: Dict[str, TopicLog] = {}
        self.skipped: Dict[str, str] = {}

    def refresh(self) -> List[str]:
        """Subscribe to topics not yet recorded; re-match QoS where publishers changed.

        Returns:
            Names of topics newly subscribed in this call.
        """
        new: List[str] = []
        for topic, types in self._node.get_topic_names_and_types():
            if topic in self._exclude or topic in self.skipped:
                continue
            if len(types) != 1:
                self.skipped[topic] = f"several types on one topic: {types}"
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
                try:
                    cls = message_class(types[0])
                except ValueError as exc:
                    self.skipped[topic] = str(exc)
                    continue
                self.logs[topic] = TopicLog(topic, types[0], qos=offered)
                new.append(topic)
            cls = message_class(types[0])
            sub = self._node.create_subscription(cls, topic, self._callback(self.logs[topic]), qos, raw=True)
            self._subs[topic] = (sub, qos)
        return new

    def _callback(self, log: TopicLog) -> Callable:
        if _HAS_MESSAGE_INFO:
            def on_message_with_info(data: bytes, info: Any) -> None:
                log.recv_ns.append(self._clock_ns())
                log.data.append(bytes(data))
                log.sent_ns.append(int(info["source_timestamp"]))
            return on_message_with_info

        def on_message(data: bytes) -> None:
            log.recv_ns.append(self._clock_ns())
            log.data.append(bytes(data))
        return on_message

    def stop(self) -> None:
        """Destroy all subscriptions (what was received is kept)."""
        for sub, _ in self._subs.values():
            self._node.destroy_subscription(sub)
        self._subs.clear()

    def counts(self) -> Dict[str, int]:
        """Messages received per topic."""
        return {t: len(log) for t, log in self.logs.items()}


def _rosbags_qos(profile: QoSProfile) -> Any:
    from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                    QosTime)

    def dur(d: Any) -> QosTime:
        ns = int(getattr(d, "nanoseconds", 0))
        return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)

    return Qos(
        history=QosHistory(int(profile.history)),
        depth=int(profile.depth),
        reliability=QosReliability(int(profile.reliability)),
        durability=QosDurability(int(profile.durability)),
        deadline=dur(profile.deadline),
        lifespan=dur(profile.lifespan),
        liveliness=QosLiveliness(int(profile.liveliness)),
        liveliness_lease_duration=dur(profile.liveliness_lease_duration),
        avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions),
    )


def write_bag(logs: Iterable[TopicLog], out_dir: Path, name: str = "run",
              compress: bool = True) -> Dict[str, object]:
    """Write recorded topics as a rosbag2 bag (MCAP storage) into ``out_dir``.

    Produces ``out_dir/<name>.mcap`` and ``out_dir/metadata.yaml`` (so
    ``out_dir`` itself is a rosbag2 bag directory: ``ros2 bag info out_dir``,
    ``ros2 bag play out_dir``; the ``.mcap`` file alone opens in PlotJuggler
    and Foxglove).  An existing ``<name>.mcap`` / ``metadata.yaml`` in
    ``out_dir`` is replaced; other files there are left alone.  Messages are
    written in wall receive order with the receive time as log time (what
    ``ros2 bag record`` does), bytes unchanged.  Schemas: ``rosbags``'
    standard definitions (ROS 2 Kilted store).  With ``compress`` the MCAP
    chunks are zstd-compressed (MCAP's own chunk compression, which the rosbag2
    MCAP plugin, PlotJuggler and Foxglove read; dense clouds and markers shrink
    several-fold).

    Args:
        logs: recorded topics (e.g. ``TopicRecorder.logs.values()``).
        out_dir: directory to write into (created if missing).
        name: file stem of the MCAP file.
        compress: zstd chunk compression.

    Returns:
        ``{"path": Path of the .mcap, "counts": {topic: written}, "left_out": {topic: reason}}``.

    Raises:
        ValueError: ``name`` is empty or contains a path separator.
    """
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    if not name or "/" in name:
        raise ValueError(f"bag name must be a plain file stem, got {name!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    typestore = get_typestore(Stores.ROS2_KILTED)
    staging = out_dir / f".{name}_bag_tmp"
    if staging.exists():
        shutil.rmtree(staging)
    bag_dir = staging / name
    counts: Dict[str, int] = {}
    left_out: Dict[str, str] = {}
    rows: List[Tuple[int, int, bytes]] = []
    writer = Writer(bag_dir, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    if compress:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    with writer:
        conns = []
        for log in sorted(logs, key=lambda lg: lg.topic):
            if log.msgtype not in typestore.types:
                left_out[log.topic] = f"type {log.msgtype} unknown to rosbags"
                continue
            conn = writer.add_connection(log.topic, log.msgtype, typestore=typestore,
                                         offered_qos_profiles=[_rosbags_qos(q) for q in log.qos])
            conns.append(conn)
            k = len(conns) - 1
            rows.extend((t, k, d) for t, d in zip(log.recv_ns, log.data))
            counts[log.topic] = len(log)
        rows.sort(key=lambda r: r[0])
        for t, k, d in rows:
            writer.write(conns[k], t, d)
    for fname in (f"{name}.mcap", "metadata.yaml"):
        target = out_dir / fname
        if target.exists():
            target.unlink()
        (bag_dir / fname).replace(target)
    shutil.rmtree(staging)
    return {"path": out_dir / f"{name}.mcap", "counts": counts, "left_out": left_out}
