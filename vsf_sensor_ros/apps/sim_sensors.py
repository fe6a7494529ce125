"""Demo sensors of the simulated session and their stand-in "measured" streams (no ROS).

The contact simulator plays the real gripper too: for each demo sensor it
publishes ``<s>/measured``, the sensor's physical quantity computed by the
library model from the simulator's own contacts, plus a constant offset (a
real Punyo reads *absolute* pressure, ~101325 Pa at rest; load cells and
pads have small zero offsets) plus Gaussian noise from a fixed seed.  A tare
on the contact-free start recovers the offset; the residual after it is the
noise.

:func:`demo_sensor_specs` is the single source of the demo sensor set for a
scene: the simulator uses it for the measured streams and a demo can turn it
into the sensor node's parameters (:func:`sensor_node_sensor_params`), so both
sides model the same sensors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from vsf_sensor_ros.sensor.state import SimState

from .sim_world import BUBBLE, OBJECT, SceneAssets
from .trajectory import bubble_tip

ATMOSPHERIC_PA = 101325.0
"""Offset of the stand-in Punyo pressure reading (absolute pressure at rest, Pa)."""

DEMO_SENSORS = ("punyo_pressure", "punyo_force", "punyo_pad", "object_load")
"""Names of the demo sensors, in publishing order."""


@dataclass
class DemoSensorSpec:
    """One demo sensor.

    Attributes:
        name: sensor name (topic namespace).
        config: the ``sensor_from_config`` dict: ``name``, ``type``,
            ``attachment`` and type settings (sensor node parameter names).
        offset: constant added to each physical entry of the measured
            stream (SI: Pa or N).
        noise_std: standard deviation of the Gaussian noise added to each
            physical entry (SI).
    """

    name: str
    config: Dict[str, Any]
    offset: float
    noise_std: float


def _frame_with_z(n: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``n`` (x chosen orthogonal)."""
    z = n / np.linalg.norm(n)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - (helper @ z) * z
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def demo_sensor_specs(assets: SceneAssets, object_size: Optional[Sequence[float]] = None
                      ) -> Dict[str, DemoSensorSpec]:
    """The demo sensor set of a scene, keyed by name (order of :data:`DEMO_SENSORS`).

    Args:
        assets: the world's assets (bubble mesh and normal).
        object_size: the box extents (m); default ``assets.object_size``.

    * ``punyo_pressure`` -- ``PunyoPressureSensor`` on the bubble, base normal
      = the membrane normal; measured = gauge pressure + 101325 Pa, noise 5 Pa.
    * ``punyo_force`` -- ``PunyoDenseForceSensor`` on the bubble; offset
      0.001 N per entry, noise 0.002 N.
    * ``punyo_pad`` -- Klampt ``ContactSensor`` on the bubble, patch 6 x 6 cm
      centred on the membrane tip with z along the outward normal,
      ``patchTolerance`` 1 cm (the dome curves away from the tangent plane),
      all three axes; offset 0.05 N, noise 0.02 N.
    * ``object_load`` -- Isaac-style contact sensor on the object, centred on
      its top face (``position`` = (0, 0, height/2)) with ``radius`` 3 cm: a
      load cell under the pressed spot.  It sums only the bubble's contacts;
      the table's, at the bottom face 4+ cm away, stay outside (a whole-body
      sensor would read the net contact force, i.e. the box's weight, however
      hard it is pressed).  Every step; offset 0.05 N, noise 0.05 N.
    """
    size = assets.object_size if object_size is None else object_size
    half_height = float(size[2]) / 2.0
    n = np.asarray(assets.bubble_normal_local, dtype=np.float64)
    n = n / np.linalg.norm(n)
    T = np.eye(4)
    T[:3, :3] = _frame_with_z(n)
    T[:3, 3] = bubble_tip(np.asarray(assets.bubble_mesh.vertices), n)
    specs = [
        DemoSensorSpec("punyo_pressure", {"name": "punyo_pressure", "type": "PunyoPressureSensor",
                                          "attachment": BUBBLE, "base_normal_local": n.tolist()},
                       offset=ATMOSPHERIC_PA, noise_std=5.0),
        DemoSensorSpec("punyo_force", {"name": "punyo_force", "type": "PunyoDenseForceSensor",
                                       "attachment": BUBBLE}, offset=0.001, noise_std=0.002),
        DemoSensorSpec("punyo_pad", {"name": "punyo_pad", "type": "ContactSensor", "attachment": BUBBLE,
                                     "Tsensor": T.reshape(-1).tolist(), "patchMin": [-0.03, -0.03],
                                     "patchMax": [0.03, 0.03], "patchTolerance": 0.01,
                                     "hasForce": [True, True, True]}, offset=0.05, noise_std=0.02),
        DemoSensorSpec("object_load", {"name": "object_load", "type": "IsaacContactSensor",
                                       "attachment": OBJECT, "radius": 0.03, "minThreshold": 0.0,
                                       "maxThreshold": 100000.0, "sensorPeriod": 0.0,
                                       "position": [0.0, 0.0, half_height]}, offset=0.05, noise_std=0.05),
    ]
    return {s.name: s for s in specs}


def sensor_node_sensor_params(specs: Sequence[DemoSensorSpec]) -> Dict[str, Any]:
    """Sensor node parameters (flat dotted names) configuring the same sensors.

    Returns:
        ``{"sensors": [...], "<s>.type": ..., "<s>.attachment": ..., "<s>.<setting>": ...}``.
    """
    out: Dict[str, Any] = {"sensors": [s.name for s in specs]}
    for s in specs:
        for k, v in s.config.items():
            if k != "name":
                out[f"{s.name}.{k}"] = v
    return out


class MeasuredStream:
    """Stand-in for a real sensor: a library model on the sim state, plus offset and noise.

    Args:
        spec: the demo sensor.
        model: the Klampt model of the attachment body, passed to ``attach``.
        seed: noise seed; streams built with the same ``(seed, stream_index)``
            produce the same noise sequence.
        stream_index: distinguishes the streams of one run.

    Raises:
        ValueError: the config is rejected by ``sensor_from_config``.

    Attributes:
        slots: ``(k,)`` int64 indices of the physical entries that get the
            offset and noise (default: all); set it to the entries the
            measured message carries so flags such as ``contact`` stay clean.
    """

    def __init__(self, spec: DemoSensorSpec, model: Any, seed: int, stream_index: int) -> None:
        from vsf_sensor_ros.sensor import sensor_from_config
        self.spec = spec
        self.sensor = sensor_from_config(dict(spec.config))
        self.sensor.attach(model)
        self.names: List[str] = list(self.sensor.measurement_names())
        self.slots = np.arange(len(self.names), dtype=np.int64)
        self._rng = np.random.default_rng([int(seed), int(stream_index)])

    def measure(self, state: SimState, true_values: Optional[np.ndarray] = None) -> np.ndarray:
        """One measured vector: model prediction + offset + noise on the physical entries.

        Args:
            state: the simulator's state of this step.
            true_values: the noiseless prediction when already computed.

        Returns:
            ``(#meas,)`` float64 in SI units.
        """
        if true_values is None:
            true_values = self.sensor.predict(state).detach().cpu().numpy()
        out = np.asarray(true_values, dtype=np.float64).copy()
        out[self.slots] += self.spec.offset + self._rng.normal(0.0, self.spec.noise_std, len(self.slots))
        return out
