"""Which other message types are published on a topic a node subscribes (read from the ROS graph).

A subscription of the wrong type receives nothing and rclpy says nothing, so the nodes ask the
graph to name the type really published, and by whom (docs/interface.md, diagnostics).
"""
from __future__ import annotations

from typing import List, Tuple

from rclpy.node import Node

__all__ = ["foreign_publishers", "type_name", "wrong_type_message"]


def type_name(cls: type) -> str:
    """The ROS graph's name of message class ``cls``, e.g. ``sensor_msgs/msg/Image``."""
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


def foreign_publishers(node: Node, topic: str, expected: str) -> List[Tuple[str, str]]:
    """Publishers on ``topic`` whose message type is not ``expected``.

    Args:
        node: any node of the graph (its name and namespace resolve a relative ``topic``).
        topic: the topic as the node subscribes it (relative, ``~`` or absolute).
        expected: the type the node subscribes, as :func:`type_name` spells it.

    Returns:
        Sorted ``(publisher node's fully qualified name, message type)`` pairs; empty when every
        publisher on the topic (or none) has the expected type.  The name is ``""`` while the
        graph has not learnt it yet (discovery sends a publisher's type before its node's name).
    """
    full = node.resolve_topic_name(topic)
    out = set()
    for info in node.get_publishers_info_by_topic(full):
        if info.topic_type != expected:
            out.add((_node_of(info), info.topic_type))
    return sorted(out)


def _node_of(info) -> str:
    """``/ns/name`` of a TopicEndpointInfo's node, ``""`` while discovery has not named it."""
    if info.node_name.startswith("_NODE_NAME_UNKNOWN"):
        return ""
    return f"{info.node_namespace.rstrip('/')}/{info.node_name}"


def wrong_type_message(topic: str, expected: str, foreign: List[Tuple[str, str]]) -> str:
    """One line naming the topic, the expected type and what is published instead, e.g.
    ``/camera/depth/image_rect_raw carries sensor_msgs/msg/CompressedImage (from /camera), not
    sensor_msgs/msg/Image``; empty when ``foreign`` is empty."""
    if not foreign:
        return ""
    offered = ", ".join(f"{t} (from {n})" if n else t for n, t in foreign)
    return f"{topic} carries {offered}, not {expected}"
