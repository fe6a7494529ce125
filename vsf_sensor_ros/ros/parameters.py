"""The sensor node's parameters at run time: declaration, coercion, staged values and change plans.

The *table* of parameters (names, defaults, descriptors, checks) is
:mod:`vsf_sensor_ros.ros.parameter_table`; this module declares it on a node and
works out what a ``ros2 param set`` request would change
(:meth:`NodeParameters.plan`, a frozen :class:`ChangePlan`) without changing
anything.  The node applies a plan after rclpy accepted the request.

Leniency (files and ``ros2 param set`` alike): an integer is accepted for a
double (``measured_scale: 100``) and an all-integer list for a double array
(``position: [0, 0, 0]``); an empty array of any type is the empty string
array (``ros2 param set /sensor_node sensors "[]"`` sends an empty *bool* array).

Staged values: a parameter ``<c>.<key>`` of a sensor ``c`` not configured yet
(``<key>`` a sensor setting name) is accepted undeclared, so ``c.type`` and
``c.attachment`` can be prepared before ``c`` is added to ``sensors``.
At most ``max_sensor_names`` distinct sensor names (configured, removed or
staged) ever hold parameters, and a string set live is at most
:data:`MAX_LIVE_TEXT` characters: a remote caller cannot make the node
allocate without bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..sensor.base_sensor import BaseSensor
from .messages import readings as enc
from ._rclpy_compat import parameter_override, replace_parameter_override
from .topic_types import type_name
from .parameter_table import (BODY_KEYS, BODY_SPECS, NODE_SPECS, SENSOR_COMMON_SPECS, SENSOR_KEYS,
                              SENSOR_SETTINGS, STRING_ARRAY, ConfigError, Spec, as_double, check_name,
                              check_topic_name, check_value, plain, raise_all, sensor_specs)

# Node endpoints a sensor name must not shadow.
RESERVED_NAMES = ("tare", "save_calibration", "contacts", "joint_states")
# Longest string (and longest string array) a live parameter may hold.
MAX_LIVE_TEXT = 1024
_ARRAY_TYPES = (Parameter.Type.BYTE_ARRAY, Parameter.Type.BOOL_ARRAY, Parameter.Type.INTEGER_ARRAY,
                Parameter.Type.DOUBLE_ARRAY)
_NODE_SPEC = {s.key: s for s in NODE_SPECS}


@dataclass
class SensorParameters:
    """A sensor's parameter namespace as plain values.

    Attributes:
        name: sensor name.
        type: sensor type name.
        values: every declared key of the namespace -> value (ROS types).
    """

    name: str
    type: str
    values: Dict[str, Any] = field(default_factory=dict)

    def model_config(self) -> Dict[str, Any]:
        """The dict for ``sensor_from_config``: name, type, attachment + type settings.

        Array values become lists; ROS-side keys (measured_*, publish_*) are left out.
        """
        cfg: Dict[str, Any] = {"name": self.name, "type": self.type,
                               "attachment": self.values.get("attachment", "")}
        for spec in SENSOR_SETTINGS.get(self.type, []):
            if spec.key in self.values:
                v = self.values[spec.key]
                cfg[spec.key] = list(v) if isinstance(v, (list, tuple, np.ndarray)) else v
        return cfg

    def measured_type(self) -> str:
        """Canonical measured message type (the predicted type when unset).

        Raises:
            ConfigError: an unsupported type string, or one the sensor's kind
                cannot decode (its codec's ``measured_types``: pressure -> FluidPressure or a
                bare Float32 / Float64, dense force -> PointCloud2, ContactSensor /
                IsaacContactSensor -> WrenchStamped).
        """
        accepted = enc.codec_of_type(self.type).measured_types
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
    """Node-wide parameters read per message and changed live (one immutable snapshot).

    Attributes:
        tare_samples: N of a tare.
        tare_on_start: tare each sensor once when N contact-free pairs exist.
        max_stamp_difference: pairing tolerance (s); 0 = adaptive.
        markers_max_rate: highest marker rate (Hz; 0 = every message).
        marker_force_scale: arrow length (m per N).
    """

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
        """A copy with the live scalars of a plan applied (other keys ignored)."""
        known = {k: v for k, v in scalars.items() if k in self.__dataclass_fields__}
        return LiveSettings.from_values({**self.__dict__, **known}) if known else self

    @property
    def tolerance_ns(self) -> Optional[int]:
        """``max_stamp_difference`` in integer nanoseconds; None when 0 (the adaptive rule of
        :class:`~vsf_sensor_ros.ros.pairing.StampPairer`: half the longer observed period)."""
        ns = int(round(self.max_stamp_difference * 1e9))
        return ns if ns > 0 else None


@dataclass(frozen=True)
class SensorChange:
    """New settings of a configured sensor.

    Attributes:
        config: the sensor's parameters after the change.
        sensor, layout: a new model and layout when a model setting or the
            attachment changes, else None (only ROS-side settings change).
    """

    config: SensorParameters
    sensor: Optional[BaseSensor]
    layout: Optional[enc.SensorLayout]


@dataclass(frozen=True)
class SensorAddition:
    """A sensor a request adds (its model is built, so it is known to be valid).

    Attributes:
        staged: ``<key> -> value`` given in the same request.
        config, sensor, layout: its parameters, model and layout.
    """

    staged: Mapping[str, Any]
    config: SensorParameters
    sensor: BaseSensor
    layout: enc.SensorLayout


@dataclass(frozen=True)
class ChangePlan:
    """What a validated parameter request changes (built by :meth:`NodeParameters.plan`).

    Attributes:
        sensors: the new sensor list, or None when ``sensors`` is not set.
        scalars: node-wide parameters set (name -> value).
        changes: configured sensors whose settings change.
        additions: sensors added by the new list.
        staged_names: sensor names that receive staged (undeclared) values.
    """

    sensors: Optional[Tuple[str, ...]]
    scalars: Mapping[str, Any]
    changes: Mapping[str, SensorChange]
    additions: Mapping[str, SensorAddition]
    staged_names: Tuple[str, ...] = ()


# ``build(cfg) -> (sensor, layout)`` of a sensor's SensorParameters, raising ConfigError.
Build = Callable[[SensorParameters], Tuple[BaseSensor, enc.SensorLayout]]


def accept_integer_override(node: Node, name: str, default: Any) -> Optional[Parameter]:
    """Before declaring ``name``: an integer override (parameter file, ``-p``) of a double (array)
    parameter whose default is ``default`` becomes that double, as every node of the package takes
    it (:func:`~vsf_sensor_ros.ros.parameter_table.as_double`); rclpy would refuse it.  Returns the
    override as given (None without one)."""
    override = parameter_override(node, name)
    if override is not None:
        fixed = as_double(override.value, default)
        if fixed is not None:
            replace_parameter_override(node, name, fixed)
    return override


def declare_spec(node: Node, name: str, spec: Spec, value: Any = None, ignore_override: bool = False) -> Any:
    """Declare parameter ``name`` on ``node`` from a :class:`Spec`; its value as plain Python.

    The value is the override (parameter file, ``-p``) unless ``ignore_override``,
    else ``value``, else ``spec.default``.  An integer override of a double
    (array) is accepted as a double (see the module docstring).  Used by every
    node of the package.

    Raises:
        ConfigError: the value has the wrong type, is out of range or fails
            :func:`~vsf_sensor_ros.ros.parameter_table.check_value`.
    """
    default = spec.default if value is None else value
    if value is not None:   # a staged value: rclpy would declare it with its own (dynamic) type
        check_value(name, spec, plain(value))
    if isinstance(spec.default, float) and isinstance(default, int) and not isinstance(default, bool):
        default = float(default)
    if isinstance(spec.default, list) and spec.default and isinstance(spec.default[0], float) \
            and isinstance(default, list):
        default = [float(v) for v in default]
    override = accept_integer_override(node, name, spec.default)
    arg: Any = default
    if spec.ptype is not None and (default is None or default == []):
        arg = Parameter.Type(spec.ptype)
    try:
        param = node.declare_parameter(name, arg, spec.descriptor(name), ignore_override=ignore_override)
    except (InvalidParameterTypeException, InvalidParameterValueException, TypeError) as exc:
        shown = override.value if override is not None else default
        raise ConfigError(name, shown, f"invalid: {exc}") from None
    val = param.value
    if spec.ptype is not None and val is None:
        val = []
    val = plain(val)
    check_value(name, spec, val)
    return val


class NodeParameters:
    """Declares the node's parameters on ``node`` and plans live changes.

    Args:
        node: the node (created with ``allow_undeclared_parameters=True`` for staged values).

    Attributes:
        declaring: True while this object declares a parameter (the node's
            ``on_set`` callback then accepts without planning).
        values: node-wide parameter values after :meth:`declare_node`.
        known_names: sensor names holding parameters (configured, removed, staged).
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self.declaring = False
        self.values: Dict[str, Any] = {}
        self.known_names: Set[str] = set()
        # the node's own inputs and outputs for sensors given (see check_measured_topic); set
        # by the node, consulted for the live changes of a measured topic
        self.own_topics: Callable[[Sequence[SensorParameters]], Mapping[str, Tuple[str, str, bool]]] = \
            lambda configs: {}

    # ------------------------------------------------------------------ declaration
    def declare(self, name: str, spec: Spec, value: Any = None, staged: bool = False) -> Any:
        """Declare ``name`` with ``spec``'s descriptor; its value (override > value > default).

        ``staged``: ``value`` wins over an override (a live request's value).

        Raises:
            ConfigError: the override has the wrong type or is out of range.
        """
        self.declaring = True
        try:
            return declare_spec(self._node, name, spec, value, ignore_override=staged)
        finally:
            self.declaring = False

    def declare_node(self) -> Tuple[Dict[str, Any], List[ConfigError]]:
        """Declare every node-wide parameter, going on past a refused one.

        Returns:
            ``({name: value}, errors)``: the values (also kept in :attr:`values`; a refused
            parameter reads its default, for the checks that follow: the node must not start)
            and the :class:`ConfigError` of each override of the wrong type or out of range.
        """
        values: Dict[str, Any] = {}
        errors: List[ConfigError] = []
        for s in NODE_SPECS:
            try:
                values[s.key] = self.declare(s.key, s)
            except ConfigError as exc:
                errors.append(exc)
                values[s.key] = s.default
        self.values = values
        return values, errors

    def declare_body(self, body: str) -> Dict[str, Any]:
        """Declare ``<body>.*`` (read-only); ``{key: value}``.

        Raises:
            ConfigError: a bad body name or value.
        """
        check_name("bodies", body)
        return {s.key: self.declare(f"{body}.{s.key}", s) for s in BODY_SPECS}

    def check_sensor_list(self, sensors: Sequence[str]) -> None:
        """Names valid, distinct, not a node endpoint, within ``max_sensor_names``.

        Raises:
            ConfigError: naming ``sensors`` (:class:`.ConfigErrors` for several names).
        """
        seen: Set[str] = set()
        errors: List[ConfigError] = []
        for s in sensors:
            try:
                check_name("sensors", s)
            except ConfigError as exc:
                errors.append(exc)
                continue
            if s in seen:
                errors.append(ConfigError("sensors", list(sensors), f"name {s!r} appears twice"))
            elif s in RESERVED_NAMES:
                errors.append(ConfigError("sensors", list(sensors),
                                          f"name {s!r} clashes with a node endpoint"))
            seen.add(s)
        raise_all(errors)
        self._check_name_budget("sensors", list(sensors), seen)

    def _check_name_budget(self, pname: str, value: Any, names: Set[str]) -> None:
        limit = int(self.values["max_sensor_names"])
        total = len(self.known_names | set(names))
        if total > limit:
            raise ConfigError(pname, value, f"would hold parameters for {total} sensor names; at most "
                                            f"max_sensor_names = {limit} (read-only, set at start)")

    def declare_sensor(self, name: str, staged: Optional[Mapping[str, Any]] = None) -> SensorParameters:
        """Declare ``<name>.*`` (type first, then the type's keys) and collect the values.

        ``staged``: values given in the same parameter request or set earlier
        as undeclared parameters; they win over defaults and overrides.

        Raises:
            ConfigError: unknown type or an invalid value.
        """
        node = self._node
        staged = dict(staged or {})
        for key in list(SENSOR_KEYS):  # pick up values set earlier as undeclared parameters
            full = f"{name}.{key}"
            if key not in staged and node.has_parameter(full) and not self._is_declared_by_us(full):
                staged[key] = node.get_parameter(full).value
        values: Dict[str, Any] = {}
        type_spec = next(s for s in SENSOR_COMMON_SPECS if s.key == "type")
        values["type"] = self._declare_key(name, type_spec, staged)
        t = values["type"]
        if t not in SENSOR_SETTINGS:
            raise ConfigError(f"{name}.type", t, f"unknown sensor type; use one of {sorted(SENSOR_SETTINGS)}")
        for spec in sensor_specs(t):
            if spec.key != "type":
                values[spec.key] = self._declare_key(name, spec, staged)
        cfg = SensorParameters(name, t, values)
        cfg.measured_type()  # validates
        self.known_names.add(name)
        return cfg

    def _is_declared_by_us(self, full: str) -> bool:
        # parameters set before their sensor existed carry rclpy's dynamic-typing descriptor
        node = self._node
        return node.has_parameter(full) and not node.describe_parameter(full).dynamic_typing

    def _declare_key(self, name: str, spec: Spec, staged: Dict[str, Any]) -> Any:
        full = f"{name}.{spec.key}"
        if self._is_declared_by_us(full):
            val = self._node.get_parameter(full).value
            if spec.key in staged:  # a new value in the same request as the sensor's addition
                val = staged[spec.key]
            return plain(val)
        if spec.key in staged:
            if self._node.has_parameter(full):
                self._node.undeclare_parameter(full)
            return self.declare(full, spec, staged[spec.key], staged=True)
        return self.declare(full, spec)

    # ------------------------------------------------------------------ live requests
    def coerce_request(self, params: List[Parameter],
                       configs: Mapping[str, SensorParameters]) -> List[Parameter]:
        """``pre_set_parameters``: int -> double, and an empty array of any type for a string array."""
        out = []
        for prm in params:
            spec = self._spec_of(prm.name, configs)
            if spec is not None and spec.ptype == STRING_ARRAY and prm.type_ != Parameter.Type.STRING_ARRAY \
                    and prm.type_ in _ARRAY_TYPES and len(prm.value) == 0:
                out.append(Parameter(prm.name, Parameter.Type.STRING_ARRAY, []))
                continue
            fixed = None if spec is None else as_double(prm.value, spec.default)
            out.append(prm if fixed is None else Parameter(prm.name, value=fixed))
        return out

    @staticmethod
    def _spec_of(full: str, configs: Mapping[str, SensorParameters]) -> Optional[Spec]:
        spec = _NODE_SPEC.get(full)
        if spec is not None:
            return spec
        ns, _, key = full.partition(".")
        cfg = configs.get(ns)
        if cfg is not None:
            return next((sp for sp in sensor_specs(cfg.type) if sp.key == key), None)
        return None

    def plan(self, params: Sequence[Parameter], configs: Mapping[str, SensorParameters],
             build: Build) -> ChangePlan:
        """Work out what a request changes; build new sensor models to prove they are valid.

        Args:
            params: the request.
            configs: configured sensors, name -> current :class:`SensorParameters`.
            build: model factory (raises ``ConfigError``).

        A sensor is rebuilt only when a model setting or its attachment changes.

        Raises:
            ConfigError: the first invalid value (nothing is changed).
        """
        batch = {p.name: p.value for p in params}
        sensors: Optional[Tuple[str, ...]] = None
        scalars: Dict[str, Any] = {}
        staged_names: Set[str] = set()
        bodies = set(self.values.get("bodies") or [])
        for pname, value in batch.items():
            _check_size(pname, value)
            spec = _NODE_SPEC.get(pname)
            if spec is not None:
                if spec.read_only:   # rclpy refuses these too; never rely on the order of its checks
                    raise ConfigError(pname, value, "read-only: fixed at start")
                if pname == "sensors":
                    new = list(value or [])
                    self.check_sensor_list(new)
                    sensors = tuple(new)
                else:
                    check_value(pname, spec, value)
                    scalars[pname] = value
                continue
            ns, dot, key = pname.partition(".")
            if not dot:
                raise ConfigError(pname, value, "unknown parameter")
            if ns in configs:
                specs = {s.key: s for s in sensor_specs(configs[ns].type)}
                if key not in specs:
                    raise ConfigError(pname, value, f"not a setting of {configs[ns].type}; settings: "
                                                    f"{sorted(specs)}")
                if specs[key].read_only:
                    raise ConfigError(pname, value, "read-only once declared (use a new sensor name)")
                check_value(pname, specs[key], value)
                continue
            if key in SENSOR_KEYS or key in BODY_KEYS:
                if ns in bodies:
                    raise ConfigError(pname, value, "body parameters are read-only")
                check_name(pname, ns)
                _check_staged(pname, key, value, batch.get(f"{ns}.type", self._staged_type(ns)))
                staged_names.add(ns)   # staged for a sensor that may be added later
                continue
            raise ConfigError(pname, value, "unknown parameter")
        if staged_names:
            first = next(p for p in batch if p.partition(".")[0] in staged_names)
            self._check_name_budget(first, batch[first], staged_names | set(sensors or ()))
        changes = self._changes(batch, configs, build)
        additions = self._additions(batch, sensors, configs, build)
        checks = [(ch.config, configs[name]) for name, ch in changes.items()
                  if (ch.config.measured_topic(), ch.config.measured_type())
                  != (configs[name].measured_topic(), configs[name].measured_type())]
        checks += [(add.config, None) for add in additions.values()]
        if checks:   # most requests change no measured topic: the table is made only when needed
            own = self.own_topics([*configs.values(), *(a.config for a in additions.values())])
            for cfg, old in checks:
                self.check_measured_topic(cfg, old, own)
        return ChangePlan(sensors, MappingProxyType(scalars), changes, additions, tuple(sorted(staged_names)))

    def _staged_type(self, ns: str) -> Any:
        full = f"{ns}.type"
        if self._node.has_parameter(full):
            return self._node.get_parameter(full).value
        override = parameter_override(self._node, full)
        return None if override is None else override.value

    def check_measured_topic(self, cfg: SensorParameters, old: Optional[SensorParameters],
                             own: Optional[Mapping[str, Tuple[str, str, bool]]] = None) -> None:
        """The measured topic of ``cfg`` is a valid name, none of the node's own inputs, and
        carries no other message type.

        rclpy's name rules apply with the node's own name and namespace (``~``,
        relative names).  ``own``: ``{resolved topic: (what it is, message type, an input)}``
        of the node's own endpoints (``contacts``, ``joint_states``,
        ``/diagnostics``, every sensor's ``<s>/predicted`` ...), those made later at start
        too: the graph does not list them yet, and rclpy refuses a second type on a topic
        with a traceback.  An output of the same type is allowed (one sensor's prediction
        as another's measured stream); an input never.  A type clash with another node is
        read from the ROS graph.  ``old``: the sensor's current config, whose own
        subscription does not count as a clash.

        Raises:
            ConfigError: naming ``<s>.measured_topic`` and the value.
        """
        node = self._node
        topic = cfg.measured_topic()
        pname = f"{cfg.name}.measured_topic"
        full = check_topic_name(pname, topic, node.get_name(), node.get_namespace())
        cls = enc.MEASURED_TYPES[cfg.measured_type()]
        want = type_name(cls)
        what, its_type, is_input = (own or {}).get(node.resolve_topic_name(topic), ("", "", False))
        if what and is_input:   # (resolved with the node's remappings, as it subscribes)
            raise ConfigError(pname, cfg.values.get("measured_topic", ""),
                              f"topic {full} is this node's own {what} ({its_type}); a measured {want} "
                              "stream needs a topic of its own")
        if what and its_type != want:
            raise ConfigError(pname, cfg.values.get("measured_topic", ""),
                              f"topic {full} is this node's own {what} ({its_type}), not {want}")
        mine = None
        if old is not None:
            old_cls = enc.MEASURED_TYPES[old.measured_type()]
            old_full = check_topic_name(pname, old.measured_topic(), node.get_name(), node.get_namespace())
            mine = (old_full, type_name(old_cls))
        for name, types in node.get_topic_names_and_types():
            if name != full:
                continue
            others = sorted(t for t in types if t != want and (name, t) != mine)
            if others:
                raise ConfigError(pname, cfg.values.get("measured_topic", ""),
                                  f"topic {full} already carries {', '.join(others)}, not {want}")

    def _changes(self, batch: Mapping[str, Any], configs: Mapping[str, SensorParameters],
                 build: Build) -> Mapping[str, SensorChange]:
        touched: Dict[str, Dict[str, Any]] = {}
        for pname, value in batch.items():
            ns, _, key = pname.partition(".")
            if ns in configs:
                touched.setdefault(ns, {})[key] = value
        out: Dict[str, SensorChange] = {}
        for ns, changes in touched.items():
            old = configs[ns]
            values = dict(old.values)
            values.update({k: plain(v) for k, v in changes.items()})
            cfg = SensorParameters(ns, old.type, values)
            cfg.measured_type()
            model_keys = {"attachment"} | {s.key for s in SENSOR_SETTINGS[old.type]}
            if model_keys & set(changes):
                sensor, layout = build(cfg)
                out[ns] = SensorChange(cfg, sensor, layout)
            else:
                out[ns] = SensorChange(cfg, None, None)
        return MappingProxyType(out)

    def _additions(self, batch: Mapping[str, Any], sensors: Optional[Tuple[str, ...]],
                   configs: Mapping[str, SensorParameters], build: Build) -> Mapping[str, SensorAddition]:
        out: Dict[str, SensorAddition] = {}
        for name in sensors or ():
            if name in configs:
                continue
            staged = {k.partition(".")[2]: v for k, v in batch.items() if k.startswith(name + ".")}
            cfg = self.preview_sensor(name, staged)
            sensor, layout = build(cfg)
            out[name] = SensorAddition(MappingProxyType(staged), cfg, sensor, layout)
        return MappingProxyType(out)

    def preview_sensor(self, name: str, staged: Mapping[str, Any]) -> SensorParameters:
        """The config a sensor would get if added now (nothing declared).

        Raises:
            ConfigError: unknown type or an invalid value.
        """
        node = self._node

        def current(key: str, default: Any) -> Any:
            full = f"{name}.{key}"
            if key in staged:
                return staged[key]
            if node.has_parameter(full):
                return node.get_parameter(full).value
            override = parameter_override(node, full)
            if override is not None:
                return override.value
            return default
        t = current("type", "")
        if t not in SENSOR_SETTINGS:
            raise ConfigError(f"{name}.type", t, "set a known sensor type before adding the sensor "
                                                 f"(one of {sorted(SENSOR_SETTINGS)})")
        values = {}
        for spec in sensor_specs(t):
            v = plain(current(spec.key, spec.default))
            check_value(f"{name}.{spec.key}", spec, v)
            values[spec.key] = v
        cfg = SensorParameters(name, t, values)
        cfg.measured_type()
        return cfg

    def applied(self, plan: ChangePlan) -> None:
        """Record what a plan, now applied, leaves behind (names holding parameters, new values)."""
        self.known_names.update(plan.staged_names)
        self.known_names.update(plan.sensors or ())
        self.values.update(plan.scalars)
        if plan.sensors is not None:
            self.values["sensors"] = list(plan.sensors)


