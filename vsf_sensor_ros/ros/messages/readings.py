"""Sensor-model vectors <-> standard ROS 2 messages: one :class:`ReadingCodec` per kind
(layouts: docs/interface.md, adding a kind: docs/kinds.md)."""
from __future__ import annotations

from dataclasses import dataclass
import functools
import struct
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3, WrenchStamped
from sensor_msgs.msg import FluidPressure, PointCloud2
from std_msgs.msg import ColorRGBA, Float32, Float64, Header
from visualization_msgs.msg import Marker, MarkerArray

from ...rig.contacts import jacobian_message_columns  # noqa: F401 -- re-exported
from .pointcloud import packed_fields, read_cloud
from .stamps import copy_stamp, ns_to_stamp
from .wire import CloudDecodeError, ReasonError, float_columns, require_finite

# Accepted ``measured_type`` strings -> message class.
MEASURED_TYPES: Dict[str, type] = {
    "sensor_msgs/msg/FluidPressure": FluidPressure,
    "sensor_msgs/msg/PointCloud2": PointCloud2,
    "geometry_msgs/msg/WrenchStamped": WrenchStamped,
    # a bare number without a header (e.g. the Punyo driver's pressure in hPa)
    "std_msgs/msg/Float32": Float32,
    "std_msgs/msg/Float64": Float64,
}
# stamped with their receive time
HEADERLESS_MEASURED_TYPES: Tuple[str, ...] = ("std_msgs/msg/Float32", "std_msgs/msg/Float64")


MEASURED_REASONS: Tuple[str, ...] = (
    "measured_type_mismatch", "measured_size_mismatch", "bad_field_type", "missing_field",
    "bad_cloud_layout", "non_finite",
)   # every MeasuredDecodeError.reason (diagnostics counter keys)


class MeasuredDecodeError(ReasonError):
    """A measured message the sensor's vector cannot take; ``reason``: of :data:`MEASURED_REASONS`."""


def normalise_measured_type(text: str) -> str:
    """Canonical ``pkg/msg/Type`` form of ``text`` (``pkg/Type`` accepted); ValueError naming it
    when not one of :data:`MEASURED_TYPES`."""
    parts = text.strip().split("/")
    canon = "/".join([parts[0], "msg", parts[1]] if len(parts) == 2 else parts)
    if canon not in MEASURED_TYPES:
        raise ValueError(f"unsupported measured type {text!r}; use one of {sorted(MEASURED_TYPES)}")
    return canon


def make_header(stamp: Time, frame_id: str) -> Header:
    """A ``std_msgs/Header`` with a copy of ``stamp``."""
    return Header(stamp=copy_stamp(stamp), frame_id=frame_id)


# the cloud reader's reasons kept; every other layout problem is one counter
_KEPT_CLOUD_REASONS = ("missing_field", "non_finite")


def read_cloud_fields(msg: PointCloud2, names: Sequence[str]) -> Dict[str, np.ndarray]:
    """Float64 columns ``names`` of any ``PointCloud2`` layout (:func:`.read_cloud`, tolerant size);
    MeasuredDecodeError ``missing_field``, ``non_finite`` or ``bad_cloud_layout`` (any other)."""
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
    """Where the message slots sit in a sensor's vector: ``frame_id`` the attachment body;
    ``names`` its ``measurement_names()``; ``slots`` the entries the message carries in message
    order (pressure ``[i_p]``, wrench ``[i_fx, i_fy, i_fz]`` with -1 for an axis not measured, load
    ``[i]``, dense ``0 .. 3V-1``); ``flag`` a boolean entry no message carries (``contact``) or
    None; ``vertices`` ``(V, 3)`` float32 body-frame m (dense force) or None; ``std`` ``(#meas,)``
    or None; ``sensor_frame``, ``body_T_sensor`` the sensor's own frame and ``(4, 4)`` sensor ->
    body transform (Klampt ``Tsensor``, Isaac ``position``) or "" / None; ``frame_prefix`` on
    every stamped frame (never on ``frame_id``)."""

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
    def reading_frame(self) -> str:
        """The frame a reading is expressed in and stamped with (predicted, residual, label), prefixed."""
        return self.frame_prefix + (self.sensor_frame or self.frame_id)


