"""A step's contacts as arrays: per ordered body pair, with the message row of every contact.

What the contacts decoders produce (:class:`DecodedContacts`), completed with the implied reverse
pairs and checked against the dense-force meshes; no ROS.  The row rule: docs/interface.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Collection, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ..sensor.base_sensor import ContactState

Pair = Tuple[str, str]


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
        implied: pairs that the message does not carry but :func:`with_implied_pairs`
            added (the other order of a pair reported once): their contacts are the
            rows of ``rows[pair]`` with the force negated, so a derivative with
            respect to such a contact's force is minus the one with respect to the
            row's force.  Empty for a decoded message.
        flipped_rows: ``(num_points,)`` bool over the message rows, or None (no row flipped):
            rows decoded with their bodies swapped and their force negated (a Gazebo
            contact listed in the other order than the earlier contacts of its body pair,
            :mod:`.gz_contacts`); a derivative with respect to such a row's written force
            is minus the one with respect to its decoded force.
    """

    contacts: Dict[Pair, ContactState]
    rows: Dict[Pair, np.ndarray]
    num_points: int
    normals: Optional[Dict[Pair, np.ndarray]] = None
    depths: Optional[Dict[Pair, np.ndarray]] = None
    frame_id: str = ""
    stamp_ns: int = 0
    fields: List[str] = field(default_factory=list)
    implied: FrozenSet[Pair] = frozenset()
    flipped_rows: Optional[np.ndarray] = None


def with_implied_pairs(decoded: DecodedContacts,
                       bodies: Optional[Collection[str]] = None) -> DecodedContacts:
    """The node's contact-row rule: every pair in both orders, each contact row used once.

    A bridge may write one row per contact, e.g. only ``(tool, pad)`` with the
    force on ``tool``; a sensor on ``pad`` must still see it.  The rule of the
    library's :func:`~vsf_sensor_ros.sensor.base_sensor.with_reverse_pairs`:

    * a pair ``(a, b)`` present in only one order implies ``(b, a)``: the same
      points and message rows, the force ``-f`` (on ``b``), ``elem1``/``elem2``
      swapped; it is listed in :attr:`DecodedContacts.implied`;
    * a pair present in both orders in the message is used as given, never
      twice (the two sides are not checked against each other);
    * ``(a, a)`` is kept as given.

    Args:
        decoded: a decoded message (:func:`pointcloud2_to_contacts`).
        bodies: when given, only implied pairs ``(b, a)`` with ``b`` in
            ``bodies`` are added: a sensor on ``b`` reads only the pairs
            ``(b, *)``, so the node passes its sensors' bodies and builds no
            reverse that nothing reads.  None: every implied pair
            (:func:`~vsf_sensor_ros.sensor.base_sensor.with_reverse_pairs`).

    Returns:
        A new :class:`DecodedContacts` (the input is not changed) whose
        ``contacts`` and ``rows`` cover both orders (of the pairs ``bodies``
        selects); implied pairs follow the pair they reverse, as in
        ``with_reverse_pairs``; ``normals``/``depths`` stay those of the
        message's own pairs; ``implied`` names the added pairs.
    """
    given = decoded.contacts
    contacts: Dict[Pair, ContactState] = {}
    rows = dict(decoded.rows)
    implied = []
    for (a, b), c in given.items():
        contacts[(a, b)] = c
        rev = (b, a)
        if rev in given or (bodies is not None and b not in bodies):
            continue
        # the decoder validated the rows; -f of finite forces is finite: no second validation
        contacts[rev] = trusted_contact_state(c.points, -c.forces, c.elems2, c.elems1)
        rows[rev] = decoded.rows[(a, b)]
        implied.append(rev)
    return dataclasses.replace(decoded, contacts=contacts, rows=rows, implied=frozenset(implied))


def _contact_state_extras() -> List[Tuple[str, Any]]:
    """``(name, default factory)`` of ``ContactState`` fields beyond points/forces/elems1/elems2."""
    out = []
    for f in dataclasses.fields(ContactState):   # any field added later keeps its default
        if f.name in ("points", "forces", "elems1", "elems2"):
            continue
        if f.default is not dataclasses.MISSING:
            out.append((f.name, lambda d=f.default: d))
        elif f.default_factory is not dataclasses.MISSING:
            out.append((f.name, f.default_factory))
    return out


_CONTACT_STATE_EXTRAS = _contact_state_extras()


def trusted_contact_state(points: torch.Tensor, forces: torch.Tensor, elems1: Optional[torch.Tensor],
                          elems2: Optional[torch.Tensor]) -> ContactState:
    """``ContactState`` without re-running its validation.

    The decoder has already checked every shape, dtype and finiteness
    condition of ``validate_contact_state`` for the whole message at once;
    re-checking per pair costs more than the decode itself at 1 kHz.
    """
    c = ContactState.__new__(ContactState)
    c.points, c.forces, c.elems1, c.elems2 = points, forces, elems1, elems2
    for name, make in _CONTACT_STATE_EXTRAS:
        setattr(c, name, make())
    return c


def check_elements(decoded: Any, dense_vertex_counts: Mapping[str, int]) -> Optional[str]:
    """Element indices on bodies carrying a dense-force sensor must index its vertices; why not, or None."""
    for (b1, b2), c in decoded.contacts.items():
        for body, elems in ((b1, c.elems1), (b2, c.elems2)):
            nv = dense_vertex_counts.get(body)
            if nv is None or elems is None or elems.numel() == 0:
                continue
            e = elems.numpy() if elems.device.type == "cpu" else elems.cpu().numpy()   # numpy: cheaper
            lo, hi = int(e.min()), int(e.max())
            if lo < -1 or hi >= nv:
                return f"element index {hi if hi >= nv else lo} on {body!r} outside -1..{nv - 1}"
    return None


def jacobian_message_columns(cols: np.ndarray, pairs: Sequence[Tuple[str, str]],
                             offsets: Sequence[int],
                             pair_rows: Dict[Tuple[str, str], np.ndarray]) -> np.ndarray:
    """Remap library columns ``3·c + k`` (c over the concatenated ``pairs``) to message rows.

    Args:
        cols: ``(nnz,)`` int64 library columns.
        pairs: ``SparseJacobian.pairs``; offsets: ``SparseJacobian.offsets``.
        pair_rows: ``DecodedContacts.rows``: pair -> message row of each of its contacts.

    Returns:
        ``(nnz,)`` int64 columns ``3·r + k`` with ``r`` the contacts message row.

    Raises:
        ValueError: a pair's contact count disagrees with its message rows.
    """
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64)
    parts = []
    for p, pair in enumerate(pairs):
        rows = pair_rows.get(tuple(pair))
        n = offsets[p + 1] - offsets[p]
        if rows is None or len(rows) != n:
            raise ValueError(f"pair {pair} has {n} contacts but {None if rows is None else len(rows)} "
                             "message rows")
        parts.append(np.asarray(rows, dtype=np.int64))
    lookup = parts[0] if len(parts) == 1 else np.concatenate(parts)
    cols = np.array(cols, dtype=np.int64)
    n = len(lookup)
    if n and lookup[0] == 0 and lookup[-1] == n - 1 and bool((np.diff(lookup) == 1).all()) \
            and (not cols.size or (cols.min() >= 0 and cols.max() < 3 * n)):
        return cols    # the contacts are the message rows 0..n-1 in order (a one-pair step): no remap
    c, k = np.divmod(cols, 3)
    return 3 * lookup[c] + k


__all__ = ["DecodedContacts", "Pair", "check_elements", "jacobian_message_columns", "trusted_contact_state",
           "with_implied_pairs"]
