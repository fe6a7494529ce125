"""``membrane_force_node``'s inputs as its user sees them: what it subscribes, what it still waits
for, what is published on them in another type, and the line that says it is ready.

Every input is named the same way everywhere (log, ``/diagnostics``): its message type as the ROS
graph spells it and its resolved topic, ``sensor_msgs/msg/CameraInfo on /camera/depth/camera_info``.

* :func:`missing_inputs`: the inputs the node still waits for (no usable CameraInfo, no frame yet,
  no usable pressure yet); :func:`waiting_text` joins them into the ``/diagnostics`` message.
* :class:`InputWatch`, asked once per diagnostics period: the waiting line to log (once per input,
  after :data:`WAIT_WARN_S` s: a driver that is still starting is not a fault), and the inputs on
  which the graph shows a publisher of another message type (nothing of it ever arrives, and
  rclpy says nothing), each logged once per distinct problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from rclpy.node import Node

from .messages.camera import PRESSURE_TYPES
from .topic_types import foreign_publishers, type_name, wrong_type_message

__all__ = ["Input", "InputWatch", "NAME_WAIT_S", "WAIT_WARN_S", "inputs_text", "missing_inputs",
           "pressure_type_hints", "ready_text", "waiting_text"]

#: s after start from which a still-missing input is logged (once) at WARN; /diagnostics names it at once
WAIT_WARN_S = 5.0
#: s a wrong-type problem waits for discovery to name the publishing node before it is logged unnamed
NAME_WAIT_S = 2.0


@dataclass(frozen=True)
class Input:
    """One subscription of the node.

    Attributes:
        topic: the resolved topic name (``/camera/depth/camera_info``).
        type_name: its message type as the graph spells it (``sensor_msgs/msg/CameraInfo``).
        note: shown after it in the inputs line (``colour, optional``), or ''.
        hints: a message type published there instead -> the setting that would read it
            (``set pressure_type: std_msgs/msg/Float64``).
    """

    topic: str
    type_name: str
    note: str = ""
    hints: Dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def text(self) -> str:
        """``sensor_msgs/msg/CameraInfo on /camera/depth/camera_info``."""
        return f"{self.type_name} on {self.topic}"


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def inputs_text(inputs: Sequence[Input]) -> str:
    """Every input, ``TYPE on TOPIC`` (with its note in parentheses), comma-separated."""
    return ", ".join(i.text() + (f" ({i.note})" if i.note else "") for i in inputs)


def missing_inputs(camera_info: Input, frames: Input, pressure: Input, *, camera_ready: bool,
                   camera_infos: int, camera_info_rejection: str, frames_received: int,
                   pressure_known: bool, pressures_rejected: int, pressure_rejection: str
                   ) -> List[Tuple[Input, str]]:
    """The inputs the node still waits for, in the order they are needed, each with its sentence.

    Args:
        camera_info, frames, pressure: the three inputs the estimate needs (the colour is optional).
        camera_ready: an estimator was built from a CameraInfo.
        camera_infos: CameraInfo messages received; camera_info_rejection: the reason the last
            one was refused ('' when none was).
        frames_received: depth frames or clouds received (used or not).
        pressure_known: a usable pressure arrived; pressures_rejected: pressures refused so far,
            pressure_rejection: the reason of the last one.

    Returns:
        ``(input, sentence)`` pairs, e.g. ``sensor_msgs/msg/Image on /camera/depth/image_rect_raw`` or
        ``a usable std_msgs/msg/Float32 on /punyo/pressure (1 rejected, the last as
        implausible_pressure)``; empty when nothing is missing.
    """
    out: List[Tuple[Input, str]] = []
    if not camera_ready:
        out.append((camera_info, camera_info.text() if not camera_infos else
                    f"a usable {camera_info.text()} ({camera_infos} received, the last rejected as "
                    f"{camera_info_rejection or 'unusable'})"))
    if not frames_received:
        out.append((frames, frames.text()))
    if not pressure_known:
        out.append((pressure, pressure.text() if not pressures_rejected else
                    f"a usable {pressure.text()} ({pressures_rejected} rejected, the last as "
                    f"{pressure_rejection or 'unusable'})"))
    return out


def pressure_type_hints(ptype: str, scale: float) -> Dict[str, str]:
    """For :attr:`Input.hints` of the pressure: each other ``pressure_type`` -> the setting that reads
    it (``sensor_msgs/msg/FluidPressure`` is in Pa: its scale is 1).

    Args:
        ptype: the node's ``pressure_type``, normalised (``std_msgs/msg/Float32``).
        scale: its ``pressure_scale``.
    """
    hints = {t: f"set pressure_type: {t}" for t in PRESSURE_TYPES if t != ptype}
    fluid = "sensor_msgs/msg/FluidPressure"
    if fluid in hints and scale != 1.0:
        hints[fluid] += " and pressure_scale: 1.0 (its unit is Pa)"
    return hints


def waiting_text(missing: Sequence[Tuple[Input, str]]) -> str:
    """``waiting for A on /a, B on /b and C on /c`` for :func:`missing_inputs`' answer ('' for none)."""
    return "waiting for " + _join([text for _, text in missing]) if missing else ""