def index_of(names: List[str], *candidates: str) -> int:
    """Index of the first of ``candidates`` in ``names``; ValueError naming both when none is."""
    for c in candidates:
        if c in names:
            return names.index(c)
    raise ValueError(f"measurement names {names} have none of {candidates}")


def type_mismatch(msg: object, layout: SensorLayout) -> MeasuredDecodeError:
    """The ``measured_type_mismatch`` error of a message a kind cannot read."""
    return MeasuredDecodeError("measured_type_mismatch",
                               f"{type(msg).__name__} for a {layout.codec.kind} sensor")


# -- the codecs, one per reading kind -----------------------------------------------------------
class ReadingCodec:
    """One reading kind; subclasses fill in its message (docs/kinds.md).  ``kind``: its name;
    ``message``, ``unit``, ``message_type``: class, SI unit and ``pkg/msg/Type`` of
    ``<s>/predicted`` and ``<s>/residual``; ``measured_types``: what :meth:`measured_values`
    reads, the default first; ``per_vertex``: a force per mesh vertex; ``float32_values``: float32
    fields; ``plausible``: ``(low, high)`` of a measured SI value or None; ``steps_sensor``: the
    model keeps a period-sampled reading (Isaac's ``update``); ``axes``: component labels in slot
    order (None per vertex); ``membrane_reading``, ``pad_reading``: Punyo membrane, tactile pad."""

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
        """``(slots, flag)`` of :class:`SensorLayout` for ``names``; ValueError: names not of the kind."""
        raise NotImplementedError

    def to_bytes(self, layout: SensorLayout, values: np.ndarray, stamp_ns: int) -> bytes:
        """:func:`encode_vector` of this kind, in ``layout.reading_frame``."""
        raise NotImplementedError

    def measured_values(self, layout: SensorLayout, msg) -> np.ndarray:
        """The values a measured message carries, in message-slot order, before scaling;
        MeasuredDecodeError: a message of a type this kind cannot read, or malformed."""
        raise NotImplementedError

    def recorded_vector(self, msg, measured: bool) -> np.ndarray:
        """A recorded ``<s>/predicted`` or (``measured``) ``<s>/measured`` message's values as
        recorded (NaN kept, unscaled) in slot order (load measured: ``|force|``); ValueError: a
        cloud without ``fx fy fz`` or with a bad layout."""
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
    """Kinds published as ``geometry_msgs/WrenchStamped`` (force N, torque 0), read back as the
    ``(3,)`` force; a subclass fills in :meth:`force`, ``kind``, ``axes`` and ``slots``."""

    message, unit = WrenchStamped, "N"
    measured_types = ("geometry_msgs/msg/WrenchStamped",)
    message_type = "geometry_msgs/msg/WrenchStamped"

    def force(self, layout: SensorLayout, values: np.ndarray) -> Tuple[float, float, float]:
        """``wrench.force`` (N) of ``values``."""
        raise NotImplementedError

    def to_bytes(self, layout, values, stamp_ns):     # geometry_msgs/WrenchStamped, torque 0
        s, block = _stamped_struct(layout.reading_frame, "6d")
        return s.pack(_HEADER_LE, *_check_stamp(stamp_ns), block, *map(float, self.force(layout, values)),
                      0.0, 0.0, 0.0)

    def measured_values(self, layout, msg):
        if not isinstance(msg, WrenchStamped):
            raise type_mismatch(msg, layout)
        return WrenchMessageCodec.recorded_vector(self, msg, True)   # the force, not a subclass's vector

    def recorded_vector(self, msg, measured):
        f = msg.wrench.force
        return np.array([f.x, f.y, f.z], dtype=np.float64)


