"""``sensor_node``: predicted tactile readings and their force Jacobians, live over ROS 2.

A thin adapter (DESIGN §1, §3): decode -> ``SimState`` -> sensor models -> encode.

Inputs (QoS: ``qos.inputs.*``, default the sensor-data profile, best effort,
which accepts reliable and best-effort publishers):

* ``contacts`` (``sensor_msgs/PointCloud2``, one per simulator step, see
  :mod:`vsf_sensor_ros.ros.contacts_msg`);
* ``joint_states`` (``sensor_msgs/JointState``, matched by URDF joint name;
  partial, reordered and extra names are fine);
* ``<b>/pose`` (``geometry_msgs/PoseStamped``, in ``world_frame``) for every free
  body of the world (an extra body's ``<b>.pose_topic`` renames it);
* ``<s>/measured`` per sensor (type ``<s>.measured_type``, unit x ``<s>.measured_scale`` = SI).

Outputs (QoS: ``qos.outputs.*``, default reliable, depth 10), all stamped
with the stamp of the contacts message they derive from:

* ``<s>/predicted``, ``<s>/residual`` (see :mod:`vsf_sensor_ros.ros.outputs`),
* ``<s>/jacobian`` (``publish_jacobian``), ``<s>/markers`` (``publish_markers``,
  at most ``markers_max_rate``), ``/diagnostics``.

Services (``std_srvs/Trigger``): ``<s>/tare``, ``tare``, ``save_calibration``.

Per contacts message: one ``SimState`` (body transforms from the latest
joint state and free-body poses, contacts from the cloud), then every
sensor's prediction (and Jacobian) is computed, and only when all succeed
is anything published -- a bad message is rejected whole, for every sensor,
counted by reason on ``/diagnostics`` and logged at most once a second per
reason.  A stamp earlier than the previous one (simulator reset) clears the
pairing buffers and stateful sensors, is counted as a stamp jump, and the
message is processed normally.
"""
from __future__ import annotations

import bisect
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
import rclpy
import torch
import yaml
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException
from rclpy._rclpy_pybind11 import RCLError
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile
from sensor_msgs.msg import JointState, PointCloud2
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray
from diagnostic_msgs.msg import DiagnosticArray

from ..sensor import SimState, TareCalibrator, sensor_from_config
from ..sensor.base import BaseSensor
from . import outputs as enc
from .contacts_msg import ContactsDecodeError, pointcloud2_to_contacts
from .diagnostics import InputStats, SensorStats, build_diagnostics
from .params import (BODY_KEYS, BODY_SPECS, NODE_SPECS, SENSOR_COMMON_SPECS, SENSOR_KEYS,
                     SENSOR_SETTINGS, STRING_ARRAY, ConfigError, SensorConfig, Spec, check_name, check_value,
                     effective_assets_dir, qos_reliability, resolve_path, sensor_specs,
                     transform_from_params)
from .tare import (PairedSample, calibration_from_yaml, calibration_to_yaml, effective_offset,
                   format_offset, select_samples, tare_sensor)

DTYPE = torch.float64
DEVICE = torch.device("cpu")
TARE_KEY = "tare"
# Stamped joint states kept to pair each contacts message with its own step's configuration.
JOINT_HISTORY = 200


class SensorHandle:
    """Everything the node keeps for one sensor: model, layout, endpoints, buffers, stats."""

    def __init__(self, config: SensorConfig, sensor: BaseSensor, layout: enc.SensorLayout,
                 buffer_size: int) -> None:
        self.config = config
        self.sensor = sensor
        self.layout = layout
        self.pub_predicted = None
        self.pub_jacobian = None
        self.pub_residual = None
        self.pub_markers = None
        self.sub_measured = None
        self.srv_tare = None
        self.stats = SensorStats()
        # pairing buffers, sorted by stamp (ns): predictions and measured vectors
        self.pred_stamps: List[int] = []
        self.pred: List[Tuple[np.ndarray, SimState, bool]] = []
        self.meas_stamps: List[int] = []
        self.meas: List[np.ndarray] = []
        self.buffer_size = buffer_size
        self.pairs: Deque[PairedSample] = deque(maxlen=max(4 * buffer_size, 100))
        self.last_meas_stamp: Optional[int] = None
        self.tared_on_start = False
        self.tare_samples_used: Optional[int] = None
        self.last_values: Optional[np.ndarray] = None
        self.last_marker_time = 0.0

    @property
    def name(self) -> str:
        return self.config.name

    def clear_buffers(self) -> None:
        """Forget everything paired by stamp (after a stamp jump)."""
        self.pred_stamps.clear()
        self.pred.clear()
        self.meas_stamps.clear()
        self.meas.clear()
        self.pairs.clear()
        self.last_meas_stamp = None


