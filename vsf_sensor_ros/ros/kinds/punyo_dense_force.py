"""The ``PunyoDenseForceSensor`` kind: the force on every membrane vertex as ``sensor_msgs/PointCloud2``
(float32 fields, so rviz and Foxglove colour by any of them; docs/interface.md)."""
from __future__ import annotations

import numpy as np
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import ColorRGBA

from ...sensor.punyo_dense_force_sensor import PunyoDenseForceSensor
from ..messages import readings as enc
from ..messages.pointcloud import read_cloud
from ..messages.wire import FLOAT_TYPES, float_columns
from ..messages.readings import (MeasuredDecodeError, ReadingCodec, arrow_marker, read_cloud_fields,
                                 type_mismatch)
from . import SensorKind


class DenseForceCodec(ReadingCodec):
    """``dense_force``: ``sensor_msgs/PointCloud2`` ``x y z fx fy fz`` per vertex, N."""

    kind, message, unit = "dense_force", PointCloud2, "N"
    measured_types = ("sensor_msgs/msg/PointCloud2",)
    per_vertex = float32_values = True
    message_type, membrane_reading = "sensor_msgs/msg/PointCloud2", True

    def slots(self, names, vertices):
        if vertices is None or 3 * len(vertices) != len(names):
            nv = None if vertices is None else len(vertices)
            raise ValueError(f"dense force sensor has {len(names)} entries but mesh has {nv} vertices")
        return np.arange(len(names)), None

    def to_bytes(self, layout, values, stamp_ns):
        return enc.encode_dense_force(stamp_ns, layout.reading_frame, layout.vertices, values)

    def measured_values(self, layout, msg):
        if not isinstance(msg, PointCloud2):
            raise type_mismatch(msg, layout)
        ints = [f.name for f in msg.fields if f.name in ("fx", "fy", "fz")
                and int(f.datatype) not in FLOAT_TYPES]
        if ints:   # as the contacts decoder: forces are float fields
            raise MeasuredDecodeError("bad_field_type", f"field(s) {ints} must be FLOAT32 or FLOAT64")
        cols = read_cloud_fields(msg, ["fx", "fy", "fz"])
        if 3 * len(cols["fx"]) != len(layout.names):
            raise MeasuredDecodeError("measured_size_mismatch",
                                      f"{len(cols['fx'])} points for {len(layout.names) // 3} vertices")
        return np.stack([cols["fx"], cols["fy"], cols["fz"]], axis=1).reshape(-1)

    def recorded_vector(self, msg, measured):
        names = ("fx", "fy", "fz")
        return float_columns(read_cloud(msg, names, exact_size=False), names).reshape(-1)

    def extra_markers(self, sensor_name, layout, body_header, values, force_scale):
        f = np.asarray(values, dtype=np.float64).reshape(-1, 3)
        loaded = np.abs(f).sum(axis=1) > 0
        v = layout.vertices[loaded].astype(np.float64)
        return [arrow_marker(body_header, f"{sensor_name}/field", 2, ColorRGBA(r=1.0, g=0.6, b=0.0, a=1.0),
                             0.001, v, force_scale * f[loaded])]

    def summary(self, sensor_name, layout, values):
        total = np.asarray(values, dtype=np.float64).reshape(-1, 3).sum(axis=0)
        return f"{sensor_name}: sum f = ({total[0]:.3g}, {total[1]:.3g}, {total[2]:.3g}) {self.unit}"


KIND = SensorKind("PunyoDenseForceSensor", PunyoDenseForceSensor, settings=[], codec=DenseForceCodec())
