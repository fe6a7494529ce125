"""The ``IsaacContactSensor`` kind (Isaac Sim's contact sensor): its load as ``geometry_msgs/WrenchStamped``.

The load on ``force.z`` (a load cell's one axis), a measured wrench read as ``|force|``; settings
are Isaac's names and defaults.  Layout: docs/interface.md.
"""
from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import WrenchStamped

from ...sensor.isaac_contact_sensor import CsProperties, IsaacContactSensor
from ..messages.readings import WrenchMessageCodec, index_of, type_mismatch
from ..parameter_table import INF, model_spec
from . import SensorKind, model_setting


class LoadCodec(WrenchMessageCodec):
    """``load``: the scalar load on ``force.z`` of the sensor frame."""

    kind = "load"
    steps_sensor = True
    axes = ("load",)

    def slots(self, names, vertices):
        flag = None
        for cand in ("in_contact", "inContact", "contact"):
            if cand in names:
                flag = names.index(cand)
        return np.array([index_of(names, "value", "force", "load")]), flag

    def force(self, layout, values):
        return 0.0, 0.0, float(values[layout.slots[0]])

    def measured_values(self, layout, msg):
        if not isinstance(msg, WrenchStamped):
            raise type_mismatch(msg, layout)
        f = msg.wrench.force
        # hypot: no overflow of the squares for huge finite components, no underflow for tiny ones
        return np.array([math.hypot(f.x, f.y, f.z)])

    def recorded_vector(self, msg, measured):
        f = msg.wrench.force
        xyz = np.array([f.x, f.y, f.z], dtype=np.float64)
        # measured: any one axis of a load cell (the decoder's magnitude); predicted: force.z
        return np.array([np.linalg.norm(xyz) if measured else xyz[2]])

    def in_contact(self, layout, values, n_contacts):
        if layout.flag is not None:
            return bool(values[layout.flag] > 0.5)
        return bool(values[layout.slots[0]] > 0)


_D = CsProperties()

KIND = SensorKind("IsaacContactSensor", IsaacContactSensor, settings=[
    model_spec("radius", _D.radius, "sensing radius around position (m); negative = whole body",
               lo=-INF, hi=INF, finite=True),
    model_spec("minThreshold", _D.minThreshold, "below this force (N) the sensor is not triggered",
               lo=0.0, hi=INF),
    model_spec("maxThreshold", _D.maxThreshold, "readings are clamped to this force (N; inf = no clamp)",
               lo=0.0, hi=INF),
    model_spec("sensorPeriod", _D.sensorPeriod, "time between readings (s); 0 = every step", lo=0.0,
               hi=INF, finite=True),
    model_spec("position", model_setting(_D.position), "sensor position in the body frame (m)", length=3,
               finite=True),
], codec=LoadCodec())