def encode_vector(layout: SensorLayout, values: np.ndarray, stamp_ns: int) -> bytes:
    """A ``(#meas,)`` SI vector (predicted, residual, measured) as the kind's message in CDR bytes
    (``publish`` takes bytes), stamped ``stamp_ns``; ValueError: a stamp out of range."""
    return layout.codec.to_bytes(layout, values, stamp_ns)


def decode_measured(layout: SensorLayout, msg, scale: float) -> np.ndarray:
    """A measured message (load: ``|force|``) times ``scale`` (to SI, e.g. 100.0 for hPa) as
    ``(#meas,)`` float64, NaN where it carries nothing.  MeasuredDecodeError: a reason of
    :data:`MEASURED_REASONS` (``non_finite`` before or after scaling)."""
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


def marker_points(arr: np.ndarray) -> List[Point]:
    """``(N, 3)`` positions as marker ``Point`` s."""
    return [Point(x=float(a), y=float(b), z=float(c)) for a, b, c in arr.tolist()]


def arrow_marker(header: Header, ns: str, marker_id: int, colour: ColorRGBA, width: float,
                 starts: np.ndarray, vectors: np.ndarray) -> Marker:
    """A LINE_LIST marker (``width`` m) of a segment from each ``(N, 3)`` start along its vector."""
    seg = np.empty((2 * len(starts), 3))
    seg[0::2] = starts
    seg[1::2] = starts + vectors
    return Marker(header=header, ns=ns, id=marker_id, type=Marker.LINE_LIST, action=Marker.ADD, color=colour,
                  scale=Vector3(x=width), points=marker_points(seg))


def encode_markers(sensor_name: str, layout: SensorLayout, world_frame: str, stamp: Time,
                   points_world: np.ndarray, forces_world: np.ndarray,
                   values: np.ndarray, force_scale: float,
                   in_contact: bool) -> MarkerArray:
    """rviz markers of one sensor at one step (docs/interface.md): ``<s>/contacts`` (id 0, the
    ``(N, 3)`` world points, red ``in_contact``), ``<s>/forces`` (1, ``force_scale`` m/N), the
    kind's extras (2) and ``<s>/label`` (3, in ``layout.reading_frame``)."""
    header = make_header(stamp, world_frame)
    colour = ColorRGBA(r=1.0, g=0.2, b=0.1, a=1.0) if in_contact else ColorRGBA(r=0.6, g=0.6, b=0.6, a=1.0)
    # (a Marker's pose is the identity: a Quaternion's w defaults to 1)
    pts = Marker(header=header, ns=f"{sensor_name}/contacts", id=0, type=Marker.SPHERE_LIST,
                 action=Marker.ADD, color=colour, scale=Vector3(x=0.005, y=0.005, z=0.005),
                 points=marker_points(points_world))
    arrows = arrow_marker(header, f"{sensor_name}/forces", 1, ColorRGBA(r=0.1, g=0.4, b=1.0, a=1.0), 0.002,
                          points_world, force_scale * forces_world)
    body_header = make_header(stamp, layout.frame_prefix + layout.frame_id)   # the attachment body
    extras = layout.codec.extra_markers(sensor_name, layout, body_header, values, force_scale)
    label = Marker(header=make_header(stamp, layout.reading_frame), ns=f"{sensor_name}/label", id=3,
                   type=Marker.TEXT_VIEW_FACING, action=Marker.ADD, color=colour, scale=Vector3(z=0.02),
                   text=layout.codec.summary(sensor_name, layout, values))
    return MarkerArray(markers=[pts, arrows, *extras, label])


_MATCHED: Dict[Any, float] = {}   # publisher -> monotonic s until which its last match holds


def wanted(pub: Any) -> bool:
    """A publisher has at least one matched subscription (an output nobody reads is not encoded); a
    match holds 0.5 s (no count per output per step): a new subscriber is never missed, one that
    left costs at most 0.5 s of messages nobody reads."""
    now = time.monotonic()
    if _MATCHED.get(pub, 0.0) <= now:
        if pub.get_subscription_count() <= 0:
            return False
        if len(_MATCHED) >= 256:   # publishers destroyed by set_optional do not pile up
            _MATCHED.clear()
        _MATCHED[pub] = now + 0.5
    return True


