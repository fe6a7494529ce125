"""The contacts input from CDR bytes (cheaper than message objects: docs/decisions.md) to contacts
per body pair, and the one PointCloud2 reader (:func:`read_points`, numpy records over the buffer;
a bad cloud is rejected whole).  Decoded records duck-type the generated messages."""
from __future__ import annotations

import functools
import struct
from types import MappingProxyType
from typing import (Any, Callable, Collection, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    Union)

import numpy as np
import torch
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import PointCloud2, PointField

from ...rig.contacts import DecodedContacts, Pair, identity_rows, trusted_contact_state  # noqa: F401 -- Pair
from .stamps import stamp_to_ns

# encapsulation id -> (byte-order prefix, 8-byte alignment, uint32 and uint32-pair readers)
ENCAPSULATIONS: Dict[int, Tuple[str, bool, Callable, Callable]] = {
    rep: (e, a8, struct.Struct(e + "I").unpack_from, struct.Struct(e + "II").unpack_from)
    for rep, e, a8 in ((0x0000, ">", True), (0x0001, "<", True),       # XCDR1 (CDR_BE, CDR_LE)
                       (0x0006, ">", False), (0x0007, "<", False))}   # plain XCDR2 (CDR2_BE, CDR2_LE)


CDR_REJECT_REASONS = ("malformed_cdr", "unsupported_encapsulation")   # CdrDecodeError.reason


