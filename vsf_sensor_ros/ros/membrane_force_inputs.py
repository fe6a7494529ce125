"""``membrane_force_node``'s inputs as its user sees them: what it waits for, wrong types, ready.

Every input is named the same way in the log and on ``/diagnostics`` (its type as the graph
spells it and its resolved topic), so a user can find it; the messages: docs/membrane_force.md.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
from rclpy.node import Node

from .messages.camera import PRESSURE_TYPES, InputRejected
from .topic_types import foreign_publishers, type_name, wrong_type_message

__all__ = ["Input", "InputWatch", "NAME_WAIT_S", "Pressures", "WAIT_WARN_S", "inputs_text", "missing_inputs",
           "no_colour_text", "pressure_type_hints", "pressures_text", "ready_text", "stamp_partners",
           "stopped_text", "waiting_text", "zero_stamp_text"]

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


def stamp_partners(stamped: bool, colour: bool) -> Dict[str, str]:
    """The inputs the node pairs by stamp -> what each is paired with.

    Args:
        stamped: the pressure type has a header (``FluidPressure``: pressure and frame pair by
            stamp; a bare number goes with every frame).
        colour: ``colour_topic`` is set (colour image and depth frame pair by stamp).

    Returns:
        Keys among ``frames``, ``colour``, ``pressure`` (the CameraInfo is never paired: the first
        usable one builds the estimator), e.g. ``{'frames': 'pressure and colour image', 'colour':
        'depth frame', 'pressure': 'depth frame'}``; empty when neither pairing is in use.
    """
    out: Dict[str, str] = {}
    partners = (["pressure"] if stamped else []) + (["colour image"] if colour else [])
    if partners:
        out["frames"] = _join(partners)
    if colour:
        out["colour"] = "depth frame"
    if stamped:
        out["pressure"] = "depth frame"
    return out


def zero_stamp_text(inp: Input, partner: str, count: int) -> str:
    """Why a message of ``inp`` stamped 0 is rejected, naming its topic and the way out: ``/punyo/pressure
    stamped 0 (2 so far): no time to pair it with its depth frame; set its driver's header stamps, or
    use a bare pressure_type (std_msgs/msg/Float32: the latest goes with each frame)``.

    Args:
        inp: the input (its topic is named).
        partner: what it pairs with (:func:`stamp_partners`).
        count: messages of it stamped 0 so far (this one included).
    """
    hint = "set its driver's header stamps"
    if partner == "depth frame" and inp.type_name == "sensor_msgs/msg/FluidPressure":
        hint += ", or use a bare pressure_type (std_msgs/msg/Float32: the latest goes with each frame)"
    return f"{inp.topic} stamped 0 ({count} so far): no time to pair it with its {partner}; {hint}"


def stopped_text(pressure: Input, age_s: float, stamped: bool, rejection: str = "",
                 collecting: bool = False) -> str:
    """The pressure stream that stopped, for ``/diagnostics``: ``std_msgs/msg/Float32 on
    /punyo/pressure stopped 2.3 s ago: frames are not estimated``; or, while its messages still come
    but are rejected, ``no usable std_msgs/msg/Float32 on /punyo/pressure for 2.3 s (the latest
    was rejected as implausible_pressure: ...): frames are not estimated``.

    Args:
        pressure: the pressure input.
        age_s: s of receive time since its latest usable message.
        stamped: a stamped type (``FluidPressure``): frames wait for the pressure of their stamp
            (and are dropped as ``no_pressure`` once ``qos_depth`` wait) instead of being rejected
            as ``stale_pressure``.
        rejection: ``reason: text`` of the latest pressure message rejected since the latest usable
            one, ``""`` when none was.
        collecting: a reference is being collected (its frames are not collected, rather than
            not estimated).
    """
    done = "collected for the reference" if collecting else "estimated"
    what = f"frames wait for their pressure and are not {done}" if stamped else f"frames are not {done}"
    if rejection:
        return (f"no usable {pressure.text()} for {age_s:.1f} s (the latest was rejected as {rejection}): "
                f"{what}")
    return f"{pressure.text()} stopped {age_s:.1f} s ago: {what}"


class Pressures:
    """The bubble pressures received, and the one a frame is estimated with.

    A bare number (``Float32`` / ``Float64``) has no stamp: the latest goes with every frame, while
    it is at most ``timeout_s`` old in receive time (a stream that stopped is no pressure of now).
    A stamped one (``FluidPressure``) pairs with the frame stamped within ``tolerance_s``; a frame
    whose pressure has not come yet waits (the caller keeps it).

    Args:
        pressure: the pressure input (named in messages).
        stamped: the type has a header.
        tolerance_s: ``pressure_tolerance``, s of stamp.
        timeout_s: ``pressure_timeout``, s of receive time; 0 = never stale.
        history: stamped pressures kept for pairing.

    Attributes:
        latest: the latest usable pressure, Pa absolute (None before one came).
        received_at: its receive time, monotonic s (None before one came).
        by_stamp: ``(stamp ns, Pa)`` of the latest ``history`` stamped pressures.
    """

    def __init__(self, pressure: Input, stamped: bool, tolerance_s: float, timeout_s: float,
                 history: int = 500) -> None:
        self.input, self.stamped = pressure, stamped
        self.tolerance_ns, self.timeout_s = int(tolerance_s * 1e9), float(timeout_s)
        self.latest: Optional[float] = None
        self.received_at: Optional[float] = None
        self.by_stamp: Deque[Tuple[int, float]] = deque(maxlen=history)

    def add(self, pa: float, stamp_ns: int, now: float) -> None:
        """A usable pressure ``pa`` (Pa absolute) stamped ``stamp_ns`` (ignored unless stamped),
        received at ``now`` (monotonic s)."""
        self.latest, self.received_at = pa, now
        if self.stamped:
            self.by_stamp.append((stamp_ns, pa))

    def age(self, now: float) -> Optional[float]:
        """s of receive time since the latest usable pressure; None before the first."""
        return None if self.received_at is None else now - self.received_at

    def stopped(self, now: float) -> Optional[float]:
        """The latest pressure's age (s) when older than ``timeout_s`` (not 0), else None."""
        age = self.age(now)
        return age if self.timeout_s and age is not None and age > self.timeout_s else None

    def for_frame(self, stamp_ns: int, now: float) -> Optional[float]:
        """The pressure (Pa) for the frame stamped ``stamp_ns`` received at ``now``: the latest one,
        or with a stamped type the one nearest in stamp within the tolerance; None = not known yet
        (the frame waits for it).

        Raises:
            InputRejected: ``no_pressure``: none yet (latest mode), or none near the stamp while
                later stamped ones exist (stamped mode); ``stale_pressure``: the latest (latest
                mode) came more than ``timeout_s`` ago.
        """
        if not self.stamped:
            if self.latest is None:
                raise InputRejected("no bubble pressure received yet", "no_pressure")
            age = self.stopped(now)
            if age is not None:   # the stream stopped: its last value is no pressure of now
                raise InputRejected(f"the latest {self.input.text()} came {age:.1f} s ago (pressure_timeout "
                                    f"{self.timeout_s:g} s): the frame is dropped", "stale_pressure")
            return self.latest
        tol = self.tolerance_ns
        if self.by_stamp:
            best = min(self.by_stamp, key=lambda sp: abs(sp[0] - stamp_ns))
            if abs(best[0] - stamp_ns) <= tol:
                return best[1]
            if max(sp[0] for sp in self.by_stamp) > stamp_ns + tol:
                raise InputRejected(f"no pressure stamped within {tol * 1e-9:g} s of the frame stamped "
                                    f"{stamp_ns * 1e-9:.3f} s (nearest pressure stamp "
                                    f"{best[0] * 1e-9:.3f} s)", "no_pressure")
        return None

    def latest_text(self, now: float) -> str:
        """``latest pressure stamped 3.000 s, received 1.2 s ago`` (stamped mode), for a frame that
        waited too long; ``no pressure on /punyo/pressure yet`` before one."""
        if not self.by_stamp:
            return f"no pressure on {self.input.topic} yet"
        return (f"latest pressure stamped {self.by_stamp[-1][0] * 1e-9:.3f} s, received "
                f"{self.age(now) or 0.0:.1f} s ago")


