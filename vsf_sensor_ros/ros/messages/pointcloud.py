"""One reader and one writer for ``sensor_msgs/PointCloud2``.

Every cloud the package reads or writes goes through here: numpy structured dtypes over the
buffer (any field order, padding and endianness; no per-point loop, no ``sensor_msgs_py``), from
a message or straight from CDR bytes.  A cloud that cannot be read is rejected whole.
"""
from __future__ import annotations

import array
from types import MappingProxyType
from typing import (Any, Collection, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple)

import numpy as np
from numpy.lib.stride_tricks import as_strided
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

DATATYPE_CODES: Dict[int, str] = {
    PointField.INT8: "i1", PointField.UINT8: "u1", PointField.INT16: "i2", PointField.UINT16: "u2",
    PointField.INT32: "i4", PointField.UINT32: "u4", PointField.FLOAT32: "f4", PointField.FLOAT64: "f8",
}
"""``PointField`` datatype -> numpy type code (without byte order)."""

FLOAT_TYPES: Tuple[int, ...] = (PointField.FLOAT32, PointField.FLOAT64)
"""Datatypes accepted for a physical (float) field."""

_CODE_TO_DATATYPE = {np.dtype(code).newbyteorder("<"): dt for dt, code in DATATYPE_CODES.items()}

CLOUD_REASONS: Tuple[str, ...] = (
    "missing_field", "duplicate_field", "bad_field_type", "bad_field_count", "bad_field_offset",
    "bad_size", "non_finite",
)
"""Every :attr:`CloudDecodeError.reason` (snake_case keys for diagnostics counters)."""


class CloudDecodeError(ValueError):
    """A cloud that cannot be read; the whole message is rejected.

    Attributes:
        reason: one of :data:`CLOUD_REASONS`.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class FieldSpec(NamedTuple):
    """One ``PointField`` as plain values (what a raw-buffer parser yields).

    Any object with these four attributes (a ``sensor_msgs/PointField``
    included) is accepted wherever a field is expected.
    """

    name: str
    offset: int
    datatype: int
    count: int = 1


class CloudLayout(NamedTuple):
    """Where the points sit in a cloud's data buffer.

    Attributes:
        fields: ``PointField``-like objects (``name``, ``offset``, ``datatype``, ``count``).
        height, width: cloud size (points = ``height * width``).
        point_step: bytes from one point to the next within a row.
        row_step: bytes from one row to the next.
        is_bigendian: byte order of every field.
    """

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


def as_byte_array(data: Any) -> np.ndarray:
    """A message's byte buffer as a ``uint8`` array (zero-copy where the buffer allows)."""
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except TypeError:          # a list of ints (some distributions' uint8[] fields)
        return np.asarray(data, dtype=np.uint8)


def check_data_size(layout: CloudLayout, nbytes: int, exact: bool = True) -> None:
    """Check that ``nbytes`` of data hold the cloud's points.

    ``exact`` (the message contract): ``width * point_step <= row_step`` and
    ``nbytes == height * row_step``; an empty cloud may also carry no data at
    all.  Not ``exact`` (tolerant reading): the data must reach the end of
    the last point, ``(height - 1) * row_step + width * point_step`` bytes,
    so a missing pad after the last row or trailing bytes are accepted; an
    empty cloud is not checked.

    Raises:
        CloudDecodeError: ``bad_size``, naming the numbers.
    """
    h, w, step, row_step = int(layout.height), int(layout.width), int(layout.point_step), int(layout.row_step)
    if h * w == 0:
        if exact and nbytes not in (0, h * row_step):
            raise CloudDecodeError("bad_size", f"empty cloud ({h}x{w}) carries {nbytes} bytes of data")
        return
    if w * step > row_step:
        raise CloudDecodeError("bad_size", f"width {w} x point_step {step} exceeds row_step {row_step}")
    if exact and nbytes != h * row_step:
        raise CloudDecodeError("bad_size",
                               f"data has {nbytes} bytes, expected height {h} x row_step {row_step}")
    if not exact and nbytes < (h - 1) * row_step + w * step:
        raise CloudDecodeError(
            "bad_size", f"data of {nbytes} bytes does not hold {h} rows of {w} points "
                        f"(row_step {row_step}, point_step {step})")


_DTYPE_CACHE: Dict[Tuple, np.dtype] = {}


_MAX_ITEMSIZE = 2 ** 31 - 1
"""Largest ``point_step`` a numpy record can span (a C int)."""


def _record_dtype(names: List[str], formats: List[str], offsets: List[int], itemsize: int) -> np.dtype:
    # Built once per layout: a simulator sends the same layout every step.
    key = (tuple(names), tuple(formats), tuple(offsets), itemsize)
    rec = _DTYPE_CACHE.get(key)
    if rec is None:
        spec = {"names": names, "formats": formats, "offsets": offsets}
        if itemsize:
            spec["itemsize"] = itemsize
        rec = np.dtype(spec)
        if len(_DTYPE_CACHE) < 64:
            _DTYPE_CACHE[key] = rec
    return rec


