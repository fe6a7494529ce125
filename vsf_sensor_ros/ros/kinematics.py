"""Joint states (decoded from CDR bytes), free-body poses, and driver joint names (a driver's
``joint_1`` for the URDF's ``Actuator1`` matches nothing: unknown and missing names are reported,
``joint_name_map`` renames them); the transform history is :mod:`vsf_sensor_ros.rig.kinematics`."""
from __future__ import annotations

import struct
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Sequence, Tuple

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from ..rig.kinematics import BodyTransforms, JointNameTracker, joints_moving
from ..urdf import MOVABLE_JOINT_TYPES, JointNameMapError
from ..urdf import parse_joint_name_map as _parse_joint_name_map
from .messages.stamps import stamp_to_ns
from .messages.wire import RawHeader, Reader, cached_section
from .parameter_table import ConfigError
from .sensor_handle import SensorHandle


class RawJointState(NamedTuple):
    """``sensor_msgs/JointState`` decoded from CDR: ``position``, ``velocity``, ``effort`` float64
    read-only views on the received bytes (rad or m, rad/s or m/s, N·m or N), each possibly empty."""
    header: RawHeader
    name: List[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


_EMPTY_F8 = np.frombuffer(b"", dtype=np.float64)   # read-only
_JOINT_NAMES: List[Any] = [None]   # the last names section (wire.cached_section)


def _float64s(r: Reader, what: str) -> np.ndarray:
    r.what = what
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
    """A serialised ``sensor_msgs/JointState`` (trailing bytes ignored) as a :class:`RawJointState`;
    CdrDecodeError naming the field and byte offset."""
    r = Reader(data, "JointState")
    try:
        header = r.header()
        r.what = "name"
        names = cached_section(_JOINT_NAMES, r, _names)
        return RawJointState(header, list(names), _float64s(r, "position"), _float64s(r, "velocity"),
                             _float64s(r, "effort"))
    except (struct.error, IndexError):
        raise r.fail() from None


# World.set_joint_positions' InputError.reason -> the rejection counter
_JOINT_REJECTS = {"empty": "joint_state_empty", "count": "joint_state_short", "not_finite": "non_finite"}


class KinematicInputs:
    """Joint states and free-body poses (in ``world_frame``) applied to ``world``, and the rig's
    ``transforms`` history; ``name_map``: driver -> URDF joint name; ``reject(reason, detail)``."""

    def __init__(self, world: Any, world_frame: str, name_map: Mapping[str, str], transforms: BodyTransforms,
                 reject: Callable[..., None], logger: Any) -> None:
        self._world, self._world_frame, self._reject, self._log = world, world_frame, reject, logger
        self.joint_names, self.transforms = JointNameTracker(name_map, {}), transforms

    def on_joint_state(self, msg: JointState) -> None:
        """One ``joint_states`` message: renamed, checked, applied whole or rejected whole."""
        names, pos = msg.name, np.asarray(msg.position, dtype=np.float64)   # names only read
        applied = self.joint_names.rename(names)
        try:   # the world checks the count and finiteness (nothing applied): counted by its reason
            ignored = self._world.set_joint_positions(applied, pos)
        except ValueError as exc:
            reason = _JOINT_REJECTS.get(getattr(exc, "reason", ""), "joint_state_invalid")
            # the world names URDF joints: say which names the driver sent for a mapped one
            sent = [n for n, a in zip(names, applied) if n != a and a in (getattr(exc, "argument", None),
                                                                          getattr(exc, "value", None))]
            return self._reject(reason, f"{exc} (sent as {', '.join(map(repr, sent))})" if sent else str(exc))
        for line in self.joint_names.note(names, applied, ignored):
            self._log.warning(line)
        if ignored:     # a source is the joints of this robot it sets
            keep = [n not in ignored for n in applied]
            applied, pos = [n for n, k in zip(applied, keep) if k], pos[np.array(keep, dtype=bool)]
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
        stamp = stamp_to_ns(msg.header.stamp)
        old = self.transforms.remember_pose(body, stamp, T)
        if old is not None:
            self._log.warning(f"{body} pose stamp went backwards ({old * 1e-9:.9f} -> {stamp * 1e-9:.9f} s); "
                              "its source restarted (simulator reset?): its pose history cleared",
                              throttle_duration_sec=1.0)

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


def parse_joint_name_map(entries: Sequence[str], urdf_joints: Iterable[str],
                         parameter: str = "joint_name_map") -> Dict[str, str]:
    """:func:`vsf_sensor_ros.urdf.parse_joint_name_map` with the URDF's joints checked;
    ConfigError naming ``parameter`` and the offending entry."""
    try:
        return _parse_joint_name_map(entries, list(urdf_joints))
    except JointNameMapError as exc:
        raise ConfigError(parameter, exc.entry, exc.detail) from None
