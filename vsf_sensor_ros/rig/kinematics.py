"""Body transforms of a step from that step's joint states, remembered per source even when a later one
was served first (docs/interface.md, ``joint_states``); the joints moving each sensor; driver joint names."""
from __future__ import annotations

import bisect
from collections import deque
from typing import Any, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np
import torch


# -- transform history -----------------------------------------------------------------------
# Stamped joint states kept per source to pair each contacts message with its own step's configuration.
JOINT_HISTORY = 200
# Contacts messages in a row that found a joint state of their stamp before one waits (JointStateWait).
LOCKSTEP = 2
# Sources (distinct joint-name sets) kept; beyond it the one silent longest is forgotten.
MAX_SOURCES = 16


class _Source:
    """One source's stamped joint states (or a free body's ``(4, 4)`` poses), stamps ascending (ns)."""

    __slots__ = ("stamps", "positions")

    def __init__(self, history: int) -> None:
        self.stamps: Deque[int] = deque(maxlen=history)
        self.positions: Deque[np.ndarray] = deque(maxlen=history)


class BodyTransforms:
    """Cached body transforms of ``world`` plus ``history`` stamped joint states per source and poses per
    free body.  ``stamp_jumps``, ``last_stamp_jump``: a source's stamp went back (its history forgotten)."""

    def __init__(self, world: Any, dtype: torch.dtype, device: torch.device,
                 history: int = JOINT_HISTORY) -> None:
        self._world, self._dtype, self._device = world, dtype, device
        self._cache: Optional[Tuple[int, Dict[str, torch.Tensor]]] = None   # (world.revision, transforms)
        self._history_len = history
        # source (the joint names a message carries, URDF names, sorted) -> its history
        self._sources: Dict[Tuple[str, ...], _Source] = {}
        self._keys: Dict[Tuple[str, ...], Tuple[Tuple[str, ...], Optional[np.ndarray]]] = {}
        self._newest = 0                  # the newest stamp of any source (ns)
        self._poses: Dict[str, _Source] = {}      # free body -> its stamped poses ((4, 4) each)
        self._names: Optional[Tuple[str, ...]] = None
        self.stamp_jumps = 0
        self.last_stamp_jump = "none"

    def need(self, names: Optional[Iterable[str]]) -> None:
        """Compute only these bodies from now on (unknown names are left out); None = every body."""
        known = set(self._world.body_names)
        new = None if names is None else tuple(n for n in dict.fromkeys(names) if n in known)
        if new != self._names:
            self._names = new
            self._cache = None

    @property
    def newest_ns(self) -> int:
        """The newest joint-state stamp of any source (ns); 0 before any stamped joint state."""
        return self._newest

    def has_stamp(self, stamp_ns: int) -> bool:
        """Whether some source sent a joint state stamped exactly ``stamp_ns`` (ns), still kept."""
        for src in self._sources.values():
            s = src.stamps   # ascending: the newest first (the usual case, in lockstep), else a search
            if s[-1] == stamp_ns or (stamp_ns < s[-1] and s[bisect.bisect_left(s, stamp_ns)] == stamp_ns):
                return True
        return False

    def remember(self, stamp_ns: int, names: Sequence[str], positions: Sequence[float]) -> bool:
        """Keep an applied joint state (URDF ``names``, any order = one source; rad or m) under ``stamp_ns``
        (ignored when ``<= 0``).  True when the source's stamp went back (its history forgotten, counted)."""
        if stamp_ns <= 0:
            return False
        key, perm = self._source_key(names)
        pos = np.array(positions, np.float64) if perm is None else np.asarray(positions, np.float64)[perm]
        src = self._sources.get(key)
        jumped = src is not None and stamp_ns < src.stamps[-1]
        if src is None or jumped:
            if jumped:
                self.stamp_jumps += 1
                more = f", ... ({len(names)} joints)" if len(names) > 4 else ""
                self.last_stamp_jump = (f"{src.stamps[-1] * 1e-9:.9f} -> {stamp_ns * 1e-9:.9f} s "
                                        f"({', '.join(list(names)[:4])}{more})")
            elif len(self._sources) >= MAX_SOURCES:     # a driver changing its name set: drop the stalest
                del self._sources[min(self._sources, key=lambda k: self._sources[k].stamps[-1])]
            src = self._sources[key] = _Source(self._history_len)
            self._newest = max((x.stamps[-1] for x in self._sources.values() if x.stamps), default=0)
        src.stamps.append(stamp_ns)
        src.positions.append(pos)
        if stamp_ns > self._newest:
            self._newest = stamp_ns
        return jumped

    def _source_key(self, names: Sequence[str]) -> Tuple[Tuple[str, ...], Optional[np.ndarray]]:
        """A source's key (its joint names, sorted) and the permutation to it (None when sorted)."""
        given = names if isinstance(names, tuple) else tuple(names)
        hit = self._keys.get(given)
        if hit is None:
            order = sorted(range(len(given)), key=given.__getitem__)
            key = tuple(given[i] for i in order)
            hit = (key, None if key == given else np.array(order, dtype=np.int64))
            if len(self._keys) < 4 * MAX_SOURCES:
                self._keys[given] = hit
        return hit

    def remember_pose(self, body: str, stamp_ns: int, T: np.ndarray) -> Optional[int]:
        """Keep free body ``body``'s applied pose ``T`` (``(4, 4)`` body -> world, m) under ``stamp_ns``
        (ignored when ``<= 0``); its newest stamp when ``stamp_ns`` went back (poses forgotten), else None."""
        if stamp_ns <= 0:
            return None
        src = self._poses.get(body)
        jumped = src.stamps[-1] if src is not None and src.stamps and stamp_ns < src.stamps[-1] else None
        if src is None or jumped is not None:
            src = self._poses[body] = _Source(self._history_len)
        src.stamps.append(stamp_ns)
        src.positions.append(np.array(T, dtype=np.float64))
        return jumped

    def at(self, stamp_ns: int) -> Dict[str, torch.Tensor]:
        """Body name -> ``(4, 4)`` body -> world transform for contacts stamped ``stamp_ns``: the latest, or,
        when something stamped later came, every joint's and free body's newest stamped ``<= stamp_ns`` (the
        world put back afterwards)."""
        world = self._world
        merged = self._positions_at(stamp_ns) if self._newest > stamp_ns else None
        poses = {}
        for body, src in self._poses.items():
            i = bisect.bisect_right(src.stamps, stamp_ns) - 1
            if 0 <= i < len(src.stamps) - 1:
                poses[body] = src.positions[i]
        if merged is not None or poses:
            latest, ignored = world.configuration(), world.last_ignored_joints
            latest_poses = {b: world.body_transform(b) for b in poses}
            try:
                if merged is not None:
                    world.set_joint_positions(list(merged), list(merged.values()))
                for body, T in poses.items():
                    world.set_body_pose(body, T)
                return world.body_transforms(self._dtype, self._device, self._names)
            finally:
                world.set_configuration(latest)
                world.last_ignored_joints = ignored
                for body, T in latest_poses.items():
                    world.set_body_pose(body, T, checked=True)
        if self._cache is None or self._cache[0] != world.revision:   # an unchanged world: no FK
            self._cache = (world.revision, world.body_transforms(self._dtype, self._device, self._names))
        return self._cache[1]

    def _positions_at(self, stamp_ns: int) -> Optional[Dict[str, float]]:
        """Joint -> its newest position stamped ``<= stamp_ns`` (else its latest); None: nothing to rewind."""
        chosen: List[Tuple[int, Tuple[str, ...], np.ndarray]] = []
        rewound = False
        for key, src in self._sources.items():
            i = bisect.bisect_right(src.stamps, stamp_ns) - 1
            rewound |= 0 <= i < len(src.stamps) - 1
            chosen.append((src.stamps[i], key, src.positions[i]))   # i = -1 (none that early): the latest
        if not rewound:
            return None
        merged: Dict[str, float] = {}
        for _, key, pos in sorted(chosen, key=lambda c: c[0]):
            merged.update(zip(key, pos.tolist()))
        return merged


