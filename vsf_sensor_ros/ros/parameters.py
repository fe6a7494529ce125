"""The nodes' parameters at run time: declaration, int -> double leniency, live requests checked
whole, unknown keys and parameter files keyed for another node (docs/node.md)."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import yaml
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from .messages import readings as enc
from .kinds import SensorKindError, codec_of_type, sensor_kinds
from ._rclpy_compat import parameter_override, replace_parameter_override
from .main import split_ros_args
from .topic_types import type_name
from .parameter_table import (BODY_SPECS, NODE_SPECS, SENSOR_COMMON_SPECS, ConfigError, Spec, as_double,
                              check_name, check_topic_name, check_value, plain, raise_all, sensor_specs)

# Node endpoints a sensor name must not shadow.
RESERVED_NAMES = ("tare", "save_calibration", "contacts", "joint_states")
_NODE_SPEC = {s.key: s for s in NODE_SPECS}


@dataclass
class SensorParameters:
    """A sensor's parameter namespace: ``name``, ``type`` and ``values`` (every declared key -> value)."""

    name: str
    type: str
    values: Dict[str, Any] = field(default_factory=dict)

    def model_config(self) -> Dict[str, Any]:
        """The dict for ``sensor_from_config``: name, type, attachment, type settings (arrays as lists)."""
        cfg: Dict[str, Any] = {"name": self.name, "type": self.type,
                               "attachment": self.values.get("attachment", "")}
        for spec in sensor_specs(self.type)[len(SENSOR_COMMON_SPECS):]:
            if spec.key in self.values:
                cfg[spec.key] = plain(self.values[spec.key])
        return cfg

    def measured_type(self) -> str:
        """Canonical measured message type (the predicted type when unset); ConfigError: an
        unsupported type, or one the kind cannot decode."""
        accepted = codec_of_type(self.type).measured_types
        text = self.values.get("measured_type", "") or accepted[0]
        try:
            canon = enc.normalise_measured_type(text)
        except ValueError as exc:
            raise ConfigError(f"{self.name}.measured_type", text, str(exc)) from None
        if canon not in accepted:
            raise ConfigError(f"{self.name}.measured_type", text,
                              f"a {self.type} reading cannot be decoded from {canon}; use "
                              f"{' or '.join(accepted)}")
        return canon

    def measured_topic(self) -> str:
        """The measured topic: ``<s>.measured_topic``, or ``<s>/measured`` when empty."""
        return str(self.values.get("measured_topic", "") or "").strip() or f"{self.name}/measured"


@dataclass(frozen=True)
class LiveSettings:
    """Immutable snapshot of the node-wide live parameters (:data:`.parameter_table.NODE_SPECS`)."""

    tare_samples: int
    tare_on_start: bool
    max_stamp_difference: float
    markers_max_rate: float
    marker_force_scale: float

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "LiveSettings":
        """The snapshot from parameter values (node parameter name -> value)."""
        return cls(int(values["tare_samples"]), bool(values["tare_on_start"]),
                   float(values["max_stamp_difference"]), float(values["markers_max_rate"]),
                   float(values["marker_force_scale"]))

    def updated(self, scalars: Mapping[str, Any]) -> "LiveSettings":
        """A copy with the node-wide live values ``scalars`` applied (other keys ignored)."""
        known = {k: v for k, v in scalars.items() if k in self.__dataclass_fields__}
        return LiveSettings.from_values({**self.__dict__, **known}) if known else self

    @property
    def tolerance_ns(self) -> Optional[int]:
        """``max_stamp_difference`` in integer ns; None when 0 (the pairer's adaptive rule)."""
        ns = int(round(self.max_stamp_difference * 1e9))
        return ns if ns > 0 else None


