"""CDR bytes: the node's per-step inputs decoded from them, its per-step outputs encoded to them.

The node's one message path, because message objects cost more than the work they carry
(docs/decisions.md, one message path; the format and the measurements: docs/performance_notes.md).
Decoded records duck-type the generated messages for the attributes the node reads.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile

from vsf_sensor_ros.ros.messages.pointcloud import FrozenFields

# encapsulation id -> (byte-order prefix, maximum alignment)
ENCAPSULATIONS: Dict[int, Tuple[str, int]] = {
    0x0000: (">", 8), 0x0001: ("<", 8),     # XCDR1 (CDR_BE, CDR_LE)
    0x0006: (">", 4), 0x0007: ("<", 4),     # plain XCDR2 (CDR2_BE, CDR2_LE)
}
_HEADER_LE = b"\x00\x01\x00\x00"            # what this module writes: XCDR1 little-endian

# sensor_msgs/PointField datatypes
INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64 = range(1, 9)

_STRUCTS: Dict[Tuple[str, str], struct.Struct] = {
    (e, c): struct.Struct(e + c) for e in "<>" for c in ("I", "i", "B", "II", "d", "2d")}


CDR_REJECT_REASONS = ("malformed_cdr", "unsupported_encapsulation")
"""Every :attr:`CdrDecodeError.reason` (counted on ``/diagnostics`` like every other reject)."""


class CdrDecodeError(ValueError):
    """Bytes that are not a well-formed CDR message of the expected type.

    Attributes:
        reason: ``malformed_cdr`` (truncated buffer, bad length, bad string)
            or ``unsupported_encapsulation``; snake_case, for the node's
            reject counters.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# -- decoded records (duck-type the generated message classes) ---------------------
@dataclass(slots=True)
class RawTime:
    """``builtin_interfaces/Time``: ``sec`` (int32), ``nanosec`` (uint32)."""

    sec: int
    nanosec: int


@dataclass(slots=True)
class RawHeader:
    """``std_msgs/Header``: ``stamp`` and ``frame_id`` (str)."""

    stamp: RawTime
    frame_id: str

    @property
    def stamp_ns(self) -> int:
        """Stamp as integer nanoseconds."""
        return self.stamp.sec * 1_000_000_000 + self.stamp.nanosec


@dataclass(frozen=True, slots=True)
class RawPointField:
    """``sensor_msgs/PointField``: ``name``, byte ``offset``, ``datatype`` (1..8), ``count``."""

    name: str
    offset: int
    datatype: int
    count: int


@dataclass(slots=True)
class RawPointCloud2:
    """``sensor_msgs/PointCloud2`` decoded from CDR.

    Attributes:
        header: stamp and frame id.
        height, width: cloud shape (points = ``height * width``, row-major).
        fields: tuple of :class:`RawPointField`.
        is_bigendian: byte order of ``data``.
        point_step, row_step: bytes per point and per row.
        data: ``(row_step * height,)`` uint8 read-only view on the received
            bytes (no copy; keeps the buffer alive).
        is_dense: True when no point is invalid.

    The attributes ``(fields, point_step, row_step, height, width,
    is_bigendian, data)`` are exactly what a field reader needs.
    """

    header: RawHeader
    height: int
    width: int
    fields: Tuple[RawPointField, ...]
    is_bigendian: bool
    point_step: int
    row_step: int
    data: np.ndarray
    is_dense: bool


