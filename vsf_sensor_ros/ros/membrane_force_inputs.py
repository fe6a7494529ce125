"""``membrane_force_node``'s inputs as its user sees them: what it waits for, wrong types, status.

Every input is named the same way in the log and on ``/diagnostics`` (its type as the graph
spells it and its resolved topic), so a user can find it; the messages: docs/membrane_force.md.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np
from rclpy.node import Node

from .messages.camera import PRESSURE_TYPES, InputRejected
from .topic_types import WrongTypeWatch, type_name

__all__ = ["Input", "InputWatch", "Pressures", "WAIT_WARN_S", "check_reference_frame",
           "inputs_text", "missing_inputs", "no_colour_text", "pressure_type_hints", "pressures_text",
           "ready_text", "report", "stamp_partners", "stopped_text", "waiting_text", "zero_stamp_text"]

#: s after start from which a still-missing input is logged (once) at WARN; /diagnostics names it at once
WAIT_WARN_S = 5.0


@dataclass(frozen=True)
class Input:
    """One subscription: resolved ``topic``, ``type_name`` as the graph spells it, a ``note`` for
    the inputs line (``colour, optional``), and ``hints``: a type published there instead -> the
    setting that would read it (``set pressure_type: std_msgs/msg/Float64``)."""

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


def missing_inputs(inputs: Mapping[str, Input], stats: Mapping[str, int], last: Mapping[str, str],
                   camera_ready: bool, pressure_known: bool) -> List[Tuple[Input, str]]:
    """``(input, sentence)`` of each of ``inputs`` (``camera_info``, ``frames``, ``pressure``) the
    node still waits for, in the order needed; ``stats`` / ``last``: the node's counters and last
    rejection reasons; ``camera_ready``: an estimator was built; ``pressure_known``: one came."""
    cam, frames, pressure = inputs["camera_info"], inputs["frames"], inputs["pressure"]
    out: List[Tuple[Input, str]] = []
    n = stats["camera_info_received"]
    if not camera_ready:
        out.append((cam, f"a usable {cam.text()} ({n} received, the last rejected as "
                         f"{last.get('CameraInfo_rejection') or 'unusable'})" if n else cam.text()))
    if not stats["frames_received"]:
        out.append((frames, frames.text()))
    n = stats["pressure_rejected"]
    if not pressure_known:
        out.append((pressure, f"a usable {pressure.text()} ({n} rejected, the last as "
                              f"{last.get('pressure_rejection') or 'unusable'})" if n else pressure.text()))
    return out


def pressure_type_hints(ptype: str, scale: float) -> Dict[str, str]:
    """:attr:`Input.hints` of the pressure (``ptype`` normalised, ``scale``: ``pressure_scale``):
    each other ``pressure_type`` -> the setting that reads it (a ``FluidPressure`` is in Pa)."""
    hints = {t: f"set pressure_type: {t}" for t in PRESSURE_TYPES if t != ptype}
    fluid = "sensor_msgs/msg/FluidPressure"
    if fluid in hints and scale != 1.0:
        hints[fluid] += " and pressure_scale: 1.0 (its unit is Pa)"
    return hints


def waiting_text(missing: Sequence[Tuple[Input, str]]) -> str:
    """``waiting for A on /a, B on /b and C on /c`` for :func:`missing_inputs`' answer ('' for none)."""
    return "waiting for " + _join([text for _, text in missing]) if missing else ""


def stamp_partners(stamped: bool, colour: bool) -> Dict[str, str]:
    """The inputs paired by stamp (``frames``, ``colour``, ``pressure``) -> what each pairs with,
    for a stamped pressure type (``FluidPressure``) and/or a ``colour_topic``; e.g. ``{'frames':
    'pressure and colour image', 'colour': 'depth frame', 'pressure': 'depth frame'}``."""
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
    """Why a message of ``inp`` stamped 0 (``count`` so far) is rejected, naming its topic, its
    ``partner`` (:func:`stamp_partners`) and the way out."""
    hint = "set its driver's header stamps"
    if partner == "depth frame" and inp.type_name == "sensor_msgs/msg/FluidPressure":
        hint += ", or use a bare pressure_type (std_msgs/msg/Float32: the latest goes with each frame)"
    return f"{inp.topic} stamped 0 ({count} so far): no time to pair it with its {partner}; {hint}"


