"""The node's kinematic inputs: joint states and free-body poses into the world, checked.

:class:`KinematicInputs` applies each ``joint_states`` message (after
``joint_name_map``, :mod:`.joint_names`) and each ``<b>/pose`` to the node's
``World`` and remembers the stamped configuration for the contacts of the same
step (:mod:`.body_transforms`).  A message that is empty, short, non-finite,
in another frame or rejected by the world is counted by reason through the
node's ``reject`` and changes nothing.  :meth:`KinematicInputs.follow` sets
what depends on the configured sensors: the joints a driver must send for each
sensor's body to move (reported when never received) and the bodies whose
transforms a step computes.  The node creates the subscriptions and forwards
their callbacks here.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping

import numpy as np
import torch
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from ..urdf import MOVABLE_JOINT_TYPES
from .body_transforms import BodyTransforms
from .joint_names import JointNameTracker, joints_moving
from .sensor_handle import SensorHandle
from .messages.stamps import stamp_to_ns


class KinematicInputs:
    """Joint states and free-body poses of a node's ``World``, and the transforms a step reads.

    Args:
        world: the node's ``World`` (changed in place).
        world_frame: the frame every pose must be in (an empty ``frame_id`` is taken as it).
        name_map: driver joint name -> URDF joint name (``joint_name_map``).
        dtype, device: of the body transforms a step reads.
        reject: the node's ``_reject(reason, detail)``: counts and logs a rejected message.
        logger: the node's logger (unknown joint names, warned once).

    Attributes:
        joint_names: the driver-name tracker (unknown names, sensor joints never received).
        transforms: the body transforms of a contacts message's own step.
    """

    def __init__(self, world: Any, world_frame: str, name_map: Mapping[str, str], dtype: torch.dtype,
                 device: torch.device, reject: Callable[..., None], logger: Any) -> None:
        self._world, self._world_frame = world, world_frame
        self._reject, self._log = reject, logger
        self.joint_names = JointNameTracker(name_map, {})
        self.transforms = BodyTransforms(world, dtype, device)

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
        self.transforms.remember(stamp_to_ns(msg.header.stamp))

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

    def follow(self, handles: Iterable[SensorHandle], contact_body_names: Iterable[str],
               free_bodies: Iterable[str]) -> None:
        """Watch the joints that move the sensors' bodies; compute only the bodies a step reads.

        Args:
            handles: the configured sensors.
            contact_body_names: the bodies of the contacts table.
            free_bodies: the free bodies whose poses go on ``/tf``.
        """
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
