"""Contacts <-> ``sensor_msgs/PointCloud2`` (the contacts input).

Adds to :mod:`.pointcloud` what is particular to contacts: the field table, the body index table
and grouping rows by body pair; a malformed cloud is rejected whole.  Layout and rules:
docs/interface.md, contacts.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from ...rig.contacts import DecodedContacts, trusted_contact_state
from ...sensor.base_sensor import ContactState, as_contact_state
from .pointcloud import (FLOAT_TYPES, CloudDecodeError, CloudLayout, as_byte_array, check_data_size,
                         float_columns, read_points, require_finite, write_cloud)
from .stamps import stamp_to_ns, to_stamp

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

ALLOWED_DATATYPES: Mapping[str, Tuple[int, ...]] = MappingProxyType({
    **{n: FLOAT_TYPES for n in POINT_FIELDS + FORCE_FIELDS + NORMAL_FIELDS + (DEPTH_FIELD,)},
    **{n: (PointField.UINT16, PointField.UINT32) for n in BODY_FIELDS},
    **{n: (PointField.INT32,) for n in ELEM_FIELDS},
})
"""Field name -> accepted ``PointField`` datatypes (read-only: ``read_points`` may reuse a plan
checked against it)."""

DECODE_REASONS: Tuple[str, ...] = (
    "missing_field", "duplicate_field", "bad_field_type", "bad_field_count", "bad_field_offset",
    "bad_size", "non_finite", "body_index_out_of_range", "elem_index_invalid", "bad_frame_id",
)
"""Every ``ContactsDecodeError.reason`` (keys for diagnostics counters)."""


class ContactsDecodeError(CloudDecodeError):
    """A contacts cloud that cannot be used; the whole message is rejected.

    A :class:`~vsf_sensor_ros.ros.messages.pointcloud.CloudDecodeError` (layout
    problems) or one of the contacts' own reasons.

    Attributes:
        reason: one of :data:`DECODE_REASONS` (snake_case, for counters).
    """


def _check_body_names(body_names: Sequence[str]) -> List[str]:
    names = list(body_names)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"contact_body_names has duplicates: {dup}")
    return names


def pointcloud2_to_contacts(msg: PointCloud2, body_names: Sequence[str],
                            dtype: torch.dtype = torch.float64,
                            device: Union[str, torch.device] = "cpu",
                            expected_frame_id: Optional[str] = None) -> DecodedContacts:
    """Decode a contacts cloud into ``ContactState`` per ordered body pair.

    Args:
        msg: the cloud (layout: docs/interface.md, contacts).
        body_names: the ``contact_body_names`` table that ``body1``/``body2``
            index.
        dtype, device: of the returned points/forces tensors (a value
            beyond the range of a narrower ``dtype`` rejects the cloud,
            ``non_finite``).
        expected_frame_id: when given, a cloud with another non-empty
            ``header.frame_id`` is rejected (``bad_frame_id``).

    Returns:
        :class:`DecodedContacts`; an empty cloud gives no contacts.

    Raises:
        ContactsDecodeError: see :func:`contacts_from_buffer`.
        ValueError: ``body_names`` has duplicates (a configuration error).
    """
    return contacts_from_buffer(CloudLayout.of(msg), msg.data, body_names, dtype, device,
                                frame_id=msg.header.frame_id, stamp_ns=stamp_to_ns(msg.header.stamp),
                                expected_frame_id=expected_frame_id)


def contacts_from_buffer(layout: CloudLayout, data: Any, body_names: Sequence[str],
                         dtype: torch.dtype = torch.float64,
                         device: Union[str, torch.device] = "cpu", frame_id: str = "",
                         stamp_ns: int = 0, expected_frame_id: Optional[str] = None) -> DecodedContacts:
    """Decode contacts from a cloud layout and its data buffer.

    Args:
        layout: the cloud's fields, size and steps
            (:class:`~vsf_sensor_ros.ros.messages.pointcloud.CloudLayout`).
        data: its data bytes (``bytes``, ``memoryview``, ``array.array``).
        body_names, dtype, device, expected_frame_id: as
            :func:`pointcloud2_to_contacts`.
        frame_id: ``header.frame_id`` of the cloud.
        stamp_ns: ``header.stamp`` in integer nanoseconds.

    Returns:
        :class:`DecodedContacts`; an empty cloud gives no contacts (its
        fields are not checked: it carries no point).

    Raises:
        ContactsDecodeError: ``missing_field``, ``duplicate_field``,
            ``bad_field_type`` (datatype not allowed for that field),
            ``bad_field_count`` (count != 1), ``bad_field_offset`` (field runs
            past ``point_step``), ``bad_size`` (``len(data) != height *
            row_step`` or ``width * point_step > row_step``), ``non_finite``
            (NaN/inf in a point, force, depth or complete normal, or a point
            or force beyond the range of ``dtype``), ``body_index_out_of_range``,
            ``elem_index_invalid`` (element below -1), ``bad_frame_id``.
        ValueError: ``body_names`` has duplicates (a configuration error).
    """
    names = _check_body_names(body_names)
    field_names = [f.name for f in layout.fields]
    if expected_frame_id is not None and frame_id and frame_id != expected_frame_id:
        raise ContactsDecodeError(
            "bad_frame_id", f"contacts are in frame {frame_id!r}, expected {expected_frame_id!r}")
    n = layout.num_points
    try:
        if n == 0:
            check_data_size(layout, int(as_byte_array(data).size), exact=True)
            return DecodedContacts({}, {}, 0, frame_id=frame_id, stamp_ns=stamp_ns, fields=field_names)
        arr = read_points(layout, data, CONTACT_FIELDS, OPTIONAL_CONTACT_FIELDS, ALLOWED_DATATYPES,
                          exact_size=True)
        present = set(arr.dtype.names)
        points, forces = float_columns(arr, POINT_FIELDS), float_columns(arr, FORCE_FIELDS)
        normals = float_columns(arr, NORMAL_FIELDS) if present.issuperset(NORMAL_FIELDS) else None
        with np.errstate(invalid="ignore"):     # a signalling NaN warns when widened; checked below
            depth = arr[DEPTH_FIELD].astype(np.float64) if DEPTH_FIELD in present else None
        for label, values in (("x/y/z", points), ("fx/fy/fz", forces), ("nx/ny/nz", normals),
                              ("depth", depth)):
            if values is not None:
                require_finite(values, label)
    except ContactsDecodeError:
        raise
    except CloudDecodeError as exc:
        raise ContactsDecodeError(exc.reason, str(exc)) from None
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
        if c in present:
            e = arr[c].astype(np.int64)
            if (e < -1).any():
                r = int(np.flatnonzero(e < -1)[0])
                raise ContactsDecodeError("elem_index_invalid", f"row {r}: {c} = {int(e[r])} (< -1)")
            elems[c] = e

    # Group rows by ordered pair, pairs in order of first appearance, rows in message order.
    key = b1 * nb + b2
    if (key == key[0]).all():
        # one pair (the usual simulator step): the rows in message order, no grouping to do
        pair_keys, bounds, perm = [int(key[0])], [0, n], None
    else:
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        perm = np.argsort(rank[inverse], kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(rank[inverse], minlength=order.size))]).tolist()
        pair_keys = uniq[order].tolist()
        points, forces = points[perm], forces[perm]
        elems = {c: e[perm] for c, e in elems.items()}
        normals = None if normals is None else normals[perm]
        depth = None if depth is None else depth[perm]
    P = torch.from_numpy(points).to(dtype=dtype, device=device)
    F = torch.from_numpy(forces).to(dtype=dtype, device=device)
    if dtype != torch.float64 and not (torch.isfinite(P).all() and torch.isfinite(F).all()):
        # finite float64 values past a narrower dtype's range would become +-inf
        raise ContactsDecodeError("non_finite", f"x/y/z or fx/fy/fz exceed the range of {dtype}")
    E = {c: torch.from_numpy(e).to(device=device) for c, e in elems.items()}
    E1, E2 = E.get("elem1"), E.get("elem2")
    row_of = np.arange(n, dtype=np.int64) if perm is None else perm.astype(np.int64)
    contacts: Dict[Pair, ContactState] = {}
    rows: Dict[Pair, np.ndarray] = {}
    nrm: Optional[Dict[Pair, np.ndarray]] = {} if normals is not None else None
    dep: Optional[Dict[Pair, np.ndarray]] = {} if depth is not None else None
    for i, k in enumerate(pair_keys):
        s, e = bounds[i], bounds[i + 1]
        pair = (names[k // nb], names[k % nb])
        contacts[pair] = trusted_contact_state(P[s:e], F[s:e], None if E1 is None else E1[s:e],
                                               None if E2 is None else E2[s:e])
        rows[pair] = row_of[s:e]
        if nrm is not None:
            nrm[pair] = normals[s:e]
        if dep is not None:
            dep[pair] = depth[s:e]
    return DecodedContacts(contacts, rows, n, nrm, dep, frame_id, stamp_ns, field_names)


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
            on body1 N), or any object with the seed's ContactState attributes
            (``points``, ``forces``, optional ``elems1`` / ``elems2``; lists allowed).
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
        ValueError: a body not in ``body_names`` (named), a contact state without
            ``points`` / ``forces`` or with values ContactState refuses, duplicate
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
    # seed-style contact states (points / forces / elems as lists or arrays) as the models take them
    try:
        contacts = {p: as_contact_state(contacts[p], torch.float64) for p in pairs}   # lists: no rounding
    except ValueError as exc:
        raise ValueError(f"contacts: {exc}") from None
    for label, extra in (("normals", normals), ("depths", depths)):
        if extra is not None:
            lacking = [p for p in pairs if p not in extra]
            if lacking:
                raise ValueError(f"{label} missing for pair(s) {lacking}")
    counts = [len(contacts[p]) for p in pairs]
    n = int(sum(counts))
    has_e1 = any(contacts[p].elems1 is not None for p in pairs)
    has_e2 = any(contacts[p].elems2 is not None for p in pairs)

    pts, frc = np.zeros((0, 3)), np.zeros((0, 3))
    if n:
        pts = np.concatenate([contacts[p].points.detach().cpu().numpy() for p in pairs])
        frc = np.concatenate([contacts[p].forces.detach().cpu().numpy() for p in pairs])
    cols: List[Tuple[str, np.ndarray]] = [(c, pts[:, k].astype(ft)) for k, c in enumerate(POINT_FIELDS)]
    cols += [(c, frc[:, k].astype(ft)) for k, c in enumerate(FORCE_FIELDS)]
    cols.append(("body1", np.repeat(np.array([index[a] for a, _ in pairs], dtype="<u4"), counts)))
    cols.append(("body2", np.repeat(np.array([index[b] for _, b in pairs], dtype="<u4"), counts)))
    for c, attr, present in (("elem1", "elems1", has_e1), ("elem2", "elems2", has_e2)):
        if present:
            parts = [getattr(contacts[p], attr) for p in pairs]
            cols.append((c, np.concatenate([np.full(k, -1) if e is None else e.detach().cpu().numpy()
                                            for e, k in zip(parts, counts)]).astype("<i4")))
    if normals is not None:
        nrm = np.concatenate([_per_pair(normals[p], k, (3,), f"normals of {p}")
                              for p, k in zip(pairs, counts)]) if n else np.zeros((0, 3))
        cols += [(c, nrm[:, k].astype(ft)) for k, c in enumerate(NORMAL_FIELDS)]
    if depths is not None:
        dep = np.concatenate([_per_pair(depths[p], k, (), f"depths of {p}")
                              for p, k in zip(pairs, counts)]) if n else np.zeros(0)
        cols.append((DEPTH_FIELD, dep.astype(ft)))
    return write_cloud(Header(stamp=to_stamp(stamp), frame_id=frame_id), cols)
