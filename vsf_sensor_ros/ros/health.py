"""The sensor node's health on ``/diagnostics`` beyond its counters: configuration checked, inputs
watched, so that no status is OK while an input a sensor needs is silent (docs/interface.md)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node

from ._rclpy_compat import parameter_override, parameter_override_names
from .diagnostics import make_status
from .kinds import codec_of_type, sensor_kinds
from .main import EXECUTOR_KINDS
from .messages.readings import MEASURED_TYPES

from ..rig.input_health import OK, WARN, SensorInputs, StreamClock, sensor_health, silent_streams
from .parameters import UnknownKey, unknown_keys, unmatched_params_files
from .parameter_table import BODY_KEYS, NODE_SPECS, ConfigError, sensor_specs
from .sensor_handle import qos_reliability
from .topic_types import type_name   # re-exported: the node names its input types with it

# rejections of a contacts message that mean the models failed, not the input
PREDICTION_FAILURES = frozenset({"internal_error", "non_finite_prediction", "model_error", "out_of_range"})

JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"


def known_keys(sensors: Mapping[str, str], bodies: Iterable[str]) -> Dict[str, Any]:
    """:func:`~.parameters.unknown_keys`' key sets (``sensors``: name -> type; ``bodies``: names)."""
    return {"node_keys": {s.key for s in NODE_SPECS},
            "sensors": {n: {s.key for s in sensor_specs(t)} for n, t in sensors.items()},
            "bodies": {b: set(BODY_KEYS) for b in bodies}}


def startup_problems(names: Iterable[str], sensors: Mapping[str, str], bodies: Iterable[str],
                     command_line: Sequence[str], fully_qualified_name: str
                     ) -> "tuple[List[UnknownKey], List[str]]":
    """``(unknown keys, sentences)`` of the parameter ``names`` given: unknown keys, ``--params-file``
    s of ``command_line`` with no entry for ``fully_qualified_name``, an empty sensor list."""
    unknown = unknown_keys(list(names), **known_keys(sensors, bodies))
    lines = [u.message() for u in unknown] + unmatched_params_files(command_line, fully_qualified_name)
    if not sensors:
        lines.append("no sensors configured (parameter 'sensors' is empty): the node publishes no "
                     "predictions")
    return unknown, lines


def node_value_problems(p: Dict[str, Any]) -> List[ConfigError]:
    """A :class:`ConfigError` per declared node-wide value ``p`` the node cannot use: a ``world_frame`` that
    is empty, holds white space or starts with '/', white space in ``frame_prefix``, another QoS
    reliability or ``executor``."""
    frame, prefix, executor = p["world_frame"], str(p["frame_prefix"]), p["executor"]
    out = [ConfigError(key, value, why) for key, value, bad, why in (
        ("world_frame", frame, not frame or frame.startswith("/") or any(ch.isspace() for ch in frame),
         "must name the frame of contacts and free-body poses: not empty, no white space, no leading '/' "
         "(tf2's rule; e.g. 'world')"),
        ("frame_prefix", prefix, any(ch.isspace() for ch in prefix), "must not contain white space"),
    ) if bad]
    for side in ("inputs", "outputs"):
        try:
            qos_reliability(f"qos.{side}.reliability", p[f"qos.{side}.reliability"])
        except ConfigError as exc:
            out.append(exc)
    if executor not in EXECUTOR_KINDS:
        out.append(ConfigError("executor", executor, f"must be one of {', '.join(EXECUTOR_KINDS)}"))
    return out


def misspelt_keys(node: Node, failed: Iterable[str], bodies: Optional[Iterable[str]]) -> List[ConfigError]:
    """ConfigErrors of the unknown keys of ``node``'s sections ``failed`` at start (sensor or body
    names, ``''`` the top level; ``bodies``: the extra bodies): a misspelt ``attachement``
    explains a missing ``attachment`` before the start-up warning could name it."""
    failed = set(failed)
    bodies = list(bodies or [])
    types = {name: node.get_parameter(f"{name}.type").value if node.has_parameter(f"{name}.type") else None
             for name in failed - {""} - set(bodies)}
    kinds = sensor_kinds()
    known = known_keys({n: t for n, t in types.items() if t in kinds}, bodies)
    # an unknown type has no keys of its own: a key of any type is no misspelling
    any_key = {s.key for kind in kinds for s in sensor_specs(kind)}
    known["sensors"].update({name: any_key for name, kind in types.items() if kind not in kinds})
    node_sections = {k.partition(".")[0] for k in known["node_keys"] if "." in k}
    out = []
    for u in unknown_keys(parameter_override_names(node), **known):
        prefix, dot, _ = u.name.partition(".")
        # top level: undotted names and node-wide sections (qos.*), not other sections' keys
        top = u.where == "node" and (not dot or prefix in node_sections)
        if (top and "" in failed) or (u.where != "node" and prefix in failed):
            override = parameter_override(node, u.name)
            hint = f"; did you mean '{u.suggestion}'?" if u.suggestion else ""
            out.append(ConfigError(u.name, None if override is None else override.value,
                                   f"unknown parameter ({u.where}){hint}"))
    return out


