"""Kinematics: joint states (decoded from CDR bytes), free-body poses, driver joint names.

A driver may name its joints differently from the URDF (Kinova's ``joint_1`` vs ``Actuator1``):
nothing matches and predictions are silently wrong, so unknown and missing names are reported
and ``joint_name_map`` renames them.  The transform history is the rig's
(:mod:`vsf_sensor_ros.rig.kinematics`); the inputs: docs/interface.md.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from ..rig.kinematics import BodyTransforms
from ..urdf import MOVABLE_JOINT_TYPES, JointNameMapError
from ..urdf import parse_joint_name_map as _parse_joint_name_map
from .messages.stamps import stamp_to_ns
from .messages.wire import RawHeader, Reader, cached_section
from .parameter_table import ConfigError
from .sensor_handle import SensorHandle


@dataclass(slots=True)
class RawJointState:
    """``sensor_msgs/JointState`` decoded from CDR: ``position``, ``velocity``, ``effort`` float64
    read-only views on the received bytes (rad or m, rad/s or m/s, N·m or N), each possibly empty."""
    header: RawHeader
    name: List[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


_EMPTY_F8 = np.zeros(0)
_EMPTY_F8.setflags(write=False)
_JOINT_NAMES: List[Any] = [None]   # the last names section (wire.cached_section)


def _float64s(r: Reader) -> np.ndarray:
    n = r.u32()
    if n == 0:           # no alignment padding before an empty sequence
        return _EMPTY_F8
    if r.a8:
        r.pos += -(r.pos - 4) & 7
    pos = r.pos
    if pos + 8 * n > r.end:
        raise r.fail()
    r.pos = pos + 8 * n
    return np.frombuffer(r.buf, dtype=r.e + "f8", count=n, offset=pos)


def _names(r: Reader) -> Tuple[str, ...]:
    n = r.u32()
    if 4 * n > r.end:   # each string takes at least 4 bytes: a larger count is garbage
        raise r.fail(f"{r.what} count {n} exceeds the buffer")
    return tuple(r.string() for _ in range(n))


def decode_joint_state(data: object) -> RawJointState:
    """A serialised ``sensor_msgs/JointState`` (the bytes of a ``raw=True`` subscription,
    encapsulation included; trailing bytes ignored) as a :class:`RawJointState`.

    Raises:
        CdrDecodeError: naming the field and byte offset.
    """
    r = Reader(data, "JointState")
    try:
        header = r.header()
        r.what = "name"
        names = cached_section(_JOINT_NAMES, r, _names)
        r.what = "position"
        pos = _float64s(r)
        r.what = "velocity"
        vel = _float64s(r)
        r.what = "effort"
        return RawJointState(header, list(names), pos, vel, _float64s(r))
    except (struct.error, IndexError):
        raise r.fail() from None


class KinematicInputs:
    """Joint states and free-body poses of a node's ``World``, and the transforms a step reads.

    ``world`` is changed in place; every pose must be in ``world_frame`` (or empty);
    ``name_map``: driver -> URDF joint name; ``transforms``: the rig's history, given every
    applied joint state; ``reject(reason, detail)``: the node's rejection counter and log.
    """

    def __init__(self, world: Any, world_frame: str, name_map: Mapping[str, str], transforms: BodyTransforms,
                 reject: Callable[..., None], logger: Any) -> None:
        self._world, self._world_frame = world, world_frame
        self._reject, self._log = reject, logger
        self.joint_names = JointNameTracker(name_map, {})
        self.transforms = transforms

    def on_joint_state(self, msg: JointState) -> None:
        """One ``joint_states`` message: renamed, checked, applied whole or rejected whole."""
        names, pos = list(msg.name), np.asarray(msg.position, dtype=np.float64)
        if pos.size == 0:
            return self._reject("joint_state_empty", f"no positions for {len(names)} names")
        if pos.size != len(names):
            return self._reject("joint_state_short", f"{len(names)} names but {pos.size} positions")
        if not np.isfinite(pos).all():
            return self._reject("non_finite", "JointState position has NaN/inf")
        applied = self.joint_names.rename(names)
        try:
            ignored = self._world.set_joint_positions(applied, pos)
        except ValueError as exc:
            return self._reject("joint_state_invalid", str(exc))
        for line in self.joint_names.note(names, applied, ignored):
            self._log.warning(line)
        self.transforms.invalidate()
        if ignored:     # a source is the joints of this robot it sets
            bad = set(ignored)
            keep = [i for i, n in enumerate(applied) if n not in bad]
            applied, pos = [applied[i] for i in keep], pos[keep]
        if applied and self.transforms.remember(stamp_to_ns(msg.header.stamp), applied, pos):
            self._log.warning(f"joint_states stamp went backwards ({self.transforms.last_stamp_jump}); "
                              "that driver restarted (simulator reset?): its joint history cleared",
                              throttle_duration_sec=1.0)

    def on_pose(self, body: str, msg: PoseStamped) -> None:
        """One ``<b>/pose`` of free body ``body`` (in ``world_frame``): applied or rejected."""
        from ..world import transform_from_xyz_quat
        frame = msg.header.frame_id
        if frame and frame != self._world_frame:
            return self._reject("pose_wrong_frame", f"pose of {body!r} in {frame!r}, expected "
                                                    f"{self._world_frame!r}")
        p, q = msg.pose.position, msg.pose.orientation
        xyz, quat = [p.x, p.y, p.z], [q.x, q.y, q.z, q.w]
        try:
            T = transform_from_xyz_quat(xyz, quat)
            self._world.set_body_pose(body, T)
        except ValueError as exc:
            # told apart by the input, not by the message text
            reason = "pose_invalid" if np.isfinite(xyz + quat).all() else "non_finite"
            return self._reject(reason, str(exc))
        self.transforms.invalidate()
        self.transforms.remember_pose(body, stamp_to_ns(msg.header.stamp), T)

    def follow(self, handles: Iterable[SensorHandle], contact_body_names: Iterable[str],
               free_bodies: Iterable[str]) -> None:
        """Watch the joints that move the sensors' bodies; compute only the bodies a step reads
        (the sensors', the contacts table's, the free ones on ``/tf``)."""
        handles = list(handles)
        w = self._world
        # the joints a driver must send for each sensor's body to move (reported when never received)
        parents = {b: w.body_parent(b) for b in w.attached_body_names}
        joints = [(j.name, j.parent, j.child, j.mimic[0] if j.mimic else None,
                   j.type in MOVABLE_JOINT_TYPES) for j in w.joints]
        watched: Dict[str, List[str]] = {}
        for h in handles:
            for j in joints_moving(str(h.config.values["attachment"]), parents, joints):
                watched.setdefault(j, []).append(h.name)
        self.joint_names.watched = watched
        # forward kinematics only for what a step can read: the sensors' bodies, the contact bodies
        # and the free bodies whose poses go on /tf
        self.transforms.need([b for h in handles for b in (h.config.values["attachment"], h.layout.frame_id)]
                             + list(contact_body_names) + list(free_bodies))


# -- driver joint names ----------------------------------------------------------------------
# Joint states after which a sensor-moving joint never received is reported.
MISSING_AFTER = 50


def parse_joint_name_map(entries: Sequence[str], urdf_joints: Iterable[str],
                         parameter: str = "joint_name_map") -> Dict[str, str]:
    """:func:`vsf_sensor_ros.urdf.parse_joint_name_map` with the URDF's joints checked.

    Raises:
        ConfigError: naming ``parameter`` and the offending entry (why: see the parser).
    """
    try:
        return _parse_joint_name_map(entries, list(urdf_joints))
    except JointNameMapError as exc:
        raise ConfigError(parameter, exc.entry, exc.detail) from None


def joints_moving(body: str, body_parent: Mapping[str, Optional[str]],
                  joints: Sequence[Tuple[str, str, str, Optional[str], bool]]) -> List[str]:
    """The joints a driver must send for ``body`` to move: movable joints from the root down to it.

    ``body_parent``: extra body -> parent (None: free); ``joints``: ``(name, parent_link,
    child_link, mimic_source or None, movable)`` of every URDF joint.  Root first, a mimic joint
    replaced by its source; empty for a free body or the root link.
    """
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
    """Renames driver joint names and keeps what the node reports about them.

    ``watched``: joint -> sensors it moves.  ``unknown``: name as received -> messages that
    carried it unmatched; ``received``: URDF names seen; ``messages``: JointStates seen.
    """

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
        """Record one applied JointState; the warning lines to log now (each at most once).

        A line per new name that matched nothing (``ignored``: applied names unmatched) and, at
        the :data:`MISSING_AFTER`-th message, one naming the sensor-moving joints never received.
        """
        self.messages += 1
        lines: List[str] = []
        bad = set(ignored)
        self.received.update(n for n in applied_names if n not in bad)
        for raw, applied in zip(received_names, applied_names):
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