class ReasonError(ValueError):
    """A message rejected whole; ``reason``: its diagnostics counter key."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class CdrDecodeError(ReasonError):
    """Bytes that are not a well-formed CDR message of the expected type (``reason``)."""


class RawTime(NamedTuple):
    """``builtin_interfaces/Time``: ``sec`` (int32), ``nanosec`` (uint32)."""
    sec: int
    nanosec: int


class RawHeader(NamedTuple):
    """``std_msgs/Header``: ``stamp`` and ``frame_id`` (str)."""
    stamp: RawTime
    frame_id: str


class RawPointCloud2(NamedTuple):
    """``sensor_msgs/PointCloud2`` from CDR: ``layout`` a :class:`CloudLayout` (read as the message's
    ``height`` .. ``is_bigendian``, ``fields`` FrozenFields), ``data`` a read-only uint8 view on the bytes."""
    header: RawHeader
    layout: "CloudLayout"
    data: np.ndarray
    is_dense: bool


class Reader:
    """Cursor over one CDR buffer; reads are unchecked (``struct.error`` past the end), which the
    decoders turn into :class:`CdrDecodeError` naming the field being read (``self.what``)."""

    __slots__ = ("buf", "pos", "end", "e", "a8", "u32s", "ii", "what", "gaps")

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
        self.buf, self.pos, self.end, self.what, self.gaps = buf, 4, len(buf), "header", None
        self.e, self.a8, self.u32s, self.ii = enc

    def fail(self, detail: str = "") -> CdrDecodeError:
        """The error for a read of ``self.what`` that ran past the buffer or found garbage."""
        return CdrDecodeError("malformed_cdr", detail or f"buffer ends at byte {self.end} while reading "
                              f"{self.what} at byte {self.pos}")

    def u32(self) -> int:
        pos = self.pos + (-self.pos & 3)
        if pos != self.pos and self.gaps is not None:   # padding (unspecified bytes) for cached_section
            self.gaps.append((self.pos, pos))
        self.pos = pos + 4
        return self.u32s(self.buf, pos)[0]

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


def subscribe(node: Node, msg_type: type, topic: str, decode: Callable[[Any], Any],
              handler: Callable[[Any], None], reject: Callable[[str, str], None], qos: QoSProfile) -> Any:
    """A ``raw=True`` subscription of ``topic``: ``handler(decode(bytes))`` per message, or
    ``reject(reason, detail naming the topic)`` for bytes that are not a well-formed message."""
    def callback(raw: Any) -> None:
        try:
            msg = decode(raw)
        except CdrDecodeError as exc:
            return reject(exc.reason, f"{topic}: {exc}")
        handler(msg)
    return node.create_subscription(msg_type, topic, callback, qos, raw=True)


# A driver repeats its joint names and a simulator its cloud layout: the parse of the same bytes
# at the same offset and encoding is reused
_CLOUD_LAYOUT: List[Any] = [None]


def cached_section(slot: List[Any], r: "Reader", parse: Callable[["Reader"], Any]) -> Any:
    """``parse(r)`` from ``r.pos``, or the previous result for the same bytes but padding (``slot[0]``:
    encoding, start, length, mask of the bits that are not padding, those bits, result of the last parse);
    writers leave garbage in padding (a section would never match)."""
    start, key = r.pos, (r.e, r.a8)
    hit = slot[0]
    if hit is not None and hit[0] == key and hit[1] == start:
        end = start + hit[2]
        if end <= r.end and int.from_bytes(r.buf[start:end], "big") & hit[3] == hit[4]:
            r.pos = end
            return hit[5]
    r.gaps = []
    result = parse(r)
    mask = bytearray(b"\xff" * (r.pos - start))
    for a, b in r.gaps:
        mask[a - start:b - start] = bytes(b - a)
    bits = int.from_bytes(mask, "big")
    slot[0] = (key, start, r.pos - start, bits, int.from_bytes(r.buf[start:r.pos], "big") & bits, result)
    return result


def decode_pointcloud2(data: object) -> RawPointCloud2:
    """A serialised ``sensor_msgs/PointCloud2`` as a :class:`RawPointCloud2` (layout unchecked);
    CdrDecodeError naming the field and byte offset."""
    r = Reader(data, "PointCloud2")
    try:
        header = r.header()
        layout = cached_section(_CLOUD_LAYOUT, r, _read_cloud_layout)   # the same object while it repeats
        r.what = "data"
        buf, pos = r.buf, r.pos + (-r.pos & 3)
        n, pos = r.u32s(buf, pos)[0], pos + 4
        if pos + n + 1 > r.end:
            r.pos = pos
            raise r.fail()
        payload = np.frombuffer(buf, dtype=np.uint8, count=n, offset=pos)
        is_dense = bool(buf[pos + n])
    except (struct.error, IndexError):
        raise r.fail() from None
    return RawPointCloud2(header, layout, payload, is_dense)


def _read_cloud_layout(r: "Reader") -> CloudLayout:
    """``height`` .. ``row_step`` of a ``PointCloud2`` from ``r.pos`` (after the header)."""
    r.what = "height, width, fields"
    height, width, nf = r.u32(), r.u32(), r.u32()
    if 4 * nf > r.end:
        raise r.fail(f"fields count {nf} exceeds the buffer")
    fields = []
    for i in range(nf):
        r.what = f"fields[{i}]"
        name, offset = r.string(), r.u32()
        r.pos += 1    # the uint8 datatype
        fields.append(FieldSpec(name, offset, r.buf[r.pos - 1], r.u32()))
    r.what = "is_bigendian, point_step, row_step"
    r.pos += 1
    big = bool(r.buf[r.pos - 1])
    return CloudLayout(FrozenFields(fields), height, width, r.u32(), r.u32(), big)


DATATYPE_CODES: Dict[int, str] = {
    PointField.INT8: "i1", PointField.UINT8: "u1", PointField.INT16: "i2", PointField.UINT16: "u2",
    PointField.INT32: "i4", PointField.UINT32: "u4", PointField.FLOAT32: "f4", PointField.FLOAT64: "f8",
}
FLOAT_TYPES: Tuple[int, ...] = (PointField.FLOAT32, PointField.FLOAT64)   # of a physical field

CLOUD_REASONS: Tuple[str, ...] = (
    "missing_field", "duplicate_field", "bad_field_type", "bad_field_count", "bad_field_offset",
    "bad_size", "non_finite",
)   # every CloudDecodeError.reason (keys of the diagnostics counters)


class CloudDecodeError(ReasonError):
    """A cloud that cannot be read (rejected whole); ``reason``: one of :data:`CLOUD_REASONS`."""


class FieldSpec(NamedTuple):
    """One ``PointField`` as plain values (any object with these attributes will do)."""
    name: str
    offset: int
    datatype: int
    count: int = 1


class CloudLayout(NamedTuple):
    """Where the points sit in a cloud's data buffer (``PointField``-like ``fields``, steps in bytes)."""
    fields: Sequence[Any]
    height: int
    width: int
    point_step: int
    row_step: int
    is_bigendian: bool

    @classmethod
    def of(cls, msg: PointCloud2) -> "CloudLayout":
        """The layout of a deserialised ``PointCloud2``."""
        return cls(msg.fields, int(msg.height), int(msg.width), int(msg.point_step), int(msg.row_step),
                   bool(msg.is_bigendian))

    @property
    def num_points(self) -> int:
        """``height * width``."""
        return int(self.height) * int(self.width)