def stopped_text(pressure: Input, age_s: float, stamped: bool, rejection: str = "",
                 collecting: bool = False) -> str:
    """The pressure stream stopped ``age_s`` s ago (or all rejected since: ``rejection``, the latest's
    ``reason: text``), for a ``stamped`` type or not, while a reference is ``collecting`` or not."""
    done = "collected for the reference" if collecting else "estimated"
    what = f"frames wait for their pressure and are not {done}" if stamped else f"frames are not {done}"
    if rejection:
        return (f"no usable {pressure.text()} for {age_s:.1f} s (the latest was rejected as {rejection}): "
                f"{what}")
    return f"{pressure.text()} stopped {age_s:.1f} s ago: {what}"


class Pressures:
    """The bubble pressures received, the one a frame is estimated with, the frames waiting for one.

    A bare number (``Float32`` / ``Float64``) goes with every frame while at most ``timeout_s``
    (receive time; 0 = never stale) old; a stamped one (``FluidPressure``) pairs with the frame
    stamped within ``tolerance_s``, the frame waiting (:meth:`wait`) until it comes.  ``latest``
    (Pa absolute), ``received_at`` (monotonic s), ``by_stamp`` ``(ns, Pa)``, ``pending`` frames.
    """

    def __init__(self, pressure: Input, stamped: bool, tolerance_s: float, timeout_s: float,
                 history: int = 500) -> None:
        self.input, self.stamped = pressure, stamped
        self.tolerance_ns, self.timeout_s = int(tolerance_s * 1e9), float(timeout_s)
        self.latest: Optional[float] = None
        self.received_at: Optional[float] = None
        self.by_stamp: Deque[Tuple[int, float]] = deque(maxlen=history)
        self.pending: List[Tuple[Any, int, float]] = []

    def add(self, pa: float, stamp_ns: int, now: float) -> None:
        """A usable pressure (Pa absolute) stamped ``stamp_ns`` (unused unstamped), received ``now``."""
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
        """The pressure (Pa) for the frame stamped ``stamp_ns``; None = not come yet (it waits).

        Raises:
            InputRejected: ``no_pressure`` (none yet; stamped: none near while later ones came),
                ``stale_pressure`` (unstamped, older than ``timeout_s``).
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

    def wait(self, item: Any, stamp_ns: int, received: float, now: float, max_waiting: int) -> None:
        """Keep a frame (``item``, received at monotonic ``received``) until its pressure comes;
        InputRejected ``no_pressure``, the oldest dropped, when more than ``max_waiting`` wait."""
        self.pending.append((item, stamp_ns, received))
        if len(self.pending) <= max_waiting:
            return
        _, dropped, since = self.pending.pop(0)
        # none came while it waited: the stream stopped (whatever pressure_timeout says);
        # pressures came, none stamped near it: the stamps are on other clocks
        why = ("pressures came while it waited, none stamped near it: the two clocks must agree within "
               "pressure_tolerance" if self.received_at is not None and self.received_at >= since else
               "no usable pressure came while it waited")
        latest = (f"latest pressure stamped {self.by_stamp[-1][0] * 1e-9:.3f} s, received "
                  f"{self.age(now) or 0.0:.1f} s ago" if self.by_stamp else
                  f"no pressure on {self.input.topic} yet")
        raise InputRejected(f"frame stamped {dropped * 1e-9:.3f} s waited too long for its pressure "
                            f"({latest}; {why})", "no_pressure")


def check_reference_frame(depth: np.ndarray, pressure: float, shape: Tuple[int, int], p: Dict[str, Any],
                          ambient_pa: float, ambient_source: str) -> None:
    """Refuse a frame the reference must not take: ``depth`` ``(H, W)`` m (0, NaN, +-Inf = no
    reading), its ``pressure`` (Pa absolute), the camera's ``shape`` ``(H, W)``, the node's
    parameters ``p``, the ambient pressure in use (Pa) and its source.

    Raises:
        InputRejected: ``wrong_size``; ``nan`` (no finite depth); ``depth_out_of_range`` (all at or
            beyond ``max_depth``: a unit mistake); ``bad_pressure`` (not above the ambient).
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
    """Why the reference has no colour (none ``received``, or ``rejected``, the latest as
    ``rejection``) and what to do."""
    if received:
        bad = (f"{rejected} of {received} colour images on {colour.topic} rejected, the latest as "
               f"{rejection}; " if rejected else "")
        return bad + "reset_reference with colour coming gives it colour"
    return (f"nothing arrives on {colour.text()} (colour_topic); colour_topic: '' turns colour off "
            "(on the command line: -p \"colour_topic:=''\"), or reset_reference once colour comes")