class FrozenFields(tuple):
    """A cloud's fields as a tuple of immutable field records (:class:`FieldSpec` or frozen
    dataclass records), never changed after it is made.

    :func:`read_points` reuses its last validated plan for the very same object (the CDR decoder,
    :mod:`vsf_sensor_ros.ros.messages.wire`, hands out one such tuple for as long as a sender repeats its
    layout); any other fields sequence is validated on every call.
    """

    __slots__ = ()


_LAST_PLAN: List[Any] = [None]
"""The last validated field plan of :func:`read_points` (see :class:`FrozenFields`)."""


def _field_plan(layout: CloudLayout, names: Sequence[str], optional: Sequence[str],
                datatypes: Optional[Mapping[str, Collection[int]]], step: int,
                endian: str) -> Tuple[List[str], List[str], List[int]]:
    """``(used names, numpy formats, offsets)`` of the fields read; raises the layout's
    :class:`CloudDecodeError` (see :func:`read_points`)."""
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
    return used, formats, offsets


def read_points(layout: CloudLayout, data: Any, names: Sequence[str], optional: Sequence[str] = (),
                datatypes: Optional[Mapping[str, Collection[int]]] = None,
                exact_size: bool = True) -> np.ndarray:
    """The named fields of every point, as a structured array.

    Args:
        layout: the cloud's :class:`CloudLayout`.
        data: its data buffer (``bytes``, ``memoryview``, ``array.array``, uint8 array).
        names: fields that must be present.
        optional: fields read when present.
        datatypes: field name -> accepted ``PointField`` datatypes (fields
            not listed accept every datatype).
        exact_size: data-length rule of :func:`check_data_size`.

    Returns:
        ``(height * width,)`` structured array, one named field per present
        field of ``names`` + ``optional`` (message byte order; convert with
        ``astype``), points in row-major order.  A strided view of ``data``
        when the rows are contiguous, else a compact copy.

    Raises:
        CloudDecodeError: ``duplicate_field`` (a read field named twice),
            ``missing_field``, ``bad_size`` (``point_step <= 0`` with points,
            the data length, see :func:`check_data_size`, or a
            ``point_step`` of 2**31 bytes or more with points),
            ``bad_field_type`` (datatype unknown or not in ``datatypes``),
            ``bad_field_count`` (``count != 1``), ``bad_field_offset`` (the
            field runs past ``point_step``).  Checks run in that order.
    """
    step = int(layout.point_step)
    endian = ">" if layout.is_bigendian else "<"
    n = layout.num_points
    # a plan is reused only for immutable inputs: the same FrozenFields object, names compared by
    # value, no datatypes table or a read-only one (MappingProxyType) of immutable values
    cacheable = type(layout.fields) is FrozenFields and (datatypes is None
                                                         or type(datatypes) is MappingProxyType)
    key = (step, endian, tuple(names), tuple(optional)) if cacheable else None
    plan = _LAST_PLAN[0]
    if cacheable and plan is not None and plan[0] is layout.fields and plan[1] == key \
            and plan[2] is datatypes:
        used, formats, offsets, rec = plan[3]    # the same field table as the last read: checked then
    else:
        used, formats, offsets = _field_plan(layout, names, optional, datatypes, step, endian)
        rec = None
        if cacheable and 0 < step <= _MAX_ITEMSIZE:   # only a plan valid for any number of points
            rec = _record_dtype(used, formats, offsets, step)
            _LAST_PLAN[0] = (layout.fields, key, datatypes, (used, formats, offsets, rec))
    buf = as_byte_array(data)
    check_data_size(layout, int(buf.size), exact_size)
    if n == 0:     # no point: a packed record (point_step may exceed what a numpy dtype can span)
        return np.zeros(0, dtype=_record_dtype(used, formats, offsets, 0))
    if step > _MAX_ITEMSIZE:
        raise CloudDecodeError("bad_size", f"point_step {step} exceeds {_MAX_ITEMSIZE} bytes")
    if rec is None:
        rec = _record_dtype(used, formats, offsets, step)
    h, w, row_step = int(layout.height), int(layout.width), int(layout.row_step)
    # Strided view over the buffer: row padding (row_step > width*point_step) is skipped, not copied.
    grid = np.ndarray(shape=(h, w), dtype=rec, buffer=buf, strides=(row_step, step))
    return grid.reshape(n)


def read_cloud(msg: PointCloud2, names: Sequence[str], optional: Sequence[str] = (),
               datatypes: Optional[Mapping[str, Collection[int]]] = None,
               exact_size: bool = True) -> np.ndarray:
    """:func:`read_points` of a deserialised ``PointCloud2`` (same arguments and errors)."""
    return read_points(CloudLayout.of(msg), msg.data, names, optional, datatypes, exact_size)