def ready_text(reference: str, outputs: Sequence[Tuple[str, Any]], frame_id: str) -> str:
    """The line logged when a reference is set: ``ready: reference <reference>; publishing the
    dense force on /membrane_force (sensor_msgs/msg/PointCloud2), ... , frame_id 'punyo'``.

    Args:
        reference: the reference's description (``set from 10 frames, 106583 Pa, start-up 130 ms``).
        outputs: (what, its rclpy publisher) in the order to name them.
        frame_id: the outputs' frame_id.
    """
    named = [f"{what} on {pub.topic_name} ({type_name(pub.msg_type)})" for what, pub in outputs]
    return f"ready: reference {reference}; publishing {_join(named)}, frame_id {frame_id!r}"


class InputWatch:
    """What to say of the node's inputs, once per diagnostics period (see the module text).

    Args:
        node: the node whose graph view finds the publishers.
        inputs: its subscriptions.
        started: monotonic time (s) the node started.
    """

    def __init__(self, node: Node, inputs: Sequence[Input], started: float) -> None:
        self.node = node
        self.inputs = list(inputs)
        self.started = started
        self._waited: Set[str] = set()                       # topics whose wait was logged
        self._logged: Set[Tuple[str, Tuple[str, ...]]] = set()   # (topic, foreign types) logged
        self._first_seen: Dict[Tuple[str, Tuple[str, ...]], float] = {}

    def waiting_log(self, now: float, missing: Sequence[Tuple[Input, str]]) -> Optional[str]:
        """The WARN line to log now: the missing inputs not yet logged, once ``now`` is
        :data:`WAIT_WARN_S` s or more after start; None when there is nothing new to say."""
        if now - self.started < WAIT_WARN_S:
            return None
        new = [(i, text) for i, text in missing if i.topic not in self._waited]
        if not new:
            return None
        self._waited.update(i.topic for i, _ in new)
        return f"{waiting_text(new)} ({now - self.started:.0f} s since start)"

    def wrong_types(self, now: float) -> Tuple[List[str], List[str]]:
        """Publishers of another message type on the node's inputs, read from the graph now.

        Returns:
            ``(problems, to_log)``: one :func:`~.topic_types.wrong_type_message` per input that has
            any (for ``/diagnostics``), and the WARN lines to log now: each distinct problem (a
            topic and the set of foreign types) once, when discovery has named the publishing
            nodes or :data:`NAME_WAIT_S` s after it was first seen.
        """
        problems: List[str] = []
        to_log: List[str] = []
        for i in self.inputs:
            foreign = foreign_publishers(self.node, i.topic, i.type_name)
            if not foreign:
                continue
            line = wrong_type_message(i.topic, i.type_name, foreign)
            problems.append(line)
            key = (i.topic, tuple(sorted({t for _, t in foreign})))
            first = self._first_seen.setdefault(key, now)
            named = all(n for n, _ in foreign)
            if key not in self._logged and (named or now - first >= NAME_WAIT_S):
                self._logged.add(key)
                hints = [i.hints[t] for t in key[1] if t in i.hints]
                to_log.append(f"{line}: none of it reaches this node"
                              + (f" ({'; '.join(hints)})" if hints else ""))
        return problems, to_log
