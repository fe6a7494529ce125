"""What every reading codec shares: sensor-model vectors <-> standard ROS 2 messages.

Each kind declares one :class:`ReadingCodec` holding everything about its reading, so only
``common_interfaces`` types go on the wire and nothing else knows a message layout.  Layouts,
frames and measured types: docs/interface.md; adding a kind: docs/kinds.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, WrenchStamped
from sensor_msgs.msg import FluidPressure, PointCloud2
from std_msgs.msg import ColorRGBA, Float32, Float64, Header
from visualization_msgs.msg import Marker, MarkerArray

from ...rig.contacts import jacobian_message_columns  # noqa: F401 -- re-exported
from . import wire
from .pointcloud import CloudDecodeError, float_columns, read_cloud, require_finite
from .stamps import copy_stamp

# Accepted ``measured_type`` strings -> message class.
MEASURED_TYPES: Dict[str, type] = {
    "sensor_msgs/msg/FluidPressure": FluidPressure,
    "sensor_msgs/msg/PointCloud2": PointCloud2,
    "geometry_msgs/msg/WrenchStamped": WrenchStamped,
    # a bare number without a header (e.g. the Punyo driver's pressure in hPa)
    "std_msgs/msg/Float32": Float32,
    "std_msgs/msg/Float64": Float64,
}
# Measured types without a header: the node stamps them with their receive time.
HEADERLESS_MEASURED_TYPES: Tuple[str, ...] = ("std_msgs/msg/Float32", "std_msgs/msg/Float64")


MEASURED_REASONS: Tuple[str, ...] = (
    "measured_type_mismatch", "measured_size_mismatch", "bad_field_type", "missing_field",
    "bad_cloud_layout", "non_finite",
)
"""Every :attr:`MeasuredDecodeError.reason` (snake_case keys for diagnostics counters)."""


class MeasuredDecodeError(ValueError):
    """A measured message that cannot be mapped to the sensor's measurement vector.

    Attributes:
        reason: one of :data:`MEASURED_REASONS` (counter key for ``/diagnostics``).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def normalise_measured_type(text: str) -> str:
    """Canonical ``pkg/msg/Type`` form of ``text`` (``pkg/Type`` accepted).

    Raises:
        ValueError: not one of :data:`MEASURED_TYPES`, naming the value.
    """
    parts = text.strip().split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    canon = "/".join(parts)
    if canon not in MEASURED_TYPES:
        raise ValueError(f"unsupported measured type {text!r}; use one of {sorted(MEASURED_TYPES)}")
    return canon


def make_header(stamp: Time, frame_id: str) -> Header:
    """A ``std_msgs/Header`` with a copy of ``stamp``."""
    return Header(stamp=copy_stamp(stamp), frame_id=frame_id)


# -- PointCloud2 ------------------------------------------------------------------------
# Reasons of the shared cloud reader kept as they are; every other layout problem is one counter.
_KEPT_CLOUD_REASONS = ("missing_field", "non_finite")


def read_cloud_fields(msg: PointCloud2, names: Sequence[str]) -> Dict[str, np.ndarray]:
    """Read float64 columns ``names`` from any ``PointCloud2`` layout.

    Honours field offsets, datatypes, ``is_bigendian``, ``point_step``,
    ``row_step`` and ``height > 1`` (points in row-major order), through
    :func:`vsf_sensor_ros.ros.messages.pointcloud.read_cloud`.  The data must reach
    the end of the last point (a missing pad after the last row is
    accepted, as are trailing bytes).

    Raises:
        MeasuredDecodeError: ``missing_field`` / ``bad_cloud_layout`` (any
            other layout problem: duplicate or unknown datatype, count, offset,
            data length) / ``non_finite``, with a message naming the problem.
    """
    try:
        points = read_cloud(msg, names, exact_size=False)
        cols = float_columns(points, names)
        for k, n in enumerate(names):
            require_finite(cols[:, k], n)
    except CloudDecodeError as exc:
        reason = exc.reason if exc.reason in _KEPT_CLOUD_REASONS else "bad_cloud_layout"
        raise MeasuredDecodeError(reason, str(exc)) from None
    return {n: cols[:, k] for k, n in enumerate(names)}


