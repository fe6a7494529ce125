"""Contacts <-> ``sensor_msgs/PointCloud2`` (DESIGN §3, "Contacts").

One cloud per simulator step; one point per contact.  Fields are found by
name through their ``PointField`` offsets, so any order, padding, endianness
and ``height × width`` layout a bridge produces is read the same:

========================  ===================  ==========================================
field                     datatype             meaning
========================  ===================  ==========================================
``x y z``                 FLOAT32 / FLOAT64    contact point, world frame (m)
``fx fy fz``              FLOAT32 / FLOAT64    force applied to body1 by body2, world (N)
``body1 body2``           UINT16 / UINT32      index into ``contact_body_names``
``elem1 elem2`` (opt.)    INT32                element on body1 / body2, ``-1`` = none
``nx ny nz`` (opt.)       FLOAT32 / FLOAT64    contact normal (unit, world frame)
``depth`` (opt.)          FLOAT32 / FLOAT64    penetration depth (m)
========================  ===================  ==========================================

A malformed cloud is rejected whole with a :class:`ContactsDecodeError` whose
``reason`` is a short key for diagnostics counters (:data:`DECODE_REASONS`);
nothing of it is used.  Points are the *rows* of the message in row-major
order (``row = v * width + u``); a Jacobian column ``3·c + k`` refers to row
``c`` (:attr:`DecodedContacts.rows`).

No ``sensor_msgs_py`` is needed: the codec is numpy structured arrays over the
message buffer, with no per-point Python loop.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from builtin_interfaces.msg import Time
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from ..sensor.state import ContactState

Pair = Tuple[str, str]

POINT_FIELDS = ("x", "y", "z")
FORCE_FIELDS = ("fx", "fy", "fz")
BODY_FIELDS = ("body1", "body2")
ELEM_FIELDS = ("elem1", "elem2")
NORMAL_FIELDS = ("nx", "ny", "nz")
DEPTH_FIELD = "depth"

CONTACT_FIELDS: Tuple[str, ...] = POINT_FIELDS + FORCE_FIELDS + BODY_FIELDS
"""Fields every contacts cloud must carry."""
OPTIONAL_CONTACT_FIELDS: Tuple[str, ...] = ELEM_FIELDS + NORMAL_FIELDS + (DEPTH_FIELD,)
"""Fields read when present."""

_FLOAT_TYPES = {PointField.FLOAT32: "f4", PointField.FLOAT64: "f8"}
_BODY_TYPES = {PointField.UINT16: "u2", PointField.UINT32: "u4"}
_ELEM_TYPES = {PointField.INT32: "i4"}
ALLOWED_DATATYPES: Dict[str, Dict[int, str]] = {
    **{n: _FLOAT_TYPES for n in POINT_FIELDS + FORCE_FIELDS + NORMAL_FIELDS + (DEPTH_FIELD,)},
    **{n: _BODY_TYPES for n in BODY_FIELDS},
    **{n: _ELEM_TYPES for n in ELEM_FIELDS},
}
"""Field name -> accepted ``PointField`` datatypes (-> numpy type code)."""

_SIZES = {PointField.INT8: 1, PointField.UINT8: 1, PointField.INT16: 2, PointField.UINT16: 2,
          PointField.INT32: 4, PointField.UINT32: 4, PointField.FLOAT32: 4, PointField.FLOAT64: 8}

DECODE_REASONS: Tuple[str, ...] = (
    "missing_field", "duplicate_field", "bad_field_type", "bad_field_count", "bad_field_offset",
    "bad_size", "non_finite", "body_index_out_of_range", "elem_index_invalid", "bad_frame_id",
)
"""Every ``ContactsDecodeError.reason`` (keys for diagnostics counters)."""


class ContactsDecodeError(ValueError):
    """A contacts cloud that cannot be used; the whole message is rejected.

    Attributes:
        reason: one of :data:`DECODE_REASONS` (snake_case, for counters).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class DecodedContacts:
    """Result of :func:`pointcloud2_to_contacts`.

    Attributes:
        contacts: ``(body1, body2) -> ContactState``, pairs in order of first
            appearance in the message; within a pair, contacts keep message
            order.  ``elems1``/``elems2`` are int64 tensors when the cloud has
            ``elem1``/``elem2`` (entries ``-1`` kept: a sensor reads ``-1`` as
            "no element"), else ``None``.
        rows: ``(body1, body2) -> int64 array`` of the message row of each
            contact of the pair, in the same order as its ``ContactState``.
        num_points: ``height * width`` of the cloud.
        normals: ``pair -> (N, 3)`` float64 normals when the cloud has
            ``nx ny nz``, else ``None``.
        depths: ``pair -> (N,)`` float64 depths when the cloud has ``depth``.
        frame_id: ``header.frame_id`` of the cloud.
        stamp_ns: ``header.stamp`` in integer nanoseconds.
        fields: names of all fields of the cloud, in message order.
    """

    contacts: Dict[Pair, ContactState]
    rows: Dict[Pair, np.ndarray]
    num_points: int
    normals: Optional[Dict[Pair, np.ndarray]] = None
    depths: Optional[Dict[Pair, np.ndarray]] = None
    frame_id: str = ""
    stamp_ns: int = 0
    fields: List[str] = field(default_factory=list)


