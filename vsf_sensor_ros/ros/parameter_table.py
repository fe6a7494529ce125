"""The sensor node's parameter table (:class:`Spec`: default, type, description, constraints):
node-wide, an extra body's ``<b>.*``, every sensor's ``<s>.*`` and each kind's model settings."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

INF = float("inf")


class ConfigError(ValueError):
    """A configuration problem at start or on a parameter change: ``parameter`` (full name, e.g.
    ``punyo.mesh``), ``value``, ``detail``; ``str(err)``: ``parameter '<p>' = <value>: <detail>``."""

    def __init__(self, parameter: str, value: Any, detail: str) -> None:
        self.parameter, self.value, self.detail = parameter, value, detail
        super().__init__(f"parameter '{parameter}' = {value!r}: {detail}")


def numbered(problems: Sequence[str]) -> str:
    """One line for several problems: the one itself, else ``"3 problems: [1] ...; [2] ...; [3] ..."``."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems: " + "; ".join(f"[{i}] {t}" for i, t in enumerate(problems, 1))


class ConfigErrors(ConfigError):
    """Two or more configuration problems (``errors``, in the order found; ``parameter``,
    ``value``, ``detail``: the first one's); ``str(err)``: :func:`numbered`."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.parameter, first.value, first.detail)
        self.args = (numbered([str(e) for e in self.errors]),)


def raise_all(errors: Sequence[ConfigError]) -> None:
    """Raise nothing for no error, the error itself for one, :class:`ConfigErrors` for several."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)


@dataclass
class Spec:
    """One parameter: ``key`` in its namespace, ``default`` (its type is the ROS type; ``ptype`` for
    empty arrays), ``description``, ``read_only``, inclusive ``lo`` .. ``hi`` (rclpy's), ``constraints``
    text; :func:`check_value`'s array ``length``, ``finite``, ``positive`` (> 0), ``topic`` (a name)."""

    key: str
    default: Any
    description: str
    read_only: bool = False
    lo: Optional[float] = None
    hi: Optional[float] = None
    ptype: Optional[int] = None
    constraints: str = ""
    length: Optional[int] = None
    finite: bool = False
    positive: bool = False
    topic: bool = False

    def descriptor(self, full_name: str) -> ParameterDescriptor:
        """A ``ParameterDescriptor`` for this spec named ``full_name``."""
        d = ParameterDescriptor(name=full_name, description=self.description,
                                read_only=self.read_only, additional_constraints=self.constraints)
        if self.ptype is not None:
            d.type = self.ptype
        if self.lo is not None and self.hi is not None and not isinstance(self.default, bool):
            if isinstance(self.default, int):
                d.integer_range = [IntegerRange(from_value=int(self.lo), to_value=int(self.hi), step=0)]
            elif isinstance(self.default, float):
                d.floating_point_range = [FloatingPointRange(
                    from_value=float(self.lo), to_value=float(self.hi), step=0.0)]
        return d


def check_value(full_name: str, spec: Spec, value: Any) -> None:
    """Validate ``value`` for ``spec`` beyond rclpy's descriptor checks.

    Raises:
        ConfigError: the wrong length, non-finite or non-positive entries, outside the range, an
            invalid topic name (the type is rclpy's: parameters are statically typed).
    """
    if spec.topic and value:
        check_topic_name(full_name, value)
    if spec.length is not None:
        if value is None or len(value) != spec.length:
            raise ConfigError(full_name, value, f"needs exactly {spec.length} values")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        arr = np.array([value], dtype=np.float64)
    elif isinstance(value, (list, tuple, np.ndarray)) and len(value) and \
            not isinstance(value[0], (str, bool, np.bool_)):
        arr = np.asarray(value, dtype=np.float64)
    else:
        return
    if spec.finite and not np.isfinite(arr).all():
        raise ConfigError(full_name, value, "must be finite")
    if np.isnan(arr).any():
        raise ConfigError(full_name, value, "must not be NaN")
    if spec.positive and (arr <= 0).any():
        raise ConfigError(full_name, value, "must be > 0")
    if spec.lo is not None and (arr < spec.lo).any():
        raise ConfigError(full_name, value, f"must be >= {spec.lo}")
    if spec.hi is not None and (arr > spec.hi).any():
        raise ConfigError(full_name, value, f"must be <= {spec.hi}")