def pressures_text(ambient_pa: float, source: str, gauge_pa: Optional[float]) -> str:
    """``ambient 98686 Pa (standard atmosphere at 222 m), gauge 7897 Pa`` (no gauge when None)."""
    gauge = "" if gauge_pa is None else f", gauge {gauge_pa:.0f} Pa"
    return f"ambient {ambient_pa:.0f} Pa ({source}){gauge}"


def ready_text(reference: str, outputs: Sequence[Tuple[str, Any]], frame_id: str, pressures: str = "") -> str:
    """The line logged when a reference is set: the ``reference``, the ``pressures`` ('' = none),
    each ``(what, rclpy publisher)`` of ``outputs`` and the ``frame_id``."""
    named = [f"{what} on {pub.topic_name} ({type_name(pub.msg_type)})" for what, pub in outputs]
    middle = f"; {pressures}" if pressures else ""
    return f"ready: reference {reference}{middle}; publishing {_join(named)}, frame_id {frame_id!r}"


class InputWatch:
    """What to log of the node's ``inputs`` (monotonic ``started``: the node's start, s), once per
    diagnostics period: the inputs still missing and those published in another type."""

    def __init__(self, node: Node, inputs: Sequence[Input], started: float) -> None:
        self.inputs = list(inputs)
        self.started = started
        self._waited: Set[str] = set()                       # topics whose wait was logged
        self._wrong_type = WrongTypeWatch(node, node.get_logger())

    def waiting_log(self, now: float, missing: Sequence[Tuple[Input, str]]) -> Optional[str]:
        """The WARN line to log now: the missing inputs not yet logged, from :data:`WAIT_WARN_S` s
        after start; None when there is nothing new to say."""
        if now - self.started < WAIT_WARN_S:
            return None
        new = [(i, text) for i, text in missing if i.topic not in self._waited]
        if not new:
            return None
        self._waited.update(i.topic for i, _ in new)
        return f"{waiting_text(new)} ({now - self.started:.0f} s since start)"

    def wrong_types(self) -> List[str]:
        """One sentence per input published in another type (:class:`.topic_types.WrongTypeWatch`,
        which logs each once), with the setting that would read it (:attr:`Input.hints`)."""
        out: List[str] = []
        for i in self.inputs:
            text = self._wrong_type(i)
            hints = [h for t, h in i.hints.items() if t in text]
            if text:
                out.append(text + (f" ({'; '.join(hints)})" if hints else ""))
        return out


