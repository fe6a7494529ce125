"""Gazebo contacts (``ros_gz_interfaces/msg/Contacts``, read by attribute) -> decoded contacts: the
rows become a contacts cloud decoded by :func:`~.wire.contacts_from_buffer` (docs/interface.md)."""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ...rig.contact_bodies import ContactBodyMap
from ...rig.contact_bodies import note_unknown_bodies  # noqa: F401 -- re-exported
from .pointcloud import write_cloud
from .wire import (BODY_FIELDS, DEPTH_FIELD, FORCE_FIELDS, NORMAL_FIELDS, POINT_FIELDS, CloudDecodeError,
                   ContactsDecodeError, DecodedContacts, check_body_names, pointcloud2_to_contacts)

#: the ``contacts_type`` value of Gazebo contacts
GZ_CONTACTS_TYPE = "ros_gz_interfaces/msg/Contacts"

GZ_DECODE_REASONS: Tuple[str, ...] = (
    "empty_wrenches", "mismatched_lengths", "unnamed_collision", "non_finite", "same_body",
    "wrench_frame",
)
# every GzContactsDecodeError reason (diagnostics counter keys; meanings: docs/interface.md)


class GzContactsDecodeError(ContactsDecodeError):
    """A ``Contacts`` message rejected whole; ``reason``: one of :data:`GZ_DECODE_REASONS`."""


def _vec3(rows: Sequence[Any]) -> List[Tuple[float, float, float]]:
    return [(float(v.x), float(v.y), float(v.z)) for v in rows]


def _names_entity(text: str, entity: Any) -> bool:
    """A JointWrench body name refers to ``entity``: its scoped name, or its nonzero id as text."""
    return bool(text) and (text == str(entity.name) or (int(entity.id) != 0 and text == str(int(entity.id))))


def _body_1_is_collision2(name: str, c: Any) -> bool:
    """A wrench's ``body_1_name`` names ``collision2`` of contact ``c`` and not ``collision1`` (then
    its ``body_1_wrench`` is the force on ``collision2``); False for an empty name (gz-sim's)."""
    return bool(name) and _names_entity(name, c.collision2) and not _names_entity(name, c.collision1)


def _row_columns(msg: Any, body_map: ContactBodyMap, world_frame: Optional[str],
                 collisions: Dict[str, str]) -> Tuple[
        List[Tuple[str, str]], np.ndarray, np.ndarray, Optional[np.ndarray], Optional[np.ndarray],
        List[bool]]:
    """Per row: (body1, body2), points (n, 3), forces (n, 3), normals or None, depths or None,
    flipped (the row turned to its pair's first order: bodies swapped, force and normal negated);
    ``collisions`` gets each body's first scoped collision name."""
    pairs: List[Tuple[str, str]] = []
    flipped: List[bool] = []
    order: Dict[FrozenSet[str], Tuple[str, str]] = {}   # each body pair's first order in the message
    pts: List[Tuple[float, float, float]] = []
    frc: List[Tuple[float, float, float]] = []
    # per contact with points: its normals and its depths, each None when it has none
    extras: Dict[str, List[Optional[List[Any]]]] = {"normals": [], "depths": []}
    sides = ("collision1", "collision2")
    for i, c in enumerate(msg.contacts):
        n = len(c.positions)
        if n == 0:
            continue   # no point: nothing to use, nothing to check
        names = [str(getattr(c, side).name) for side in sides]
        for side, name in zip(sides, names):
            if not name:
                raise GzContactsDecodeError(
                    "unnamed_collision", f"contact {i}: {side} has no name (id {int(getattr(c, side).id)})")
        where = f"contact {i} ({names[0]} / {names[1]})"
        if not c.wrenches:
            raise GzContactsDecodeError("empty_wrenches", f"{where}: {n} positions but no wrench")
        for label in ("wrenches", "normals", "depths"):
            if len(getattr(c, label)) not in (0, n):
                raise GzContactsDecodeError("mismatched_lengths",
                                            f"{where}: {n} positions, {len(getattr(c, label))} {label}")
        pair = (body_map.body(names[0]), body_map.body(names[1]))
        for side, name, body in zip(sides, names, pair):
            if not body.strip():   # '::collision' has an empty link: no body to give its contacts
                raise GzContactsDecodeError(
                    "unnamed_collision", f"contact {i}: {side} {name!r} names no link and no "
                    "contact_body_map entry maps it")
            collisions.setdefault(body, name)
        if pair[0] == pair[1]:
            raise GzContactsDecodeError(
                "same_body", f"contact {i}: {names[0]} and {names[1]} both map to body {pair[0]!r} "
                "(a body cannot push itself; give each body its own contact_body_map entry)")
        frame = next((w.header.frame_id for w in c.wrenches if w.header.frame_id
                      and w.header.frame_id != world_frame), None) if world_frame is not None else None
        if frame is not None:
            raise GzContactsDecodeError("wrench_frame", f"{where}: wrench in frame {frame!r}, expected world "
                                                        f"axes ({world_frame!r} or no frame)")
        # gz lists each contact once, so a contact (b, a) after (a, b) is another contact, not
        # (a, b) seen from b: turned to (a, b) it joins that pair, and the pair's reverse (implied
        # by the cloud rule) then carries both; turned = bodies swapped, force and normal negated
        turn = order.setdefault(frozenset(pair), pair) != pair
        sign = -1.0 if turn else 1.0
        # gz: body_1_wrench is the wrench on collision1, i.e. the force on body1 by body2 (unless
        # the wrench names collision2 as its body 1: then the force on body1 is its opposite)
        for w in c.wrenches:
            s = -sign if _body_1_is_collision2(w.body_1_name.data, c) else sign
            f = w.body_1_wrench.force
            frc.append((s * float(f.x), s * float(f.y), s * float(f.z)))
        pairs.extend([pair[::-1] if turn else pair] * n)
        flipped.extend([turn] * n)
        pts.extend(_vec3(c.positions))
        extras["normals"].append([(sign * x, sign * y, sign * z) for x, y, z in _vec3(c.normals)]
                                 if c.normals else None)
        extras["depths"].append([float(d) for d in c.depths] if c.depths else None)
    out = []
    for label, parts in extras.items():
        k = sum(p is not None for p in parts)
        if k not in (0, len(parts)):
            raise GzContactsDecodeError(
                "mismatched_lengths", f"{label} given for {k} of the {len(parts)} contacts with points: "
                "all or none must carry them")
        out.append(np.array([v for part in parts for v in part], dtype=np.float64) if k else None)
    normals, depths = out
    points = np.array(pts, dtype=np.float64).reshape(-1, 3)
    forces = np.array(frc, dtype=np.float64).reshape(-1, 3)
    return pairs, points, forces, None if normals is None else normals.reshape(-1, 3), depths, flipped


