"""Fuzz: measured-message decoding (``readings.decode_measured``) against a reference.

Every sensor kind with the measurement names its model lists, fed its own
message type (and now and then another): FluidPressure and WrenchStamped
with any doubles (NaN, infinities, huge and subnormal values), dense-force
clouds of any layout (integer force fields, missing/duplicate fields,
short data, one point too many or too few), and any ``measured_scale``.
The decoder must reject exactly what the reference rejects -- with a
``MeasuredDecodeError`` whose reason is one of ``MEASURED_REASONS`` and
one the reference finds -- and return the reference's vector otherwise
(NaN in the entries the message cannot carry, finite everywhere else).
"""
from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import WrenchStamped
from hypothesis import given
from hypothesis import strategies as st
from sensor_msgs.msg import FluidPressure

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from test.fuzz.strategies import measured_messages, measured_scales, sensor_specs
from vsf_sensor_ros.ros.kinds import sensor_layout
from vsf_sensor_ros.ros.messages.readings import MEASURED_REASONS, MeasuredDecodeError, decode_measured


@st.composite
def measured_calls(draw):
    spec = draw(sensor_specs())
    return spec, draw(measured_messages(spec)), draw(measured_scales())


def reference_of(spec, msg, scale):
    if isinstance(msg, FluidPressure):
        return ref.measured(spec.type_name, spec.names, "pressure", msg.fluid_pressure, scale)
    if isinstance(msg, WrenchStamped):
        f = msg.wrench.force
        return ref.measured(spec.type_name, spec.names, "wrench", (f.x, f.y, f.z), scale)
    cols = ref.measured_cloud_columns(msg.fields, msg.height, msg.width, msg.point_step, msg.row_step,
                                      msg.is_bigendian, bytes(msg.data))
    return ref.measured(spec.type_name, spec.names, "cloud", cols, scale)


@given(call=measured_calls())
def test_measured_decode_equals_reference_or_rejects_whole(call):
    spec, msg, scale = call
    layout = sensor_layout(spec.type_name, "pad", list(spec.names), spec.errors, spec.vertices)
    want = reference_of(spec, msg, scale)
    try:
        got = decode_measured(layout, msg, scale)
    except MeasuredDecodeError as exc:
        record("measured", f"rejected:{exc.reason}")
        assert exc.reason in MEASURED_REASONS, exc.reason
        assert isinstance(want, ref.Rejected), f"valid message rejected ({exc.reason}: {exc}); {msg}"
        assert exc.reason in want.reasons, (exc.reason, sorted(want.reasons), str(exc), msg)
        return
    record("measured", "accepted")
    assert not isinstance(want, ref.Rejected), f"malformed message accepted ({sorted(want.reasons)}); {msg}"
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (len(spec.names),)
    for k, (a, b) in enumerate(zip(got.tolist(), want)):
        if math.isnan(b):
            assert math.isnan(a), (k, spec.names[k], a)
        elif spec.type_name == "IsaacContactSensor":
            # the magnitude may be rounded differently by one or two units in the last place
            assert math.isclose(a, b, rel_tol=4 * 2.0 ** -52, abs_tol=0.0), (a, b)
        else:
            assert a == b, (k, spec.names[k], a, b)
