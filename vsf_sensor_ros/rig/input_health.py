"""A sensor's diagnostic level from its inputs' arrivals: OK while predictions flow, WARN naming a silent
input's topic and type, ERROR while predictions fail (docs/interface.md).  Times: monotonic s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

OK, WARN, ERROR = 0, 1, 2   # diagnostic_msgs/DiagnosticStatus levels (bytes there)


@dataclass
class StreamClock:
    """Arrivals of one input stream: resolved ``topic``, ``type_name`` (``sensor_msgs/msg/PointCloud2``),
    ``optional`` (never arriving is no fault; stopping is), ``first``/``last`` arrival (s, None before
    any), ``count``."""

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
        """A sentence naming the topic and type when the stream is missing or stopped for ``timeout`` s,
        else None; ``cause`` (what explains it) follows a colon; an optional stream never received is a
        problem only with a cause."""
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
    """What one sensor needs (``streams``; its measured one optional) and its live problems:
    ``last_prediction`` (s or None), ``failing`` (the reason or None), ``unit_warning`` (or None),
    ``missing_joints`` (moving its body, never arrived)."""

    streams: List[StreamClock] = field(default_factory=list)
    last_prediction: Optional[float] = None
    failing: Optional[str] = None
    unit_warning: Optional[str] = None
    missing_joints: Sequence[str] = ()


def sensor_health(now: float, started: float, timeout: float, inputs: SensorInputs,
                  causes: Optional[Mapping[str, str]] = None) -> Tuple[int, List[str]]:
    """``(level, problems worst first)`` of one sensor: ``ERROR`` while predictions fail; ``WARN`` for a
    missing input (``causes``: topic -> why), a wrong unit, missing joints, no prediction for ``timeout``
    s; else ``OK``."""
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
    return (ERROR if inputs.failing else WARN if problems else OK), problems


# Pressure units a reading may be in, with the measured_scale that converts each to Pa
PRESSURE_UNITS = (("Pa", 1.0), ("hPa", 100.0), ("kPa", 1000.0), ("bar", 1.0e5), ("psi", 6894.757293168),
                  ("mbar", 100.0))


def pressure_unit_problem(raw: float, scale: float, low: float, high: float,
                          scale_parameter: str = "measured_scale") -> Optional[str]:
    """None while ``low <= raw * scale <= high`` (Pa); else the sentence naming the unit ``raw`` looks like
    and the ``scale_parameter`` value to set."""
    pa = raw * scale
    if low <= pa <= high:
        return None
    text = (f"measured pressure {pa:.6g} Pa (reading {raw:.6g} x {scale_parameter} {scale:g}) is not a "
            f"plausible absolute pressure ({low:g}..{high:g} Pa)")
    for unit, factor in PRESSURE_UNITS:
        if low <= raw * factor <= high:
            return f"{text}; it looks like {unit}: set {scale_parameter}: {factor!r}"
    return f"{text}; no common pressure unit (Pa, hPa, kPa, bar, psi) fits it"


def silent_streams(streams: Iterable[StreamClock], now: float, started: float,
                   timeout: float) -> Dict[str, StreamClock]:
    """The streams silent now, by topic, first seen first: missing or stopped, and optional ones never
    received once ``timeout`` s have passed (the streams worth asking why)."""
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
    """For a tare or gain answer: what is missing, naming topics (a stream never arrived counts at once,
    optional ones too); empty when nothing is."""
    missing = []
    for s in streams:
        if s.last is None:
            missing.append(f"no {s.type_name} received on {s.topic}")
        elif now - s.last >= timeout:
            missing.append(f"nothing on {s.topic} for {now - s.last:.0f} s")
    return "; ".join(missing)


__all__ = ["ERROR", "OK", "PRESSURE_UNITS", "WARN", "SensorInputs", "StreamClock", "missing_input_hint",
           "pressure_unit_problem", "sensor_health", "silent_streams"]