def gz_contacts_to_contacts(msg: Any, body_names: Sequence[str], body_map: Optional[ContactBodyMap] = None,
                            dtype: torch.dtype = torch.float64,
                            device: Union[str, torch.device] = "cpu", world_frame: Optional[str] = None,
                            unknown_bodies: Optional[Dict[str, str]] = None) -> DecodedContacts:
    """A ``ros_gz_interfaces/msg/Contacts`` as contacts per ordered body pair (docs/interface.md),
    as :func:`~.wire.pointcloud2_to_contacts` of a cloud of its rows.  ``body_map``: collision
    name -> body (None: link names); a body not in ``body_names`` is appended to this call's table
    and entered in ``unknown_bodies`` with its first collision; ``world_frame``: a wrench in another
    non-empty frame is refused.  GzContactsDecodeError: :data:`GZ_DECODE_REASONS`; ValueError:
    duplicate ``body_names``."""
    body_map = body_map or ContactBodyMap()
    table = check_body_names(body_names)
    collisions: Dict[str, str] = {}
    pairs, points, forces, normals, depths, flipped = _row_columns(msg, body_map, world_frame, collisions)
    new = [b for b in dict.fromkeys(b for pair in pairs for b in pair) if b not in table]
    table += new
    if unknown_bodies is not None:
        unknown_bodies.update({b: collisions[b] for b in new})
    index = {n: i for i, n in enumerate(table)}
    cols: List[Tuple[str, np.ndarray]] = [(c, points[:, k]) for k, c in enumerate(POINT_FIELDS)]
    cols += [(c, forces[:, k]) for k, c in enumerate(FORCE_FIELDS)]
    cols += [(c, np.array([index[p[k]] for p in pairs], dtype="<u4")) for k, c in enumerate(BODY_FIELDS)]
    if normals is not None:
        cols += [(c, normals[:, k]) for k, c in enumerate(NORMAL_FIELDS)]
    if depths is not None:
        cols.append((DEPTH_FIELD, depths))
    try:
        decoded = pointcloud2_to_contacts(write_cloud(msg.header, cols), table, dtype, device)
    except CloudDecodeError as exc:
        # only the value checks can fail on rows built here (non_finite)
        raise GzContactsDecodeError(exc.reason, str(exc).replace("x/y/z", "positions")
                                    .replace("fx/fy/fz", "body_1_wrench forces")) from None
    if any(flipped):
        decoded.flipped_rows = np.array(flipped, dtype=bool)
    return decoded