for _name in CloudLayout._fields:   # a RawPointCloud2 reads as a message: msg.height is msg.layout.height
    setattr(RawPointCloud2, _name, property(lambda msg, name=_name: getattr(msg.layout, name)))


def as_byte_array(data: Any) -> np.ndarray:
    """A message's byte buffer as a ``uint8`` array (zero-copy where the buffer allows)."""
    if type(data) is np.ndarray and data.dtype is _U8 and data.ndim == 1 and data.flags.c_contiguous:
        return data     # already one (decode_pointcloud2's)
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except TypeError:          # a list of ints (some distributions' uint8[] fields)
        return np.asarray(data, dtype=np.uint8)


def check_data_size(layout: CloudLayout, nbytes: int, exact: bool = True) -> None:
    """CloudDecodeError ``bad_size`` (naming the numbers) unless ``width * point_step <=
    row_step`` and ``nbytes`` hold the points: ``exact``, ``height * row_step`` (an empty cloud
    may carry none); else up to the end of the last point (an empty cloud unchecked)."""
    h, w, step, row_step = int(layout.height), int(layout.width), int(layout.point_step), int(layout.row_step)
    if h * w == 0:
        if exact and nbytes not in (0, h * row_step):
            raise CloudDecodeError("bad_size", f"empty cloud ({h}x{w}) carries {nbytes} bytes of data")
        return
    if w * step > row_step:
        raise CloudDecodeError("bad_size", f"width {w} x point_step {step} exceeds row_step {row_step}")
    if exact and nbytes != h * row_step:
        raise CloudDecodeError("bad_size", f"data has {nbytes} bytes, expected height {h} x row_step "
                               f"{row_step}")
    if not exact and nbytes < (h - 1) * row_step + w * step:
        raise CloudDecodeError("bad_size", f"data of {nbytes} bytes does not hold {h} rows of {w} points "
                               f"(row_step {row_step}, point_step {step})")


_MAX_ITEMSIZE = 2 ** 31 - 1   # the largest point_step a numpy record can span (a C int)
_U8 = np.dtype(np.uint8)
_LAST_PLAN: List[Any] = [None]   # the last validated field plan of read_points
_NAMES: List[List[str]] = [[]]   # a copy of the last body-name table checked (a node repeats its own)
_BLOCKS: List[Any] = [None]      # contacts_from_buffer's last plan of views (of a FrozenFields layout)


@functools.lru_cache(maxsize=64)   # built once per layout: a simulator sends the same layout every step
def _record_dtype(names: Tuple[str, ...], formats: Tuple[str, ...], offsets: Tuple[int, ...],
                  itemsize: int) -> np.dtype:
    spec = {"names": list(names), "formats": list(formats), "offsets": list(offsets)}
    return np.dtype({**spec, "itemsize": itemsize} if itemsize else spec)


class FrozenFields(tuple):
    """A cloud's fields, immutable: :func:`read_points` reuses its last validated plan for the very
    same layout holding them (one per repeated layout); any other sequence is validated on every call."""

    __slots__ = ()


