"""Counters and ``/diagnostics`` reports of the sensor node: one ``<node>: inputs`` status and
one ``<node>: <s>`` per sensor (``<node>``: the fully qualified name); keys: docs/interface.md.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from .messages.readings import make_header


@dataclass
class InputStats:
    """Node-wide input counters (monotonic; never reset while the node runs)."""

    contacts_received: int = 0
    contacts_processed: int = 0
    joint_states_received: int = 0
    poses_received: int = 0          # free-body PoseStamped messages, every body
    rejected: Counter = field(default_factory=Counter)
    stamp_jumps_backwards: int = 0
    last_stamp_jump: str = "none"
    unknown_joint_names: Dict[str, int] = field(default_factory=dict)
    missing_joints: str = "none"
    joint_stamp_jumps_backwards: int = 0
    last_joint_stamp_jump: str = "none"
    #: gz contacts: mapped body names outside the body table -> messages that carried them
    unknown_contact_bodies: Dict[str, int] = field(default_factory=dict)
    #: event-driven contacts: (contact-free steps made, contacts messages stamped before one)
    contact_free: Optional[Tuple[int, int]] = None
    #: contacts topic -> messages stamped 0 (predicted, never paired)
    zero_stamps: Counter = field(default_factory=Counter)
    #: their total at the previous report (the status WARNs while it grows)
    zero_stamps_reported: int = 0

    def reject(self, reason: str) -> None:
        """Count one rejected message under ``reason``."""
        self.rejected[reason] += 1


@dataclass
class SensorStats:
    """Per-sensor counters; the window fields are cleared on every report."""

    published: int = 0
    measured_received: int = 0
    residuals_published: int = 0
    rejected: Counter = field(default_factory=Counter)
    measured_stamp_jumps: int = 0
    #: measured topic -> messages refused for their stamp 0, and what to do about it
    zero_stamps: Counter = field(default_factory=Counter)
    zero_stamp_hint: str = ""
    calibration: str = "uncalibrated"
    pairing: str = "ok"
    contact: bool = False
    reading: str = ""
    window_count: int = 0
    window_latency_sum: float = 0.0
    window_latency_max: float = 0.0
    #: the automatic tare's and the pressure watch's keys and warnings (ContactFreeLoop.report)
    loop_keys: List[Tuple[str, str]] = field(default_factory=list)
    loop_problems: List[str] = field(default_factory=list)

    def record_publish(self, latency_s: float) -> None:
        """One prediction published ``latency_s`` after its input arrived."""
        self.published += 1
        self.window_count += 1
        self.window_latency_sum += latency_s
        self.window_latency_max = max(self.window_latency_max, latency_s)


def _kv(key: str, value) -> KeyValue:
    return KeyValue(key=key, value=str(value))


def _unknown_bodies(inputs: InputStats) -> List[KeyValue]:
    """``contacts.unknown_bodies`` (``name=messages, ...``) when gz contacts named any."""
    seen = inputs.unknown_contact_bodies
    return [_kv("contacts.unknown_bodies", ", ".join(f"{n}={c}" for n, c in seen.items()))] if seen else []


def _contact_free(inputs: InputStats) -> List[KeyValue]:
    """``contact_free.steps`` and ``.late_contacts`` when the node steps without contacts messages."""
    if inputs.contact_free is None:
        return []
    steps, late = inputs.contact_free
    return [_kv("contact_free.steps", steps), _kv("contact_free.late_contacts", late)]


def build_diagnostics(stamp, hardware_id: str, inputs: InputStats,
                      sensors: Dict[str, tuple], period_s: float,
                      node_name: Optional[str] = None) -> DiagnosticArray:
    """The report (docs/interface.md, diagnostics: keys and levels) of ``inputs`` and ``sensors``
    (name -> ``(type_name, attachment, SensorStats)``), stamped ``stamp`` (node clock); clears the
    per-window sensor fields and keeps the contacts' zero-stamp total reported.

    ``hardware_id``: in every status; ``node_name``: the prefix of every status name (the node's
    fully qualified name; None = ``hardware_id``); ``period_s``: time since the previous report (s).
    """
    statuses: List[DiagnosticStatus] = []
    values = [
        _kv("contacts_received", inputs.contacts_received),
        _kv("contacts_processed", inputs.contacts_processed),
        _kv("joint_states_received", inputs.joint_states_received),
        _kv("poses_received", inputs.poses_received),
        _kv("rejected_total", sum(inputs.rejected.values())),
        _kv("stamp_jumps_backwards", inputs.stamp_jumps_backwards),
        _kv("last_stamp_jump", inputs.last_stamp_jump),
        _kv("joint_states.unknown_names", len(inputs.unknown_joint_names)),
        _kv("joint_states.unknown_names_list",
            ", ".join(f"{n}={c}" for n, c in inputs.unknown_joint_names.items()) or "none"),
        _kv("joint_states.missing", inputs.missing_joints),
        _kv("joint_states.stamp_jumps_backwards", inputs.joint_stamp_jumps_backwards),
        _kv("joint_states.last_stamp_jump", inputs.last_joint_stamp_jump),
    ] + _unknown_bodies(inputs) + _contact_free(inputs)
    values += [_kv(f"rejected.{r}", n) for r, n in sorted(inputs.rejected.items())]
    values += [_kv(f"zero_stamps.{t}", n) for t, n in inputs.zero_stamps.items()]
    rejected = sum(inputs.rejected.values())
    problems = [f"{rejected} messages rejected"] if rejected else []
    zero = sum(inputs.zero_stamps.values())
    if zero > inputs.zero_stamps_reported:
        problems.append(", ".join(f"contacts stamped 0 on {t} ({n} so far)"
                                  for t, n in inputs.zero_stamps.items())
                        + ": predicted, paired with no measured message")
    inputs.zero_stamps_reported = zero
    if inputs.unknown_joint_names:
        problems.append(f"{len(inputs.unknown_joint_names)} unknown joint names")
    if inputs.missing_joints != "none":
        problems.append(f"joints never received: {inputs.missing_joints}")
    if inputs.contact_free is not None and inputs.contact_free[1]:
        problems.append(f"{inputs.contact_free[1]} contacts messages stamped before a contact-free step "
                        "(raise contact_free_period)")
    prefix = hardware_id if node_name is None else node_name
    statuses.append(DiagnosticStatus(
        level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK,
        name=f"{prefix}: inputs", hardware_id=hardware_id,
        message="; ".join(problems) or "OK", values=values))
    for name, (type_name, attachment, st) in sensors.items():
        rate = st.window_count / period_s if period_s > 0 else 0.0
        mean = 1e3 * st.window_latency_sum / st.window_count if st.window_count else 0.0
        vals = [
            _kv("type", type_name), _kv("attachment", attachment),
            _kv("rate_hz", f"{rate:.2f}"), _kv("latency_ms_mean", f"{mean:.3f}"),
            _kv("latency_ms_max", f"{1e3 * st.window_latency_max:.3f}"),
            _kv("published", st.published), _kv("measured_received", st.measured_received),
            _kv("residuals_published", st.residuals_published), _kv("pairing", st.pairing),
            _kv("measured_stamp_jumps_backwards", st.measured_stamp_jumps),
            _kv("calibration", st.calibration), _kv("contact", st.contact),
            _kv("reading", st.reading),
        ] + [_kv(f"rejected.{r}", n) for r, n in sorted(st.rejected.items())]
        vals += [_kv(f"zero_stamps.{t}", n) for t, n in st.zero_stamps.items()]
        vals += [_kv(k, v) for k, v in st.loop_keys]
        problems = [f"{sum(st.rejected.values())} measured messages rejected"] if st.rejected else []
        problems += st.loop_problems
        if st.zero_stamps:
            problems.append(", ".join(f"{n} measured messages on {t}" for t, n in st.zero_stamps.items())
                            + f" rejected for stamp 0: {st.zero_stamp_hint}")
        if st.pairing != "ok":
            problems.append(st.pairing)
        statuses.append(DiagnosticStatus(
            level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK,
            name=f"{prefix}: {name}", hardware_id=hardware_id,
            message="; ".join(problems) or f"{rate:.1f} Hz", values=vals))
        st.window_count = 0
        st.window_latency_sum = 0.0
        st.window_latency_max = 0.0
    return DiagnosticArray(header=make_header(stamp, ""), status=statuses)


def status_values(array: DiagnosticArray, name: str) -> Dict[str, str]:
    """``{key: value}`` of the status called ``name`` in ``array`` (empty if absent)."""
    for st in array.status:
        if st.name == name:
            return {kv.key: kv.value for kv in st.values}
    return {}
