"""``sensor_msgs/PointCloud2`` message objects: reader, writer, and the contacts cloud a contact
source publishes (read back by :mod:`.wire`)."""
from __future__ import annotations

import array
import functools
from typing import Any, Collection, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from ...sensor.base_sensor import ContactState, as_contact_state
from .stamps import to_stamp
from .wire import (DATATYPE_CODES, DEPTH_FIELD, FORCE_FIELDS, NORMAL_FIELDS, POINT_FIELDS, CloudLayout, Pair,
                   check_body_names, read_points)

_CODE_TO_DATATYPE = {np.dtype(code).newbyteorder("<"): dt for dt, code in DATATYPE_CODES.items()}


def read_cloud(msg: PointCloud2, names: Sequence[str], optional: Sequence[str] = (),
               datatypes: Optional[Mapping[str, Collection[int]]] = None,
               exact_size: bool = True) -> np.ndarray:
    """:func:`read_points` of a deserialised ``PointCloud2`` (same arguments and errors)."""
    return read_points(CloudLayout.of(msg), msg.data, names, optional, datatypes, exact_size)


@functools.lru_cache(maxsize=64)
def packed_fields(dt: np.dtype) -> Tuple[Tuple[str, int, int], ...]:
    """``(name, offset, PointField datatype)`` of each member of a packed little-endian record
    ``dt``; ValueError: a member no ``PointField`` datatype has, a gap or trailing padding."""
    out, offset = [], 0
    for name in dt.names:
        sub, off = dt.fields[name][:2]
        if sub not in _CODE_TO_DATATYPE:
            raise ValueError(f"cloud field {name!r} has unsupported dtype {sub}")
        if off != offset:
            raise ValueError(f"cloud field {name!r} at offset {off}, expected packed offset {offset}")
        out.append((name, off, _CODE_TO_DATATYPE[sub]))
        offset += sub.itemsize
    if offset != dt.itemsize:
        raise ValueError(f"record dtype has {dt.itemsize - offset} trailing padding bytes")
    return tuple(out)


def write_cloud(header: Header, columns: Sequence[Tuple[str, Any]]) -> PointCloud2:
    """A packed little-endian ``PointCloud2`` (``height`` 1) with ``header`` of ``columns``:
    ``(field name, (N,) array)``, each dtype the field's; ValueError naming a column of another
    length or an unsupported dtype."""
    columns = [(name, np.asarray(col)) for name, col in columns]
    n = len(columns[0][1]) if columns else 0
    rec_dtype = np.dtype([(name, col.dtype.newbyteorder("<")) for name, col in columns])
    fields = [PointField(name=name, offset=off, datatype=dt, count=1)
              for name, off, dt in packed_fields(rec_dtype)]
    rec = np.empty(n, dtype=rec_dtype)
    for name, col in columns:
        if len(col) != n:
            raise ValueError(f"cloud field {name!r} has {len(col)} entries, expected {n}")
        rec[name] = col
    step = rec_dtype.itemsize
    msg = PointCloud2(header=header, height=1, width=n, fields=fields, is_bigendian=False,
                      point_step=step, row_step=step * n, is_dense=True)
    # array('B') is accepted by the uint8[] setter on every distribution without a per-byte check
    msg.data = array.array("B", rec.tobytes())
    return msg


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
                            depths: Optional[Mapping[Pair, object]] = None) -> PointCloud2:
    """The contacts cloud of one simulator step (docs/interface.md), rows in mapping order;
    ``elem1 elem2`` when any pair has elements (-1 for the others).  ``contacts``: ``(body1,
    body2) ->`` ContactState-like (points world m, forces on body1 N); ``stamp``: :func:`.to_stamp`;
    ``normals`` ``(N, 3)`` / ``depths`` ``(N,)`` for every pair when given; float64 fields (exact).
    ValueError: a body not in ``body_names``, a state ContactState refuses, duplicate names, normals
    or depths lacking."""
    names = check_body_names(body_names)
    index = {n: i for i, n in enumerate(names)}
    pairs = list(contacts)
    unknown = [body for pair in pairs for body in pair if body not in index]
    if unknown:
        raise ValueError(f"body {unknown[0]!r} is not in contact_body_names {names}")
    # seed-style contact states (points / forces / elems as lists or arrays) as the models take them
    try:
        contacts = {p: as_contact_state(contacts[p], torch.float64) for p in pairs}   # lists: no rounding
    except ValueError as exc:
        raise ValueError(f"contacts: {exc}") from None
    counts = [len(contacts[p]) for p in pairs]
    # (an empty block ends each list: no pair, no rows)
    pts, frc = (np.concatenate([getattr(contacts[p], a).detach().cpu().numpy() for p in pairs]
                               + [np.zeros((0, 3))]) for a in ("points", "forces"))
    cols: List[Tuple[str, np.ndarray]] = [(c, pts[:, k]) for k, c in enumerate(POINT_FIELDS)]
    cols += [(c, frc[:, k]) for k, c in enumerate(FORCE_FIELDS)]
    cols.append(("body1", np.repeat(np.array([index[a] for a, _ in pairs], dtype="<u4"), counts)))
    cols.append(("body2", np.repeat(np.array([index[b] for _, b in pairs], dtype="<u4"), counts)))
    for c, attr in (("elem1", "elems1"), ("elem2", "elems2")):
        parts = [getattr(contacts[p], attr) for p in pairs]
        if any(e is not None for e in parts):
            cols.append((c, np.concatenate([np.full(k, -1) if e is None else e.detach().cpu().numpy()
                                            for e, k in zip(parts, counts)]).astype("<i4")))
    for label, extra, tail in (("normals", normals, (3,)), ("depths", depths, ())):
        if extra is None:
            continue
        lacking = [p for p in pairs if p not in extra]
        if lacking:
            raise ValueError(f"{label} missing for pair(s) {lacking}")
        v = np.concatenate([_per_pair(extra[p], k, tail, f"{label} of {p}") for p, k in zip(pairs, counts)]
                           + [np.zeros((0,) + tail)])
        cols += [(c, v[:, k]) for k, c in enumerate(NORMAL_FIELDS)] if tail else [(DEPTH_FIELD, v)]
    return write_cloud(Header(stamp=to_stamp(stamp), frame_id=frame_id), cols)