def check_reference_frame(depth: np.ndarray, pressure: float, shape: Tuple[int, int], p: Dict[str, Any],
                          ambient_pa: float, ambient_source: str) -> None:
    """Refuse a frame the reference must not take (a bad frame never enters it).

    Args:
        depth: ``(H, W)`` float depth image, m (0, NaN, +-Inf = no reading, REP 117).
        pressure: its bubble pressure, Pa absolute.
        shape: the camera's ``(height, width)``, px.
        p: the node's parameters (``max_depth`` m, ``depth_unit`` m, for the message).
        ambient_pa, ambient_source: the ambient pressure in use (Pa) and where it comes from.

    Raises:
        InputRejected: ``wrong_size``; ``nan`` (no finite depth); ``depth_out_of_range`` (every
            reading at or beyond ``max_depth``: a unit mistake, 32FC1 in mm or a wrong
            ``depth_unit``); ``bad_pressure`` (not above the ambient: the reference would have no
            gauge pressure, and ``set_reference`` would refuse the whole set at its last frame).
    """
    if depth.shape != tuple(shape):
        raise InputRejected(f"frame of {depth.shape[1]}x{depth.shape[0]} px for a "
                            f"{shape[1]}x{shape[0]} camera", "wrong_size")
    if not np.isfinite(depth).any():
        raise InputRejected("frame holds no finite depth (every pixel NaN or +-Inf: no reading)", "nan")
    with np.errstate(invalid="ignore"):
        readings = depth[np.isfinite(depth) & (depth > 0.0)]
    far = float(p["max_depth"])
    if readings.size and not (readings < far).any():
        raise InputRejected(
            f"every depth reading is at or beyond max_depth {far:g} m (median "
            f"{float(np.median(readings)):.4g} m): check depth_unit "
            f"({float(p['depth_unit']):g} m per 16UC1 unit) or the unit of a 32FC1 image (m)",
            "depth_out_of_range")
    if not pressure > ambient_pa:
        raise InputRejected(f"reference pressure {pressure:.1f} Pa is not above the ambient "
                            f"{ambient_pa:.1f} Pa ({ambient_source}): check ambient_pressure / altitude "
                            "and that the bubble is inflated", "bad_pressure")


