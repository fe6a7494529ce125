"""The ``IsaacContactSensor`` kind (Isaac Sim's contact sensor, its settings and defaults): its load
on ``force.z`` of a ``geometry_msgs/WrenchStamped``, a measured wrench read as ``|force|``."""
from __future__ import annotations

import math

import numpy as np

from ...sensor.isaac_contact_sensor import CsProperties, IsaacContactSensor
from ..messages.readings import WrenchMessageCodec, index_of
from ..parameter_table import INF, model_spec
from . import SensorKind, model_setting


class LoadCodec(WrenchMessageCodec):
    """``load``: the scalar load on ``force.z`` of the sensor frame."""

    kind = "load"
    steps_sensor = True
    axes = ("load",)

    def slots(self, names, vertices):
        flag = next((names.index(c) for c in ("contact", "inContact", "in_contact") if c in names), None)
        return np.array([index_of(names, "value", "force", "load")]), flag

    def force(self, layout, values):
        return 0.0, 0.0, float(values[layout.slots[0]])

    def measured_values(self, layout, msg):
        # |force| of any one axis of a load cell; hypot: the squares neither overflow nor underflow
        return np.array([math.hypot(*super().measured_values(layout, msg))])

    def recorded_vector(self, msg, measured):
        xyz = super().recorded_vector(msg, measured)
        return np.array([np.linalg.norm(xyz) if measured else xyz[2]])   # predicted: force.z

    def in_contact(self, layout, values, n_contacts):
        flag = layout.flag
        return bool(values[flag] > 0.5) if flag is not None else bool(values[layout.slots[0]] > 0)


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