def _field_plan(layout: CloudLayout, names: Tuple[str, ...], optional: Tuple[str, ...],
                datatypes: Optional[Mapping[str, Collection[int]]]) -> Tuple[Any, ...]:
    """``(layout, names, optional, datatypes, (exact data size or -1, record dtype or None, view shape,
    strides, used names, formats, offsets))`` of a checked layout (:func:`read_points`' errors)."""
    h, w, step, row_step = int(layout.height), int(layout.width), int(layout.point_step), int(layout.row_step)
    endian = ">" if layout.is_bigendian else "<"
    wanted = list(names) + [n for n in optional if n not in names]
    by_name: Dict[str, Any] = {}
    for f in layout.fields:
        if f.name in by_name and f.name in wanted:
            raise CloudDecodeError("duplicate_field", f"field {f.name!r} appears twice")
        by_name.setdefault(f.name, f)
    missing = [n for n in names if n not in by_name]
    if missing:
        raise CloudDecodeError("missing_field",
                               f"cloud lacks field(s) {missing}; has {[f.name for f in layout.fields]}")
    if step <= 0 and layout.num_points:
        raise CloudDecodeError("bad_size", f"point_step is {step}")
    used = [name for name in wanted if name in by_name]
    formats, offsets = [], []
    for name in used:
        f = by_name[name]
        dt = int(f.datatype)
        code = DATATYPE_CODES.get(dt)
        allowed = None if datatypes is None else datatypes.get(name)
        if code is None or (allowed is not None and dt not in allowed):
            accepted = sorted(allowed) if allowed is not None else sorted(DATATYPE_CODES)
            raise CloudDecodeError(
                "bad_field_type", f"field {name!r} has datatype {f.datatype}; allowed {accepted}")
        if int(f.count) != 1:
            raise CloudDecodeError("bad_field_count", f"field {name!r} has count {f.count}, expected 1")
        if int(f.offset) < 0 or int(f.offset) + np.dtype(code).itemsize > max(step, 0):
            raise CloudDecodeError(
                "bad_field_offset", f"field {name!r} at offset {f.offset} does not fit in point_step {step}")
        formats.append(endian + code)
        offsets.append(int(f.offset))
    used, formats, offsets = tuple(used), tuple(formats), tuple(offsets)
    rec = _record_dtype(used, formats, offsets, step) if 0 < step <= _MAX_ITEMSIZE and h * w else None
    even = h == 1 or row_step == w * step   # the points evenly strided: one (N,) view
    plan = (layout, names, optional, datatypes, (h * row_step if 0 < w * step <= row_step else -1, rec,
            (h * w,) if even else (h, w), (step,) if even else (row_step, step), used, formats, offsets))
    if type(layout.fields) is FrozenFields and (datatypes is None or type(datatypes) is MappingProxyType):
        _LAST_PLAN[0] = plan
    return plan


def read_points(layout: CloudLayout, data: Any, names: Sequence[str], optional: Sequence[str] = (),
                datatypes: Optional[Mapping[str, Collection[int]]] = None,
                exact_size: bool = True) -> np.ndarray:
    """Fields ``names`` (required) and ``optional`` of every point: a ``(height * width,)``
    structured strided view of ``data`` in message byte order, row-major.  ``datatypes``: field ->
    accepted ``PointField`` datatypes; ``exact_size``: :func:`check_data_size`'s rule.
    CloudDecodeError, in this order: ``duplicate_field`` (a read field twice), ``missing_field``,
    ``bad_size`` (``point_step`` <= 0 or >= 2**31 with points, the data length), ``bad_field_type``,
    ``bad_field_count`` (!= 1), ``bad_field_offset`` (past ``point_step``)."""
    plan = _LAST_PLAN[0]   # reused for the very same layout and inputs, immutable (_field_plan)
    if plan is None or plan[0] is not layout or plan[1] is not names or plan[2] is not optional \
            or plan[3] is not datatypes:
        plan = _field_plan(layout, tuple(names), tuple(optional), datatypes)
    nbytes, rec, shape, strides, used, formats, offsets = plan[4]
    buf = as_byte_array(data)
    if buf.size != nbytes:
        check_data_size(layout, int(buf.size), exact_size)   # raises unless a tolerated size
    if rec is None:     # no point: a packed record (point_step may exceed what a numpy dtype can span)
        if layout.num_points == 0:
            return np.zeros(0, dtype=_record_dtype(used, formats, offsets, 0))
        raise CloudDecodeError("bad_size", f"point_step {layout.point_step} exceeds {_MAX_ITEMSIZE} bytes")
    # Strided view over the buffer: row padding (row_step > width*point_step) is skipped, not copied.
    grid = np.ndarray(shape, rec, buf, 0, strides)
    return grid if len(shape) == 1 else grid.reshape(-1)


