"""A step's contacts per ordered body pair with their message rows, implied reverse pairs, element checks
and Jacobian columns as message rows (no ROS; docs/interface.md)."""
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
    """A decoded contacts message: ``contacts`` (``(body1, body2) -> ContactState``, first-appearance order),
    ``rows`` (pair -> int64 message row per contact), ``num_points``, ``normals`` / ``depths`` (pair ->
    ``(N, 3)`` / ``(N,)`` or None), header ``frame_id`` / ``stamp_ns``, ``fields``, ``implied`` (pairs
    :func:`with_implied_pairs` added) and ``flipped_rows`` (``(num_points,)`` bool: bodies swapped, force
    negated; or None).  The written force of an implied or flipped row is minus the decoded one."""

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
    """A new :class:`DecodedContacts` with every pair in both orders as
    :func:`~vsf_sensor_ros.sensor.base_sensor.with_reverse_pairs` (same rows, listed in ``implied``);
    ``bodies``: add only implied pairs ``(b, a)`` with ``b`` in it (None: all).  ``decoded`` itself when
    no pair is added."""
    given, contacts, rows, implied = decoded.contacts, {}, dict(decoded.rows), []
    for (a, b), c in given.items():
        contacts[(a, b)] = c
        rev = (b, a)
        if rev in given or (bodies is not None and b not in bodies):
            continue
        # the decoder validated the rows; -f of finite forces is finite: no second validation
        contacts[rev] = trusted_contact_state(c.points, -c.forces, c.elems2, c.elems1)
        rows[rev] = decoded.rows[(a, b)]
        implied.append(rev)
    if not implied:
        return decoded
    return dataclasses.replace(decoded, contacts=contacts, rows=rows, implied=frozenset(implied))


def trusted_contact_state(points: torch.Tensor, forces: torch.Tensor, elems1: Optional[torch.Tensor],
                          elems2: Optional[torch.Tensor]) -> ContactState:
    """``ContactState`` without re-running its validation: the decoder checked the whole message at once,
    and re-checking per pair costs more than the decode at 1 kHz."""
    c = ContactState.__new__(ContactState)
    c.points, c.forces, c.elems1, c.elems2 = points, forces, elems1, elems2
    return c


def check_elements(decoded: Any, dense_vertex_counts: Mapping[str, int]) -> Optional[str]:
    """Element indices on bodies carrying a dense-force sensor must index its vertices; why not, or None."""
    for (b1, b2), c in decoded.contacts.items():
        for body, elems in ((b1, c.elems1), (b2, c.elems2)):
            nv = dense_vertex_counts.get(body)
            if nv is not None and elems is not None and elems.numel():
                e = elems.cpu().numpy()   # numpy min/max: cheaper than torch's
                lo, hi = int(e.min()), int(e.max())
                if lo < -1 or hi >= nv:
                    return f"element index {hi if hi >= nv else lo} on {body!r} outside -1..{nv - 1}"
    return None


_ROWS: List[np.ndarray] = [np.zeros(0, dtype=np.int64)]   # the last identity_rows


def identity_rows(n: int) -> np.ndarray:
    """``arange(n)`` int64, read-only, shared while ``n`` repeats (jacobian_message_columns knows it)."""
    if len(_ROWS[0]) != n:
        _ROWS[0] = np.arange(n, dtype=np.int64)
        _ROWS[0].flags.writeable = False
    return _ROWS[0]


def jacobian_message_columns(cols: np.ndarray, pairs: Sequence[Tuple[str, str]],
                             offsets: Sequence[int], pair_rows: Dict[Tuple[str, str], np.ndarray],
                             trusted: bool = False) -> np.ndarray:
    """``(nnz,)`` int64 library columns ``3·c + k`` of a ``SparseJacobian`` as ``3·r + k``, ``r`` the message
    row (``pair_rows``: ``DecodedContacts.rows``); ``trusted``: ``cols`` int64 within ``3·offsets[-1]`` (this
    package's models), neither checked nor copied.  ValueError: a pair's count disagrees with its rows."""
    parts = []
    for p, pair in enumerate(pairs):
        rows = pair_rows.get(tuple(pair))
        n = offsets[p + 1] - offsets[p]
        if rows is None or len(rows) != n:
            raise ValueError(f"pair {pair} has {n} contacts but {None if rows is None else len(rows)} "
                             "message rows")
        parts.append(np.asarray(rows, dtype=np.int64))
    lookup = parts[0] if len(parts) == 1 else np.concatenate(parts or [np.zeros(0, dtype=np.int64)])
    cols = cols if trusted else np.array(cols, dtype=np.int64)
    n = len(lookup)
    # a column below 0 is above 2**63 as uint64: one max checks both bounds
    if n and (lookup is _ROWS[0] or bool((lookup == np.arange(n)).all())) \
            and (trusted or cols.view(np.uint64).max(initial=0) < 3 * n):
        return cols    # the contacts are the message rows 0..n-1 in order (a one-pair step): no remap
    c, k = np.divmod(cols, 3)
    return 3 * lookup[c] + k


__all__ = ["DecodedContacts", "Pair", "check_elements", "identity_rows", "jacobian_message_columns",
           "trusted_contact_state", "with_implied_pairs"]