class JointStateWait:
    """Contacts messages waiting for the joint state of their stamp (tf2's ``MessageFilter`` idea): in
    lockstep (the last :data:`LOCKSTEP` found theirs) one stamped after the newest joint state waits; out of
    it nothing waits.  Arrival order; at most ``max_held`` wait, each at most ``max_wait_s`` (monotonic s)."""

    def __init__(self, transforms: BodyTransforms, max_held: int = 8, max_wait_s: float = 0.1) -> None:
        self._transforms = transforms
        self.max_held, self.max_wait_s = int(max_held), float(max_wait_s)
        self._held: Deque[Tuple[float, int, Any]] = deque()     # (arrival s, stamp ns, item)
        self._lockstep = 0

    def offer(self, stamp_ns: int, item: Any, now_s: float) -> List[Any]:
        """A contacts message ``item`` arrived at ``now_s``: the items to step now, oldest first."""
        out = self.expire(now_s)
        waits = self._lockstep >= LOCKSTEP and 0 < self._transforms.newest_ns < stamp_ns
        self._held.append((now_s, stamp_ns, item))
        return out + self._release(len(self._held) - (self.max_held if waits else 0))

    def joint_state(self) -> List[Any]:
        """A joint state was applied: the waiting items its stamp reaches (with those before them)."""
        if not self._held:    # the usual case: nothing waits
            return []
        newest = self._transforms.newest_ns
        reached = [i for i, (_, stamp, _) in enumerate(self._held) if stamp <= newest]
        return self._release(reached[-1] + 1 if reached else 0)

    def expire(self, now_s: float) -> List[Any]:
        """The items that waited ``max_wait_s`` or longer (with those before them)."""
        if not self._held:    # the usual case: nothing waits
            return []
        old = [i for i, (t, _, _) in enumerate(self._held) if now_s - t >= self.max_wait_s]
        return self._release(old[-1] + 1 if old else 0)

    def _release(self, n: int) -> List[Any]:
        out = []
        for _ in range(max(0, n)):
            _, stamp, item = self._held.popleft()
            self._lockstep = self._lockstep + 1 if self._transforms.has_stamp(stamp) else 0
            out.append(item)
        return out