def float_columns(points: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Fields ``names`` of a :func:`read_points` result as an ``(N, len(names))`` float64 array."""
    if not len(names) or not points.shape[0]:
        return np.zeros((points.shape[0], len(names)))
    fields = points.dtype.fields
    first, off0 = fields[names[0]][:2]
    # adjacent fields of one type (x y z, fx fy fz as writers lay them out): one strided (N, k)
    # view of the records and one conversion instead of k columns and a stack
    adjacent = points.ndim == 1 and all(fields[c][0] == first and fields[c][1] == off0 + i * first.itemsize
                                        for i, c in enumerate(names))
    if adjacent and first.kind == "f" and first.itemsize == 8:
        return _adjacent_block(points, names[0], len(names)).astype(np.float64)   # a copy: nothing warns
    with np.errstate(invalid="ignore"):    # a signalling NaN warns when widened; callers check finiteness
        if adjacent:
            return _adjacent_block(points, names[0], len(names)).astype(np.float64)
        return np.stack([points[c].astype(np.float64) for c in names], axis=1)


def _adjacent_block(points: np.ndarray, name: str, k: int) -> np.ndarray:
    """``(N, k)`` read-only view of field ``name`` and the ``k - 1`` fields of its type after it."""
    dtype, offset = points.dtype.fields[name][:2]
    shape, strides = (points.shape[0], k), (points.strides[0], dtype.itemsize)
    if points.flags.c_contiguous:    # the usual case: a view straight on the records' buffer
        return np.ndarray(shape=shape, dtype=dtype, buffer=points, offset=offset, strides=strides)
    return as_strided(points[name], shape=shape, strides=strides, writeable=False)


def require_finite(values: np.ndarray, label: str) -> None:
    """Reject a cloud with a NaN/inf among ``values`` (``(N,)`` or ``(N, k)``, one row per point).

    Raises:
        CloudDecodeError: ``non_finite``, naming ``label``, how many points
            and the first one.
    """
    ok = np.isfinite(values)
    if ok.all():
        return
    bad = np.flatnonzero(~ok.reshape(values.shape[0], -1).all(axis=1))
    raise CloudDecodeError("non_finite", f"non-finite {label} at {bad.size} row(s), first row {int(bad[0])}")


# -- writing ---------------------------------------------------------------------------------
def _bytes_field(buf: bytes) -> array.array:
    # array('B') is accepted by the uint8[] setter on every distribution without a per-byte check.
    out = array.array("B")
    out.frombytes(buf)
    return out


_LAYOUT_CACHE: Dict[Tuple[Tuple[str, str], ...], Tuple[List[PointField], np.dtype]] = {}


def _packed_layout(columns: Sequence[Tuple[str, np.ndarray]]) -> Tuple[List[PointField], np.dtype]:
    """Packed ``PointField`` list and little-endian record dtype of the columns (cached per layout)."""
    key = tuple((name, np.dtype(col.dtype).newbyteorder("<").str) for name, col in columns)
    hit = _LAYOUT_CACHE.get(key)
    if hit is not None:
        return hit
    fields, descr, offset = [], [], 0
    for name, code in key:
        dt = np.dtype(code)
        if dt not in _CODE_TO_DATATYPE:
            raise ValueError(f"cloud field {name!r} has unsupported dtype {dt}")
        fields.append(PointField(name=name, offset=offset, datatype=_CODE_TO_DATATYPE[dt], count=1))
        descr.append((name, dt))
        offset += dt.itemsize
    out = (fields, np.dtype(descr))
    if len(_LAYOUT_CACHE) < 64:
        _LAYOUT_CACHE[key] = out
    return out


def write_cloud(header: Header, columns: Sequence[Tuple[str, Any]]) -> PointCloud2:
    """Build an unorganised (``height`` 1), little-endian, packed ``PointCloud2``.

    Args:
        header: header to use (stamp, frame id).
        columns: ``(field name, 1-D array)`` pairs, all of one length ``N``;
            each array's numpy dtype (any of :data:`DATATYPE_CODES`' types)
            becomes that field's datatype, fields packed in order.

    Raises:
        ValueError: columns of different lengths or an unsupported dtype,
            naming the field.
    """
    columns = [(name, np.asarray(col)) for name, col in columns]
    n = len(columns[0][1]) if columns else 0
    fields, rec_dtype = _packed_layout(columns)
    rec = np.empty(n, dtype=rec_dtype)
    for name, col in columns:
        if len(col) != n:
            raise ValueError(f"cloud field {name!r} has {len(col)} entries, expected {n}")
        rec[name] = col
    step = rec_dtype.itemsize
    msg = PointCloud2(header=header, height=1, width=n, fields=list(fields), is_bigendian=False,
                      point_step=step, row_step=step * n, is_dense=True)
    msg.data = _bytes_field(rec.tobytes())
    return msg