# -- the layout of one sensor's vector --------------------------------------------------------
@dataclass
class SensorLayout:
    """Where the message slots sit in a sensor's measurement vector.

    Attributes:
        codec: the :class:`ReadingCodec` of the sensor's kind.
        frame_id: attachment body name (the body frame; values are expressed in
            :attr:`reading_frame`).
        names: the sensor's ``measurement_names()``.
        slots: indices of the entries the message carries, in message order
            (pressure: ``[i_pressure]``; wrench: ``[i_fx, i_fy, i_fz]``, -1 for
            an axis the sensor does not measure (Klampt ``hasForce``);
            load: ``[i_value]``; dense force: ``0 .. 3V-1``).
        flag: index of a boolean entry the message cannot carry
            (``contact`` / ``in_contact``), or None.
        vertices: ``(V, 3)`` float32 vertex positions (body frame, m) for
            dense force, else None.
        std: ``(#meas,)`` standard deviations (None when unknown).
        sensor_frame: name of the sensor's own frame when its values are
            expressed in one (Klampt ``Tsensor``, Isaac ``position``), else ""
            (the values are in the body frame ``frame_id``).
        body_T_sensor: ``(4, 4)`` float64 sensor frame -> body transform of
            ``sensor_frame`` (None without one).
        frame_prefix: the node's ``frame_prefix`` (e.g. ``left/``), prepended to
            every frame a message is stamped with (:attr:`reading_frame`,
            :attr:`body_frame`); ``frame_id`` and ``sensor_frame`` stay the bare
            names (the model's body names).
    """

    codec: "ReadingCodec"
    frame_id: str
    names: List[str]
    slots: np.ndarray
    flag: Optional[int]
    vertices: Optional[np.ndarray]
    std: Optional[np.ndarray]
    sensor_frame: str = ""
    body_T_sensor: Optional[np.ndarray] = None
    frame_prefix: str = ""

    @property
    def kind(self) -> str:
        """The reading kind's name (``pressure`` | ``dense_force`` | ``wrench`` | ``load``), for text."""
        return self.codec.kind

    @property
    def reading_frame(self) -> str:
        """The frame a reading is expressed in and stamped with (predicted, residual, label), prefixed."""
        return self.frame_prefix + (self.sensor_frame or self.frame_id)

    @property
    def body_frame(self) -> str:
        """The attachment body's frame as stamped (``frame_prefix`` + ``frame_id``)."""
        return self.frame_prefix + self.frame_id


def index_of(names: List[str], *candidates: str) -> int:
    """Index of the first of ``candidates`` in ``names``.

    Raises:
        ValueError: none of them is there, naming both.
    """
    for c in candidates:
        if c in names:
            return names.index(c)
    raise ValueError(f"measurement names {names} have none of {candidates}")


def type_mismatch(msg: object, layout: SensorLayout) -> MeasuredDecodeError:
    """The ``measured_type_mismatch`` error of a message a kind cannot read."""
    return MeasuredDecodeError("measured_type_mismatch", f"{type(msg).__name__} for a {layout.kind} sensor")