def configuration_warnings(node: Node, sensors: Mapping[str, str], bodies: Iterable[str],
                           command_line: Sequence[str], strict: bool) -> List[str]:
    """:func:`startup_problems` of a started ``node`` (``sensors``: name -> type): its WARN lines.
    ConfigError: with ``strict`` (``strict_parameters``), naming the first unknown key."""
    unknown, lines = startup_problems(parameter_override_names(node), sensors, list(bodies), command_line,
                                      node.get_fully_qualified_name())
    if strict and unknown:
        first = unknown[0]
        override = parameter_override(node, first.name)
        raise ConfigError(first.name, None if override is None else override.value,
                          f"{first.message()} (strict_parameters: true; {len(unknown)} unknown keys in all)")
    return lines


def own_topics(node: Node, contacts_type: str, pose_topics: Mapping[str, str],
               configs: Iterable[Any]) -> Dict[str, Tuple[str, str, bool]]:
    """``{resolved topic: (what it is, message type, an input)}`` of ``node``'s inputs (contacts of
    ``contacts_type``, joint states, ``pose_topics``), outputs and the measured topics of the
    sensors ``configs`` (:class:`.parameters.SensorParameters`)."""
    configs = list(configs)
    inputs = {"contacts": ("contacts input", str(contacts_type)),
              "joint_states": ("joint states input", JOINT_STATE),
              **{t: (f"pose input of body {b}", POSE_STAMPED) for b, t in pose_topics.items()}}
    own: Dict[str, Tuple[str, str, bool]] = {
        node.resolve_topic_name(t): (what, kind, True) for t, (what, kind) in inputs.items()}
    # (/rosout and /parameter_events exist from the node's creation: the graph lists them)
    outputs = {"/diagnostics": "diagnostic_msgs/msg/DiagnosticArray", "/tf": "tf2_msgs/msg/TFMessage",
               "/tf_static": "tf2_msgs/msg/TFMessage"}
    for cfg in configs:
        reading = type_name(codec_of_type(cfg.type).message)
        outputs.update({f"{cfg.name}/{o}": reading for o in ("predicted", "residual", "measured_si")})
        outputs.update({f"{cfg.name}/jacobian": "sensor_msgs/msg/PointCloud2",
                        f"{cfg.name}/markers": "visualization_msgs/msg/MarkerArray"})
    own.update({node.resolve_topic_name(t): (f"output {t}", kind, False) for t, kind in outputs.items()})
    for cfg in configs:   # two sensors may share a measured stream, of one type
        try:
            topic = node.resolve_topic_name(cfg.measured_topic())
            kind = type_name(MEASURED_TYPES[cfg.measured_type()])
        except Exception:   # an invalid name or type: its own check names it
            continue
        own.setdefault(topic, (f"measured input of sensor {cfg.name}", kind, False))
    return own