def check_topic_name(parameter: str, topic: str, node_name: str = "sensor_node", namespace: str = "/") -> str:
    """``topic`` expanded to a full name by rclpy's rules; ConfigError naming ``parameter``,
    ``topic`` and rclpy's reason."""
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name
    try:
        validate_topic_name(topic)
        full = expand_topic_name(topic, node_name, namespace)
        validate_full_topic_name(full)
    except Exception as exc:   # rclpy raises InvalidTopicNameException or ValueError (substitutions)
        reason = str(exc).splitlines()[0].replace("Invalid topic name: ", "").rstrip(":")
        raise ConfigError(parameter, topic, f"not a valid topic name: {reason.split(', at /')[0]}") from None
    return full


STRING_ARRAY = ParameterType.PARAMETER_STRING_ARRAY
IDENTITY16 = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]

NODE_SPECS: List[Spec] = [
    Spec("robot_description", "", "URDF text of the robot (ROS convention); empty: use "
         "robot_description_path, or the package's embedded world when both are empty", read_only=True),
    Spec("robot_description_path", "", "URDF file of the robot, used when robot_description is empty "
         "(relative paths resolve against assets_dir)", read_only=True),
    Spec("assets_dir", "", "directory that relative file parameters resolve against (empty: current "
         "directory); the VSF_ASSETS environment variable, when set, takes precedence", read_only=True),
    Spec("world_frame", "world", "frame of contact points/forces and free-body poses (REP 103)",
         read_only=True),
    Spec("contact_body_names", [], "body names indexed by the body1/body2 fields of the contacts "
         "cloud, shared with the simulator; empty: every body of the world in its body_names order",
         read_only=True, ptype=STRING_ARRAY),
    Spec("contacts_type", "sensor_msgs/msg/PointCloud2", "message type of the contacts topic: "
         "sensor_msgs/msg/PointCloud2 (the contacts cloud) or ros_gz_interfaces/msg/Contacts (gz-sim's "
         "contact sensor through ros_gz_bridge; needs ros_gz_interfaces, which make venv builds)",
         read_only=True, constraints="sensor_msgs/msg/PointCloud2 | ros_gz_interfaces/msg/Contacts"),
    Spec("contact_body_map", [], "gz contacts: 'pattern=body' entries mapping scoped collision names "
         "(glob, first match wins, e.g. 'punyo_model::*=punyo') to bodies; a name no pattern matches "
         "is its link's name (model::link::collision -> link)", read_only=True, ptype=STRING_ARRAY),
    Spec("contacts_event_driven", False, "true: the contacts topic carries a message only while "
         "something touches (PhysX touch reports, a bridge publishing on change), so a step without "
         "one is contact-free (contact_free_period); ros_gz_interfaces/msg/Contacts always is",
         read_only=True),
    Spec("contact_free_period", 0.1, "s of simulator time (stamps); event-driven contacts: once the "
         "newest joint-state stamp (without stamped joint states: the node clock, under use_sim_time "
         "only) is this far past the last step, the node steps with no contacts at that stamp, then "
         "every period while no contacts message comes; keep it above the contacts' period while "
         "touching; 0 = never step without a contacts message", lo=0.0, hi=60.0, read_only=True),
    Spec("bodies", [], "extra rigid bodies (each configured under <name>.*)", read_only=True,
         ptype=STRING_ARRAY),
    Spec("sensors", [], "sensor names (each configured under <name>.*)", read_only=True, ptype=STRING_ARRAY),
    Spec("tare_samples", 10, "N: contact-free measured samples averaged by a tare", lo=1, hi=100000),
    Spec("tare_on_start", False, "tare each sensor once, as soon as N contact-free samples exist"),
    Spec("calibration_file", "", "YAML calibration file: loaded at start when it exists, the only file "
         "save_calibration writes (relative paths resolve against assets_dir); fixed at start",
         read_only=True),
    Spec("calibration_create_dirs", False, "save_calibration may create the missing directories of "
         "calibration_file", read_only=True),
    Spec("max_stamp_difference", 0.0, "largest stamp difference (s) for pairing a measured message "
         "with a prediction (residual, tare); 0 = adaptive: half the longer observed period of the "
         "two streams", lo=0.0, hi=10.0),
    Spec("alignment_buffer_size", 200, "predictions and measured messages kept per sensor for "
         "pairing by stamp", lo=1, hi=100000, read_only=True),
    Spec("markers_max_rate", 10.0, "highest rate (Hz) of <s>/markers; 0 = every contacts message",
         lo=0.0, hi=10000.0),
    Spec("marker_force_scale", 0.01, "length of force arrows in markers (m per N)", lo=0.0, hi=1000.0),
    Spec("diagnostics_period", 1.0, "period of /diagnostics reports (s)", lo=0.01, hi=3600.0,
         read_only=True),
    Spec("qos.inputs.reliability", "best_effort", "QoS reliability of every subscription: "
         "best_effort (sensor-data profile; accepts reliable and best-effort publishers) or reliable",
         read_only=True, constraints="best_effort | reliable"),
    Spec("qos.inputs.depth", 5, "QoS history depth of every subscription (keep last)", lo=1, hi=10000,
         read_only=True),
    Spec("qos.outputs.reliability", "reliable", "QoS reliability of every publisher: reliable or "
         "best_effort", read_only=True, constraints="best_effort | reliable"),
    Spec("qos.outputs.depth", 10, "QoS history depth of every publisher (keep last)", lo=1, hi=10000,
         read_only=True),
    Spec("publish_tf", True, "announce the frames the node adds (extra bodies, sensor frames <s>_frame, "
         "world_frame when not a URDF link) on /tf_static and free bodies on /tf; needs tf2_msgs (a ROS "
         "install has it, make venv builds it), else the node logs the frames to provide; false when "
         "another node publishes them",
         read_only=True),
    Spec("frame_prefix", "", "prepended to every frame the node stamps (outputs, markers) and announces "
         "on /tf_static and /tf, world_frame included, as robot_state_publisher's frame_prefix (e.g. "
         "'left/'); inputs keep the bare world_frame", read_only=True),
    Spec("joint_name_map", [], "driver joint names -> URDF joint names, as 'driver:urdf' pairs "
         "(e.g. joint_1:Actuator1); names not listed are used as they are", read_only=True,
         ptype=STRING_ARRAY),
    Spec("executor", "auto", "executor of the node's main(): auto (EventsExecutor where rclpy has it, "
         "else single-threaded), events or single_threaded", read_only=True,
         constraints="auto | events | single_threaded"),
    Spec("strict_parameters", False, "true: a parameter key the node does not know (top level, a "
         "sensor's or a body's section) is a start-up configuration error; false: it is a warning "
         "naming the closest known key", read_only=True),
    Spec("input_timeout", 3.0, "s; an input a sensor needs (contacts unless event-driven, joint "
         "states, a free body's pose, its measured stream: always when <s>.measured_topic names "
         "one, else once it has arrived) silent this long makes its /diagnostics status WARN, naming "
         "topic and type",
         lo=0.01, hi=3600.0),
]