@dataclass(slots=True)
class RawJointState:
    """``sensor_msgs/JointState`` decoded from CDR.

    Attributes:
        header: stamp and frame id.
        name: joint names (list of str).
        position, velocity, effort: float64 arrays (rad or m, rad/s or m/s,
            N·m or N), read-only views on the received bytes; each may be
            empty independently of the others.
    """

    header: RawHeader
    name: List[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class _Reader:
    """Cursor over one CDR buffer.

    Reads are unchecked ``struct.unpack_from`` calls (which raise
    ``struct.error`` past the end); the public decoders turn that into
    :class:`CdrDecodeError` naming the field being read (``self.what``), so
    the common path builds no error text.
    """

    __slots__ = ("buf", "pos", "end", "e", "a8", "u32s", "ii", "what")

    def __init__(self, data: object, what: str) -> None:
        buf = memoryview(data)
        if buf.ndim != 1 or buf.itemsize != 1:
            buf = buf.cast("B")
        if len(buf) < 4:
            raise CdrDecodeError("malformed_cdr", f"{what}: {len(buf)} bytes, shorter than the CDR header")
        rep = (buf[0] << 8) | buf[1]
        enc = ENCAPSULATIONS.get(rep)
        if enc is None:
            raise CdrDecodeError("unsupported_encapsulation",
                                 f"{what}: encapsulation 0x{rep:04x} (plain CDR/XCDR2 only)")
        self.buf, self.pos, self.end = buf, 4, len(buf)
        self.e, self.a8 = enc[0], enc[1] == 8
        self.u32s = _STRUCTS[(self.e, "I")].unpack_from
        self.ii = _STRUCTS[(self.e, "II")].unpack_from
        self.what = "header"

    def fail(self, detail: str = "") -> CdrDecodeError:
        """The error for a read of ``self.what`` that ran past the buffer or found garbage."""
        return CdrDecodeError("malformed_cdr", detail or f"buffer ends at byte {self.end} while reading "
                              f"{self.what} at byte {self.pos}")

    def u32(self) -> int:
        pos = self.pos + (-self.pos & 3)
        self.pos = pos + 4
        return self.u32s(self.buf, pos)[0]

    def u8(self) -> int:
        pos = self.pos
        self.pos = pos + 1
        return self.buf[pos]

    def string(self) -> str:
        n = self.u32()
        if n == 0:   # tolerated: some writers send an empty string without its NUL
            return ""
        pos, end = self.pos, self.pos + n
        if end > self.end:
            raise self.fail()
        if self.buf[end - 1] != 0:
            raise self.fail(f"{self.what} at byte {pos} is not NUL-terminated")
        self.pos = end
        try:
            return str(self.buf[pos:end - 1], "utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"{self.what} is not UTF-8: {exc}") from None

    def header(self) -> RawHeader:
        sec, nsec = self.ii(self.buf, 4)
        self.pos = 12
        if sec >= 1 << 31:   # int32 seconds
            sec -= 1 << 32
        self.what = "header.frame_id"
        return RawHeader(RawTime(sec, nsec), self.string())

    def float64s(self) -> np.ndarray:
        n = self.u32()
        if n == 0:           # no alignment padding before an empty sequence
            return _EMPTY_F8
        if self.a8:
            self.pos += -(self.pos - 4) & 7
        pos = self.pos
        if pos + 8 * n > self.end:
            raise self.fail()
        self.pos = pos + 8 * n
        return np.frombuffer(self.buf, dtype=self.e + "f8", count=n, offset=pos)

    def strings(self) -> List[str]:
        n = self.u32()
        if 4 * n > self.end:   # each string takes at least 4 bytes: a larger count is garbage
            raise self.fail(f"{self.what} count {n} exceeds the buffer")
        return [self.string() for _ in range(n)]


_EMPTY_F8 = np.zeros(0)
_EMPTY_F8.setflags(write=False)


def encapsulation(data: object) -> int:
    """The 16-bit encapsulation id of a CDR buffer (``0x0001`` = little-endian XCDR1).

    Raises:
        CdrDecodeError: fewer than 4 bytes.
    """
    buf = memoryview(data).cast("B")
    if len(buf) < 4:
        raise CdrDecodeError("malformed_cdr", f"{len(buf)} bytes, shorter than the CDR header")
    return (buf[0] << 8) | buf[1]


def decode_joint_state(data: object) -> RawJointState:
    """Decode a serialised ``sensor_msgs/JointState``.

    Args:
        data: the bytes (``bytes``, ``bytearray``, ``memoryview``) a
            ``raw=True`` subscription delivers, encapsulation header included.
            Trailing bytes after the message are ignored.

    Returns:
        :class:`RawJointState` (arrays are read-only views on ``data``).

    Raises:
        CdrDecodeError: ``unsupported_encapsulation`` or ``malformed_cdr``
            (truncated, bad string), naming the field and byte offset.
    """
    r = _Reader(data, "JointState")
    try:
        header = r.header()
        r.what = "name"
        names = _cached_section(_JOINT_NAMES, r, _read_names)
        r.what = "position"
        pos = r.float64s()
        r.what = "velocity"
        vel = r.float64s()
        r.what = "effort"
        return RawJointState(header, list(names), pos, vel, r.float64s())
    except (struct.error, IndexError):
        raise r.fail() from None


def subscribe(node: Node, msg_type: type, topic: str, decode: Callable[[Any], Any],
              handler: Callable[[Any], None], reject: Callable[[str, str], None], qos: QoSProfile) -> Any:
    """A ``raw=True`` subscription of ``topic``: ``handler(decode(bytes))`` per message.

    Args:
        node: the node owning it.
        msg_type: the topic's message class (``JointState``, ``PointCloud2``).
        decode: :func:`decode_joint_state` or :func:`decode_pointcloud2`.
        handler: the node's handler of the decoded record.
        reject: ``f(reason, detail)``, called instead of ``handler`` for bytes that are not a
            well-formed message (reason one of :data:`CDR_REJECT_REASONS`, detail naming the topic).

    Returns:
        The subscription.
    """
    def callback(raw: Any) -> None:
        try:
            msg = decode(raw)
        except CdrDecodeError as exc:
            return reject(exc.reason, f"{topic}: {exc}")
        handler(msg)
    return node.create_subscription(msg_type, topic, callback, qos, raw=True)


def _read_names(r: "_Reader") -> Tuple[str, ...]:
    return tuple(r.strings())


# A driver sends the same joint names and a simulator the same cloud layout in every message:
# the bytes of that part are compared with the previous message's and, when equal at the same
# offset and encoding, its parse is reused (same bytes, same parse; different bytes are parsed).
_JOINT_NAMES: List[Any] = [None]
_CLOUD_LAYOUT: List[Any] = [None]


def _cached_section(slot: List[Any], r: "_Reader", parse: Callable[["_Reader"], Any]) -> Any:
    """``parse(r)`` from ``r.pos``, or the previous result when the bytes it read are the same.

    ``slot[0]`` holds ``(encoding, start, section bytes, result)`` of the last parse; only a
    section that was parsed without error is kept.
    """
    start, key = r.pos, (r.e, r.a8)
    hit = slot[0]
    if hit is not None and hit[0] == key and hit[1] == start:
        end = start + len(hit[2])
        if end <= r.end and r.buf[start:end] == hit[2]:
            r.pos = end
            return hit[3]
    result = parse(r)
    slot[0] = (key, start, bytes(r.buf[start:r.pos]), result)
    return result


def decode_pointcloud2(data: object) -> RawPointCloud2:
    """Decode a serialised ``sensor_msgs/PointCloud2`` (layout not validated here).

    The fields, steps and sizes are returned as sent; checking them against
    each other is the consumer's job (as for a message object).

    Args:
        data: bytes from a ``raw=True`` subscription (encapsulation header
            included; trailing bytes ignored).

    Returns:
        :class:`RawPointCloud2` whose ``data`` is a uint8 view on ``data``.

    Raises:
        CdrDecodeError: ``unsupported_encapsulation`` or ``malformed_cdr``.
    """
    r = _Reader(data, "PointCloud2")
    try:
        header = r.header()
        height, width, fields, is_bigendian, point_step, row_step = _cached_section(
            _CLOUD_LAYOUT, r, _read_cloud_layout)
        r.what = "data"
        buf = r.buf
        pos = r.pos + (-r.pos & 3)
        n = r.u32s(buf, pos)[0]
        pos += 4
        if pos + n + 1 > r.end:
            r.pos = pos
            raise r.fail()
        payload = np.frombuffer(buf, dtype=np.uint8, count=n, offset=pos)
        is_dense = bool(buf[pos + n])
    except (struct.error, IndexError):
        raise r.fail() from None
    return RawPointCloud2(header, height, width, fields, is_bigendian, point_step, row_step,
                          payload, is_dense)


def _read_cloud_layout(r: "_Reader") -> Tuple[int, int, FrozenFields, bool, int, int]:
    """``height`` .. ``row_step`` of a ``PointCloud2`` from ``r.pos`` (just after the header)."""
    r.what = "height, width, fields"
    pos = r.pos + (-r.pos & 3)
    height, width = r.ii(r.buf, pos)
    r.pos = pos + 8
    nf = r.u32()
    if 4 * nf > r.end:
        raise r.fail(f"fields count {nf} exceeds the buffer")
    fields = []
    u32s, buf = r.u32s, r.buf
    for i in range(nf):
        r.what = f"fields[{i}]"
        name = r.string()
        pos = r.pos + (-r.pos & 3)
        offset = u32s(buf, pos)[0]
        datatype = buf[pos + 4]
        pos += 5
        pos += -pos & 3
        fields.append(RawPointField(name, offset, datatype, u32s(buf, pos)[0]))
        r.pos = pos + 4
    r.what = "is_bigendian, point_step, row_step"
    is_bigendian = bool(r.u8())
    pos = r.pos + (-r.pos & 3)
    point_step, row_step = r.ii(buf, pos)
    r.pos = pos + 8
    return height, width, FrozenFields(fields), is_bigendian, point_step, row_step


# -- encoders ---------------------------------------------------------------------------
def _pad(n: int) -> bytes:
    return b"\x00" * n


def _header_bytes(stamp_ns: int, frame_id: str) -> bytes:
    """Encapsulation + ``std_msgs/Header`` (ends at a 4-byte boundary, padding included)."""
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    fid = frame_id.encode("utf-8") + b"\x00"
    body = struct.pack("<iII", sec, nsec, len(fid)) + fid
    return _HEADER_LE + body + _pad(-len(body) % 4)


def _check_stamp(stamp_ns: int) -> int:
    ns = int(stamp_ns)
    if not 0 <= ns < (1 << 31) * 1_000_000_000:
        raise ValueError(f"stamp {stamp_ns} ns is outside builtin_interfaces/Time's range")
    return ns


def _align8(head: bytes) -> bytes:
    """``head`` padded so the next byte sits on an 8-byte boundary of the CDR data."""
    return head + _pad(-(len(head) - 4) % 8)


def encode_fluid_pressure(stamp_ns: int, frame_id: str, fluid_pressure: float, variance: float) -> bytes:
    """Serialised ``sensor_msgs/FluidPressure`` (Pa, Pa²), little-endian XCDR1.

    Raises:
        ValueError: ``stamp_ns`` negative or beyond ``int32`` seconds.
    """
    head = _align8(_header_bytes(_check_stamp(stamp_ns), frame_id))
    return head + struct.pack("<2d", float(fluid_pressure), float(variance))


def encode_wrench_stamped(stamp_ns: int, frame_id: str, force: Sequence[float],
                          torque: Sequence[float] = (0.0, 0.0, 0.0)) -> bytes:
    """Serialised ``geometry_msgs/WrenchStamped`` (N, N·m), little-endian XCDR1.

    Raises:
        ValueError: a stamp out of range, or ``force``/``torque`` not of length 3.
    """
    if len(force) != 3 or len(torque) != 3:
        raise ValueError(f"force and torque need 3 components, got {len(force)} and {len(torque)}")
    head = _align8(_header_bytes(_check_stamp(stamp_ns), frame_id))
    return head + struct.pack("<6d", *(float(v) for v in force), *(float(v) for v in torque))


_FIELD_CODES: Dict[str, int] = {"<f4": FLOAT32, "<f8": FLOAT64, "<u4": UINT32, "<i4": INT32,
                                "<u2": UINT16}
_CLOUD_PREFIX: Dict[Tuple, Tuple[bytes, bytes, int]] = {}


def _cloud_fields_block(start: int, fields: Tuple[Tuple[str, str, int], ...], point_step: int) -> bytes:
    """Serialised ``fields`` .. ``point_step`` starting at absolute byte ``start`` (4-aligned)."""
    out = bytearray(struct.pack("<I", len(fields)))
    for name, code, offset in fields:
        nm = name.encode("utf-8") + b"\x00"
        if (start + len(out)) % 4:
            raise AssertionError("field block must start 4-aligned")   # pragma: no cover
        out += struct.pack("<I", len(nm)) + nm
        out += _pad(-(start + len(out) - 4) % 4)
        out += struct.pack("<IB", offset, _FIELD_CODES[code])
        out += _pad(-(start + len(out) - 4) % 4)
        out += struct.pack("<I", 1)
    out += b"\x00"                                        # is_bigendian = false
    out += _pad(-(start + len(out) - 4) % 4)
    out += struct.pack("<I", point_step)
    return bytes(out)


def encode_pointcloud2(stamp_ns: int, frame_id: str, records: np.ndarray) -> bytes:
    """Serialised unorganised little-endian ``sensor_msgs/PointCloud2`` from a record array.

    ``height`` 1, ``width`` = number of records, one field per record member (packed, in
    order, ``count`` 1), ``is_bigendian`` false, ``point_step`` = record
    size, ``row_step`` = ``point_step * width``, ``is_dense`` true.

    Args:
        stamp_ns: header stamp (ns, non-negative).
        frame_id: header frame id.
        records: ``(N,)`` structured array of little-endian float32/float64/
            uint32/int32/uint16 members without gaps.

    Raises:
        ValueError: a member of another dtype, a gap/overlap in the record,
            or a stamp out of range.
    """
    dt = records.dtype
    if dt.names is None or records.ndim != 1:
        raise ValueError(f"records must be a 1-D structured array, got dtype {dt} shape {records.shape}")
    key = (frame_id, dt)
    hit = _CLOUD_PREFIX.get(key)
    if hit is None:
        fields, offset = [], 0
        for name in dt.names:
            sub, off = dt.fields[name][:2]
            code = sub.str
            if code not in _FIELD_CODES:
                raise ValueError(f"cloud field {name!r} has unsupported dtype {sub}")
            if off != offset:
                raise ValueError(f"cloud field {name!r} at offset {off}, expected packed offset {offset}")
            fields.append((name, code, off))
            offset += sub.itemsize
        if offset != dt.itemsize:
            raise ValueError(f"record dtype has {dt.itemsize - offset} trailing padding bytes")
        head = _header_bytes(0, frame_id)
        start = len(head) + 8                              # after height, width
        block = _cloud_fields_block(start, tuple(fields), dt.itemsize)
        hit = (head[12:], block, dt.itemsize)
        if len(_CLOUD_PREFIX) < 64:
            _CLOUD_PREFIX[key] = hit
    frame_block, block, step = hit
    sec, nsec = divmod(_check_stamp(stamp_ns), 1_000_000_000)
    n = records.shape[0]
    payload = records.tobytes()
    return b"".join((_HEADER_LE, struct.pack("<iI", sec, nsec), frame_block,
                     struct.pack("<II", 1, n), block,
                     struct.pack("<II", step * n, len(payload)), payload, b"\x01"))


_DENSE_DTYPE = np.dtype([(c, "<f4") for c in ("x", "y", "z", "fx", "fy", "fz")])
_JACOBIAN_DTYPE = np.dtype([("row", "<u4"), ("col", "<u4"), ("value", "<f8")])


def encode_dense_force(stamp_ns: int, frame_id: str, vertices: np.ndarray, forces: np.ndarray) -> bytes:
    """Serialised dense force cloud: ``x y z fx fy fz`` float32 per vertex (m, N), body frame.

    Args:
        vertices: ``(V, 3)`` vertex positions (m).
        forces: ``(V, 3)`` or ``(3V,)`` local forces (N), vertex order.

    Raises:
        ValueError: shapes disagree.
    """
    v = np.asarray(vertices).reshape(-1, 3)
    f = np.asarray(forces).reshape(-1, 3)
    if v.shape != f.shape:
        raise ValueError(f"{len(v)} vertices but {len(f)} force vectors")
    rec = np.empty(len(v), dtype=_DENSE_DTYPE)
    flat = rec.view("<f4").reshape(-1, 6)
    flat[:, :3] = v
    flat[:, 3:] = f
    return encode_pointcloud2(stamp_ns, frame_id, rec)


def encode_jacobian(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, stamp_ns: int,
                    frame_id: str) -> bytes:
    """Serialised sparse COO Jacobian cloud: ``row`` uint32, ``col`` uint32, ``value`` float64.

    Entries whose value is exactly 0 are dropped (nonzeros only); ``cols`` already in
    message-row form (:func:`~.readings.jacobian_message_columns`); ``frame_id`` the world
    frame, the frame of the force axes.

    Raises:
        ValueError: arrays of different lengths.
    """
    values = np.asarray(values, dtype=np.float64)
    rows, cols = np.asarray(rows), np.asarray(cols)
    if not rows.shape == cols.shape == values.shape:
        raise ValueError(f"rows {rows.shape}, cols {cols.shape}, values {values.shape} differ")
    keep = values != 0.0
    rec = np.empty(int(np.count_nonzero(keep)), dtype=_JACOBIAN_DTYPE)
    rec["row"] = rows[keep]
    rec["col"] = cols[keep]
    rec["value"] = values[keep]
    return encode_pointcloud2(stamp_ns, frame_id, rec)