def declare_spec(node: Node, name: str, spec: Spec) -> Any:
    """Declare parameter ``name`` on ``node`` from a :class:`Spec`; its value as plain Python (an
    integer override of a double (array) becomes that double first).  ConfigError: a value rclpy
    or :func:`.parameter_table.check_value` refuses."""
    override = parameter_override(node, name)
    fixed = None if override is None else as_double(override.value, spec.default)
    if fixed is not None:
        replace_parameter_override(node, name, fixed)
    arg = Parameter.Type(spec.ptype) if spec.ptype is not None and spec.default == [] else spec.default
    try:
        param = node.declare_parameter(name, arg, spec.descriptor(name))
    except (InvalidParameterTypeException, InvalidParameterValueException, TypeError) as exc:
        shown = override.value if override is not None else spec.default
        raise ConfigError(name, shown, f"invalid: {exc}") from None
    val = [] if spec.ptype is not None and param.value is None else plain(param.value)
    check_value(name, spec, val)
    return val


def declare_all(node: Node, specs: Sequence[Spec]) -> Tuple[Dict[str, Any], List[ConfigError]]:
    """Declare ``specs`` on ``node``; ``({name: value}, errors)``: a refused one reads its default
    (for the checks that follow), its ConfigError listed."""
    values: Dict[str, Any] = {}
    errors: List[ConfigError] = []
    for s in specs:
        try:
            values[s.key] = declare_spec(node, s.key, s)
        except ConfigError as exc:
            errors.append(exc)
            values[s.key] = s.default
    return values, errors


def check_measured_topic(node: Node, cfg: SensorParameters,
                         own: Mapping[str, Tuple[str, str, bool]]) -> None:
    """ConfigError naming ``<s>.measured_topic`` unless it is a valid name, no input of the node
    and carries no other type (on the graph or in ``own``, :func:`.health.own_topics`)."""
    topic = cfg.measured_topic()
    pname, given = f"{cfg.name}.measured_topic", cfg.values.get("measured_topic", "")
    full = check_topic_name(pname, topic, node.get_name(), node.get_namespace())
    want = type_name(enc.MEASURED_TYPES[cfg.measured_type()])
    what, its_type, is_input = own.get(node.resolve_topic_name(topic), ("", "", False))
    if what and is_input:   # (resolved with the node's remappings, as it subscribes)
        raise ConfigError(pname, given, f"topic {full} is this node's own {what} ({its_type}); a measured "
                                        f"{want} stream needs a topic of its own")
    if what and its_type != want:
        raise ConfigError(pname, given, f"topic {full} is this node's own {what} ({its_type}), not {want}")
    for name, types in node.get_topic_names_and_types():
        others = sorted(t for t in types if t != want)
        if name == full and others:
            raise ConfigError(pname, given, f"topic {full} already carries {', '.join(others)}, not {want}")