def _check_body_names(body_names: Sequence[str]) -> List[str]:
    names = list(body_names)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"contact_body_names has duplicates: {dup}")
    return names


def _trusted_contact_state(points: torch.Tensor, forces: torch.Tensor, elems1: Optional[torch.Tensor],
                           elems2: Optional[torch.Tensor]) -> ContactState:
    """``ContactState`` without re-running its validation.

    The decoder has already checked every shape, dtype and finiteness
    condition of ``validate_contact_state`` for the whole message at once;
    re-checking per pair costs more than the decode itself at 1 kHz.
    """
    c = ContactState.__new__(ContactState)
    values = {"points": points, "forces": forces, "elems1": elems1, "elems2": elems2}
    for f in dataclasses.fields(ContactState):   # any field added later keeps its default
        if f.name in values:
            setattr(c, f.name, values[f.name])
        elif f.default is not dataclasses.MISSING:
            setattr(c, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            setattr(c, f.name, f.default_factory())
    return c


_DTYPE_CACHE: Dict[Tuple, np.dtype] = {}


def _buffer(data: object) -> np.ndarray:
    """The message's byte buffer as a uint8 array (zero-copy where possible)."""
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except TypeError:
        return np.asarray(data, dtype=np.uint8)


def pointcloud2_to_contacts(msg: PointCloud2, body_names: Sequence[str],
                            dtype: torch.dtype = torch.float64,
                            device: Union[str, torch.device] = "cpu",
                            expected_frame_id: Optional[str] = None) -> DecodedContacts:
    """Decode a contacts cloud into ``ContactState`` per ordered body pair.

    Args:
        msg: the cloud (layout in the module docstring).
        body_names: the ``contact_body_names`` table that ``body1``/``body2``
            index.
        dtype, device: of the returned points/forces tensors.
        expected_frame_id: when given, a cloud with another non-empty
            ``header.frame_id`` is rejected (``bad_frame_id``).

    Returns:
        :class:`DecodedContacts`; an empty cloud gives no contacts.

    Raises:
        ContactsDecodeError: ``missing_field``, ``duplicate_field``,
            ``bad_field_type`` (datatype not allowed for that field),
            ``bad_field_count`` (count != 1), ``bad_field_offset`` (field runs
            past ``point_step``), ``bad_size`` (``len(data) != height *
            row_step`` or ``width * point_step > row_step``), ``non_finite``
            (NaN/inf in any float field), ``body_index_out_of_range``,
            ``elem_index_invalid`` (element below -1), ``bad_frame_id``.
        ValueError: ``body_names`` has duplicates (a configuration error).
    """
    names = _check_body_names(body_names)
    frame_id = msg.header.frame_id
    stamp_ns = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
    if expected_frame_id is not None and frame_id and frame_id != expected_frame_id:
        raise ContactsDecodeError(
            "bad_frame_id", f"contacts are in frame {frame_id!r}, expected {expected_frame_id!r}")
    height, width = int(msg.height), int(msg.width)
    point_step, row_step = int(msg.point_step), int(msg.row_step)
    data = _buffer(msg.data)
    n = height * width
    if n == 0:
        if data.size not in (0, height * row_step):
            raise ContactsDecodeError(
                "bad_size", f"empty cloud ({height}x{width}) carries {data.size} bytes of data")
        return DecodedContacts({}, {}, 0, frame_id=frame_id, stamp_ns=stamp_ns,
                               fields=[f.name for f in msg.fields])

    by_name: Dict[str, PointField] = {}
    for f in msg.fields:
        if f.name in by_name:
            raise ContactsDecodeError("duplicate_field", f"field {f.name!r} appears twice")
        by_name[f.name] = f
    missing = [name for name in CONTACT_FIELDS if name not in by_name]
    if missing:
        raise ContactsDecodeError(
            "missing_field", f"contacts cloud lacks field(s) {missing}; has {list(by_name)}")
    if point_step <= 0:
        raise ContactsDecodeError("bad_size", f"point_step is {point_step}")
    endian = ">" if msg.is_bigendian else "<"
    used = [name for name in CONTACT_FIELDS + OPTIONAL_CONTACT_FIELDS if name in by_name]
    formats, offsets = [], []
    for name in used:
        f = by_name[name]
        code = ALLOWED_DATATYPES[name].get(int(f.datatype))
        if code is None:
            allowed = [k for k in ALLOWED_DATATYPES[name]]
            raise ContactsDecodeError(
                "bad_field_type", f"field {name!r} has datatype {f.datatype}; allowed {allowed}")
        if int(f.count) != 1:
            raise ContactsDecodeError("bad_field_count", f"field {name!r} has count {f.count}, expected 1")
        if int(f.offset) < 0 or int(f.offset) + _SIZES[int(f.datatype)] > point_step:
            raise ContactsDecodeError(
                "bad_field_offset",
                f"field {name!r} at offset {f.offset} does not fit in point_step {point_step}")
        formats.append(endian + code)
        offsets.append(int(f.offset))
    if width * point_step > row_step:
        raise ContactsDecodeError(
            "bad_size", f"width {width} x point_step {point_step} exceeds row_step {row_step}")
    if data.size != height * row_step:
        raise ContactsDecodeError(
            "bad_size", f"data has {data.size} bytes, expected height {height} x row_step {row_step}")

    key = (tuple(used), tuple(formats), tuple(offsets), point_step)
    rec = _DTYPE_CACHE.get(key)
    if rec is None:
        rec = np.dtype({"names": used, "formats": formats, "offsets": offsets, "itemsize": point_step})
        if len(_DTYPE_CACHE) < 32:
            _DTYPE_CACHE[key] = rec
    # Strided view over the buffer: row padding (row_step > width*point_step) is skipped, not copied.
    arr = np.ndarray(shape=(height, width), dtype=rec, buffer=data, strides=(row_step, point_step)).reshape(n)

    def floats(cols: Sequence[str]) -> np.ndarray:
        return np.stack([arr[c].astype(np.float64) for c in cols], axis=1)

    points, forces = floats(POINT_FIELDS), floats(FORCE_FIELDS)
    normals = floats(NORMAL_FIELDS) if all(c in by_name for c in NORMAL_FIELDS) else None
    depth = arr[DEPTH_FIELD].astype(np.float64) if DEPTH_FIELD in by_name else None
    for label, values in (("x/y/z", points), ("fx/fy/fz", forces), ("nx/ny/nz", normals), ("depth", depth)):
        if values is not None and not np.isfinite(values).all():
            bad = np.flatnonzero(~np.isfinite(values.reshape(n, -1)).all(axis=1))
            raise ContactsDecodeError(
                "non_finite", f"non-finite {label} at {bad.size} row(s), first row {int(bad[0])}")
    b1 = arr["body1"].astype(np.int64)
    b2 = arr["body2"].astype(np.int64)
    nb = len(names)
    out_of_range = (b1 >= nb) | (b2 >= nb)
    if out_of_range.any():
        r = int(np.flatnonzero(out_of_range)[0])
        raise ContactsDecodeError(
            "body_index_out_of_range",
            f"row {r}: body indices ({int(b1[r])}, {int(b2[r])}) but contact_body_names has {nb} entries")
    elems = {}
    for c in ELEM_FIELDS:
        if c in by_name:
            e = arr[c].astype(np.int64)
            if (e < -1).any():
                r = int(np.flatnonzero(e < -1)[0])
                raise ContactsDecodeError("elem_index_invalid", f"row {r}: {c} = {int(e[r])} (< -1)")
            elems[c] = e

    # Group rows by ordered pair, pairs in order of first appearance, rows in message order.
    key = b1 * nb + b2
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    perm = np.argsort(rank[inverse], kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rank[inverse], minlength=order.size))])
    P = torch.from_numpy(points[perm]).to(dtype=dtype, device=device)
    F = torch.from_numpy(forces[perm]).to(dtype=dtype, device=device)
    E = {c: torch.from_numpy(e[perm]).to(device=device) for c, e in elems.items()}
    contacts: Dict[Pair, ContactState] = {}
    rows: Dict[Pair, np.ndarray] = {}
    nrm: Optional[Dict[Pair, np.ndarray]] = {} if normals is not None else None
    dep: Optional[Dict[Pair, np.ndarray]] = {} if depth is not None else None
    for i, k in enumerate(uniq[order]):
        s, e = int(bounds[i]), int(bounds[i + 1])
        pair = (names[int(k) // nb], names[int(k) % nb])
        contacts[pair] = _trusted_contact_state(P[s:e], F[s:e], E["elem1"][s:e] if "elem1" in E else None,
                                                E["elem2"][s:e] if "elem2" in E else None)
        rows[pair] = perm[s:e].astype(np.int64)
        if nrm is not None:
            nrm[pair] = normals[perm[s:e]]
        if dep is not None:
            dep[pair] = depth[perm[s:e]]
    return DecodedContacts(contacts, rows, n, nrm, dep, frame_id, stamp_ns, [f.name for f in msg.fields])


def _to_time(stamp: object) -> Time:
    if stamp is None:
        return Time()
    if isinstance(stamp, Time):
        return stamp
    if hasattr(stamp, "to_msg"):
        return stamp.to_msg()
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        if not math.isfinite(stamp) or stamp < 0:
            raise ValueError(f"stamp must be finite and non-negative seconds, got {stamp}")
        ns = int(round(float(stamp) * 1e9))
        return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
    raise ValueError(
        f"stamp must be builtin_interfaces/Time, rclpy Time or seconds, got {type(stamp).__name__}")


def _per_pair(values: object, n: int, tail: Tuple[int, ...], label: str) -> np.ndarray:
    """One pair's extra array (tensor or array-like) as float64, checked against its contact count."""
    a = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
    a = a.astype(np.float64, copy=False)
    if a.shape != (n,) + tail:
        raise ValueError(f"{label} must have shape {(n,) + tail}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{label} has non-finite values")
    return a


def contacts_to_pointcloud2(contacts: Mapping[Pair, ContactState], body_names: Sequence[str],
                            stamp: object = None, frame_id: str = "world",
                            normals: Optional[Mapping[Pair, object]] = None,
                            depths: Optional[Mapping[Pair, object]] = None,
                            float_type: type = np.float64) -> PointCloud2:
    """Build the contacts cloud of one simulator step.

    Rows are the pairs' contacts concatenated in mapping order (so row ``c``
    is the ``c``-th contact of that concatenation).  Layout: little-endian,
    ``height = 1``, packed fields ``x y z fx fy fz`` (``float_type``),
    ``body1 body2`` (UINT32), then ``elem1 elem2`` (INT32; present when any
    pair has element indices, ``-1`` for pairs without), ``nx ny nz`` and
    ``depth`` when given.

    Args:
        contacts: ``(body1, body2) -> ContactState`` (points world m, forces
            on body1 N).
        body_names: the shared ``contact_body_names`` table.
        stamp: ``builtin_interfaces/Time``, an rclpy ``Time``, seconds
            (float), or ``None`` (zero).
        frame_id: world frame name.
        normals: optional ``pair -> (N, 3)`` contact normals; must cover
            every pair when given.
        depths: optional ``pair -> (N,)`` depths; must cover every pair.
        float_type: ``np.float64`` (default, exact round trip) or
            ``np.float32`` (half the bytes).

    Raises:
        ValueError: a body not in ``body_names`` (named), duplicate
            ``body_names``, ``float_type`` not float32/float64, normals or
            depths missing for a pair or of the wrong shape.
    """
    names = _check_body_names(body_names)
    index = {n: i for i, n in enumerate(names)}
    ft = np.dtype(float_type)
    if ft not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"float_type must be numpy float32 or float64, got {float_type}")
    pairs = list(contacts)
    for a, b in pairs:
        for body in (a, b):
            if body not in index:
                raise ValueError(f"body {body!r} is not in contact_body_names {names}")
    for label, extra in (("normals", normals), ("depths", depths)):
        if extra is not None:
            lacking = [p for p in pairs if p not in extra]
            if lacking:
                raise ValueError(f"{label} missing for pair(s) {lacking}")
    counts = [len(contacts[p]) for p in pairs]
    n = int(sum(counts))
    has_e1 = any(contacts[p].elems1 is not None for p in pairs)
    has_e2 = any(contacts[p].elems2 is not None for p in pairs)

    cols: List[Tuple[str, np.dtype]] = [(c, ft) for c in POINT_FIELDS + FORCE_FIELDS]
    cols += [(c, np.dtype("<u4")) for c in BODY_FIELDS]
    if has_e1:
        cols.append(("elem1", np.dtype("<i4")))
    if has_e2:
        cols.append(("elem2", np.dtype("<i4")))
    if normals is not None:
        cols += [(c, ft) for c in NORMAL_FIELDS]
    if depths is not None:
        cols.append((DEPTH_FIELD, ft))
    rec = np.dtype([(c, t.newbyteorder("<")) for c, t in cols])
    arr = np.zeros(n, dtype=rec)
    if n:
        pts = np.concatenate([contacts[p].points.detach().cpu().numpy() for p in pairs])
        frc = np.concatenate([contacts[p].forces.detach().cpu().numpy() for p in pairs])
        for k, c in enumerate(POINT_FIELDS):
            arr[c] = pts[:, k]
        for k, c in enumerate(FORCE_FIELDS):
            arr[c] = frc[:, k]
        arr["body1"] = np.repeat([index[a] for a, _ in pairs], counts)
        arr["body2"] = np.repeat([index[b] for _, b in pairs], counts)
        for c, attr, present in (("elem1", "elems1", has_e1), ("elem2", "elems2", has_e2)):
            if present:
                parts = [getattr(contacts[p], attr) for p in pairs]
                arr[c] = np.concatenate([np.full(k, -1) if e is None else e.detach().cpu().numpy()
                                         for e, k in zip(parts, counts)])
        if normals is not None:
            nrm = np.concatenate([_per_pair(normals[p], k, (3,), f"normals of {p}")
                                  for p, k in zip(pairs, counts)])
            for k, c in enumerate(NORMAL_FIELDS):
                arr[c] = nrm[:, k]
        if depths is not None:
            arr[DEPTH_FIELD] = np.concatenate([_per_pair(depths[p], k, (), f"depths of {p}")
                                               for p, k in zip(pairs, counts)])

    code = {np.dtype("<f4"): PointField.FLOAT32, np.dtype("<f8"): PointField.FLOAT64,
            np.dtype("<u4"): PointField.UINT32, np.dtype("<i4"): PointField.INT32}
    msg = PointCloud2()
    msg.header = Header(stamp=_to_time(stamp), frame_id=frame_id)
    msg.height = 1
    msg.width = n
    msg.fields = [PointField(name=c, offset=rec.fields[c][1], datatype=code[t.newbyteorder("<")], count=1)
                  for c, t in cols]
    msg.is_bigendian = False
    msg.point_step = rec.itemsize
    msg.row_step = rec.itemsize * n
    msg.is_dense = True
    msg.data = arr.tobytes()
    return msg