class SensorNode(Node):
    """The ROS 2 sensor-model node (see the module docstring for its interface).

    Raises:
        ConfigError: at construction, for any configuration problem; the
            message names the parameter and its value.
    """

    def __init__(self, node_name: str = "sensor_node", **kwargs: Any) -> None:
        # Undeclared parameters are accepted only as *staged* settings of a sensor or body
        # not configured yet (validated by name in _validate); they let `ros2 param set`
        # prepare `c.type`, `c.attachment` before `c` is added to `sensors`.
        super().__init__(node_name, allow_undeclared_parameters=True, **kwargs)
        try:
            self._configure()
        except ConfigError:
            self.destroy_node()   # nothing half-built stays on the graph
            raise

    def _configure(self) -> None:
        """Declare parameters, build the world and sensors, create every endpoint (see the class doc)."""
        self._declaring = False
        self._pending: Dict[str, Any] = {}
        self.inputs = InputStats()
        self._reason_loggers: Dict[str, Any] = {}
        self._last_stamp: Optional[int] = None
        self._transforms: Optional[Dict[str, torch.Tensor]] = None
        # Stamped joint states applied so far: (stamp_ns, positions in world.joint_names order).
        self._joint_history: Deque[Tuple[int, np.ndarray]] = deque(maxlen=JOINT_HISTORY)
        self._handles: Dict[str, SensorHandle] = {}
        self._last_diag = time.monotonic()

        p = {s.key: self._declare(s.key, s) for s in NODE_SPECS}
        self._p = p
        if not p["world_frame"].strip():
            # every contacts cloud and pose carries a frame; an empty one would reject them all
            raise ConfigError("world_frame", p["world_frame"], "must name the frame of contacts and "
                                                               "free-body poses (e.g. 'world')")
        self._assets = effective_assets_dir(p["assets_dir"])
        self._qos_in = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(p["qos.inputs.depth"]),
                                  reliability=qos_reliability("qos.inputs.reliability",
                                                              p["qos.inputs.reliability"]),
                                  durability=DurabilityPolicy.VOLATILE)
        self._qos_out = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(p["qos.outputs.depth"]),
                                   reliability=qos_reliability("qos.outputs.reliability",
                                                               p["qos.outputs.reliability"]),
                                   durability=DurabilityPolicy.VOLATILE)
        self.world = self._build_world(p)
        self._pose_topics: Dict[str, str] = {}
        for body in p["bodies"] or []:
            self._add_body(body)
        # every free body (embedded scene objects included) follows a PoseStamped topic
        self._body_subs = [
            self.create_subscription(PoseStamped, self._pose_topics.get(b, f"{b}/pose"),
                                     lambda msg, b=b: self._on_pose(b, msg), self._qos_in)
            for b in self.world.free_body_names]
        names = list(p["contact_body_names"] or []) or list(self.world.body_names)
        self._check_contact_body_names(names)
        self._contact_body_names = names
        self._dense_vertex_counts: Dict[str, int] = {}

        self._tare_samples = int(p["tare_samples"])
        # live scalars read per message, refreshed by _apply
        self._live = {k: p[k] for k in ("markers_max_rate", "marker_force_scale", "max_stamp_difference",
                                        "tare_on_start")}
        sensors = list(p["sensors"] or [])
        self._check_sensor_list(sensors)
        calibration = self._read_calibration_file()
        for name in sensors:
            cfg = self._declare_sensor(name)
            sensor = self._build_sensor(cfg)
            self._install(cfg, sensor)
            if name in calibration:
                self._apply_file_calibration(self._handles[name], calibration[name])
        self._sensor_list = sensors

        # joint_states before contacts: the executor serves ready subscriptions in creation order,
        # so a step's joint state (published first by a simulator) is applied before its contacts.
        self.sub_joints = self.create_subscription(JointState, "joint_states", self._on_joint_state,
                                                   self._qos_in)
        self.sub_contacts = self.create_subscription(PointCloud2, "contacts", self._on_contacts, self._qos_in)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", self._qos_out)
        self.srv_tare_all = self.create_service(Trigger, "tare", self._on_tare_all)
        self.srv_save = self.create_service(Trigger, "save_calibration", self._on_save_calibration)
        self.timer_diag = self.create_timer(float(p["diagnostics_period"]), self._on_diagnostics)

        if hasattr(self, "add_pre_set_parameters_callback"):   # Iron and newer
            self.add_pre_set_parameters_callback(self._coerce_request)
        self.add_on_set_parameters_callback(self._validate)
        self._has_post_set = hasattr(self, "add_post_set_parameters_callback")
        if self._has_post_set:  # Iron and newer; on Humble _validate applies after validating
            self.add_post_set_parameters_callback(self._apply)
        self.get_logger().info(
            f"sensor_node ready: {len(self._handles)} sensors ({', '.join(self._handles) or 'none'}), "
            f"{len(self.world.body_names)} bodies, contact bodies {self._contact_body_names}")

    # ------------------------------------------------------------------ configuration
    def _declare(self, name: str, spec: Spec, value: Any = None, staged: bool = False) -> Any:
        """Declare ``name`` with ``spec``'s descriptor; return its value (override > value > default).

        Raises:
            ConfigError: the override has the wrong type or is out of range.
        """
        default = spec.default if value is None else value
        if isinstance(spec.default, float) and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        if isinstance(spec.default, list) and spec.default and isinstance(spec.default[0], float) \
                and isinstance(default, list):
            default = [float(v) for v in default]
        desc = spec.descriptor(name)
        self._coerce_override(name, spec)
        arg: Any = default
        if spec.ptype is not None and (default is None or default == []):
            arg = Parameter.Type(spec.ptype)
        self._declaring = True
        try:
            param = self.declare_parameter(name, arg, desc, ignore_override=staged)
        except (InvalidParameterTypeException, InvalidParameterValueException, TypeError) as exc:
            override = self._parameter_overrides.get(name)
            shown = override.value if override is not None else default
            raise ConfigError(name, shown, f"invalid: {exc}") from None
        finally:
            self._declaring = False
        val = param.value
        if spec.ptype is not None and val is None:
            val = []
        val = _plain(val)
        check_value(name, spec, val)
        return val

    def _coerce_override(self, name: str, spec: Spec) -> None:
        """Accept ``100`` for a double and ``[0, 1]`` for a double array in a parameter file."""
        ov = self._parameter_overrides.get(name)
        if ov is None:
            return
        fixed = _as_double(ov.value, spec.default)
        if fixed is not None:
            self._parameter_overrides[name] = Parameter(name, value=fixed)

    def _coerce_request(self, params: List[Parameter]) -> List[Parameter]:
        """``pre_set_parameters``: the same int -> double leniency for ``ros2 param set``.

        An empty array of any type for a string-array parameter becomes an
        empty string array: ``ros2 param set /sensor_node sensors "[]"`` sends
        an empty *bool* array (the CLI cannot type an empty YAML list).
        """
        out = []
        for prm in params:
            spec = self._spec_of(prm.name)
            if spec is not None and spec.ptype == STRING_ARRAY and prm.type_ != Parameter.Type.STRING_ARRAY \
                    and prm.type_ in _ARRAY_TYPES and len(prm.value) == 0:
                out.append(Parameter(prm.name, Parameter.Type.STRING_ARRAY, []))
                continue
            fixed = None if spec is None else _as_double(prm.value, spec.default)
            out.append(prm if fixed is None else Parameter(prm.name, value=fixed))
        return out

    def _spec_of(self, full: str) -> Optional[Spec]:
        spec = next((sp for sp in NODE_SPECS if sp.key == full), None)
        if spec is not None:
            return spec
        ns, _, key = full.partition(".")
        h = self._handles.get(ns)
        if h is not None:
            return next((sp for sp in sensor_specs(h.config.type) if sp.key == key), None)
        return None

    def _build_world(self, p: Dict[str, Any]):
        from ..world import World
        text, path = p["robot_description"], p["robot_description_path"]
        if text.strip():
            try:
                return World.from_urdf(text, base_dir=self._assets or None)
            except (ValueError, FileNotFoundError, RuntimeError) as exc:
                raise ConfigError("robot_description", text[:60] + ("..." if len(text) > 60 else ""),
                                  str(exc)) from None
        if path.strip():
            full = resolve_path(path, self._assets)
            if not full.is_file():
                raise ConfigError("robot_description_path", path, f"file {str(full)!r} does not exist")
            try:
                return World.from_urdf(str(full))
            except (ValueError, FileNotFoundError, RuntimeError) as exc:
                raise ConfigError("robot_description_path", path, str(exc)) from None
        from ..embedded_world import embedded_world
        return embedded_world()

    def _add_body(self, body: str) -> None:
        check_name("bodies", body)
        v = {s.key: self._declare(f"{body}.{s.key}", s) for s in BODY_SPECS}
        if not v["mesh"]:
            raise ConfigError(f"{body}.mesh", v["mesh"], "every extra body needs a triangle mesh file")
        if "://" in v["mesh"]:
            # package://pkg/path (ament index, installed Python package) or file:///abs/path
            from ..world import resolve_uri
            try:
                mesh_path = resolve_uri(v["mesh"], self._assets or None)
            except (FileNotFoundError, ValueError) as exc:
                raise ConfigError(f"{body}.mesh", v["mesh"], str(exc)) from None
        else:
            mesh_path = resolve_path(v["mesh"], self._assets)
        if mesh_path.is_dir():
            raise ConfigError(f"{body}.mesh", v["mesh"],
                              f"{str(mesh_path)!r} is a directory, not a mesh file")
        if not mesh_path.is_file():
            raise ConfigError(f"{body}.mesh", v["mesh"], f"file {str(mesh_path)!r} does not exist")
        from ..world import load_mesh
        try:
            # loaded here so a bad file is blamed on <b>.mesh; trimesh raises many types
            # (NotImplementedError for an unknown extension, ValueError, KeyError, ...)
            mesh = load_mesh(str(mesh_path))
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(f"{body}.mesh", v["mesh"],
                              f"cannot load a triangle mesh from {str(mesh_path)!r}: "
                              f"{type(exc).__name__}: {exc}") from None
        T = transform_from_params(body, v["transform"], v["transform_file"], v["transform_key"],
                                  self._assets)
        parent = v["parent_link"] or None
        if parent is not None and parent not in self.world.body_names:
            raise ConfigError(f"{body}.parent_link", parent,
                              f"unknown link; known: {', '.join(self.world.body_names)}")
        try:
            self.world.attach_body(body, mesh, parent, T)
        except ValueError as exc:   # the mesh is loaded: name clash or transform
            if "already exists" in str(exc):
                raise ConfigError("bodies", body, str(exc)) from None
            which = "transform_file" if v["transform_file"] else "transform"
            raise ConfigError(f"{body}.{which}", v[which], str(exc)) from None
        if v["pose_topic"]:
            if parent is not None:
                raise ConfigError(f"{body}.pose_topic", v["pose_topic"],
                                  f"body is fixed to {parent!r}; only free bodies follow a pose topic")
            self._pose_topics[body] = v["pose_topic"]

    def _check_contact_body_names(self, names: Sequence[str]) -> None:
        """The body index table of the contacts cloud: unique, non-empty names.

        Names that are not bodies of the world are allowed (a simulator may
        report contacts with bodies the node does not model; such contacts
        touch no sensor) and logged once as a warning.

        Raises:
            ConfigError: a duplicate or empty name (body indices would be ambiguous).
        """
        seen = set()
        for n in names:
            if not n.strip():
                raise ConfigError("contact_body_names", list(names), "names must be non-empty")
            if n in seen:
                raise ConfigError("contact_body_names", list(names),
                                  f"name {n!r} appears twice; body1/body2 indices must be unambiguous")
            seen.add(n)
        unknown = [n for n in names if n not in self.world.body_names]
        if unknown:
            self.get_logger().warn(
                f"contact_body_names {unknown} are not bodies of the world; contacts with them are "
                f"decoded but touch no sensor (bodies: {', '.join(self.world.body_names)})")

    def _check_sensor_list(self, sensors: Sequence[str]) -> None:
        seen = set()
        for s in sensors:
            check_name("sensors", s)
            if s in seen:
                raise ConfigError("sensors", list(sensors), f"name {s!r} appears twice")
            if s in ("tare", "save_calibration", "contacts", "joint_states"):
                raise ConfigError("sensors", list(sensors), f"name {s!r} clashes with a node endpoint")
            seen.add(s)

    def _declare_sensor(self, name: str, staged: Optional[Dict[str, Any]] = None) -> SensorConfig:
        """Declare ``<name>.*`` (type first, then the type's keys) and collect the values.

        ``staged``: values given in the same parameter request or set earlier
        as undeclared parameters; they win over defaults and overrides.

        Raises:
            ConfigError: unknown type or an invalid value.
        """
        staged = dict(staged or {})
        for key in list(SENSOR_KEYS):  # pick up values set earlier as undeclared parameters
            full = f"{name}.{key}"
            if key not in staged and self.has_parameter(full) and not self._is_declared_by_us(full):
                staged[key] = self.get_parameter(full).value
        values: Dict[str, Any] = {}
        type_spec = next(s for s in SENSOR_COMMON_SPECS if s.key == "type")
        values["type"] = self._declare_key(name, type_spec, staged)
        t = values["type"]
        if t not in SENSOR_SETTINGS:
            raise ConfigError(f"{name}.type", t, f"unknown sensor type; use one of {sorted(SENSOR_SETTINGS)}")
        for spec in sensor_specs(t):
            if spec.key != "type":
                values[spec.key] = self._declare_key(name, spec, staged)
        cfg = SensorConfig(name, t, values)
        cfg.measured_type()  # validates
        return cfg

    def _is_declared_by_us(self, full: str) -> bool:
        # parameters set before their sensor existed carry rclpy's dynamic-typing descriptor
        return self.has_parameter(full) and not self.describe_parameter(full).dynamic_typing

    def _declare_key(self, name: str, spec: Spec, staged: Dict[str, Any]) -> Any:
        full = f"{name}.{spec.key}"
        if self._is_declared_by_us(full):
            val = self.get_parameter(full).value
            if spec.key in staged:  # a new value in the same request as the sensor's addition
                val = staged[spec.key]
            return _plain(val)
        if spec.key in staged:
            if self.has_parameter(full):
                self.undeclare_parameter(full)
            return self._declare(full, spec, staged[spec.key], staged=True)
        return self._declare(full, spec)

    def _build_sensor(self, cfg: SensorConfig) -> BaseSensor:
        """Instantiate and attach a sensor model.

        Raises:
            ConfigError: naming ``<s>.attachment`` (unknown body, no mesh),
                ``<s>.type`` or the setting the library rejects.
        """
        att = cfg.values.get("attachment", "")
        if not att:
            raise ConfigError(f"{cfg.name}.attachment", att, "every sensor needs an attachment body")
        if att not in self.world.body_names:
            raise ConfigError(f"{cfg.name}.attachment", att,
                              f"unknown body; known: {', '.join(self.world.body_names)}")
        try:
            sensor = sensor_from_config(cfg.model_config())
        except (ValueError, TypeError, KeyError) as exc:
            param, value = self._blame(cfg, str(exc))
            raise ConfigError(param, value, str(exc)) from None
        try:
            model = self.world.body_model(att)
            sensor.attach(model)
        except (ValueError, TypeError) as exc:
            if att in (self._p["bodies"] or []):
                # an extra body's geometry is its mesh file: that is the parameter to fix
                raise ConfigError(f"{att}.mesh", self.get_parameter(f"{att}.mesh").value,
                                  f"sensor {cfg.name!r} cannot attach to body {att!r}: {exc}") from None
            raise ConfigError(f"{cfg.name}.attachment", att, f"cannot attach: {exc}") from None
        return sensor

    @staticmethod
    def _blame(cfg: SensorConfig, text: str) -> Tuple[str, Any]:
        """The parameter an error message is about (the first key it names), else ``type``."""
        for key in sorted(cfg.values, key=len, reverse=True):
            if key in text and key != "type":
                return f"{cfg.name}.{key}", cfg.values[key]
        return f"{cfg.name}.type", cfg.type

    def _layout(self, cfg: SensorConfig, sensor: BaseSensor) -> enc.SensorLayout:
        att = cfg.values["attachment"]
        verts = None
        if enc.SENSOR_KINDS.get(cfg.type) == "dense_force":
            mesh = self.world.body_mesh(att)
            if mesh is None:
                raise ConfigError(f"{cfg.name}.attachment", att, "body has no triangle mesh")
            verts = np.asarray(mesh.vertices)
        try:
            return enc.sensor_layout(cfg.type, att, sensor.measurement_names(),
                                     sensor.measurement_errors(), verts)
        except ValueError as exc:
            raise ConfigError(f"{cfg.name}.type", cfg.type, str(exc)) from None

    def _install(self, cfg: SensorConfig, sensor: BaseSensor,
                 layout: Optional[enc.SensorLayout] = None) -> SensorHandle:
        """Create a handle with its publishers, subscription and tare service."""
        layout = layout or self._layout(cfg, sensor)
        h = SensorHandle(cfg, sensor, layout, int(self._p["alignment_buffer_size"]))
        kind_msg = enc.KIND_MESSAGES[layout.kind]
        h.pub_predicted = self.create_publisher(kind_msg, f"{cfg.name}/predicted", self._qos_out)
        h.pub_residual = self.create_publisher(kind_msg, f"{cfg.name}/residual", self._qos_out)
        self._set_jacobian_pub(h, bool(cfg.values["publish_jacobian"]))
        self._set_marker_pub(h, bool(cfg.values["publish_markers"]))
        self._subscribe_measured(h)
        h.srv_tare = self.create_service(Trigger, f"{cfg.name}/tare",
                                         lambda req, resp, n=cfg.name: self._on_tare(n, req, resp))
        self._handles[cfg.name] = h
        self._refresh_dense_counts()
        return h

    def _uninstall(self, name: str) -> None:
        h = self._handles.pop(name)
        for pub in (h.pub_predicted, h.pub_residual, h.pub_jacobian, h.pub_markers):
            if pub is not None:
                self.destroy_publisher(pub)
        if h.sub_measured is not None:
            self.destroy_subscription(h.sub_measured)
        if h.srv_tare is not None:
            self.destroy_service(h.srv_tare)
        self._refresh_dense_counts()

    def _refresh_dense_counts(self) -> None:
        self._dense_vertex_counts = {
            h.layout.frame_id: len(h.layout.vertices) for h in self._handles.values()
            if h.layout.kind == "dense_force"}

    def _set_jacobian_pub(self, h: SensorHandle, on: bool) -> None:
        if on and h.pub_jacobian is None:
            h.pub_jacobian = self.create_publisher(PointCloud2, f"{h.name}/jacobian", self._qos_out)
        elif not on and h.pub_jacobian is not None:
            self.destroy_publisher(h.pub_jacobian)
            h.pub_jacobian = None

    def _set_marker_pub(self, h: SensorHandle, on: bool) -> None:
        if on and h.pub_markers is None:
            h.pub_markers = self.create_publisher(MarkerArray, f"{h.name}/markers", self._qos_out)
        elif not on and h.pub_markers is not None:
            self.destroy_publisher(h.pub_markers)
            h.pub_markers = None

    def _subscribe_measured(self, h: SensorHandle) -> None:
        if h.sub_measured is not None:
            self.destroy_subscription(h.sub_measured)
        msg_type = enc.MEASURED_TYPES[h.config.measured_type()]
        h.sub_measured = self.create_subscription(
            msg_type, f"{h.name}/measured", lambda msg, n=h.name: self._on_measured(n, msg), self._qos_in)

    # ------------------------------------------------------------------ calibration file
    def _calibration_path(self) -> Optional[Path]:
        text = self.get_parameter("calibration_file").value
        return resolve_path(text, self._assets) if text else None

    def _read_calibration_file(self) -> Dict[str, Dict[str, Any]]:
        path = self._calibration_path()
        if path is None:
            return {}
        if not path.is_file():
            self.get_logger().info(f"calibration file {path} does not exist yet; sensors start uncalibrated")
            return {}
        try:
            data = yaml.safe_load(path.read_text()) or {}
            entries = data.get("sensors", {})
            if not isinstance(entries, dict):
                raise ValueError("'sensors' must be a mapping")
        except (OSError, ValueError, yaml.YAMLError, AttributeError) as exc:
            raise ConfigError("calibration_file", str(path), f"unreadable calibration: {exc}") from None
        return entries

    def _apply_file_calibration(self, h: SensorHandle, entry: Dict[str, Any]) -> None:
        if entry.get("type") not in (None, h.config.type):
            self.get_logger().warn(f"calibration of {h.name!r} is for type {entry.get('type')!r}, "
                                   f"not {h.config.type!r}; ignored")
            return
        try:
            h.sensor.set_calibration(calibration_from_yaml(entry.get("calibration", {})))
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError("calibration_file", self.get_parameter("calibration_file").value,
                              f"entry {h.name!r}: {exc}") from None
        h.stats.calibration = f"loaded from file ({entry.get('samples', '?')} samples)"

    # ------------------------------------------------------------------ input callbacks
    def _reject(self, reason: str, detail: str, handle: Optional[SensorHandle] = None) -> None:
        """Count a rejected message under ``reason`` and log it (once a second per reason)."""
        if handle is None:
            self.inputs.reject(reason)
        else:
            handle.stats.rejected[reason] += 1
        logger = self._reason_loggers.get(reason)
        if logger is None:
            logger = self._reason_loggers[reason] = self.get_logger().get_child(reason)
        logger.warn(f"rejected message ({reason}): {detail}", throttle_duration_sec=1.0)

    def _on_joint_state(self, msg: JointState) -> None:
        self.inputs.joint_states_received += 1
        names, pos = list(msg.name), np.asarray(msg.position, dtype=np.float64)
        if pos.size == 0:
            return self._reject("joint_state_empty", f"no positions for {len(names)} names")
        if pos.size != len(names):
            return self._reject("joint_state_short", f"{len(names)} names but {pos.size} positions")
        if not np.isfinite(pos).all():
            return self._reject("non_finite", "JointState position has NaN/inf")
        try:
            self.world.set_joint_positions(names, pos)
        except ValueError as exc:
            return self._reject("joint_state_invalid", str(exc))
        self._transforms = None
        self._remember_joint_state(enc.stamp_to_ns(msg.header.stamp))

    def _remember_joint_state(self, stamp_ns: int) -> None:
        """Keep the configuration of a stamped joint state (unstamped ones: latest wins)."""
        if stamp_ns <= 0:
            return
        if self._joint_history and stamp_ns < self._joint_history[-1][0]:
            self._joint_history.clear()          # simulator reset: older stamps belong to the old run
        self._joint_history.append((stamp_ns, self.world.joint_positions()))

    def _on_pose(self, body: str, msg: PoseStamped) -> None:
        from ..world import transform_from_xyz_quat
        frame = msg.header.frame_id
        if frame and frame != self._p["world_frame"]:
            return self._reject("pose_wrong_frame", f"pose of {body!r} in {frame!r}, expected "
                                                    f"{self._p['world_frame']!r}")
        p, q = msg.pose.position, msg.pose.orientation
        try:
            T = transform_from_xyz_quat([p.x, p.y, p.z], [q.x, q.y, q.z, q.w])
            self.world.set_body_pose(body, T)
        except ValueError as exc:
            reason = "non_finite" if "non-finite" in str(exc) else "pose_invalid"
            return self._reject(reason, str(exc))
        self._transforms = None

    def _body_transforms(self, stamp_ns: int) -> Dict[str, torch.Tensor]:
        """Body transforms for the contacts of ``stamp_ns``.

        Normally those of the latest joint state.  When the executor has already served the
        joint state of a later step (both waited in the queues), the newest stamped configuration
        not later than ``stamp_ns`` is used instead, so each step pairs with its own joint state.
        """
        hist = self._joint_history
        if hist and hist[-1][0] > stamp_ns:
            i = bisect.bisect_right([h[0] for h in hist], stamp_ns) - 1
            if i >= 0:
                names = self.world.joint_names
                latest = hist[-1][1]
                self.world.set_joint_positions(names, hist[i][1])
                try:
                    return self.world.body_transforms(DTYPE, DEVICE)
                finally:
                    self.world.set_joint_positions(names, latest)
        if self._transforms is None:
            self._transforms = self.world.body_transforms(DTYPE, DEVICE)
        return self._transforms

    def _check_elements(self, decoded) -> Optional[str]:
        """Element indices on bodies carrying a dense-force sensor must index its vertices."""
        for (b1, b2), c in decoded.contacts.items():
            for body, elems in ((b1, c.elems1), (b2, c.elems2)):
                nv = self._dense_vertex_counts.get(body)
                if nv is None or elems is None or elems.numel() == 0:
                    continue
                lo, hi = int(elems.min()), int(elems.max())
                if lo < -1 or hi >= nv:
                    return f"element index {hi if hi >= nv else lo} on {body!r} outside -1..{nv - 1}"
        return None

    def _on_contacts(self, msg: PointCloud2) -> None:
        """Subscription callback: one contacts message, never fatal to the node.

        Any exception not foreseen by :meth:`_process_contacts` (a bug or a
        library failure on odd input) is counted as ``internal_error`` and
        logged (throttled, with the exception text) instead of ending the
        spin; the predictions are computed and checked before anything is
        published, so a failure there publishes nothing for that message.
        """
        t_recv = time.perf_counter()
        self.inputs.contacts_received += 1
        try:
            self._process_contacts(msg, t_recv)
        except Exception as exc:  # noqa: BLE001 -- the node must outlive one bad message
            self._reject("internal_error", f"{type(exc).__name__}: {exc}")

    def _process_contacts(self, msg: PointCloud2, t_recv: float) -> None:
        """Decode, predict every sensor, check, then publish (see the module docstring)."""
        try:
            decoded = pointcloud2_to_contacts(msg, self._contact_body_names, DTYPE, DEVICE,
                                              expected_frame_id=self._p["world_frame"])
        except ContactsDecodeError as exc:
            return self._reject(exc.reason, str(exc))
        bad = self._check_elements(decoded)
        if bad is not None:
            return self._reject("element_index_out_of_range", bad)
        stamp = msg.header.stamp
        stamp_ns = enc.stamp_to_ns(stamp)
        jumped_back = self._last_stamp is not None and stamp_ns < self._last_stamp
        try:
            state = SimState(self._body_transforms(stamp_ns), {}, decoded.contacts)
        except ValueError as exc:
            return self._reject("invalid_contacts", str(exc))
        # Validate first: every model must succeed before anything is published.
        results = []
        for h in self._handles.values():
            if not getattr(h.sensor, "enabled", True):  # Klampt's 'enabled' setting
                continue
            try:
                if h.pub_jacobian is not None and hasattr(h.sensor, "predict_with_jacobian"):
                    pred, jac = h.sensor.predict_with_jacobian(state)   # one contact mapping for both
                else:
                    pred = h.sensor.predict(state)
                    jac = h.sensor.sparse_force_jacobian(state) if h.pub_jacobian is not None else None
                values = pred.detach().cpu().numpy().astype(np.float64)
                jac_cols = None
                if jac is not None:
                    jac_cols = enc.jacobian_message_columns(jac.cols.cpu().numpy(), jac.pairs, jac.offsets,
                                                            decoded.rows)
                body = h.layout.frame_id
                n_on_body = sum(len(c) for (b1, _), c in decoded.contacts.items() if b1 == body)
                # contact-free for a tare: nothing touches what the sensor senses (its patch/radius)
                touched = n_on_body > 0 and h.sensor.in_contact(state)
            except (ValueError, IndexError, RuntimeError) as exc:
                return self._reject("model_error", f"{h.name}: {exc}")
            results.append((h, values, jac, jac_cols, n_on_body, touched))
        bad = _check_predictions(results)
        if bad is not None:
            return self._reject(*bad)
        if jumped_back:   # acted on only for a message that is used
            self._on_stamp_jump(self._last_stamp, stamp_ns)
        self._last_stamp = stamp_ns
        now = time.monotonic()
        for h, values, jac, jac_cols, n_on_body, touched in results:
            # encoding is skipped for outputs nobody subscribes to (serialising clouds costs)
            if _wanted(h.pub_predicted):
                h.pub_predicted.publish(enc.encode_vector(h.layout, values, stamp))
            if h.layout.kind == "load":
                # keeps the Isaac sensor's period-sampled reading buffer (Python API, diagnostics)
                try:
                    h.sensor.update(state, stamp_ns * 1e-9)
                except ValueError as exc:
                    self._reject("sensor_update_failed", f"{h.name}: {exc}", h)
            if jac is not None and h.pub_jacobian is not None and _wanted(h.pub_jacobian):
                h.pub_jacobian.publish(enc.encode_jacobian(
                    jac.rows.cpu().numpy(), jac_cols, jac.values.detach().cpu().numpy(), stamp,
                    self._p["world_frame"]))
            in_contact = self._reading_contact(h, values, n_on_body)
            h.stats.contact = in_contact
            rate = self._live["markers_max_rate"]
            if h.pub_markers is not None and (rate <= 0 or now - h.last_marker_time >= 1.0 / rate) \
                    and _wanted(h.pub_markers):
                h.last_marker_time = now
                pts, frc = state.contacts_on_body(h.layout.frame_id, local=False)
                h.pub_markers.publish(enc.encode_markers(
                    h.name, h.layout, self._p["world_frame"], stamp, pts.cpu().numpy(), frc.cpu().numpy(),
                    values, self._live["marker_force_scale"], in_contact))
            h.stats.record_publish(time.perf_counter() - t_recv)
            h.last_values = values
            self._push_prediction(h, stamp_ns, values, state, not touched)
        self.inputs.contacts_processed += 1

    @staticmethod
    def _reading_contact(h: SensorHandle, values: np.ndarray, n_contacts: int) -> bool:
        if h.layout.flag is not None:
            return bool(values[h.layout.flag] > 0.5)
        if h.layout.kind == "load":
            return bool(values[h.layout.slots[0]] > 0)
        return n_contacts > 0

    def _on_stamp_jump(self, old_ns: int, new_ns: int) -> None:
        self.inputs.stamp_jumps_backwards += 1
        self.inputs.last_stamp_jump = f"{old_ns * 1e-9:.9f} -> {new_ns * 1e-9:.9f} s"
        for h in self._handles.values():
            h.clear_buffers()
            h.sensor.reset()
        logger = self._reason_loggers.setdefault("stamp_jump", self.get_logger().get_child("stamp_jump"))
        logger.warn(f"contacts stamp went backwards ({self.inputs.last_stamp_jump}); simulator reset "
                    "assumed: pairing buffers and sensor states cleared", throttle_duration_sec=1.0)

    # ------------------------------------------------------------------ pairing, residual, tare
    def _push_prediction(self, h: SensorHandle, stamp_ns: int, values: np.ndarray, state: SimState,
                         contact_free: bool) -> None:
        m = self._match(h.meas_stamps, stamp_ns)
        if m is not None:
            vec = h.meas.pop(m)
            h.meas_stamps.pop(m)
            self._paired(h, stamp_ns, vec, values, state, contact_free)
            return
        i = bisect.bisect_right(h.pred_stamps, stamp_ns)
        h.pred_stamps.insert(i, stamp_ns)
        h.pred.insert(i, (values, state, contact_free))
        if len(h.pred_stamps) > h.buffer_size:
            del h.pred_stamps[0], h.pred[0]

    def _match(self, stamps: List[int], stamp_ns: int) -> Optional[int]:
        """Index of the buffered stamp nearest ``stamp_ns`` within ``max_stamp_difference``."""
        if not stamps:
            return None
        tol = int(round(self._live["max_stamp_difference"] * 1e9))
        i = bisect.bisect_left(stamps, stamp_ns)
        best = None
        for j in (i - 1, i):
            if 0 <= j < len(stamps) and abs(stamps[j] - stamp_ns) <= tol:
                if best is None or abs(stamps[j] - stamp_ns) < abs(stamps[best] - stamp_ns):
                    best = j
        return best

    def _on_measured(self, name: str, msg: Any) -> None:
        h = self._handles.get(name)
        if h is None:
            return
        h.stats.measured_received += 1
        try:
            vec = enc.decode_measured(h.layout, msg, float(h.config.values["measured_scale"]))
        except enc.MeasuredDecodeError as exc:
            return self._reject(exc.reason, f"{name}/measured: {exc}", h)
        stamp_ns = enc.stamp_to_ns(msg.header.stamp)
        if h.last_meas_stamp is not None and stamp_ns < h.last_meas_stamp:
            # the measured source restarted: unmatched measurements and tare pairs are stale
            h.stats.measured_stamp_jumps += 1
            h.meas_stamps.clear()
            h.meas.clear()
            h.pairs.clear()
        h.last_meas_stamp = stamp_ns
        m = self._match(h.pred_stamps, stamp_ns)
        if m is not None:
            values, state, contact_free = h.pred.pop(m)
            pstamp = h.pred_stamps.pop(m)
            self._paired(h, pstamp, vec, values, state, contact_free)
            return
        i = bisect.bisect_right(h.meas_stamps, stamp_ns)
        h.meas_stamps.insert(i, stamp_ns)
        h.meas.insert(i, vec)
        if len(h.meas_stamps) > h.buffer_size:
            del h.meas_stamps[0], h.meas[0]

    def _paired(self, h: SensorHandle, stamp_ns: int, measured: np.ndarray, predicted: np.ndarray,
                state: SimState, contact_free: bool) -> None:
        """A measured vector met its prediction: publish the residual, keep the pair for tares."""
        residual = np.where(np.isnan(measured), 0.0, measured - predicted)
        limit = F32_MAX if h.layout.kind == "dense_force" else np.inf   # float32 cloud fields
        if not (np.isfinite(residual).all() and (np.abs(residual) <= limit).all()):
            self._reject("residual_out_of_range", f"{h.name}: measured - predicted overflows its message", h)
        elif _wanted(h.pub_residual):
            h.pub_residual.publish(enc.encode_vector(h.layout, residual, enc.ns_to_stamp(stamp_ns)))
            h.stats.residuals_published += 1
        h.pairs.append(PairedSample(stamp_ns, measured, state, contact_free))
        if self._live["tare_on_start"] and not h.tared_on_start:
            samples, _ = select_samples(list(h.pairs), self._tare_samples)
            if len(samples) >= self._tare_samples:
                ok, text = self._tare(h)
                h.tared_on_start = True     # one attempt per sensor, successful or not
                (self.get_logger().info if ok else self.get_logger().warn)(f"tare_on_start: {text}")

    def _tare(self, h: SensorHandle) -> Tuple[bool, str]:
        """Tare one sensor from its buffered pairs; ``(success, message)``."""
        n = self._tare_samples
        if type(h.sensor).set_calibration is BaseSensor.set_calibration:
            # every shipped model has a tare offset; a model that keeps no calibration cannot be tared
            return False, f"{h.name}: cannot tare: the {h.config.type} model has no tare offset"
        samples, why = select_samples(list(h.pairs), n)
        if why is not None:
            return False, f"{h.name}: cannot tare: {why}"
        # contact-free = nothing touches what this sensor senses, as the samples were chosen
        calibrator = TareCalibrator(num_samples=n, output_key=TARE_KEY, contact_scope="sensor")
        if hasattr(calibrator, "compatible") and not calibrator.compatible(h.sensor):
            return False, f"{h.name}: cannot tare: {h.config.type} has no tare calibration"
        try:
            used = tare_sensor(h.sensor, samples, calibrator)
        except (ValueError, RuntimeError) as exc:
            return False, f"{h.name}: cannot tare: {exc}"
        cal = h.sensor.get_calibration()
        if TARE_KEY not in cal:
            return False, f"{h.name}: cannot tare: the {h.config.type} model kept no '{TARE_KEY}' entry"
        unit = enc.KIND_UNITS[h.layout.kind]
        # report the physical entries (the indicator entries of pad/load sensors carry no offset)
        slots = [int(i) for i in h.layout.slots if i >= 0]
        eff = effective_offset(cal, TARE_KEY)
        offset = format_offset({TARE_KEY: eff[slots]}, TARE_KEY, unit, [h.layout.names[i] for i in slots])
        stamp_s = samples[-1].stamp_ns * 1e-9
        h.stats.calibration = f"tared with {used} samples up to stamp {stamp_s:.9f} s: {offset}"
        h.tare_samples_used = used
        return True, f"{h.name}: tared with {used} of {n} samples (most recent contact-free run); " \
                     f"offset {offset}"

    def _on_tare(self, name: str, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        h = self._handles.get(name)
        if h is None:
            response.success, response.message = False, f"no sensor {name!r}"
            return response
        response.success, response.message = self._tare(h)
        return response

    def _on_tare_all(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if not self._handles:
            response.success, response.message = False, "no sensors configured"
            return response
        # success only when every sensor tared; one line per sensor, "<s>: ..."
        results = [self._tare(h) for h in self._handles.values()]
        response.success = all(ok for ok, _ in results)
        response.message = "\n".join(text for _, text in results)
        return response

    def _on_save_calibration(self, request: Trigger.Request,
                             response: Trigger.Response) -> Trigger.Response:
        path = self._calibration_path()
        if path is None:
            response.success, response.message = False, "parameter calibration_file is empty"
            return response
        data = {"sensors": {}}
        for h in self._handles.values():
            cal = h.sensor.get_calibration()
            if not cal:
                continue
            data["sensors"][h.name] = {
                "type": h.config.type, "attachment": h.config.values["attachment"],
                "samples": h.tare_samples_used,
                "calibration": calibration_to_yaml(cal)}
        if not data["sensors"]:
            # an empty file would wipe a calibration saved earlier (e.g. before a restart)
            response.success, response.message = False, f"no sensor is calibrated; {path} left unchanged"
            return response
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text("# vsf_sensor_ros sensor_node calibration (SI units); loaded at start\n"
                           + yaml.safe_dump(data, sort_keys=True))
            tmp.replace(path)
        except OSError as exc:
            response.success, response.message = False, f"cannot write {path}: {exc}"
            return response
        response.success = True
        response.message = f"wrote calibration of {len(data['sensors'])} sensors to {path}"
        return response

    # ------------------------------------------------------------------ diagnostics
    def _on_diagnostics(self) -> None:
        now = time.monotonic()
        period = now - self._last_diag
        self._last_diag = now
        for h in self._handles.values():
            if h.last_values is not None and len(h.last_values) == len(h.layout.names):
                h.stats.reading = enc.summary_text(h.name, h.layout, h.last_values)
        sensors = {n: (h.config.type, h.config.values["attachment"], h.stats)
                   for n, h in self._handles.items()}
        self.pub_diag.publish(build_diagnostics(self.get_clock().now().to_msg(), self.get_name(),
                                                self.inputs, sensors, period))

    # ------------------------------------------------------------------ live parameters
    def _validate(self, params: List[Parameter]) -> SetParametersResult:
        """Check a parameter request without changing anything (``on_set_parameters``)."""
        if self._declaring:
            return SetParametersResult(successful=True)
        try:
            plan = self._plan(params)
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self._pending = plan
        if not self._has_post_set:
            self._apply(params)
        return SetParametersResult(successful=True)

    def _plan(self, params: List[Parameter]) -> Dict[str, Any]:
        """Work out what a request changes; build new sensor models to prove they are valid.

        Returns:
            ``{'sensors': new name list or None, 'scalars': {node parameter: value},
            'rebuild': {name: (cfg, new sensor or None, new layout or None)},
            'add': {name: (staged values, cfg, sensor, layout)}}``; a sensor is
            rebuilt only when a model setting or its attachment changes.

        Raises:
            ConfigError: the first invalid value.
        """
        batch = {p.name: p.value for p in params}
        plan: Dict[str, Any] = {"sensors": None, "rebuild": {}, "add": {}, "scalars": {}}
        for pname, value in batch.items():
            spec = next((s for s in NODE_SPECS if s.key == pname), None)
            if spec is not None:
                if pname == "sensors":
                    new = list(value or [])
                    self._check_sensor_list(new)
                    plan["sensors"] = new
                else:
                    check_value(pname, spec, value)
                    plan["scalars"][pname] = value
                continue
            ns, dot, key = pname.partition(".")
            if not dot:
                raise ConfigError(pname, value, "unknown parameter")
            if ns in self._handles:
                h = self._handles[ns]
                specs = {s.key: s for s in sensor_specs(h.config.type)}
                if key not in specs:
                    raise ConfigError(pname, value, f"not a setting of {h.config.type}; settings: "
                                                    f"{sorted(specs)}")
                check_value(pname, specs[key], value)
                continue
            if key in SENSOR_KEYS or key in BODY_KEYS:
                if ns in (self._p["bodies"] or []):
                    raise ConfigError(pname, value, "body parameters are read-only")
                continue  # staged for a sensor that may be added later
            raise ConfigError(pname, value, "unknown parameter")
        # sensors whose settings change: rebuild and validate them now
        touched: Dict[str, Dict[str, Any]] = {}
        for pname, value in batch.items():
            ns, _, key = pname.partition(".")
            if ns in self._handles:
                touched.setdefault(ns, {})[key] = value
        for ns, changes in touched.items():
            h = self._handles[ns]
            values = dict(h.config.values)
            values.update({k: _plain(v) for k, v in changes.items()})
            cfg = SensorConfig(ns, h.config.type, values)
            cfg.measured_type()
            model_keys = {"attachment"} | {s.key for s in SENSOR_SETTINGS[h.config.type]}
            if model_keys & set(changes):
                sensor = self._build_sensor(cfg)
                plan["rebuild"][ns] = (cfg, sensor, self._layout(cfg, sensor))
            else:
                plan["rebuild"][ns] = (cfg, None, None)
        if plan["sensors"] is not None:
            for name in plan["sensors"]:
                if name in self._handles:
                    continue
                staged = {k.partition(".")[2]: v for k, v in batch.items() if k.startswith(name + ".")}
                cfg = self._preview_sensor(name, staged)
                sensor = self._build_sensor(cfg)
                plan["add"][name] = (staged, cfg, sensor, self._layout(cfg, sensor))
        return plan

    def _preview_sensor(self, name: str, staged: Dict[str, Any]) -> SensorConfig:
        """The config a sensor would get if added now (nothing declared)."""
        def current(key: str, default: Any) -> Any:
            full = f"{name}.{key}"
            if key in staged:
                return staged[key]
            if self.has_parameter(full):
                return self.get_parameter(full).value
            if full in self._parameter_overrides:
                return self._parameter_overrides[full].value
            return default
        t = current("type", "")
        if t not in SENSOR_SETTINGS:
            raise ConfigError(f"{name}.type", t, "set a known sensor type before adding the sensor "
                                                 f"(one of {sorted(SENSOR_SETTINGS)})")
        values = {}
        for spec in sensor_specs(t):
            v = current(spec.key, spec.default)
            v = _plain(v)
            check_value(f"{name}.{spec.key}", spec, v)
            values[spec.key] = v
        cfg = SensorConfig(name, t, values)
        cfg.measured_type()
        return cfg

    def _apply(self, params: List[Parameter]) -> None:
        """Apply a validated request (``post_set_parameters``)."""
        if self._declaring:
            return
        plan, self._pending = self._pending, {}
        if not plan:
            return
        if "tare_samples" in plan["scalars"]:
            self._tare_samples = int(plan["scalars"]["tare_samples"])
        for key in self._live:
            if key in plan["scalars"]:
                self._live[key] = plan["scalars"][key]
        for name, (cfg, sensor, layout) in plan["rebuild"].items():
            h = self._handles.get(name)
            if h is None:
                continue
            old_type = h.config.measured_type()
            h.config = cfg
            if sensor is not None:
                old_cal = h.sensor.get_calibration()
                try:
                    if old_cal and sensor.measurement_names() != h.sensor.measurement_names():
                        # e.g. a ContactSensor's hasForce changed: the tare's entries no longer line up
                        raise ValueError(f"measurements {h.sensor.measurement_names()} -> "
                                         f"{sensor.measurement_names()}")
                    sensor.set_calibration(old_cal)
                except ValueError as exc:
                    h.stats.calibration = "none (dropped: measurement layout changed)"
                    h.tare_samples_used = None
                    self.get_logger().warn(f"sensor {name!r}: calibration dropped ({exc}); tare again")
                sensor.set_internal_state(h.sensor.get_internal_state())
                h.sensor = sensor
                if layout.kind != h.layout.kind or len(layout.names) != len(h.layout.names):
                    h.clear_buffers()
                h.layout = layout
                self._refresh_dense_counts()
            self._set_jacobian_pub(h, bool(cfg.values["publish_jacobian"]))
            self._set_marker_pub(h, bool(cfg.values["publish_markers"]))
            if cfg.measured_type() != old_type:
                self._subscribe_measured(h)
            self.get_logger().info(f"sensor {name!r} settings applied")
        if plan["sensors"] is not None:
            new = plan["sensors"]
            for name in [n for n in self._handles if n not in new]:
                self._uninstall(name)
                self.get_logger().info(f"sensor {name!r} removed")
            for name, (staged, _cfg, sensor, layout) in plan["add"].items():
                cfg = self._declare_sensor(name, staged)
                self._install(cfg, sensor, layout)
                self.get_logger().info(f"sensor {name!r} ({cfg.type} on {cfg.values['attachment']}) added")
            self._sensor_list = list(new)


F32_MAX = float(np.finfo(np.float32).max)
_ARRAY_TYPES = (Parameter.Type.BYTE_ARRAY, Parameter.Type.BOOL_ARRAY, Parameter.Type.INTEGER_ARRAY,
                Parameter.Type.DOUBLE_ARRAY)


def _check_predictions(results: Sequence[tuple]) -> Optional[Tuple[str, str]]:
    """``(reason, detail)`` when a message's predictions cannot be published, else None.

    Finite input can still overflow a model (a huge force over a small area):
    any non-finite predicted value or Jacobian value gives
    ``non_finite_prediction``; a dense-force value beyond the float32 range
    of its ``PointCloud2`` fields gives ``out_of_range``.  Either rejects the
    whole message for every sensor.

    Args:
        results: ``(handle, values (#meas,) float64, SparseJacobian or None, ...)`` per sensor.
    """
    for h, values, jac, *_ in results:
        if not np.isfinite(values).all():
            i = int(np.flatnonzero(~np.isfinite(values))[0])
            return "non_finite_prediction", f"{h.name}: {h.layout.names[i]} = {values[i]}"
        if jac is not None and not bool(torch.isfinite(jac.values).all()):
            return "non_finite_prediction", f"{h.name}: non-finite Jacobian value"
    for h, values, *_ in results:
        if h.layout.kind == "dense_force" and values.size and float(np.abs(values).max()) > F32_MAX:
            i = int(np.argmax(np.abs(values)))
            return "out_of_range", (f"{h.name}: {h.layout.names[i]} = {values[i]:.6g} N exceeds the float32 "
                                    f"range (+-{F32_MAX:.6g}) of the dense force cloud")
    return None


def _wanted(pub: Any) -> bool:
    """A publisher has at least one matched subscription."""
    return pub.get_subscription_count() > 0


def _plain(value: Any) -> Any:
    """Parameter values as plain Python: arrays (list, tuple, array.array, numpy) become lists."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return value
    return list(value)


def _as_double(value: Any, default: Any) -> Any:
    """``value`` as float / list of floats when ``default`` is a double (array) and ``value``
    holds integers; None when no conversion applies."""
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, list) and default and isinstance(default[0], float) \
            and not isinstance(value, (str, bytes)) and hasattr(value, "__len__") and len(value) \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value]
    return None


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point: init, spin, shut down cleanly; exit code 2 on a configuration error.

    A parameter file rcl cannot parse fails in ``rclpy.init``: reported as
    one ``configuration error`` line (rcl's message and a hint), exit code 2.
    """
    try:
        rclpy.init(args=args)
    except RCLError as exc:
        text = " ".join(str(exc).split())
        hint = ""
        if "same type" in text:
            hint = " (ROS 2 parameter files need one element type per list: write 0.0 not 0)"
        print(f"[FATAL] [sensor_node]: configuration error: {text}{hint}", file=sys.stderr, flush=True)
        return 2
    node: Optional[SensorNode] = None
    code = 0
    try:
        node = SensorNode()
        rclpy.spin(node)
    except ConfigError as exc:
        rclpy.logging.get_logger("sensor_node").fatal(f"configuration error: {exc}")
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
