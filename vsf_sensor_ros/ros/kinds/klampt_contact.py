"""The ``ContactSensor`` kind (Klampt's tactile patch, its settings and defaults): its force as
``geometry_msgs/WrenchStamped``; the ``contact`` flag goes to ``/diagnostics`` (docs/interface.md)."""
from __future__ import annotations

import numpy as np
from ...sensor.klampt_contact_sensor import ContactSensor
from ..messages.readings import WrenchMessageCodec, index_of
from ..parameter_table import INF, model_spec
from . import SensorKind, model_setting


class WrenchCodec(WrenchMessageCodec):
    """``wrench``: the force as the model reports it, in ``Tsensor``."""

    kind, axes, pad_reading = "wrench", ("force_x", "force_y", "force_z"), True

    def slots(self, names, vertices):
        # Klampt lists only the axes with hasForce set; a missing axis is -1 (published as 0)
        slots = np.array([names.index(a) if a in names else -1 for a in ("force_x", "force_y", "force_z")])
        return slots, (index_of(names, "contact") if "contact" in names else None)

    def force(self, layout, values):
        return tuple(float(values[i]) if i >= 0 else 0.0 for i in layout.slots)


_D = ContactSensor()

KIND = SensorKind("ContactSensor", ContactSensor, settings=[
    model_spec("Tsensor", model_setting(_D.Tsensor), "16 floats, row-major sensor -> link transform "
               "(origin = patch centre, z = outward normal)", length=16, finite=True),
    model_spec("patchMin", model_setting(_D.patchMin), "patch lower corner (x, y) in the sensor frame (m)",
               length=2, finite=True),
    model_spec("patchMax", model_setting(_D.patchMax), "patch upper corner (x, y) in the sensor frame (m)",
               length=2, finite=True),
    model_spec("patchTolerance", _D.patchTolerance, "a contact counts when |z_sensor| <= tolerance (m)",
               lo=0.0, hi=INF),
    model_spec("hasForce", model_setting(_D.hasForce), "which force axes (x, y, z) are measured", length=3),
    model_spec("fResolution", model_setting(_D.fResolution), "quantisation step per axis (N; 0 = none)",
               length=3, lo=0.0),
    model_spec("fVariance", model_setting(_D.fVariance), "noise variance per axis (N^2), reported as the "
               "error", length=3, lo=0.0),
    model_spec("fSensitivity", _D.fSensitivity, "|F_z| must exceed this to register contact (N)", lo=0.0,
               hi=INF, finite=True),
    model_spec("fSaturation", model_setting(_D.fSaturation), "per-axis clamp (N; inf = none)", length=3,
               lo=0.0),
    model_spec("falloffCoefficient", _D.falloffCoefficient, "patch weight "
               "(1 - 4|x||y|/(xsize*ysize))^falloff; 0 = rigid", lo=0.0, hi=INF),
    model_spec("enabled", _D.enabled, "false: the node computes and publishes nothing for this sensor"),
    model_spec("rate", _D.rate, "Klampt publishing-rate hint (Hz), kept with the model; the node publishes "
               "every contacts message", lo=0.0, hi=INF),
], codec=WrenchCodec())