def float_columns(points: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Fields ``names`` of a :func:`read_points` result as ``(N, len(names))`` float64."""
    if not len(names) or not points.shape[0]:
        return np.zeros((points.shape[0], len(names)))
    with np.errstate(invalid="ignore"):    # a signalling NaN warns when widened; callers check finiteness
        return raw_columns(points, tuple(names)).astype(np.float64)


@functools.lru_cache(maxsize=64)   # a simulator repeats one layout: its adjacency is found once
def _adjacent(rec: np.dtype, names: Tuple[str, ...]) -> Optional[Tuple[np.dtype, int]]:
    first, off0 = rec.fields[names[0]][:2]
    ok = all(rec.fields[c][:2] == (first, off0 + i * first.itemsize) for i, c in enumerate(names))
    return (first, off0) if ok else None


def raw_columns(points: np.ndarray, names: Tuple[str, ...]) -> np.ndarray:
    """Fields ``names`` of ``(N,)`` records ``points`` as ``(N, k)`` in their own type: adjacent fields of
    one type (x y z, fx fy fz as writers lay them out) as one strided view, else stacked (promoted)."""
    adjacent = _adjacent(points.dtype, names) if points.ndim == 1 and points.flags.c_contiguous else None
    if adjacent is None:
        with np.errstate(invalid="ignore"):    # a signalling NaN warns when widened; callers check finiteness
            return np.stack([points[c] for c in names], axis=1)
    first, off0 = adjacent    # the usual case: a view straight on the records' buffer
    return np.ndarray(shape=(points.shape[0], len(names)), dtype=first, buffer=points, offset=off0,
                      strides=(points.strides[0], first.itemsize))


def require_finite(values: np.ndarray, label: str) -> None:
    """CloudDecodeError ``non_finite`` (naming ``label``, the row count and the first) for a NaN/inf
    in ``values`` (``(N,)`` or ``(N, k)``, a row per point)."""
    ok = np.isfinite(values)
    if ok.all():
        return
    bad = np.flatnonzero(~ok.reshape(values.shape[0], -1).all(axis=1))
    raise CloudDecodeError("non_finite", f"non-finite {label} at {bad.size} row(s), first row {int(bad[0])}")


POINT_FIELDS = ("x", "y", "z")
FORCE_FIELDS = ("fx", "fy", "fz")
BODY_FIELDS = ("body1", "body2")
ELEM_FIELDS = ("elem1", "elem2")
NORMAL_FIELDS = ("nx", "ny", "nz")
DEPTH_FIELD = "depth"

CONTACT_FIELDS: Tuple[str, ...] = POINT_FIELDS + FORCE_FIELDS + BODY_FIELDS   # required
OPTIONAL_CONTACT_FIELDS: Tuple[str, ...] = ELEM_FIELDS + NORMAL_FIELDS + (DEPTH_FIELD,)

ALLOWED_DATATYPES: Mapping[str, Tuple[int, ...]] = MappingProxyType({
    **{n: FLOAT_TYPES for n in POINT_FIELDS + FORCE_FIELDS + NORMAL_FIELDS + (DEPTH_FIELD,)},
    **{n: (PointField.UINT16, PointField.UINT32) for n in BODY_FIELDS},
    **{n: (PointField.INT32,) for n in ELEM_FIELDS},
})

DECODE_REASONS: Tuple[str, ...] = CLOUD_REASONS + (
    "body_index_out_of_range", "elem_index_invalid", "bad_frame_id")   # every ContactsDecodeError.reason


class ContactsDecodeError(CloudDecodeError):
    """A contacts cloud that cannot be used (rejected whole); ``reason``: one of :data:`DECODE_REASONS`."""


def check_body_names(body_names: Sequence[str]) -> List[str]:
    """``body_names`` as a list; ValueError naming ``contact_body_names``' duplicates."""
    names = list(body_names)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"contact_body_names has duplicates: {dup}")
    return names


