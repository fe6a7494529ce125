"""A UR5e world from the published DH parameters (link frames = DH frames; ``base`` is the wrench frame),
with a Punyo bubble facing tool -y at an assumed offset; docs/real_data.md."""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import numpy as np

from vsf_sensor_ros.embedded_world import BUBBLE_HEIGHT, bubble_mesh
from vsf_sensor_ros.world import World

#: Universal Robots' published UR5e DH parameters: one ``(d, a, alpha)`` per joint (m, m, rad).
UR5E_DH: Tuple[Tuple[float, float, float], ...] = (
    (0.1625, 0.0, math.pi / 2), (0.0, -0.425, 0.0), (0.0, -0.3922, 0.0),
    (0.1333, 0.0, math.pi / 2), (0.0997, 0.0, -math.pi / 2), (0.0996, 0.0, 0.0))
#: URDF joint names, in the order the UR driver publishes them.
UR5E_JOINTS: List[str] = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                          "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
BASE_LINK = "base"
TOOL_LINK = "tool0"
UR5E_LINKS: List[str] = [BASE_LINK, "shoulder_link", "upper_arm_link", "forearm_link",
                         "wrist_1_link", "wrist_2_link", "wrist_3_link", TOOL_LINK]
PUNYO_BODY = "punyo"
#: Assumed distance (m) from the flange origin to the bubble's base plane, along tool −y.
PUNYO_MOUNT_OFFSET = 0.05
_LIMIT, _VELOCITY, _MASS = 2.0 * math.pi, math.pi, 1.0   # joint limits (rad, rad/s), nominal mass (unused)


def _inertial() -> str:
    return (f'<inertial><mass value="{_MASS}"/><origin xyz="0 0 0"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>')


def ur5e_urdf(dh: Sequence[Tuple[float, float, float]] = UR5E_DH, name: str = "ur5e") -> str:
    """URDF text of the arm (links :data:`UR5E_LINKS`, joints :data:`UR5E_JOINTS`), DH frames as above."""
    parts = [f'<?xml version="1.0"?>\n<robot name="{name}">']
    for link in UR5E_LINKS:
        body = "" if link == TOOL_LINK else _inertial()
        parts.append(f'  <link name="{link}">{body}</link>')
    prev = (0.0, 0.0, 0.0)                       # joint 1 sits on the base frame
    for i, joint in enumerate(UR5E_JOINTS):
        d, a, alpha = prev
        parts.append(
            f'  <joint name="{joint}" type="revolute">'
            f'<parent link="{UR5E_LINKS[i]}"/><child link="{UR5E_LINKS[i + 1]}"/>'
            f'<origin xyz="{a!r} 0 {d!r}" rpy="{alpha!r} 0 0"/><axis xyz="0 0 1"/>'
            f'<limit lower="{-_LIMIT!r}" upper="{_LIMIT!r}" effort="150" velocity="{_VELOCITY!r}"/></joint>')
        prev = dh[i]
    d, a, alpha = prev
    parts.append(f'  <joint name="flange" type="fixed"><parent link="{UR5E_LINKS[-2]}"/>'
                 f'<child link="{TOOL_LINK}"/><origin xyz="{a!r} 0 {d!r}" rpy="{alpha!r} 0 0"/></joint>')
    parts.append("</robot>\n")
    return "\n".join(parts)


def punyo_mount_transform(offset: float = PUNYO_MOUNT_OFFSET) -> np.ndarray:
    """Bubble body → ``tool0`` ``(4, 4)``: ``Rx(+π/2)`` (body ``+z`` → tool ``−y``), base plane
    ``offset`` m along tool ``−y``."""
    return np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, -offset], [0.0, 1.0, 0.0, 0.0],
                     [0.0, 0.0, 0.0, 1.0]])


def punyo_apex_local() -> np.ndarray:
    """The bubble's apex ``(3,)`` in the bubble's body frame (m): ``(0, 0, BUBBLE_HEIGHT)``."""
    return np.array([0.0, 0.0, BUBBLE_HEIGHT])


def ur5e_world() -> World:
    """The UR5e :class:`World` with the bubble on ``tool0``."""
    w = World.from_urdf(ur5e_urdf())
    w.attach_body(PUNYO_BODY, bubble_mesh(), TOOL_LINK, punyo_mount_transform())
    return w
