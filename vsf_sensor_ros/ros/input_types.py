"""Why a silent input is silent, when the reason is a message type: asked of the ROS graph, logged once.

A publisher and a subscription of different types never connect and neither says so; this is
asked only for silent inputs, once per ``/diagnostics`` report (docs/interface.md, diagnostics).
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from rclpy.node import Node

from .input_health import StreamClock
from .topic_types import foreign_publishers, wrong_type_message

# Distinct problems remembered as logged (the oldest are forgotten first): publishers of wrong
# types coming and going under new node names must not grow the node's memory without bound.
MAX_REMEMBERED = 256


class WrongTypeWatch:
    """Callable ``(stream) -> str``: the wrong-type sentence for a silent input, or ``""``.

    Args:
        node: the node whose graph view is asked (it subscribes the streams).
        logger: where each distinct problem is logged once at WARN (an rclpy logger).

    Discovery may tell the graph a publisher's type before its node's name
    (:func:`~.topic_types.foreign_publishers` gives ``""`` for the name then): the log waits
    one report for the name, then logs what it has.  The returned sentence is always the
    current one.
    """

    def __init__(self, node: Node, logger: Any) -> None:
        self._node = node
        self._logger = logger
        self._logged: Dict[Tuple[str, str, Tuple[Tuple[str, str], ...]], None] = {}
        self._waited: Dict[Tuple[str, str, Tuple[str, ...]], None] = {}

    def __call__(self, stream: StreamClock) -> str:
        """The sentence for ``stream`` (its resolved topic and expected type), e.g.
        ``/joint_states carries std_msgs/msg/String (from /driver), not sensor_msgs/msg/JointState``;
        ``""`` when no publisher on the topic has another type."""
        foreign = foreign_publishers(self._node, stream.topic, stream.type_name)
        text = wrong_type_message(stream.topic, stream.type_name, foreign)
        if text:
            self._log_once(stream, foreign, text)
        return text

    def _log_once(self, stream: StreamClock, foreign: List[Tuple[str, str]], text: str) -> None:
        key = (stream.topic, stream.type_name, tuple(foreign))
        if key in self._logged:
            return
        types = (stream.topic, stream.type_name, tuple(t for _, t in foreign))
        if any(not name for name, _ in foreign) and types not in self._waited:
            _remember(self._waited, types)   # the node's name usually arrives by the next report
            return
        _remember(self._logged, key)
        self._logger.warning(f"no {stream.type_name} on {stream.topic}: {text} (a subscription and a "
                             "publisher of different types never connect)")


def _remember(seen: Dict[Any, None], key: Any) -> None:
    """Add ``key`` to the insertion-ordered ``seen``, forgetting the oldest beyond MAX_REMEMBERED."""
    seen[key] = None
    while len(seen) > MAX_REMEMBERED:
        del seen[next(iter(seen))]


__all__ = ["MAX_REMEMBERED", "WrongTypeWatch"]