def publish_vector(pub: Any, layout: SensorLayout, values: np.ndarray, stamp_ns: int) -> bool:
    """Publish :func:`encode_vector` of ``values`` on ``pub`` when someone subscribes; True if sent."""
    if not wanted(pub):
        return False
    pub.publish(layout.codec.to_bytes(layout, values, stamp_ns))   # encode_vector's one call
    return True


def publish_step(endpoints: Any, layout: SensorLayout, r: Any, state: Any, stamp_ns: int, world_frame: str,
                 in_contact: bool, marker_force_scale: Optional[float]) -> bool:
    """Publish a checked step (``r``: a ``SensorResult``, ``state``: its ``SimState``) on a
    sensor's ``endpoints``: prediction, Jacobian, and markers when ``marker_force_scale`` (m/N) is
    given; True when markers were published."""
    values, jac = r.values, r.jacobian
    publish_vector(endpoints.predicted, layout, values, stamp_ns)
    if jac is not None and endpoints.jacobian is not None and wanted(endpoints.jacobian):  # force: .cpu()
        endpoints.jacobian.publish(encode_jacobian(jac.rows.numpy(force=True), r.jacobian_cols,
                                                   jac.values.numpy(force=True), stamp_ns, world_frame))
    if marker_force_scale is None or endpoints.markers is None or not wanted(endpoints.markers):
        return False
    pts, frc = state.contacts_on_body(layout.frame_id, local=False)
    endpoints.markers.publish(encode_markers(endpoints.name, layout, world_frame, ns_to_stamp(stamp_ns),
                                             pts.cpu().numpy(), frc.cpu().numpy(), values,
                                             marker_force_scale, in_contact))
    return True


# CDR encoders: the node publishes bytes (docs/decisions.md)
_HEADER_LE = b"\x00\x01\x00\x00"            # XCDR1 little-endian


def _check_stamp(stamp_ns: int) -> Tuple[int, int]:   # (sec, nanosec)
    ns = int(stamp_ns)
    if not 0 <= ns < (1 << 31) * 1_000_000_000:
        raise ValueError(f"stamp {stamp_ns} ns is outside builtin_interfaces/Time's range")
    return divmod(ns, 1_000_000_000)


@functools.lru_cache(maxsize=64)
def _stamped_struct(frame_id: str, tail: str, align: int = 8) -> Tuple[struct.Struct, bytes]:
    """``(Struct, frame block)`` of a message in one pack: encapsulation, stamp, ``frame_id`` (padded
    for a next field of ``align`` bytes), then the ``tail`` format."""
    fid = frame_id.encode("utf-8") + b"\x00"
    block = struct.pack("<I", len(fid)) + fid + bytes(-(12 + len(fid)) % align)
    return struct.Struct(f"<4siI{len(block)}s{tail}"), block


def encode_fluid_pressure(stamp_ns: int, frame_id: str, fluid_pressure: float, variance: float) -> bytes:
    """Serialised ``sensor_msgs/FluidPressure`` (Pa, Pa²), little-endian XCDR1; ValueError: a
    stamp negative or past ``int32`` seconds (as every encoder below)."""
    s, block = _stamped_struct(frame_id, "2d")
    return s.pack(_HEADER_LE, *_check_stamp(stamp_ns), block, float(fluid_pressure), float(variance))


@functools.lru_cache(maxsize=64)
def _cloud_head(frame_id: str, dt: np.dtype) -> Tuple[struct.Struct, bytes, bytes]:
    """``(Struct, frame block, fields .. point_step block)`` of a cloud's bytes before its data."""
    block = struct.pack("<I", len(dt.names))
    for name, offset, datatype in packed_fields(dt):   # name (zero-padded to 4), offset, datatype, count 1
        nm = name.encode("utf-8") + b"\x00"
        block += struct.pack(f"<I{(len(nm) + 3) // 4 * 4}sIB3xI", len(nm), nm, offset, datatype, 1)
    block += struct.pack("<B3xI", 0, dt.itemsize)      # is_bigendian false, point_step
    return (*_stamped_struct(frame_id, f"II{len(block)}sII", 4), block)   # height, width .. data length


