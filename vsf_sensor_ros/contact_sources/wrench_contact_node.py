"""``wrench_contact_node``: contacts for ``sensor_node`` from a wrist wrench and the joint states.

The ROS adapter of :mod:`vsf_sensor_ros.contact_sources.wrench_contacts`, for a real rig with an F/T sensor
and no simulator; topics, service, diagnostics and parameters: docs/real_data.md and ``--help``.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.diagnostics import make_status
from vsf_sensor_ros.ros.kinematics import parse_joint_name_map
from vsf_sensor_ros.ros.main import answer_help, parameter_usage, run_node
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.readings import make_header
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp, stamp_to_ns
from vsf_sensor_ros.contact_sources.wrench_contacts import WrenchContactConfig, WrenchContactSource
from vsf_sensor_ros.urdf import MOVABLE_JOINT_TYPES
from vsf_sensor_ros.world import World

# name -> (default, description)
PARAMS = {
    "robot_description": ("", "URDF text of the robot (or give robot_description_path); required"),
    "robot_description_path": ("", "URDF file of the robot, used when robot_description is empty"),
    "world_frame": ("world", "frame of the published contact points and forces"),
    "contact_body_names": ([""], "body table shared with sensor_node (body1/body2 index it); must hold body "
                                 "and other_body"),
    "body": ("punyo", "body the contact acts on (the sensor's body, e.g. the Punyo)"),
    "other_body": ("", "the body pressing on it (row body2)"),
    "body_parent": ("", "link the body is fixed to; empty = body is a URDF link"),
    "body_transform": (np.eye(4).reshape(-1).tolist(), "16 floats, row-major body -> body_parent transform"),
    "contact_point": ([0.0, 0.0, 0.0], "contact point in the body frame (m)"),
    "wrench_frame": ("", "frame of the wrench (empty: the message's frame_id)"),
    "force_sign": (1.0, "+1: the wrench is the force on the body; -1: the force the body applies"),
    "time_shift": (0.0, "s >= 0: how much the wrench lags behind the joint states"),
    "bias_samples": (10, "wrenches averaged by a bias tare"),
    "bias_on_start": (True, "the first bias_samples wrenches set the bias"),
    "min_force": (0.0, "deadband (N): smaller forces publish an empty cloud"),
    "qos_depth": (100, "history depth of the (reliable) subscriptions and publisher"),
    "joint_name_map": ([""], "['driver:urdf', ...] JointState names -> URDF joint names (as sensor_node's)"),
}
DEFAULTS = {k: v[0] for k, v in PARAMS.items()}


def usage():
    """The ``-h`` / ``--help`` text: every parameter with its default."""
    return parameter_usage(
        "wrench_contact_node",
        "Contacts for sensor_node from a wrist wrench (wrench, geometry_msgs/WrenchStamped) and "
        "joint_states: one contact on body at contact_point carrying the measured force, published on "
        "contacts (sensor_msgs/PointCloud2) per joint state; service ~/tare sets the force bias.",
        [(k, v[0], v[1]) for k, v in PARAMS.items()],
        ["ros2 run vsf_sensor_ros wrench_contact_node --ros-args --params-file "
         "config/wrench_contact_node.yaml -p robot_description_path:=robot.urdf"])


class WrenchContactNode(Node):
    """Wiring only: parameters → :class:`WrenchContactSource`; messages in, clouds out."""

    def __init__(self, **kwargs: Any) -> None:
        """``kwargs`` go to ``rclpy.node.Node`` (e.g. ``context``, ``parameter_overrides``).

        Raises ValueError / FileNotFoundError on a configuration error (named)."""
        super().__init__("wrench_contact_node", **kwargs)
        p = self.p = {k: self.declare_parameter(k, v).value for k, v in DEFAULTS.items()}
        urdf = p["robot_description"] or p["robot_description_path"]
        if not urdf:
            raise ValueError("parameter 'robot_description' or 'robot_description_path' is required")
        world = World.from_urdf(urdf)
        # driver -> URDF joint names (unmapped names pass through; the world ignores unknown ones)
        self.joint_name_map = parse_joint_name_map([e for e in p["joint_name_map"] if e.strip()],
                                                   [j.name for j in world.joints
                                                    if j.type in MOVABLE_JOINT_TYPES])
        self.body_names = [n for n in p["contact_body_names"] if n]
        for key in ("body", "other_body"):
            if p[key] not in self.body_names:
                raise ValueError(f"parameter '{key}' = {p[key]!r} is not in contact_body_names "
                                 f"{self.body_names}")
        # the config's fields are parameters of the same names (it checks them and makes the arrays)
        cfg = WrenchContactConfig(**{k: p[k] for k in WrenchContactConfig.__dataclass_fields__ if k in p})
        self.source = WrenchContactSource(world, cfg)
        qos = QoSProfile(depth=int(p["qos_depth"]), reliability=ReliabilityPolicy.RELIABLE)
        self.pub = self.create_publisher(PointCloud2, "contacts", qos)
        self._topics = {
            "joint_states": self.create_subscription(JointState, "joint_states", self._on_joint_state,
                                                     qos).topic_name,
            "wrench": self.create_subscription(WrenchStamped, "wrench", self._on_wrench, qos).topic_name}
        self.create_service(Trigger, "~/tare", self._on_tare)
        self.published = 0
        self._zero_log = functools.lru_cache(maxsize=None)(self.get_logger().get_child)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(1.0, self._publish_diagnostics)

    def _publish(self, ready: list) -> None:
        for t, contacts in ready:
            self.pub.publish(contacts_to_pointcloud2(contacts, self.body_names, ns_to_stamp(round(t * 1e9)),
                                                     self.p["world_frame"]))
            self.published += 1

    def _on_joint_state(self, msg: JointState) -> None:
        m = self.joint_name_map
        names = [m.get(n, n) for n in msg.name] if m else list(msg.name)
        zero = self.source.zero_stamps["joint_states"]
        ready = self.source.on_joint_state(stamp_to_ns(msg.header.stamp) * 1e-9, names, list(msg.position))
        self._warn_zero_stamp("joint_states", zero)
        self._publish(ready)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        before, zero = self.source.rejected_wrenches, self.source.zero_stamps["wrench"]
        ready = self.source.on_wrench(stamp_to_ns(msg.header.stamp) * 1e-9, msg.header.frame_id,
                                      [f.x, f.y, f.z])
        if not self._warn_zero_stamp("wrench", zero) and self.source.rejected_wrenches > before:
            self.get_logger().warning(f"wrench rejected ({self.source.rejected_wrenches} so far): "
                                      f"{self.source.last_error}", throttle_duration_sec=5.0)
        self._publish(ready)

    def _warn_zero_stamp(self, key: str, before: int) -> bool:
        """Log (throttled per input) a message of input ``key`` just rejected for its zero stamp."""
        n = self.source.zero_stamps[key]
        if n == before:
            return False
        # a logger per input, kept (rclpy throttles per logger object): one input's warnings do not hide the
        # other's
        self._zero_log(f"zero_stamp.{key}").warning(
            f"{self._topics[key]}: message stamped 0 rejected ({n} so far): {self.source.last_error}",
            throttle_duration_sec=5.0)
        return True

    def _publish_diagnostics(self) -> None:
        src = self.source
        zero = {self._topics[k]: n for k, n in src.zero_stamps.items()}
        values = [("published", self.published), ("rejected_wrenches", src.rejected_wrenches),
                  ("dropped_pending", src.dropped_pending),
                  *((f"zero_stamps.{t}", n) for t, n in zero.items()), ("last_rejection", src.last_error)]
        bad = [f"{topic} ({n})" for topic, n in zero.items() if n]
        status = make_status(self.get_fully_qualified_name(), self.get_name(), values,
                             ["messages stamped 0 rejected on " + ", ".join(bad)] if bad else [], "ok")
        self.diag_pub.publish(DiagnosticArray(header=make_header(self.get_clock().now().to_msg(), ""),
                                              status=[status]))

    def _on_tare(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.source.bias.tare()
        return response


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point (:func:`vsf_sensor_ros.ros.main.run_node`): 0 on Ctrl-C / shutdown, 2 on a
    configuration error; ``-h`` / ``--help`` prints :func:`usage` and returns 0 without touching ROS."""
    argv = list(sys.argv if args is None else args)
    answer_help(argv, usage())   # before rclpy.init: a help request creates no participant
    return run_node("wrench_contact_node", WrenchContactNode, args,
                    config_errors=(ValueError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
