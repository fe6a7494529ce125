"""``link_frames_node``: the URDF's link frames on TF by robot_state_publisher's rules (the pip path has
none), from the package's ``World``; docs/demo.md."""
from __future__ import annotations

import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from vsf_sensor_ros.ros.frames import TFMessage, transform_msg
from vsf_sensor_ros.ros.main import parameter_usage, run_node, spin_node, user_args
from vsf_sensor_ros.ros.scene import build_world
from vsf_sensor_ros.urdf import MOVABLE_JOINT_TYPES

USAGE = "python -m vsf_sensor_ros.demo.link_frames_node --ros-args -p robot_description_path:=arm.urdf"


def joint_edges(world) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """``(fixed, movable)`` lists of ``(parent link, child link)`` of the world's URDF joints."""
    fixed, movable = [], []
    for j in world.joints:
        (movable if j.type in MOVABLE_JOINT_TYPES else fixed).append((j.parent, j.child))
    return fixed, movable


def relative_transforms(world, edges) -> Dict[Tuple[str, str], np.ndarray]:
    """``(parent, child) -> (4, 4)`` child -> parent now; a link the world dropped is at the identity."""
    known = set(world.body_names)

    def T(link: str) -> np.ndarray:
        return world.body_transform(link) if link in known else np.eye(4)
    return {(p, c): np.linalg.solve(T(p), T(c)) for p, c in edges}


class LinkFramesNode(Node):
    """Publishes the URDF link frames.  Raises RuntimeError without ``tf2_msgs``, ConfigError (naming
    the parameter) when the URDF cannot be loaded."""

    def __init__(self) -> None:
        super().__init__("link_frames_node")
        if TFMessage is None:
            raise RuntimeError("tf2_msgs is not importable (make venv builds it)")
        from rcl_interfaces.msg import ParameterDescriptor
        p = {name: self.declare_parameter(name, "", ParameterDescriptor(read_only=True)).value
             for name in ("robot_description", "robot_description_path", "assets_dir", "frame_prefix")}
        self._prefix = str(p["frame_prefix"])
        self.world = build_world(p["robot_description"], p["robot_description_path"], p["assets_dir"])
        self._fixed, self._movable = joint_edges(self.world)
        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_static = self.create_publisher(TFMessage, "/tf_static", latched)
        self.pub_tf = self.create_publisher(TFMessage, "/tf", 100)
        now = self.get_clock().now().to_msg()
        self.pub_static.publish(self._message(relative_transforms(self.world, self._fixed), now))
        self.sub = self.create_subscription(JointState, "joint_states", self._on_joint_state, 100)
        self.get_logger().info(f"link frames: {len(self._fixed)} fixed on /tf_static, {len(self._movable)} "
                               f"movable on /tf from joint_states")

    def _message(self, rel: Dict[Tuple[str, str], np.ndarray], stamp) -> "TFMessage":
        p = self._prefix
        return TFMessage(transforms=[transform_msg(p + a, p + b, T, stamp) for (a, b), T in rel.items()])

    def _on_joint_state(self, msg: JointState) -> None:
        if not self._movable:
            return
        n = min(len(msg.name), len(msg.position))
        pos = [float(v) for v in msg.position[:n]]
        if not all(np.isfinite(pos)):
            return      # robot_state_publisher ignores such a message as well
        self.world.set_joint_positions(list(msg.name[:n]), pos)
        stamp = msg.header.stamp
        if stamp.sec == 0 and stamp.nanosec == 0:
            stamp = self.get_clock().now().to_msg()
        self.pub_tf.publish(self._message(relative_transforms(self.world, self._movable), stamp))


def usage():
    """The ``-h`` / ``--help`` parser: every parameter with its default, an example."""
    return parameter_usage(
        "link_frames_node", "The URDF's link frames on /tf_static (fixed joints) and /tf (moving joints, "
        "from joint_states), as robot_state_publisher publishes them; no URDF: the embedded arm.",
        [("robot_description", "", "URDF text"),
         ("robot_description_path", "", "URDF file (used when robot_description is empty)"),
         ("assets_dir", "", "base of relative mesh paths"),
         ("frame_prefix", "", "prepended to every frame (as robot_state_publisher's)")],
        [USAGE])


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point: ``--help`` prints usage; else spin until Ctrl-C or SIGTERM (0; 2: bad config)."""
    argv = list(sys.argv if args is None else args)
    try:
        usage().parse_known_args(user_args(argv))   # exits 0 after printing for -h / --help
    except SystemExit as exc:
        return int(exc.code or 0)
    # spin_node's short waits let SIGTERM's handler run (rclpy.spin waits in C++ and never returns)
    return run_node("link_frames_node", LinkFramesNode, args, spin=spin_node,
                    config_errors=(ValueError, FileNotFoundError, RuntimeError))


if __name__ == "__main__":
    sys.exit(main())