# -- driver joint names ----------------------------------------------------------------------
# Joint states after which a sensor-moving joint never received is reported.
MISSING_AFTER = 50


def joints_moving(body: str, body_parent: Mapping[str, Optional[str]],
                  joints: Sequence[Tuple[str, str, str, Optional[str], bool]]) -> List[str]:
    """The movable joints from the root down to ``body`` (a mimic joint as its source; empty for a free body).
    ``body_parent``: extra body -> parent; ``joints``: ``(name, parent, child, mimic or None, movable)``."""
    seen: Set[str] = set()
    link: Optional[str] = body
    while link in body_parent and link not in seen:   # climb extra bodies to their link
        seen.add(link)
        link = body_parent[link]
    by_child = {child: (name, parent, mimic, movable) for name, parent, child, mimic, movable in joints}
    out: List[str] = []
    while link is not None and link in by_child and link not in seen:
        seen.add(link)
        name, parent, mimic, movable = by_child[link]
        if movable:
            out.append(mimic or name)
        link = parent
    return list(dict.fromkeys(reversed(out)))


class JointNameTracker:
    """Renames driver joint names and keeps what the node reports: ``watched`` (joint -> sensors it moves),
    ``unknown`` (name as received -> messages), ``received`` (URDF names seen), ``messages``."""

    def __init__(self, name_map: Mapping[str, str], watched: Mapping[str, Sequence[str]]) -> None:
        self.name_map = dict(name_map)
        self.watched = {j: list(s) for j, s in watched.items()}
        self.unknown: Dict[str, int] = {}
        self.received: Set[str] = set()
        self.messages = 0
        self._missing_reported = False

    def rename(self, names: Sequence[str]) -> List[str]:
        """The URDF names of a JointState's ``names`` (unmapped names kept as they are)."""
        m = self.name_map
        return [m.get(n, n) for n in names] if m else list(names)

    def note(self, received_names: Sequence[str], applied_names: Sequence[str],
             ignored: Sequence[str]) -> List[str]:
        """Record one applied JointState; warning lines to log now: a new name matching nothing (``ignored``),
        and at the :data:`MISSING_AFTER`-th message the sensor-moving joints never received."""
        self.messages += 1
        lines: List[str] = []
        bad = set(ignored)
        self.received.update([n for n in applied_names if n not in bad] if bad else applied_names)
        for raw, applied in zip(received_names, applied_names) if bad else ():   # all known: nothing to note
            if applied in bad:
                if raw not in self.unknown:
                    shown = raw if raw == applied else f"{raw} (mapped to {applied})"
                    lines.append(f"JointState name {shown!r} matches no URDF joint: ignored; map driver "
                                 "names with joint_name_map ['driver:urdf', ...]")
                self.unknown[raw] = self.unknown.get(raw, 0) + 1
        if self.messages >= MISSING_AFTER and not self._missing_reported:
            self._missing_reported = True
            missing = self.missing()
            if missing:
                lines.append(f"after {self.messages} joint states, joints moving sensors were never "
                             f"received: {self.missing_text()}; they keep their initial positions "
                             "(check the driver's names or joint_name_map)")
        return lines

    def missing(self) -> List[str]:
        """Sensor-moving joints never received (empty before :data:`MISSING_AFTER` messages)."""
        if self.messages < MISSING_AFTER:
            return []
        return [j for j in self.watched if j not in self.received]

    def missing_text(self) -> str:
        """``"Actuator1 (moves pressure), ..."`` for :meth:`missing`, or ``"none"``."""
        return ", ".join(f"{j} (moves {', '.join(self.watched[j])})" for j in self.missing()) or "none"