def pointcloud2_to_contacts(msg: PointCloud2, body_names: Sequence[str], dtype: torch.dtype = torch.float64,
                            device: Union[str, torch.device] = "cpu",
                            expected_frame_id: Optional[str] = None) -> DecodedContacts:
    """:func:`contacts_from_buffer` of a contacts cloud (message or :class:`RawPointCloud2`)."""
    layout = msg.layout if type(msg) is RawPointCloud2 else CloudLayout.of(msg)
    return contacts_from_buffer(layout, msg.data, body_names, dtype, device, frame_id=msg.header.frame_id,
                                stamp_ns=stamp_to_ns(msg.header.stamp), expected_frame_id=expected_frame_id)


def contacts_from_buffer(layout: CloudLayout, data: Any, body_names: Sequence[str],
                         dtype: torch.dtype = torch.float64, device: Union[str, torch.device] = "cpu",
                         frame_id: str = "", stamp_ns: int = 0,
                         expected_frame_id: Optional[str] = None) -> DecodedContacts:
    """``ContactState`` per ordered body pair from a cloud's layout and data (docs/interface.md);
    ``body_names``: the table ``body1``/``body2`` index; ``expected_frame_id``: another non-empty
    ``frame_id`` is refused.  ContactsDecodeError: a reason of :data:`DECODE_REASONS` (``non_finite``
    also past ``dtype``'s range); ValueError: duplicate ``body_names``."""
    names = _NAMES[0]
    if type(body_names) is not list or body_names != names:     # checked once while the table repeats
        names = _NAMES[0] = check_body_names(body_names)
    if expected_frame_id is not None and frame_id and frame_id != expected_frame_id:
        raise ContactsDecodeError(
            "bad_frame_id", f"contacts are in frame {frame_id!r}, expected {expected_frame_id!r}")
    n = layout.num_points
    try:
        if n == 0:
            check_data_size(layout, int(as_byte_array(data).size), exact=True)
            return DecodedContacts({}, {}, 0, frame_id=frame_id, stamp_ns=stamp_ns,
                                   fields=[f.name for f in layout.fields])
        arr = read_points(layout, data, CONTACT_FIELDS, OPTIONAL_CONTACT_FIELDS, ALLOWED_DATATYPES)
        plan = _BLOCKS[0]   # (layout, cols, elem names, field names), kept for a repeated layout
        if plan is None or plan[0] is not layout:
            have = arr.dtype.fields
            elem_names = tuple([c for c in ELEM_FIELDS if c in have])
            cols = [raw_columns(arr, POINT_FIELDS + FORCE_FIELDS).reshape(n, 2, 3).transpose(1, 0, 2),
                    raw_columns(arr, NORMAL_FIELDS) if all([c in have for c in NORMAL_FIELDS]) else None,
                    arr[DEPTH_FIELD] if DEPTH_FIELD in have else None, raw_columns(arr, BODY_FIELDS),
                    raw_columns(arr, elem_names).T if elem_names else None]
            views = all([b is None or np.may_share_memory(b, arr) for b in cols])
            if views:   # as np.ndarray arguments: one call each for the next message's records
                cols = [None if b is None else (b.shape, b.dtype, b.ctypes.data - arr.ctypes.data, b.strides)
                        for b in cols]
            plan = (layout, cols, elem_names, [f.name for f in layout.fields])
            if views and type(layout.fields) is FrozenFields:
                _BLOCKS[0] = plan
        _, cols, elem_names, field_names = plan
        pf, normals, depth, bb, ee = [b if type(b) is not tuple else np.ndarray(b[0], b[1], arr, b[2], b[3])
                                      for b in cols]
        # checked before widening to float64 (a signalling NaN would warn)
        if not np.isfinite(pf).all():
            require_finite(pf[0], "x/y/z")
            require_finite(pf[1], "fx/fy/fz")
        for label, values in (("nx/ny/nz", normals), ("depth", depth)):
            if values is not None:
                require_finite(values, label)
    except CloudDecodeError as exc:   # a layout problem: counted under its own reason
        raise ContactsDecodeError(exc.reason, str(exc)) from None
    nb = len(names)   # bb: (N, 2) unsigned
    (b1, b2), one_pair = bb[0].tolist(), bool((bb == bb[0]).all())   # one pair: the usual simulator step
    if (max(b1, b2) if one_pair else bb.max()) >= nb:
        r = int((bb >= nb).any(axis=1).argmax())
        raise ContactsDecodeError("body_index_out_of_range", f"row {r}: body indices ({int(bb[r, 0])}, "
                                  f"{int(bb[r, 1])}) but contact_body_names has {nb} entries")
    if ee is not None and ee.min() < -1:   # ee: (k, N) int32
        k = int((ee < -1).any(axis=1).argmax())
        r = int((ee[k] < -1).argmax())
        raise ContactsDecodeError("elem_index_invalid", f"row {r}: {elem_names[k]} = {int(ee[k, r])} (< -1)")
    pf = pf.astype(np.float64, order="C")   # (2, N, 3) points, forces
    ee = None if ee is None else ee.astype(np.int64, order="C")   # (k, N)
    normals = None if normals is None else normals.astype(np.float64)
    depth = None if depth is None else depth.astype(np.float64)
    # Group rows by ordered pair, pairs in order of first appearance, rows in message order.
    if not one_pair:
        key = bb[:, 0].astype(np.int64) * nb + bb[:, 1]
        uniq, first, inv, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        order = np.argsort(first)   # the pairs by first appearance
        perm = np.argsort(np.argsort(order)[inv], kind="stable")
        bounds, pair_keys = [0] + np.cumsum(counts[order]).tolist(), uniq[order].tolist()
        pf, ee = np.take(pf, perm, axis=1), None if ee is None else np.take(ee, perm, axis=1)
        normals, depth = (None if v is None else v[perm] for v in (normals, depth))
    P, F = torch.from_numpy(pf[0]), torch.from_numpy(pf[1])   # two views: cheaper than unbind
    if dtype is not torch.float64 or (device != "cpu" and device != _CPU):   # .to costs even as a no-op
        P, F = P.to(dtype=dtype, device=device), F.to(dtype=dtype, device=device)
        if dtype != torch.float64 and not (torch.isfinite(P).all() and torch.isfinite(F).all()):
            # finite float64 values past a narrower dtype's range would become +-inf
            raise ContactsDecodeError("non_finite", f"x/y/z or fx/fy/fz exceed the range of {dtype}")
    E = {} if ee is None else dict(zip(elem_names, torch.from_numpy(ee).to(device=device).unbind(0)))
    E1, E2 = E.get("elem1"), E.get("elem2")
    if one_pair:    # the whole arrays: no grouping, no per-pair slices
        pair = (names[b1], names[b2])
        return DecodedContacts({pair: trusted_contact_state(P, F, E1, E2)}, {pair: identity_rows(n)}, n,
                               None if normals is None else {pair: normals},
                               None if depth is None else {pair: depth}, frame_id, stamp_ns,
                               list(field_names))
    spans = {(names[k // nb], names[k % nb]): slice(bounds[i], bounds[i + 1])
             for i, k in enumerate(pair_keys)}
    contacts = {pair: trusted_contact_state(P[s], F[s], None if E1 is None else E1[s],
                                            None if E2 is None else E2[s]) for pair, s in spans.items()}
    rows = {pair: perm[s] for pair, s in spans.items()}   # message rows of each pair
    nrm, dep = (None if v is None else {pair: v[s] for pair, s in spans.items()} for v in (normals, depth))
    return DecodedContacts(contacts, rows, n, nrm, dep, frame_id, stamp_ns, list(field_names))


_CPU = torch.device("cpu")
