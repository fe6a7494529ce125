"""The frames ``sensor_node`` stamps and which of them it must announce on TF, so each resolves beside
robot_state_publisher with the same URDF (pure; docs/interface.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..transforms import xyz_quat_from_transform

#: suffix of a sensor's own frame: ``<s>_frame``
SENSOR_FRAME_SUFFIX = "_frame"
#: the node's fixed world body (see ``World``), identical to the URDF root link's frame
NODE_WORLD_BODY = "world"


def sensor_frame_name(sensor: str) -> str:
    """The frame ``<s>_frame`` that a sensor's reading is stamped with when it has one."""
    return f"{sensor}{SENSOR_FRAME_SUFFIX}"


def sensor_frame_transform(model: Any) -> Optional[np.ndarray]:
    """The model's ``reading_frame()`` (``(4, 4)`` sensor -> body), or None: values in the body frame."""
    frame = getattr(model, "reading_frame", None)
    return None if frame is None else frame()


@dataclass(frozen=True)
class FrameTransform:
    """One transform the node announces: ``parent``, ``child`` (the frame it adds), ``T`` ``(4, 4)`` float64
    child -> parent (m), ``why`` (for log lines, e.g. ``extra body``)."""

    parent: str
    child: str
    T: np.ndarray
    why: str

    def command(self, prefix: str = "") -> str:
        """A ``static_transform_publisher`` command line announcing this transform, ``prefix``
        (``frame_prefix``) on both frame names."""
        xyz, q = xyz_quat_from_transform(self.T)
        keys = ("x", "y", "z", "qx", "qy", "qz", "qw")
        # + 0.0 writes -0.0 as 0
        nums = " ".join(f"--{k} {float(v) + 0.0:.9g}" for k, v in zip(keys, [*xyz, *q]))
        return (f"ros2 run tf2_ros static_transform_publisher --frame-id {prefix}{self.parent} "
                f"--child-frame-id {prefix}{self.child} {nums}")


@dataclass
class FrameTable:
    """The frames of one configuration: ``static`` transforms announced on ``/tf_static`` (parents first),
    ``free`` bodies -> parent frame (on ``/tf`` every step)."""

    static: List[FrameTransform]
    free: Dict[str, str]

    def same_static(self, other: Optional["FrameTable"]) -> bool:
        """The static transforms equal ``other``'s (order kept; same frames, bit for bit the same ``T``)."""
        return other is not None and len(self.static) == len(other.static) and all(
            (a.parent, a.child) == (b.parent, b.child) and np.array_equal(a.T, b.T)
            for a, b in zip(self.static, other.static))


def free_instruction(body: str, parent: str) -> str:
    """How a user provides a free body's frame: a ``parent -> body`` broadcaster on ``/tf``."""
    return (f"{body}: a free body (pose on its pose topic, in {parent!r}); broadcast {parent} -> {body} "
            "on /tf from that PoseStamped topic")


def frame_table(world_frame: str, urdf_links: Iterable[str], urdf_root: str,
                bodies: Sequence[Tuple[str, Optional[str], Optional[np.ndarray]]],
                sensors: Sequence[Tuple[str, str, np.ndarray]]) -> FrameTable:
    """The frames a configuration stamps and announces.  ``bodies``: ``(name, parent or None when free,
    (4, 4) body -> parent)`` in attach order; ``sensors``: ``(frame, body, (4, 4) sensor -> body)``; a
    ``world_frame`` that is no URDF link gets an identity to ``urdf_root`` ("" = unknown).  ValueError: a
    fixed body without its transform, or one not ``(4, 4)``."""
    links = frozenset(urdf_links)
    static: List[FrameTransform] = []
    if world_frame not in links and urdf_root:
        static.append(FrameTransform(world_frame, urdf_root, np.eye(4), "world_frame at the URDF root"))

    def parent_frame(name: str) -> str:
        return world_frame if name == NODE_WORLD_BODY and name not in links else name

    free: Dict[str, str] = {}
    for name, parent, T in bodies:
        if parent is None:
            free[name] = world_frame
            continue
        if T is None:
            raise ValueError(f"body {name!r} is fixed to {parent!r} but has no transform")
        static.append(FrameTransform(parent_frame(parent), name, _matrix(T, name), "extra body"))
    for frame, body, T in sensors:
        static.append(FrameTransform(parent_frame(body), frame, _matrix(T, frame), "sensor frame"))
    return FrameTable(static, free)


def _matrix(T: Any, label: str) -> np.ndarray:
    M = np.array(T, dtype=np.float64)
    if M.shape != (4, 4):
        raise ValueError(f"transform of {label!r} must be 4x4, got shape {M.shape}")
    return M


def world_frame_table(world: Any, world_frame: str, sensors: Iterable[Any]) -> FrameTable:
    """:func:`frame_table` of the node's ``World``, ``world_frame`` and the sensors' layouts
    (``sensor_frame``, ``frame_id``, ``body_T_sensor``; those with a ``sensor_frame`` add it)."""
    bodies = [(b, world.body_parent(b), world.body_mount(b)) for b in world.attached_body_names]
    frames = [(lay.sensor_frame, lay.frame_id, lay.body_T_sensor) for lay in sensors if lay.sensor_frame]
    return frame_table(world_frame, world.urdf_link_names, world.urdf_root_link, bodies, frames)
