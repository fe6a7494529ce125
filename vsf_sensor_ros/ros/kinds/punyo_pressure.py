"""The ``PunyoPressureSensor`` kind: the bubble's pressure as ``sensor_msgs/FluidPressure``, measured
also as the Punyo driver's bare number (docs/interface.md)."""
from __future__ import annotations

import inspect

import numpy as np
from sensor_msgs.msg import FluidPressure
from std_msgs.msg import Float32, Float64

from ...sensor.punyo_pressure_sensor import PunyoPressureSensor
from ..messages import readings as enc
from ..messages.readings import HEADERLESS_MEASURED_TYPES, ReadingCodec, index_of, type_mismatch
from ..parameter_table import INF, model_spec
from . import SensorKind, model_setting


class PressureCodec(ReadingCodec):
    """``pressure``: ``sensor_msgs/FluidPressure``, Pa; measured also as a bare number."""

    kind, message, unit = "pressure", FluidPressure, "Pa"
    measured_types = ("sensor_msgs/msg/FluidPressure",) + HEADERLESS_MEASURED_TYPES
    # absolute pressures from the Dead Sea shore to a pressurised membrane: outside, a unit mistake
    plausible = (2.0e4, 1.0e6)
    message_type, axes, membrane_reading = "sensor_msgs/msg/FluidPressure", ("pressure",), True

    def slots(self, names, vertices):
        return np.array([index_of(names, "pressure")]), None

    def to_bytes(self, layout, values, stamp_ns):
        var = 0.0 if layout.std is None else float(layout.std[layout.slots[0]] ** 2)
        return enc.encode_fluid_pressure(stamp_ns, layout.reading_frame, float(values[layout.slots[0]]), var)

    def measured_values(self, layout, msg):
        if isinstance(msg, FluidPressure):
            return np.array([msg.fluid_pressure], dtype=np.float64)
        if isinstance(msg, (Float32, Float64)):
            return np.array([msg.data], dtype=np.float64)
        raise type_mismatch(msg, layout)

    def recorded_vector(self, msg, measured):
        return np.array([msg.fluid_pressure], dtype=np.float64)


_DEFAULT = {k: model_setting(p.default) for k, p in inspect.signature(PunyoPressureSensor).parameters.items()}

KIND = SensorKind("PunyoPressureSensor", PunyoPressureSensor, settings=[
    model_spec("base_normal_local", _DEFAULT["base_normal_local"], "base normal n in the body frame (unit "
               "vector after normalisation)", length=3, finite=True),
    model_spec("variance", _DEFAULT["variance"], "noise variance (Pa^2), published as FluidPressure.variance",
               lo=0.0, hi=INF, finite=True),
], codec=PressureCodec())