class NodeParameters:
    """Declares ``node``'s parameters, checks live requests; ``values``: the node-wide ones."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self.values: Dict[str, Any] = {}

    def declare_node(self) -> Tuple[Dict[str, Any], List[ConfigError]]:
        """:func:`declare_all` of the node-wide parameters."""
        self.values, errors = declare_all(self._node, NODE_SPECS)
        return self.values, errors

    def declare_body(self, body: str) -> Dict[str, Any]:
        """Declare ``<body>.*`` (read-only); ``{key: value}``.  ConfigError: a bad name or value."""
        check_name("bodies", body)
        return {s.key: declare_spec(self._node, f"{body}.{s.key}", s) for s in BODY_SPECS}

    @staticmethod
    def check_sensor_list(sensors: Sequence[str]) -> None:
        """ConfigError naming ``sensors`` unless the names are valid, distinct, no node endpoint,
        and the sensor kinds load."""
        errors: List[ConfigError] = []
        for i, s in enumerate(sensors):
            try:
                check_name("sensors", s)
            except ConfigError as exc:
                errors.append(exc)
                continue
            why = ("appears twice" if s in sensors[:i] else
                   "clashes with a node endpoint" if s in RESERVED_NAMES else "")
            if why:
                errors.append(ConfigError("sensors", list(sensors), f"name {s!r} {why}"))
        if sensors:
            try:
                sensor_kinds()
            except SensorKindError as exc:   # a package's kind that cannot load: a start-up error
                errors.append(ConfigError("sensors", list(sensors), str(exc)))
        raise_all(errors)

    def declare_sensor(self, name: str) -> SensorParameters:
        """Declare ``<name>.*`` (type first, then its keys).  ConfigError: unknown type, bad value."""
        kinds = sensor_kinds()
        # (ros2 param describe lists the kinds of this process, entry points included)
        type_spec = replace(SENSOR_COMMON_SPECS[0], constraints=" | ".join(kinds))
        t = declare_spec(self._node, f"{name}.type", type_spec)
        if t not in kinds:
            raise ConfigError(f"{name}.type", t, f"unknown sensor type; use one of {sorted(kinds)}")
        values = {s.key: declare_spec(self._node, f"{name}.{s.key}", s) for s in sensor_specs(t)[1:]}
        cfg = SensorParameters(name, t, {"type": t, **values})
        cfg.measured_type()  # validates
        return cfg

    def coerce_request(self, params: List[Parameter]) -> List[Parameter]:
        """``pre_set_parameters``: an integer for a declared double (array) becomes that double."""
        out = []
        for prm in params:
            spec = self._spec_of(prm.name)
            fixed = None if spec is None else as_double(prm.value, spec.default)
            out.append(prm if fixed is None else Parameter(prm.name, value=fixed))
        return out

    def _spec_of(self, full: str) -> Optional[Spec]:
        spec = _NODE_SPEC.get(full)
        if spec is not None:
            return spec
        ns, _, key = full.partition(".")
        if self._node.has_parameter(f"{ns}.type") and ns in (self.values.get("sensors") or []):
            kind = self._node.get_parameter(f"{ns}.type").value
            return next((sp for sp in sensor_specs(kind) if sp.key == key), None)
        return None

    def check(self, params: Sequence[Parameter], errors: Sequence[ConfigError] = ()
              ) -> Dict[str, Dict[str, Any]]:
        """Check a live request whole (with ``errors`` already found), changing nothing;
        ``{namespace: {key: value}}`` (``""``: node-wide).  ConfigError (:class:`.ConfigErrors`
        for several): naming each refused parameter and value."""
        out: Dict[str, Dict[str, Any]] = {}
        errors = list(errors)
        for prm in params:   # (no read-only one: rclpy refuses those before the callbacks)
            spec, value = self._spec_of(prm.name), plain(prm.value)
            try:
                if spec is None:
                    raise ConfigError(prm.name, value, "unknown parameter")
                check_value(prm.name, spec, value)
            except ConfigError as exc:
                errors.append(exc)
                continue
            ns, key = ("", prm.name) if prm.name in _NODE_SPEC else prm.name.split(".", 1)
            out.setdefault(ns, {})[key] = value
        raise_all(errors)
        return out


def wrong_type_errors(node: Node, params: Sequence[Parameter]
                      ) -> Tuple[List[Parameter], Dict[str, ConfigError]]:
    """For ``pre_set_parameters``: the request with each wrongly typed value of a declared writable
    parameter replaced by the current one, and those errors by name (rclpy's names neither)."""
    checked: List[Parameter] = []
    wrong: Dict[str, ConfigError] = {}
    for prm in params:
        if prm.type_ != Parameter.Type.NOT_SET and node.has_parameter(prm.name):
            d = node.describe_parameter(prm.name)
            if not d.dynamic_typing and not d.read_only and d.type != prm.type_.value:
                want, got = (_type_words(t) for t in (Parameter.Type(d.type), prm.type_))
                wrong[prm.name] = ConfigError(prm.name, plain(prm.value),
                                              f"wrong type: needs {want}, got {got}")
                checked.append(node.get_parameter(prm.name))
                continue
        checked.append(prm)
    return checked, wrong


def _type_words(t: Parameter.Type) -> str:
    """``Type.DOUBLE`` -> ``'a double'``, ``Type.INTEGER_ARRAY`` -> ``'an integer array'``."""
    words = t.name.lower().replace("_", " ")
    return ("an " if words[:1] in "aeiou" else "a ") + words


# rclpy accepts unknown keys and parameter files keyed for another node silently: made loud here.
# Parameters rclpy declares on every node, or reads itself, that no table of ours lists.
RCLPY_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service"})
RCLPY_PREFIXES = ("qos_overrides.",)


@dataclass(frozen=True)
class UnknownKey:
    """An override that is no parameter: ``name`` as given, the closest known full name
    (``suggestion``, or None), ``where``: ``"node"``, ``"sensor <s>"`` or ``"body <b>"``."""

    name: str
    suggestion: Optional[str]
    where: str

    def message(self) -> str:
        """One line naming the key, where it is, and the closest known key."""
        hint = f"; did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"unknown parameter '{self.name}' ({self.where}){hint}"


def closest_key(key: str, known: Iterable[str]) -> Optional[str]:
    """The name of ``known`` most like ``key`` (difflib ratio >= 0.6), or None."""
    match = difflib.get_close_matches(key, sorted(set(known)), n=1, cutoff=0.6)
    return match[0] if match else None


def unknown_keys(names: Iterable[str], node_keys: Set[str], sensors: Mapping[str, Set[str]],
                 bodies: Mapping[str, Set[str]]) -> List[UnknownKey]:
    """Every name of ``names`` the node's table does not know, in order, with a suggestion
    (``sensors`` / ``bodies``: name -> its keys; a key under no such section suggests a close one)."""
    sections = {**bodies, **sensors}
    out: List[UnknownKey] = []
    for name in names:
        if name in node_keys or name in RCLPY_PARAMETERS or name.startswith(RCLPY_PREFIXES):
            continue
        prefix, dot, key = name.partition(".")
        if dot and prefix in sections:
            if key not in sections[prefix]:
                close = closest_key(key, sections[prefix])
                out.append(UnknownKey(name, None if close is None else f"{prefix}.{close}",
                                      f"{'sensor' if prefix in sensors else 'body'} {prefix}"))
            continue
        near = closest_key(prefix, sections) if dot else None
        guess = (f"{near}.{key}" if near is not None and key in sections[near]
                 else closest_key(name, node_keys))
        out.append(UnknownKey(name, guess, "node"))
    return out


def params_files(argv: Sequence[str]) -> List[str]:
    """The ``--params-file`` paths inside the ``--ros-args`` sections of ``argv``."""
    ros = split_ros_args(argv)[1]
    return [path for flag, path in zip(ros, ros[1:]) if flag == "--params-file"]


def node_keys_of_file(path: str) -> List[str]:
    """The node names a ROS 2 parameters file is keyed by (``left: {sensor_node: {ros__parameters:
    ...}}`` gives ``left/sensor_node``); OSError, yaml.YAMLError: not readable as YAML."""
    keys: List[str] = []

    def walk(node: object, trail: Tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key == "ros__parameters":
                keys.append("/".join(trail))
            else:
                walk(value, trail + (str(key).strip("/"),))
    walk(yaml.safe_load(Path(path).read_text()), ())
    return keys


def node_key_matches(key: str, fully_qualified_name: str) -> bool:
    """Whether a parameters-file node key applies to node ``fully_qualified_name`` (rcl's rules:
    absolute, a missing leading ``/`` implied; ``*`` one name token, ``**`` any number)."""
    pattern = "".join("(/[^/]+)*" if token == "**" else "/" + "[^/]*".join(map(re.escape, token.split("*")))
                      for token in key.strip("/").split("/"))
    return re.fullmatch(pattern, fully_qualified_name) is not None


def unmatched_params_files(argv: Sequence[str], fully_qualified_name: str) -> List[str]:
    """A sentence per parameters file of ``argv`` none of whose node keys matches
    ``fully_qualified_name``, naming its path and the keys found (an unreadable file: the reason)."""
    out: List[str] = []
    for path in params_files(argv):
        try:
            keys = node_keys_of_file(path)
        except (OSError, yaml.YAMLError) as exc:
            keys = [f"<unreadable: {exc.__class__.__name__}>"]
        if not any(node_key_matches(k, fully_qualified_name) for k in keys):
            out.append(f"parameters file {path} has no entry for this node: expected "
                       f"'{fully_qualified_name}' (or a matching wildcard such as '/**'), found "
                       f"{', '.join(repr(k) for k in keys) or 'no node entries'}; none of its "
                       "parameters applies")
    return out