# -- the codecs, one per reading kind -----------------------------------------------------------
class ReadingCodec:
    """Everything about one reading kind; subclasses fill in the kind's message.

    Attributes:
        kind: the kind's name (diagnostics text, tests).
        message: message class of ``<s>/predicted`` and ``<s>/residual``.
        unit: SI unit of the message's values.
        measured_types: ``measured_type`` s whose messages :meth:`measured_values` reads, the
            default first; any other pairing would reject every measured message.
        per_vertex: the vector is one force per mesh vertex (the layout needs the vertices,
            element indices of contacts on the body must index them).
        float32_values: the message carries float32 fields: a value beyond that range cannot
            be published.
        plausible: ``(low, high)`` of a plausible measured value in SI, or None (no check).
        steps_sensor: the model keeps a period-sampled reading (Isaac's ``update(state, t)``).
        message_type: ``pkg/msg/Type`` name of :attr:`message` (the type a recording names).
        axes: names of the message's components in slot order (plot and summary labels), or
            None when the vector is one force per mesh vertex.
        membrane_reading: the reading comes from the Punyo bubble's membrane (pressure, dense
            force): contact on its body is what "pressed" means in a demo.
        pad_reading: the reading is a tactile pad's net force on three axes (Klampt
            ``ContactSensor``).
    """

    kind: str = ""
    message: type = type(None)
    unit: str = ""
    measured_types: Tuple[str, ...] = ()
    per_vertex = False
    float32_values = False
    plausible: Optional[Tuple[float, float]] = None
    steps_sensor = False
    message_type: str = ""
    axes: Optional[Tuple[str, ...]] = None
    membrane_reading = False
    pad_reading = False

    def slots(self, names: List[str], vertices: Optional[np.ndarray]) -> Tuple[np.ndarray, Optional[int]]:
        """``(slots, flag)`` of :class:`SensorLayout` for ``names``.

        Raises:
            ValueError: names that do not fit the kind.
        """
        raise NotImplementedError

    def to_bytes(self, layout: SensorLayout, values: np.ndarray, stamp_ns: int) -> bytes:
        """The predicted / residual message of ``values`` (``(#meas,)`` float64, SI), serialised
        (CDR, :mod:`.wire`), stamped ``stamp_ns`` in frame ``layout.reading_frame``.

        Raises:
            ValueError: ``stamp_ns`` negative or beyond ``int32`` seconds.
        """
        raise NotImplementedError

    def measured_values(self, layout: SensorLayout, msg) -> np.ndarray:
        """The values a measured message carries, in message-slot order, before scaling.

        Raises:
            MeasuredDecodeError: a message of a type this kind cannot read, or malformed.
        """
        raise NotImplementedError

    def recorded_vector(self, msg, measured: bool) -> np.ndarray:
        """The vector of a recorded ``<s>/predicted`` or ``<s>/measured`` message, before scaling.

        ``msg`` is any object with the field names of :attr:`message_type` (an rclpy message
        or one deserialised from a bag); values are returned as recorded, NaN included, so a
        recording is analysed as it was.  Message-slot order (the order of :attr:`axes`).

        Args:
            msg: the message.
            measured: the message is a measured one (the ``load`` kind reads it as the
                magnitude ``|force|``, the predicted one as ``force.z``).

        Returns:
            float64 array: pressure ``[p]`` (Pa); dense force ``fx fy fz`` per point,
            point-major (N); wrench ``[fx, fy, fz]`` (N); load ``[f]`` (N).

        Raises:
            ValueError: a cloud without ``fx fy fz`` or with a bad layout
                (a :class:`~vsf_sensor_ros.ros.messages.pointcloud.CloudDecodeError`).
        """
        raise NotImplementedError

    def extra_markers(self, sensor_name: str, layout: SensorLayout, body_header: Header,
                      values: np.ndarray, force_scale: float) -> List[Marker]:
        """Markers of this kind beyond the contacts, forces and label (none by default)."""
        return []

    def summary(self, sensor_name: str, layout: SensorLayout, values: np.ndarray) -> str:
        """One-line summary of a reading: the message's values and the unit."""
        main = ", ".join(f"{float(values[i]):.6g}" if i >= 0 else "-" for i in layout.slots)
        return f"{sensor_name}: {main} {self.unit}"

    def in_contact(self, layout: SensorLayout, values: np.ndarray, n_contacts: int) -> bool:
        """The contact state the sensor reports: its flag entry, else any contact on its body."""
        if layout.flag is not None:
            return bool(values[layout.flag] > 0.5)
        return n_contacts > 0