class NodeHealth:
    """``/diagnostics`` beyond the counters: ``config_problems`` (sentences), ``failing`` (why the
    latest predictions failed), ``last_prediction`` (sensor -> monotonic s), input ``streams``."""

    def __init__(self, node_name: str, started: float) -> None:
        self.node_name, self.started = node_name, started
        self.config_problems: List[str] = []
        self.streams: Dict[str, StreamClock] = {}
        self._window: Dict[str, "tuple[int, float]"] = {}
        self.failing: Optional[str] = None
        self.last_prediction: Dict[str, float] = {}

    def stream(self, topic: str, type_name_: str, optional: bool = False) -> StreamClock:
        """The clock of ``topic`` (created on first use; a new type or optionality replaces it)."""
        clock = self.streams.get(topic)
        if clock is None or clock.type_name != type_name_ or clock.optional != optional:
            clock = self.streams[topic] = StreamClock(topic, type_name_, optional)
            self._window.pop(topic, None)
        return clock

    def prediction_failed(self, reason: str, detail: str) -> None:
        """A contacts message was rejected with ``reason``: predictions fail when it is a model's."""
        if reason in PREDICTION_FAILURES:
            self.failing = f"{reason} ({detail})"

    def apply(self, array: DiagnosticArray, now: float, timeout: float,
              sensors: Mapping[str, SensorInputs],
              explain: Optional[Callable[[StreamClock], str]] = None) -> DiagnosticArray:
        """Complete a :func:`~.diagnostics.build_diagnostics` report in place (``now``: monotonic
        s; ``explain(stream)``: why a silent stream is silent, :class:`~.topic_types.WrongTypeWatch`)."""
        problems = self.config_problems
        silent = silent_streams((s for inp in sensors.values() for s in inp.streams), now, self.started,
                                timeout)
        causes = {t: text for t, c in silent.items() if explain and (text := explain(c))}
        sentences = ((t, c.problem(now, self.started, timeout, causes.get(t, ""))) for t, c in silent.items())
        missing = {t: text for t, text in sentences if text}   # an optional stream: with a cause only
        for st in array.status:
            if st.name.endswith(": inputs"):
                self._inputs_status(st, problems, list(missing), list(missing.values()))
                continue
            name = st.name.rpartition(": ")[2]
            inputs = sensors.get(name)
            if inputs is None:
                continue
            inputs.failing = self.failing
            inputs.last_prediction = self.last_prediction.get(name)
            level, lines = sensor_health(now, self.started, timeout, inputs, causes)
            st.values.append(KeyValue(key="inputs", value=", ".join(
                f"{s.topic} ({s.type_name}{', optional' if s.optional else ''})" for s in inputs.streams)))
            st.values.append(KeyValue(key="health", value="; ".join(lines) or "ok"))
            if level != OK:
                old = _level(st.level)
                st.message = "; ".join(lines + ([st.message] if old != OK else []))
                st.level = max(old, level).to_bytes(1, "little")
        # a topic status warns only for a stream some sensor needs (a pose no sensor rides on, or a
        # prediction-only sensor's measured topic, is information, not a fault)
        needed = {s.topic for inp in sensors.values() for s in inp.streams if not s.optional or s.count}
        needed |= set(causes)   # another type on an optional topic: someone meant to feed it
        array.status.extend(self.frequency_statuses(now, timeout, needed, causes))
        return array

    @staticmethod
    def _inputs_status(st: DiagnosticStatus, config: List[str], topics: List[str],
                       missing: List[str]) -> None:
        """The configuration and missing-input keys of the inputs status; WARN, leading its message,
        while either has entries."""
        st.values.append(KeyValue(key="configuration", value=str(len(config))))
        st.values.append(KeyValue(key="configuration.problems", value="; ".join(config) or "none"))
        st.values.append(KeyValue(key="inputs.missing", value=", ".join(topics) or "none"))
        st.values.append(KeyValue(key="inputs.problems", value="; ".join(missing) or "none"))
        lead = []
        if config:
            lead.append(f"{len(config)} configuration problem{'' if len(config) == 1 else 's'}")
        if topics:
            lead.append(f"inputs missing or stopped: {', '.join(topics)}")
        if lead:
            st.level = max(_level(st.level), WARN).to_bytes(1, "little")
            st.message = "; ".join(lead + ([st.message] if st.message != "OK" else []))

    def frequency_statuses(self, now: float, timeout: float, needed: Optional[Set[str]] = None,
                           causes: Optional[Mapping[str, str]] = None) -> List[DiagnosticStatus]:
        """A status per input topic (``diagnostic_updater`` FrequencyStatus keys), WARN for a silent
        ``needed`` one (None: non-optional or arrived once); opens a new window."""
        causes, out = causes or {}, []
        for topic, clock in self.streams.items():
            count0, t0 = self._window.get(topic, (0, self.started))
            events, duration = clock.count - count0, max(now - t0, 1e-9)
            self._window[topic] = (clock.count, now)
            freq = events / duration
            need = (not clock.optional or clock.count > 0) if needed is None else topic in needed
            warn = events == 0 and need and now - self.started >= timeout
            message = (f"No events recorded on {topic} ({clock.type_name})" if events == 0
                       else f"{freq:.2f} Hz")
            if events == 0 and causes.get(topic):
                message += f": {causes[topic]}"
            elif events == 0 and clock.optional and clock.count == 0:
                message += " (optional: none expected yet)"
            out.append(make_status(
                f"{self.node_name}: {topic} topic status", self.node_name,
                [("Events in window", events), ("Events since startup", clock.count),
                 ("Duration of window (s)", f"{duration:.6f}"), ("Actual frequency (Hz)", f"{freq:.6f}"),
                 ("Type", clock.type_name)], [message] if warn else [], message))
        return out


def _level(value: Any) -> int:
    """A ``DiagnosticStatus.level`` (bytes in rclpy) as an int."""
    return value[0] if isinstance(value, (bytes, bytearray)) else int(value)
