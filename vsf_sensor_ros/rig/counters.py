"""The node's ``/diagnostics`` counters and what they report: ``(key, value)`` pairs and problem
sentences per status (keys and levels: docs/interface.md, diagnostics); ROS-free.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

#: a status's ``(key, value)`` pairs, values as they are (the report turns them into text)
Values = List[Tuple[str, Any]]


def _listed(counts: Dict[str, int]) -> str:
    return ", ".join(f"{n}={c}" for n, c in counts.items())


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

    def report(self) -> Tuple[Values, List[str]]:
        """The inputs status's ``(values, problems)``; keeps the contacts' zero-stamp total reported."""
        rejected = sum(self.rejected.values())
        values: Values = [
            ("contacts_received", self.contacts_received), ("contacts_processed", self.contacts_processed),
            ("joint_states_received", self.joint_states_received), ("poses_received", self.poses_received),
            ("rejected_total", rejected), ("stamp_jumps_backwards", self.stamp_jumps_backwards),
            ("last_stamp_jump", self.last_stamp_jump),
            ("joint_states.unknown_names", len(self.unknown_joint_names)),
            ("joint_states.unknown_names_list", _listed(self.unknown_joint_names) or "none"),
            ("joint_states.missing", self.missing_joints),
            ("joint_states.stamp_jumps_backwards", self.joint_stamp_jumps_backwards),
            ("joint_states.last_stamp_jump", self.last_joint_stamp_jump),
        ]
        if self.unknown_contact_bodies:
            values.append(("contacts.unknown_bodies", _listed(self.unknown_contact_bodies)))
        if self.contact_free is not None:
            values += [("contact_free.steps", self.contact_free[0]),
                       ("contact_free.late_contacts", self.contact_free[1])]
        values += [(f"rejected.{r}", n) for r, n in sorted(self.rejected.items())]
        values += [(f"zero_stamps.{t}", n) for t, n in self.zero_stamps.items()]
        problems = [f"{rejected} messages rejected"] if rejected else []
        zero = sum(self.zero_stamps.values())
        if zero > self.zero_stamps_reported:
            problems.append(", ".join(f"contacts stamped 0 on {t} ({n} so far)"
                                      for t, n in self.zero_stamps.items())
                            + ": predicted, paired with no measured message")
        self.zero_stamps_reported = zero
        if self.unknown_joint_names:
            problems.append(f"{len(self.unknown_joint_names)} unknown joint names")
        if self.missing_joints != "none":
            problems.append(f"joints never received: {self.missing_joints}")
        if self.contact_free is not None and self.contact_free[1]:
            problems.append(f"{self.contact_free[1]} contacts messages stamped before a contact-free step "
                            "(raise contact_free_period)")
        return values, problems


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

    def report(self, type_name: str, attachment: str, period_s: float) -> Tuple[Values, List[str], float]:
        """The sensor status's ``(values, problems, rate in Hz)`` over the window of ``period_s``
        seconds since the previous report; clears the window."""
        rate = self.window_count / period_s if period_s > 0 else 0.0
        mean = 1e3 * self.window_latency_sum / self.window_count if self.window_count else 0.0
        values: Values = [
            ("type", type_name), ("attachment", attachment), ("rate_hz", f"{rate:.2f}"),
            ("latency_ms_mean", f"{mean:.3f}"), ("latency_ms_max", f"{1e3 * self.window_latency_max:.3f}"),
            ("published", self.published), ("measured_received", self.measured_received),
            ("residuals_published", self.residuals_published), ("pairing", self.pairing),
            ("measured_stamp_jumps_backwards", self.measured_stamp_jumps),
            ("calibration", self.calibration), ("contact", self.contact), ("reading", self.reading),
        ]
        values += [(f"rejected.{r}", n) for r, n in sorted(self.rejected.items())]
        values += [(f"zero_stamps.{t}", n) for t, n in self.zero_stamps.items()]
        values += list(self.loop_keys)
        problems = [f"{sum(self.rejected.values())} measured messages rejected"] if self.rejected else []
        problems += self.loop_problems
        if self.zero_stamps:
            problems.append(", ".join(f"{n} measured messages on {t}" for t, n in self.zero_stamps.items())
                            + f" rejected for stamp 0: {self.zero_stamp_hint}")
        if self.pairing != "ok":
            problems.append(self.pairing)
        self.window_count, self.window_latency_sum, self.window_latency_max = 0, 0.0, 0.0
        return values, problems, rate