class WrenchMessageCodec(ReadingCodec):
    """The shared base of kinds published as ``geometry_msgs/WrenchStamped`` (force only, torque 0),
    N; a subclass fills in :meth:`force`, ``kind``, ``axes``, ``slots`` and the measured decoder."""

    message, unit = WrenchStamped, "N"
    measured_types = ("geometry_msgs/msg/WrenchStamped",)
    message_type = "geometry_msgs/msg/WrenchStamped"

    def force(self, layout: SensorLayout, values: np.ndarray) -> Tuple[float, float, float]:
        """``wrench.force`` (N) of ``values``."""
        raise NotImplementedError

    def to_bytes(self, layout, values, stamp_ns):
        return wire.encode_wrench_stamped(stamp_ns, layout.reading_frame, self.force(layout, values))


def make_layout(codec: ReadingCodec, frame_id: str, names: List[str],
                errors: Optional[Sequence[float]],
                vertices: Optional[np.ndarray] = None, sensor_frame: str = "",
                body_T_sensor: Optional[np.ndarray] = None, frame_prefix: str = "") -> SensorLayout:
    """Describe how a sensor's vector maps to its messages (by type name:
    :func:`vsf_sensor_ros.ros.kinds.sensor_layout`).

    Args:
        codec: the codec of the sensor's kind.
        frame_id: attachment body name.
        names: ``measurement_names()``.
        errors: ``measurement_errors()`` (std per entry, or None).
        vertices: ``(V, 3)`` mesh vertices in the body frame (dense force only).
        sensor_frame, body_T_sensor: the sensor's own frame and its ``(4, 4)``
            sensor -> body transform, when its values are expressed in it.
        frame_prefix: prepended to the stamped frames (see :class:`SensorLayout`).

    Raises:
        ValueError: names not matching the kind, or a dense force sensor whose ``3V``
            entries disagree with ``vertices``.
    """
    slots, flag = codec.slots(list(names), vertices)
    std = None if errors is None else np.asarray(errors, dtype=np.float64).reshape(-1)
    if std is not None and std.shape[0] != len(names):
        std = None
    verts = None if vertices is None else np.ascontiguousarray(vertices, dtype=np.float32)
    T = None if body_T_sensor is None else np.array(body_T_sensor, dtype=np.float64).reshape(4, 4)
    return SensorLayout(codec, frame_id, list(names), slots, flag, verts, std, sensor_frame, T, frame_prefix)


def encode_vector(layout: SensorLayout, values: np.ndarray, stamp_ns: int) -> bytes:
    """A measurement-space vector (predicted, residual, measured) as the kind's message, serialised.

    Args:
        layout: from :func:`make_layout`.
        values: ``(#meas,)`` float64 in SI units (Pa or N).
        stamp_ns: header stamp (ns; the contacts message's stamp).

    Returns:
        CDR bytes of a ``FluidPressure`` | ``PointCloud2`` | ``WrenchStamped`` (see module doc),
        for a publisher of :attr:`ReadingCodec.message` (``publish`` takes bytes).

    Raises:
        ValueError: ``stamp_ns`` negative or beyond ``int32`` seconds.
    """
    return layout.codec.to_bytes(layout, values, stamp_ns)


def decode_measured(layout: SensorLayout, msg, scale: float) -> np.ndarray:
    """Decode a measured message into the sensor's measurement space (SI).

    Args:
        layout: from :func:`make_layout`.
        msg: a message of one of the kind's ``measured_types``: ``FluidPressure`` or ``Float32`` /
            ``Float64`` (pressure), ``PointCloud2`` with ``fx fy fz`` per vertex in vertex order
            (dense force), or ``WrenchStamped`` (wrench: force xyz; load: ``|force|``, the
            magnitude, so a load cell reporting along any single axis decodes the same).
        scale: multiplier to SI (e.g. 100.0 for a pressure in hPa).

    Returns:
        ``(#meas,)`` float64; entries the message cannot carry are NaN.

    Raises:
        MeasuredDecodeError: wrong message type for the kind
            (``measured_type_mismatch``), vertex count mismatch
            (``measured_size_mismatch``), integer ``fx fy fz`` fields
            (``bad_field_type``), bad layout, or values that are non-finite
            before or after scaling (``non_finite``).
    """
    out = np.full(len(layout.names), np.nan)
    vals = layout.codec.measured_values(layout, msg)
    if not np.isfinite(vals).all():
        raise MeasuredDecodeError("non_finite", "measured message has a non-finite value")
    with np.errstate(over="ignore", invalid="ignore"):     # inf x 0 or a NaN scale: rejected below
        vals = vals * scale
    if not np.isfinite(vals).all():   # finite in the message's unit, overflows in SI
        raise MeasuredDecodeError("non_finite", f"measured value x measured_scale {scale} is not finite")
    present = layout.slots >= 0
    out[layout.slots[present]] = vals[present]
    return out


