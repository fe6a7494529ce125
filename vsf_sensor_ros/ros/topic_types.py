"""Which other message types are published on a topic a node subscribes, from the ROS graph: a
subscription of the wrong type receives nothing and rclpy says nothing (docs/interface.md)."""
from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

from rclpy.node import Node


def type_name(cls: type) -> str:
    """The ROS graph's name of message class ``cls``, e.g. ``sensor_msgs/msg/Image``."""
    return f"{cls.__module__.split('.')[0]}/msg/{cls.__name__}"


def foreign_publishers(node: Node, topic: str, expected: str) -> List[Tuple[str, str]]:
    """Sorted ``(publisher node's fully qualified name, message type)`` of the publishers on
    ``topic`` (as ``node`` subscribes it) whose type is not ``expected`` (:func:`type_name`'s
    spelling); the name is ``""`` while discovery has not told it yet."""
    infos = node.get_publishers_info_by_topic(node.resolve_topic_name(topic))
    return sorted({("" if i.node_name.startswith("_NODE_NAME_UNKNOWN") else
                    f"{i.node_namespace.rstrip('/')}/{i.node_name}", i.topic_type)
                   for i in infos if i.topic_type != expected})


def wrong_type_message(topic: str, expected: str, foreign: List[Tuple[str, str]]) -> str:
    """``<topic> carries <type> (from <node>), not <expected>``; empty when ``foreign`` is empty."""
    if not foreign:
        return ""
    offered = ", ".join(f"{t} (from {n})" if n else t for n, t in foreign)
    return f"{topic} carries {offered}, not {expected}"


# Distinct problems remembered as logged (the oldest are forgotten first): publishers of wrong
# types coming and going under new node names must not grow the node's memory without bound.
MAX_REMEMBERED = 256

#: s a wrong-type problem waits for discovery to name the publisher's node before it is logged unnamed
NAME_WAIT_S = 3.0


class WrongTypeWatch:
    """Callable ``(stream) -> str``: the wrong-type sentence for a silent input, or ``""``; each
    distinct problem logged once at WARN on ``logger`` (waiting up to :data:`NAME_WAIT_S` for a
    publisher's node name discovery has not told yet).  ``node``: whose graph view is asked."""

    def __init__(self, node: Node, logger: Any) -> None:
        self._node, self._logger = node, logger
        self._logged: Dict[Tuple[str, str, Tuple[Tuple[str, str], ...]], None] = {}
        self._waited: Dict[Tuple[str, str, Tuple[str, ...]], float] = {}

    def __call__(self, stream: Any) -> str:
        """:func:`wrong_type_message` of ``stream`` (its resolved topic and expected type)."""
        foreign = foreign_publishers(self._node, stream.topic, stream.type_name)
        text = wrong_type_message(stream.topic, stream.type_name, foreign)
        key = (stream.topic, stream.type_name, tuple(foreign))
        if not text or key in self._logged:
            return text
        types = (stream.topic, stream.type_name, tuple(t for _, t in foreign))
        if any(not name for name, _ in foreign):
            # discovery usually names the publisher's node within a second, a busy host within a few
            now = time.monotonic()
            if types not in self._waited:
                _remember(self._waited, types, now)
            if now - self._waited[types] < NAME_WAIT_S:
                return text
        _remember(self._logged, key)
        self._logger.warning(f"no {stream.type_name} on {stream.topic}: {text} (a subscription and a "
                             "publisher of different types never connect)")
        return text


def _remember(seen: Dict[Any, Any], key: Any, value: Any = None) -> None:
    """Add ``key`` (with ``value``) to the insertion-ordered ``seen``, forgetting the oldest beyond
    MAX_REMEMBERED."""
    seen[key] = value
    while len(seen) > MAX_REMEMBERED:
        del seen[next(iter(seen))]