BODY_SPECS: List[Spec] = [
    Spec("mesh", "", "triangle mesh file (ply/stl/obj) or package:// URI, vertices in the body frame (m)",
         read_only=True),
    Spec("parent_link", "", "link or earlier body this body is fixed to; empty = free body "
         "(pose from pose_topic)", read_only=True),
    Spec("transform", list(IDENTITY16), "16 floats, row-major 4x4 body -> parent transform (the "
         "initial world pose of a free body)", read_only=True, length=16, finite=True),
    Spec("transform_file", "", "JSON file holding the 4x4 body -> parent transform (overrides "
         "transform)", read_only=True),
    Spec("transform_key", "", "key of the 4x4 in transform_file (empty: the file is the matrix)",
         read_only=True),
    Spec("pose_topic", "", "geometry_msgs/PoseStamped topic setting a free body's world pose "
         "(empty: <name>/pose)", read_only=True, topic=True),
]

SENSOR_COMMON_SPECS: List[Spec] = [
    Spec("type", "", "sensor model: the type name of a sensor kind, built in (the sections below) or "
         "added by a package (docs/kinds.md)", read_only=True),
    Spec("attachment", "", "body the sensor is attached to (link or extra body)", read_only=True),
    Spec("measured_type", "", "type of <s>/measured (empty: the type of <s>/predicted); a type the "
         "sensor's reading decodes from: FluidPressure, Float32 or Float64 (Punyo pressure; the "
         "header-less ones are stamped with their receive time), PointCloud2 (Punyo dense force), "
         "WrenchStamped (ContactSensor, IsaacContactSensor)",
         constraints="sensor_msgs/msg/FluidPressure | std_msgs/msg/Float32 | std_msgs/msg/Float64 | "
                     "sensor_msgs/msg/PointCloud2 | geometry_msgs/msg/WrenchStamped", read_only=True),
    Spec("measured_scale", 1.0, "multiplier from the measured topic's unit to SI (100.0 for hPa); > 0",
         finite=True, positive=True),
    Spec("publish_jacobian", True, "publish <s>/jacobian (sparse COO PointCloud2)"),
    Spec("publish_markers", True, "publish <s>/markers (rviz MarkerArray)"),
    Spec("measured_topic", "", "topic of the measured reading (empty: <s>/measured; a relative name "
         "resolves in the node's namespace); never one of the node's inputs (contacts, joint_states, a "
         "pose topic) nor a topic carrying another type", read_only=True, topic=True),
    Spec("measured_delay", 0.0, "s; a header-less measured message counts as received this much later "
         "for pairing: how much later the contacts of the same instant reach the node (e.g. a "
         "wrench_contact_node with time_shift 0.066 s: about 0.07); ignored for stamped types",
         lo=-1.0, hi=1.0, finite=True),
    Spec("jacobian_decimation", 1, "k: compute and publish <s>/jacobian for every k-th contacts "
         "message only (the first, then every k-th; 1 = every message)", lo=1, hi=10000),
    Spec("auto_tare", False, "re-tare automatically while the simulator predicts no contact on the sensor "
         "and its residual is steady (its zero drifts: a warming bubble); counted on /diagnostics, saved "
         "by save_calibration as a manual tare", read_only=True),
    Spec("auto_tare_max_step", 20.0, "largest change of any entry one automatic tare may make, in the "
         "sensor's SI unit (Pa, N); a larger one while the simulator sees no contact (the real sensor "
         "touched, or the simulator misaligned) is refused and named (WARN)", read_only=True,
         finite=True, positive=True),
    Spec("auto_tare_steady_std", 5.0, "largest standard deviation of measured - predicted over the "
         "window, per entry, for an automatic tare (SI unit); a sensor moving more is not tared",
         read_only=True, finite=True, positive=True),
    Spec("auto_tare_window", 2.0, "s of unbroken contact-free samples an automatic tare averages",
         read_only=True, lo=0.001, hi=3600.0),
    Spec("auto_tare_min_interval", 5.0, "least time between two automatic tares (s)", read_only=True,
         lo=0.0, hi=86400.0),
    Spec("auto_tare_min_samples", 10, "fewest samples in an automatic tare's window", read_only=True,
         lo=2, hi=100000),
    Spec("leak_rate", 50.0, "Punyo pressure: a contact-free pressure falling faster than this (Pa/min, "
         "least-squares trend over 30 s) is a leak (WARN)", read_only=True, finite=True, positive=True),
    Spec("ambient_pressure", 0.0, "Punyo pressure: the ambient pressure (Pa) the gauge pressure is "
         "measured against; 0 = unknown: no gauge check", read_only=True, lo=0.0, hi=110000.0),
    Spec("min_gauge_pressure", 0.0, "Punyo pressure: least gauge pressure (Pa, measured - "
         "ambient_pressure); the pressure model assumes an inflated bubble, so a lower one is a WARN",
         read_only=True, lo=-110000.0, hi=1.0e6),
]