def report(n: Any, now: float) -> Tuple[bool, str, Dict[str, Any]]:
    """``(ok, message, values)`` of node ``n``'s ``/diagnostics`` status at monotonic ``now`` (the
    keys: docs/membrane_force.md), the period's counts restarted; the input warnings logged."""
    st, last, prev = n.stats, n.last, n._period
    dt = max(now - prev["start"], 1e-9)
    ms = np.asarray(n.period_ms)
    n.period_ms = []
    counts = {"estimated": st["frames_estimated"], "rejected": st["frame_rejected"],
              "depth_only": sum(n.depth_only.values()), "zero": sum(n.zero_stamps.values())}
    new = {k: v - prev.get(k, 0) for k, v in counts.items()}   # in the last period
    n._period = dict(counts, start=now)
    age, gauge = n.pressures.age(now), n._gauge()
    values = {
        **{k: st[k] for k in ("frames_received", "frames_estimated", "pressures_received",
                              "camera_info_received")},
        "rate_hz": f"{new['estimated'] / dt:.2f}",
        "estimate_ms_median": f"{np.median(ms):.2f}" if ms.size else "nan",
        "estimate_ms_max": f"{ms.max():.2f}" if ms.size else "nan",
        "rejected_total": sum(n.rejected.values()),
        **{f"rejected.{k}": v for k, v in sorted(n.rejected.items())},
        **{f"zero_stamps.{t}": c for t, c in n.zero_stamps.items()},
        "reference": last["reference"], "reference_resets": st["reference_resets"],
        "pressure_pa": "none" if age is None else f"{n.pressures.latest:.1f}",
        "pressure_age_s": "none" if age is None else f"{age:.2f}",
        "ambient_pa": f"{n.ambient_pa:.0f}", "ambient_source": n.ambient_source,
        "gauge_pa": "none" if gauge is None else f"{gauge:.0f}",
        "vertices_measured": last.get("vertices_measured", "0"),
        "last_rejection": last.get("last_rejection", "none"), "frame_id": n.p["frame_id"],
        "config_problems": "; ".join(n.config_problems) or "none",
        "inputs": inputs_text(list(n.inputs.values())), **n.record.values()}
    if n.scale is not None:
        values.update(n.scale.values(n.p["reference_wrench_topic"]))
    if n.colour:
        values.update({
            "colour_topic": n.p["colour_topic"], "colour_received": st["colour_received"],
            "frames_with_colour": st["frames_with_colour"], "frames_depth_only": counts["depth_only"],
            **{f"depth_only.{k}": v for k, v in sorted(n.depth_only.items())},
            "frames_waiting_for_colour": len(n.pairing.pending),
            "reference_colour": "yes" if n.reference_colour else "no",
            "vertices_flow": last.get("vertices_flow", "0"),
            "last_depth_only": last.get("depth_only", "none")})
    missing = missing_inputs(n.inputs, st, last, n.estimator is not None, age is not None)
    wrong = n.watch.wrong_types()
    values["wrong_types"] = "; ".join(wrong) or "none"
    waiting = n.watch.waiting_log(now, missing)
    if waiting:
        n.get_logger().warning(waiting)
    stopped, est = n.pressures.stopped(now), n.estimator
    collecting = est is not None and est.model is None
    ok, hz, why = False, new["estimated"] / dt, last.get("frame_rejection")
    if missing:
        message = waiting_text(missing)
    elif stopped is not None:
        message = stopped_text(n.inputs["pressure"], stopped, n.stamped,
                               last.get("pressure_rejection_text", ""), collecting=collecting)
    elif collecting:
        message = f"reference: {last['reference']}" + (
            f"; frames are not collected: the latest was rejected as {why}" if why else "")
    elif new["estimated"] == 0:
        message = "no frame estimated in the last period" + (
            f": {new['rejected']} frame(s) rejected, the latest as {why}" if new["rejected"] and why else "")
    elif n.colour and not n.reference_colour:
        message = f"estimating at {hz:.1f} Hz from depth alone: the reference has no colour: {n._no_colour()}"
    elif new["depth_only"]:
        message = (f"estimating at {hz:.1f} Hz; {new['depth_only']} frame(s) of the last period from depth "
                   "alone (colour missing or rejected)")
    else:
        ok, message = True, f"estimating at {hz:.1f} Hz"
    if new["zero"] > 0:   # messages stamped 0 came in the last period
        ok = False
        message += "; stamped 0, rejected (no time to pair by): " + ", ".join(
            f"{t} ({c})" for t, c in n.zero_stamps.items() if c)
    if wrong:   # why an input never arrives: rclpy does not say
        ok, message = False, "; ".join([message] + wrong)
    if n.config_problems:
        count = len(n.config_problems)
        ok = False
        message += (f"; {count} configuration problem{'' if count == 1 else 's'}: "
                    + "; ".join(n.config_problems))
    return ok, message, values
