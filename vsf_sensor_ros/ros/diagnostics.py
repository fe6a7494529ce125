"""Counters and ``/diagnostics`` reports of the sensor node.

The node keeps one :class:`InputStats` (messages rejected per reason, stamp
jumps) and one :class:`SensorStats` per sensor (output rate, processing
latency, measured messages rejected per reason, calibration state).
:func:`build_diagnostics` turns them into a ``diagnostic_msgs/DiagnosticArray``
with one ``DiagnosticStatus`` named ``<node>: inputs`` and one named
``<node>: <sensor>`` per sensor, where ``<node>`` is the node's fully
qualified name (``/left/sensor_node: punyo_pressure``), also its
``hardware_id``: the ``diagnostic_updater`` form ``<node name>: <task>``, with
the namespace kept so that two nodes of one name in different namespaces never
report under the same status name.  Keys are stable (tests and dashboards
read them):

* inputs: ``contacts_received``, ``contacts_processed``, ``joint_states_received``,
  ``poses_received`` (free-body poses, every body), ``rejected.<reason>`` (one key per reason
  seen, e.g. ``rejected.non_finite``),
  ``rejected_total``, ``stamp_jumps_backwards``, ``last_stamp_jump``,
  ``joint_states.unknown_names`` (how many distinct JointState names matched no URDF joint),
  ``joint_states.unknown_names_list`` (``name=messages, ...``), ``joint_states.missing``
  (joints moving a sensor body never received after 50 joint states, or ``none``),
  ``joint_states.stamp_jumps_backwards`` (joint states stamped earlier than the newest of
  the same source, i.e. the same joint names: that driver restarted),
  ``joint_states.last_stamp_jump`` (``<old> -> <new> s (<joints>)``, or ``none``); with
  event-driven contacts (:mod:`.contact_free`) ``contact_free.steps`` (steps made without a
  contacts message) and ``contact_free.late_contacts`` (contacts messages stamped before such a
  step: WARN); ``zero_stamps.<contacts topic>`` (once any came: contacts messages stamped 0,
  predicted and published but paired with no measured message; WARN while they come).
* sensor: ``type``, ``attachment``, ``rate_hz``, ``latency_ms_mean``,
  ``latency_ms_max`` (receipt of the contacts message -> last publish, wall
  clock, over the last report period), ``published``, ``measured_received``,
  ``residuals_published``, ``measured_stamp_jumps_backwards``, ``pairing`` (``ok``, or a
  sentence when measured and contacts stamps are seconds apart, e.g. ``measured stamps are
  1.7e+09 s ahead of contacts stamps: different clocks?``: two clocks, no pair possible; or
  when measurements come older than every prediction kept for pairing, or predictions older
  than every measurement kept: raise ``alignment_buffer_size``; :meth:`.StampPairer.offset_hint`),
  ``rejected.<reason>``, ``zero_stamps.<measured topic>`` (once any came: measured messages
  stamped 0, or header-less ones received while the node clock read 0, rejected; WARN, with the
  hint), ``calibration``, ``contact``, ``reading``; with ``<s>.auto_tare``
  ``auto_tare.applied``, ``auto_tare.refused``, ``auto_tare.offset`` (the model's offset now),
  ``auto_tare.last_refused`` (the latest refusal, naming the step and ``max_step``, until a tare is
  applied again: WARN; or ``none``); for a Punyo pressure sensor ``pressure.trend_pa_per_min``
  (the contact-free pressure's trend, ``none`` until 20 s of it) and ``pressure.gauge_pa``
  (``none`` without ``<s>.ambient_pressure``), WARN on a leak or a low gauge pressure
  (:class:`~vsf_sensor_ros.rig.calibration.ContactFreeLoop`).

The node completes each report with :class:`~.health.NodeHealth` (configuration problems, the
health of each sensor's inputs, a frequency status per input topic).
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
    """``contacts.unknown_bodies`` (``name=messages, ...``) when gz contacts named bodies outside the
    body table; nothing otherwise (the contacts cloud never does)."""
    seen = inputs.unknown_contact_bodies
    return [_kv("contacts.unknown_bodies", ", ".join(f"{n}={c}" for n, c in seen.items()))] if seen else []


def _contact_free(inputs: InputStats) -> List[KeyValue]:
    """``contact_free.steps`` and ``contact_free.late_contacts`` when the node steps without
    contacts messages (:mod:`.contact_free`); nothing otherwise."""
    if inputs.contact_free is None:
        return []
    steps, late = inputs.contact_free
    return [_kv("contact_free.steps", steps), _kv("contact_free.late_contacts", late)]


def build_diagnostics(stamp, hardware_id: str, inputs: InputStats,
                      sensors: Dict[str, tuple], period_s: float,
                      node_name: Optional[str] = None) -> DiagnosticArray:
    """Assemble the report, clear the per-window sensor fields and keep the contacts' zero-stamp
    total reported (``inputs.zero_stamps_reported``).

    Args:
        stamp: ``builtin_interfaces/Time`` for the header (node clock).
        hardware_id: reported in every status (the node's fully qualified name).
        inputs: node-wide counters.
        sensors: name -> ``(type_name, attachment, SensorStats)``.
        period_s: wall time since the previous report (s), for ``rate_hz``.
        node_name: the prefix of every status name, ``<node_name>: inputs``
            (the node's fully qualified name, e.g. ``/left/sensor_node``);
            None = ``hardware_id``.

    Levels: WARN when messages were rejected (inputs: since start; sensor:
    measured messages since start, stamp 0 included), when contacts stamped 0 came since
    the previous report, when JointState names matched no URDF joint or
    sensor-moving joints were never received (inputs), or when the measured and
    contacts stamps are too far apart to pair (sensor ``pairing``); OK otherwise.
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
