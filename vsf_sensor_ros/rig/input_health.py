"""Whether a sensor's predictions really flow, and which input is missing when they do not.

A status is OK only while predictions flow, WARN naming the topic and type of a silent input,
ERROR while predictions fail (docs/interface.md, diagnostics).  Pure: times are the caller's
monotonic float seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

OK, WARN, ERROR = 0, 1, 2   # diagnostic_msgs/DiagnosticStatus levels (bytes there)


@dataclass
class StreamClock:
    """Arrivals of one input stream.

    Attributes:
        topic: the resolved topic name (str), as the user would ``ros2 topic echo`` it.
        type_name: its message type, e.g. ``sensor_msgs/msg/PointCloud2``.
        optional: True for a stream whose absence from the start is not a fault (a measured
            stream of a prediction-only sensor); once it has arrived, stopping is a fault.
        first, last: monotonic times (s) of the first and latest arrival, None before any.
        count: messages arrived.
    """

    topic: str
    type_name: str
    optional: bool = False
    first: Optional[float] = None
    last: Optional[float] = None
    count: int = 0

    def arrived(self, now: float) -> None:
        """Record one message at monotonic time ``now`` (s)."""
        if self.first is None:
            self.first = now
        self.last = now
        self.count += 1

    def stopped(self, now: float, timeout: float) -> bool:
        """True when the stream has arrived before but not for ``timeout`` s up to ``now`` (s)."""
        return self.last is not None and now - self.last >= timeout

    def problem(self, now: float, started: float, timeout: float, cause: str = "") -> Optional[str]:
        """A sentence naming the topic and type when the stream is missing or stopped, else None.

        ``now``, ``started`` (s, monotonic); ``timeout``: the silence that counts (s); ``cause``:
        what explains the silence, appended after a colon (a stream never received then reads
        ``no <type> on <topic>: <cause>``); an optional stream never received is a problem only
        with a cause.
        """
        if self.last is None:
            if now - started < timeout:
                return None
            if cause:
                return f"no {self.type_name} on {self.topic}: {cause}"
            if self.optional:
                return None
            return f"no {self.type_name} on {self.topic} since start ({now - started:.0f} s)"
        if self.stopped(now, timeout):
            text = f"{self.topic} ({self.type_name}) stopped {now - self.last:.0f} s ago"
            return f"{text}: {cause}" if cause else text
        return None


@dataclass
class SensorInputs:
    """What one sensor needs, and its live problems besides missing inputs.

    Attributes:
        streams: every input stream the sensor needs (contacts, joint states when joints move
            its body, the pose topic of a free body it is on, its measured stream as optional).
        last_prediction: monotonic time (s) of its latest published prediction, None before any.
        failing: the reason while its predictions fail (e.g. ``non_finite_prediction``), or None.
        unit_warning: the sentence while a measured value looks like the wrong unit, or None.
        missing_joints: names of the joints moving its body that never arrived.
    """

    streams: List[StreamClock] = field(default_factory=list)
    last_prediction: Optional[float] = None
    failing: Optional[str] = None
    unit_warning: Optional[str] = None
    missing_joints: Sequence[str] = ()


def sensor_health(now: float, started: float, timeout: float, inputs: SensorInputs,
                  causes: Optional[Mapping[str, str]] = None) -> Tuple[int, List[str]]:
    """The diagnostic level and the problems (sentences) of one sensor, worst first.

    ``causes``: topic -> what explains its silence (:meth:`StreamClock.problem`).  ``ERROR``
    while predictions fail; ``WARN`` while an input is missing or stopped, a unit looks wrong,
    joints are missing or no prediction came for ``timeout`` s; else ``OK`` and no problems.
    """
    problems: List[str] = []
    if inputs.failing:
        problems.append(f"predictions failing: {inputs.failing}")
    causes = causes or {}
    problems += [p for p in (s.problem(now, started, timeout, causes.get(s.topic, ""))
                             for s in inputs.streams) if p]
    if inputs.unit_warning:
        problems.append(inputs.unit_warning)
    if inputs.missing_joints:
        problems.append("joints never received (predictions use their initial positions): "
                        + ", ".join(inputs.missing_joints))
    stale = inputs.last_prediction is None or now - inputs.last_prediction >= timeout
    if stale and not problems:
        problems.append("no prediction yet" if inputs.last_prediction is None else
                        f"no prediction for {now - inputs.last_prediction:.0f} s")
    if inputs.failing:
        return ERROR, problems
    return (WARN if problems else OK), problems


# Pressure units a reading may be in, with the measured_scale that converts each to Pa
PRESSURE_UNITS = (("Pa", 1.0), ("hPa", 100.0), ("kPa", 1000.0), ("bar", 1.0e5), ("psi", 6894.757293168),
                  ("mbar", 100.0))


def pressure_unit_problem(raw: float, scale: float, low: float, high: float,
                          scale_parameter: str = "measured_scale") -> Optional[str]:
    """The sentence when ``raw x scale`` is no plausible absolute pressure, naming the unit it looks like.

    None while ``low <= raw * scale <= high`` (Pa); else e.g. ``measured pressure 1013.25 Pa
    (reading 1013.25 x measured_scale 1) is not a plausible absolute pressure (20000..1e+06 Pa);
    it looks like hPa: set measured_scale: 100.0`` (``scale_parameter`` names the parameter).
    """
    pa = raw * scale
    if low <= pa <= high:
        return None
    text = (f"measured pressure {pa:.6g} Pa (reading {raw:.6g} x {scale_parameter} {scale:g}) is not a "
            f"plausible absolute pressure ({low:g}..{high:g} Pa)")
    fits = [(unit, factor) for unit, factor in PRESSURE_UNITS if low <= raw * factor <= high]
    if fits:
        unit, factor = fits[0]
        return f"{text}; it looks like {unit}: set {scale_parameter}: {factor!r}"
    return f"{text}; no common pressure unit (Pa, hPa, kPa, bar, psi) fits it"


def silent_streams(streams: Iterable[StreamClock], now: float, started: float,
                   timeout: float) -> Dict[str, StreamClock]:
    """The streams of ``streams`` silent now, by topic, in first-seen order (a stream shared by
    several sensors appears once): those missing or stopped (:meth:`StreamClock.problem` not
    None) and, once ``timeout`` s have passed since ``started``, optional ones never received
    (a problem only with a cause).  The streams worth asking why."""
    out: Dict[str, StreamClock] = {}
    for s in streams:
        if s.topic in out:
            continue
        unheard = s.optional and s.last is None and now - started >= timeout
        if unheard or s.problem(now, started, timeout) is not None:
            out[s.topic] = s
    return out


def missing_input_hint(streams: Sequence[StreamClock], now: float, started: float,
                       timeout: float) -> str:
    """For a tare or gain answer: what is missing, naming topics; empty when nothing is.

    Unlike :func:`sensor_health`, a stream that never arrived counts at once (a tare is asked
    for now), optional ones included.
    """
    missing = []
    for s in streams:
        if s.last is None:
            missing.append(f"no {s.type_name} received on {s.topic}")
        elif now - s.last >= timeout:
            missing.append(f"nothing on {s.topic} for {now - s.last:.0f} s")
    return "; ".join(missing)


__all__ = ["ERROR", "OK", "PRESSURE_UNITS", "WARN", "SensorInputs", "StreamClock", "missing_input_hint",
           "pressure_unit_problem", "sensor_health", "silent_streams"]