def no_colour_text(colour: Input, received: int, rejected: int = 0, rejection: str = "") -> str:
    """Why the reference has no colour and what to do: ``nothing arrives on sensor_msgs/msg/Image on
    /punyo/camera/color/image_raw (colour_topic); colour_topic: '' turns colour off ...`` when no
    colour image came (``received`` = 0); else that a reset with colour coming gives it one, after
    the count of colour images rejected and the latest reason (``rejection``) when any were."""
    if received:
        bad = (f"{rejected} of {received} colour images on {colour.topic} rejected, the latest as "
               f"{rejection}; " if rejected else "")
        return bad + "reset_reference with colour coming gives it colour"
    return (f"nothing arrives on {colour.text()} (colour_topic); colour_topic: '' turns colour off "
            "(on the command line: -p \"colour_topic:=''\"), or reset_reference once colour comes")


def pressures_text(ambient_pa: float, source: str, gauge_pa: Optional[float]) -> str:
    """``ambient 98686 Pa (standard atmosphere at 222 m), gauge 7897 Pa`` (no gauge before a
    reference: ``gauge_pa`` None); Pa rounded to whole numbers."""
    gauge = "" if gauge_pa is None else f", gauge {gauge_pa:.0f} Pa"
    return f"ambient {ambient_pa:.0f} Pa ({source}){gauge}"


def ready_text(reference: str, outputs: Sequence[Tuple[str, Any]], frame_id: str, pressures: str = "") -> str:
    """The line logged when a reference is set: ``ready: reference <reference>; <pressures>;
    publishing the dense force on /membrane_force (sensor_msgs/msg/PointCloud2), ... , frame_id
    'punyo'``.

    Args:
        reference: the reference's description (``set from 10 frames, 106583 Pa, start-up 130 ms``).
        outputs: (what, its rclpy publisher) in the order to name them.
        frame_id: the outputs' frame_id.
        pressures: the ambient and gauge pressure in use (:func:`pressures_text`); '' = not named.
    """
    named = [f"{what} on {pub.topic_name} ({type_name(pub.msg_type)})" for what, pub in outputs]
    middle = f"; {pressures}" if pressures else ""
    return f"ready: reference {reference}{middle}; publishing {_join(named)}, frame_id {frame_id!r}"


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