def encode_pointcloud2(stamp_ns: int, frame_id: str, records: np.ndarray) -> bytes:
    """Serialised packed little-endian ``sensor_msgs/PointCloud2`` (``height`` 1) of ``records``,
    ``(N,)`` structured, little-endian, no gaps; ValueError: another dtype, a gap, padding."""
    dt = records.dtype
    if dt.names is None or records.ndim != 1:
        raise ValueError(f"records must be a 1-D structured array, got dtype {dt} shape {records.shape}")
    s, frame, block = _cloud_head(frame_id, dt)
    n = records.shape[0]
    return b"".join((s.pack(_HEADER_LE, *_check_stamp(stamp_ns), frame, 1, n, block, dt.itemsize * n,
                            dt.itemsize * n), records.tobytes(), b"\x01"))


_DENSE_DTYPE = np.dtype([(c, "<f4") for c in ("x", "y", "z", "fx", "fy", "fz")])
_JACOBIAN_DTYPE = np.dtype([("row", "<u4"), ("col", "<u4"), ("value", "<f8")])
_DENSE: Dict[Tuple[str, int], Tuple[np.ndarray, bytearray, np.ndarray]] = {}   # encode_dense_force's


def encode_dense_force(stamp_ns: int, frame_id: str, vertices: np.ndarray, forces: np.ndarray) -> bytes:
    """Serialised dense force cloud, ``x y z fx fy fz`` float32 per vertex of ``vertices`` ``(V, 3)``
    (m, body frame) and ``forces`` ``(V, 3)`` or ``(3V,)`` (N); ValueError: shapes disagree."""
    f = np.asarray(forces).reshape(-1, 3)
    # the message of read-only vertices (a layout's) is kept: a step writes only its stamp and forces
    vertices, buf, flat = _DENSE.get((frame_id, id(vertices)), (vertices, None, None))
    if buf is None:
        v = np.asarray(vertices, dtype="<f4").reshape(-1, 3)
        buf = bytearray(encode_pointcloud2(0, frame_id, np.hstack([v, 0 * v]).view(_DENSE_DTYPE)[:, 0]))
        flat = np.frombuffer(buf, "<f4", 2 * v.size, len(buf) - 1 - 2 * v.nbytes).reshape(-1, 6)
        if isinstance(vertices, np.ndarray) and not vertices.flags.writeable and len(_DENSE) < 64:
            _DENSE[(frame_id, id(vertices))] = (vertices, buf, flat)
    if len(flat) != len(f):
        raise ValueError(f"{len(flat)} vertices but {len(f)} force vectors")
    struct.pack_into("<iI", buf, 4, *_check_stamp(stamp_ns))
    flat[:, 3:] = f
    return bytes(buf)


def encode_jacobian(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, stamp_ns: int,
                    frame_id: str) -> bytes:
    """Serialised sparse COO Jacobian cloud (``row`` u4, ``col`` u4 as
    :func:`jacobian_message_columns`, ``value`` f8; nonzeros only); ValueError: lengths differ."""
    values = np.asarray(values, dtype=np.float64)
    rows, cols = np.asarray(rows), np.asarray(cols)
    if not rows.shape == cols.shape == values.shape:
        raise ValueError(f"rows {rows.shape}, cols {cols.shape}, values {values.shape} differ")
    n = np.count_nonzero(values)
    if n < values.size:     # boolean gathers only when there is a zero to drop
        keep = values != 0.0
        rows, cols, values = rows[keep], cols[keep], values[keep]
    rec = np.empty(n, dtype=_JACOBIAN_DTYPE)
    rec["row"], rec["col"], rec["value"] = rows, cols, values
    return encode_pointcloud2(stamp_ns, frame_id, rec)