#: a model setting's Spec: read-only (a model is built once, at start)
model_spec = functools.partial(Spec, read_only=True)

BODY_KEYS = {s.key for s in BODY_SPECS}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# a sensor / body name prefixes topic names, which DDS limits to about 250 characters
MAX_NAME_LENGTH = 64


def check_name(parameter: str, name: str) -> None:
    """ConfigError naming ``parameter`` and ``name`` unless it is a ROS name token of at most
    :data:`MAX_NAME_LENGTH` characters."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(parameter, name, "names must start with a letter and hold only letters, "
                                           "digits and '_'")
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(parameter, name[:20] + "...", f"names are at most {MAX_NAME_LENGTH} characters "
                                                        f"(got {len(name)})")


def plain(value: Any) -> Any:
    """Parameter values as plain Python: arrays (list, tuple, array.array, numpy) become lists."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return value
    return list(value)


def as_double(value: Any, default: Any) -> Any:
    """``value`` as float(s) when ``default`` is a double (array) and ``value`` holds integers;
    None when no conversion applies."""
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, list) and default and isinstance(default[0], float) \
            and not isinstance(value, (str, bytes)) and hasattr(value, "__len__") and len(value) \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value]
    return None


def sensor_specs(type_name: str) -> List[Spec]:
    """Common + the kind's model settings of a sensor type; KeyError for an unknown type."""
    from .kinds import sensor_kinds
    return SENSOR_COMMON_SPECS + list(sensor_kinds()[type_name].settings)