def _check_staged(pname: str, key: str, value: Any, sensor_type: Any) -> None:
    """A staged ``<c>.<key>`` value against its Spec (the staged type's, else every type's with that key).

    Raises:
        ConfigError: naming ``pname`` and ``value`` (wrong type, out of range, bad topic name).
    """
    if isinstance(sensor_type, str) and sensor_type in SENSOR_SETTINGS:   # a staged type may be any value
        specs = [s for s in sensor_specs(sensor_type) if s.key == key]
    else:
        specs = [s for t in SENSOR_SETTINGS for s in sensor_specs(t) if s.key == key]
    if not specs:
        if key in BODY_KEYS or key in SENSOR_KEYS:
            return
        raise ConfigError(pname, value, "unknown parameter")
    errors = []
    for spec in specs:
        try:
            check_value(pname, spec, value)
            return
        except ConfigError as exc:
            errors.append(exc)
    raise errors[0]


def _check_size(pname: str, value: Any) -> None:
    """Refuse strings (and arrays) longer than :data:`MAX_LIVE_TEXT` in a live request."""
    if isinstance(value, str) and len(value) > MAX_LIVE_TEXT:
        raise ConfigError(pname, value[:40] + "...", f"{len(value)} characters; at most {MAX_LIVE_TEXT} "
                                                     "may be set live")
    if isinstance(value, (list, tuple)) and len(value) > MAX_LIVE_TEXT:
        raise ConfigError(pname, f"[{len(value)} values]", f"at most {MAX_LIVE_TEXT} values may be set live")
    if isinstance(value, (list, tuple)) and any(isinstance(v, str) and len(v) > MAX_LIVE_TEXT for v in value):
        raise ConfigError(pname, "[...]", f"an entry is longer than {MAX_LIVE_TEXT} characters")


__all__ = ["Build", "ChangePlan", "LiveSettings", "MAX_LIVE_TEXT", "NodeParameters", "RESERVED_NAMES",
           "SensorAddition", "SensorChange", "SensorParameters", "declare_spec"]


def wrong_type_errors(node: Node, params: Sequence[Parameter]
                      ) -> Tuple[List[Parameter], Dict[str, ConfigError]]:
    """For ``pre_set_parameters``: the request with each value of the wrong type for a declared,
    writable, statically typed parameter replaced by the current value, and those errors by name.

    rclpy's own type check would refuse such a request naming neither the parameter nor the value
    ("expected '3' got '4'"); the node's ``on_set_parameters`` callback refuses it with these
    errors instead (nothing of the request is set).
    """
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