# -- markers ---------------------------------------------------------------------------
def marker_points(arr: np.ndarray) -> List[Point]:
    """``(N, 3)`` positions as marker ``Point`` s."""
    return [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in arr.tolist()]


def encode_markers(sensor_name: str, layout: SensorLayout, world_frame: str, stamp: Time,
                   points_world: np.ndarray, forces_world: np.ndarray,
                   values: np.ndarray, force_scale: float,
                   in_contact: bool) -> MarkerArray:
    """rviz markers for one sensor at one step.

    * ``<s>/contacts`` (id 0): SPHERE_LIST of the contact points acting on the
      sensor body, world frame; red when the sensor reports contact, grey otherwise.
    * ``<s>/forces`` (id 1): LINE_LIST, one segment per contact from the point
      along its force (on the sensor body) scaled by ``force_scale`` (m/N).
    * ``<s>/field`` (id 2, dense force only): LINE_LIST in the body frame, one
      segment per loaded vertex along its predicted local force.
    * ``<s>/label`` (id 3): text with the main reading at the origin of the
      reading's frame (``layout.reading_frame``: the sensor frame or the body).

    Args:
        points_world, forces_world: ``(N, 3)`` contacts on the sensor body.
        values: the predicted vector.
        force_scale: arrow length per newton (m/N).
        in_contact: colour switch.
    """
    header = make_header(stamp, world_frame)
    red = ColorRGBA(r=1.0, g=0.2, b=0.1, a=1.0)
    grey = ColorRGBA(r=0.6, g=0.6, b=0.6, a=1.0)
    colour = red if in_contact else grey
    pts = Marker(header=header, ns=f"{sensor_name}/contacts", id=0, type=Marker.SPHERE_LIST,
                 action=Marker.ADD, color=colour)
    pts.pose.orientation.w = 1.0
    pts.scale.x = pts.scale.y = pts.scale.z = 0.005
    pts.points = marker_points(points_world)
    arrows = Marker(header=header, ns=f"{sensor_name}/forces", id=1, type=Marker.LINE_LIST,
                    action=Marker.ADD, color=ColorRGBA(r=0.1, g=0.4, b=1.0, a=1.0))
    arrows.pose.orientation.w = 1.0
    arrows.scale.x = 0.002
    seg = np.empty((2 * len(points_world), 3))
    seg[0::2] = points_world
    seg[1::2] = points_world + force_scale * forces_world
    arrows.points = marker_points(seg)
    out = [pts, arrows]
    out += layout.codec.extra_markers(sensor_name, layout, make_header(stamp, layout.body_frame), values,
                                      force_scale)
    label = Marker(header=make_header(stamp, layout.reading_frame), ns=f"{sensor_name}/label", id=3,
                   type=Marker.TEXT_VIEW_FACING, action=Marker.ADD, color=colour)
    label.pose.orientation.w = 1.0
    label.scale.z = 0.02
    label.text = summary_text(sensor_name, layout, values)
    out.append(label)
    return MarkerArray(markers=out)


def summary_text(sensor_name: str, layout: SensorLayout, values: np.ndarray) -> str:
    """One-line human summary of a reading (marker label, diagnostics)."""
    return layout.codec.summary(sensor_name, layout, values)


def vector_decoder(layout: SensorLayout, scale_getter: Callable[[], float]) -> Callable:
    """Closure ``msg -> vector`` reading the current scale at call time."""
    return lambda msg: decode_measured(layout, msg, scale_getter())
