"""The TF ``sensor_node`` publishes for the frames it adds (``/tf_static``, ``/tf``); which frames
those are is :mod:`vsf_sensor_ros.rig.frames`'.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Set, Tuple

import numpy as np
from geometry_msgs.msg import TransformStamped

from ..rig.frames import FrameTable, free_instruction, world_frame_table
from ..rig.frames import sensor_frame_name, sensor_frame_transform  # noqa: F401 -- re-exported
from ..transforms import xyz_quat_from_transform
from .messages.stamps import copy_stamp

try:
    # no ROS 2 wheel has it: on the pip path make venv builds it (needs a compiler); without it
    # the node only names the frames a user must provide (FramePublisher)
    from tf2_msgs.msg import TFMessage
except ImportError:
    TFMessage = None  # type: ignore[assignment,misc]


def transform_msg(parent: str, child: str, T: np.ndarray, stamp: Any) -> TransformStamped:
    """A ``geometry_msgs/TransformStamped`` of the ``(4, 4)`` child -> parent transform ``T``."""
    xyz, q = xyz_quat_from_transform(np.asarray(T, dtype=np.float64))
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = copy_stamp(stamp), parent, child
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = (float(v) for v in xyz)
    r.x, r.y, r.z, r.w = (float(v) for v in q)
    return msg


class FramePublisher:
    """Announces the node's frames on ``/tf_static`` and ``/tf`` (``frame_prefix`` on each), or
    names them once in the log; :attr:`table` keeps the bare names."""

    def __init__(self, node: Any, publish_tf: bool, world_frame: str, world: Any,
                 frame_prefix: str = "") -> None:
        self._node, self._world, self._world_frame, self._prefix = node, world, world_frame, frame_prefix
        self.enabled = bool(publish_tf) and TFMessage is not None
        self._wanted = bool(publish_tf)
        self.table: Optional[FrameTable] = None
        self._told: Set[Tuple[str, str]] = set()
        self._static_pub = self._dynamic_pub = None
        if self.enabled:
            # (QoSProfile's defaults: keep last, reliable, volatile)
            from rclpy.qos import DurabilityPolicy, QoSProfile
            self._static_pub = node.create_publisher(
                TFMessage, "/tf_static", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
            self._dynamic_pub = node.create_publisher(TFMessage, "/tf", QoSProfile(depth=100))

    def refresh(self, layouts: Iterable[Any]) -> FrameTable:
        """Recompute the table for the current sensors; publish the static set on ``/tf_static``
        when it changed, or else log the command lines of the frames not told before."""
        table, p = world_frame_table(self._world, self._world_frame, layouts), self._prefix
        changed = not table.same_static(self.table)
        self.table = table
        if self.enabled:
            if changed and table.static:
                now = self._node.get_clock().now().to_msg()
                self._static_pub.publish(TFMessage(transforms=[
                    transform_msg(p + t.parent, p + t.child, t.T, now) for t in table.static]))
            return table
        lines = []
        for key in [(t.child, t.command(p)) for t in table.static] + [
                (b, free_instruction(p + b, p + f)) for b, f in table.free.items()]:
            if key not in self._told:   # each frame once, again only when it changes
                self._told.add(key)
                lines.append(key[1])
        if lines:
            # info, not a warning: tf2_msgs is missing only from a pip install built without a
            # compiler, which has no rviz to serve either; the lines are for a user who brings one
            head = ("cannot publish TF: tf2_msgs is not importable (a ROS install has it; on the pip "
                    "path make venv builds it, which needs gcc, g++ and cmake)" if self._wanted
                    else "publish_tf is false")
            self._node.get_logger().info("\n  ".join(
                [f"{head}; frames the node stamps that a TF tree must provide:", *lines]))
        return table

    def on_step(self, stamp: Any, body_transforms: Dict[str, Any]) -> None:
        """``/tf`` for every free body, stamped ``stamp`` (the contacts'), of the step's body ->
        world ``(4, 4)`` ``body_transforms`` (tensors or arrays)."""
        if not self.enabled or self.table is None or not self.table.free:
            return
        msgs = [transform_msg(self._prefix + parent, self._prefix + body,
                              T.numpy(force=True) if hasattr(T, "detach") else T, stamp)
                for body, parent in self.table.free.items() if (T := body_transforms.get(body)) is not None]
        if msgs:
            self._dynamic_pub.publish(TFMessage(transforms=msgs))
