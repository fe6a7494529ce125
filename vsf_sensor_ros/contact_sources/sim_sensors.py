"""Demo sensors of the simulated session and their stand-in "measured" streams (no ROS): an independent
implementation where one exists, else the package's model (synthetic), plus offset and noise (docs/demo.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from vsf_sensor_ros.sensor.base_sensor import SimState
from vsf_sensor_ros.sensor.errors import SettingError

from .contact_sim import add_klampt_contact_sensor
from .sim_world import BUBBLE, OBJECT, TABLE, SceneAssets
from .trajectory import bubble_tip

ATMOSPHERIC_PA = 101325.0
"""Offset of the stand-in Punyo pressure reading (absolute pressure at rest, Pa)."""

DEMO_SENSORS = ("punyo_pressure", "punyo_force", "punyo_pad", "object_load")
"""Names of the demo sensors, in publishing order."""


@dataclass
class DemoSensorSpec:
    """One demo sensor: ``name``, ``config`` (the ``sensor_from_config`` dict), ``offset`` and ``noise_std``
    (SI) added to each physical entry of its measured stream.
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
    """The demo sensors of a scene by name (order of :data:`DEMO_SENSORS`): ``punyo_pressure``,
    ``punyo_force``, ``punyo_pad`` (6 x 6 cm on the membrane tip), ``object_load`` (3 cm radius on the
    object's top face); settings, offsets and noise as docs/demo.md lists them.  ``object_size`` (m) defaults
    to ``assets.object_size``.
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


# labels of a measured stream's source: the package's model + offset + noise, Klampt's own C++ ContactSensor
# in the same ODE world, the contact forces the simulator sums itself, MuJoCo's force sensor (the pad) and
# touch sensor (the load cell); and their short form in plots
SOURCE_SYNTHETIC = "synthetic-model"
SOURCE_KLAMPT_NATIVE = "klampt-native-contact-sensor"
SOURCE_SIM_FORCES = "simulator-contact-forces"
SOURCE_MUJOCO_FORCE = "mujoco-force-sensor"
SOURCE_MUJOCO_TOUCH = "mujoco-touch-sensor"
SOURCE_TEXT = {SOURCE_SYNTHETIC: "synthetic: model + offset + noise",
               SOURCE_KLAMPT_NATIVE: "independent: Klampt's C++ ContactSensor",
               SOURCE_SIM_FORCES: "independent: simulator's contact forces",
               SOURCE_MUJOCO_FORCE: "independent: MuJoCo's force sensor",
               SOURCE_MUJOCO_TOUCH: "independent: MuJoCo's touch sensor"}
MEASURED_SOURCE_MODES = ("independent", "model")
"""Values of the simulator's ``measured_source`` parameter."""


def check_measured_source(mode: str) -> None:
    """SettingError (``setting`` ``'measured_source'``, ``reason`` ``'invalid'``): ``mode`` is not one of
    :data:`MEASURED_SOURCE_MODES`."""
    if mode not in MEASURED_SOURCE_MODES:
        raise SettingError(f"measured_source must be 'independent' or 'model', got {mode!r}",
                           "measured_source", mode, "invalid", list(MEASURED_SOURCE_MODES))


def measured_source_label(sensor_type: str, attachment: str, mode: str,
                          contact_body_names: Sequence[str] = (), backend: str = "klampt") -> str:
    """The label of a demo sensor's ``<s>/measured`` source in ``independent`` ``mode`` (else synthetic): with
    the ``klampt`` backend (what :func:`independent_source` follows) Klampt's C++ sensor for a
    ``ContactSensor`` on a robot link, the simulator's summed force for an ``IsaacContactSensor`` on the
    object (the bubble among ``contact_body_names``); with ``mujoco`` its force / touch sensor for the pad
    on the bubble / the load cell on the object.  SettingError: as :func:`check_measured_source`."""
    check_measured_source(mode)
    mujoco = backend == "mujoco"
    if mode == "independent" and sensor_type == "ContactSensor" and (
            attachment == BUBBLE if mujoco else attachment not in (OBJECT, TABLE)):
        return SOURCE_MUJOCO_FORCE if mujoco else SOURCE_KLAMPT_NATIVE
    if mode == "independent" and sensor_type == "IsaacContactSensor" and attachment == OBJECT and (
            mujoco or BUBBLE in contact_body_names):
        return SOURCE_MUJOCO_TOUCH if mujoco else SOURCE_SIM_FORCES
    return SOURCE_SYNTHETIC


def isaac_load(value: float, lo: float = 0.0, hi: float = math.inf) -> np.ndarray:
    """``[in_contact, value]`` of a load cell reading ``value`` (N, >= 0) thresholded as the Isaac-style
    sensor: zeros below ``lo`` or at 0, clipped at ``hi``."""
    if value <= 0.0 or value < lo:
        return np.zeros(2)
    return np.array([1.0, min(value, hi)])


def independent_source(spec: DemoSensorSpec, sim: Any, sensor: Any) -> Optional[Callable[[], np.ndarray]]:
    """A reading of ``spec``'s quantity independent of its attached model ``sensor``, or None: Klampt's C++
    sensor with the model's settings, or ``[in_contact, |summed bubble-object force|]`` thresholded as Isaac
    (the whole contact).  ValueError: Klampt's sensor measures other names than the model."""
    label = measured_source_label(spec.config["type"], spec.config["attachment"], "independent",
                                  sim.contact_body_names)
    if label == SOURCE_KLAMPT_NATIVE:
        link = sim.scene.robot.link(spec.config["attachment"]).getIndex()   # the label's: a robot link
        native = add_klampt_contact_sensor(sim.sim, 0, spec.name, link, sensor.settings())
        names = list(native.measurementNames())
        if names != list(sensor.measurement_names()):
            raise ValueError(f"Klampt's ContactSensor {spec.name!r} measures {names}, the model "
                             f"{sensor.measurement_names()}")
        return lambda: np.asarray(native.getMeasurements(), dtype=np.float64)
    if label == SOURCE_SIM_FORCES:
        lo, hi = float(spec.config.get("minThreshold", 0.0)), float(spec.config.get("maxThreshold", math.inf))
        return lambda: isaac_load(float(np.linalg.norm(sim.summed_contact_force(BUBBLE, OBJECT))), lo, hi)
    return None


class MeasuredStream:
    """Stand-in for a real sensor: a physical reading (``source``, else the model on the state) plus offset
    and noise (seeded by ``(seed, stream_index)``) on ``slots`` (``(k,)`` int64, default all).  ``model``:
    the attachment body's Klampt model.  ValueError: ``sensor_from_config`` rejects the config."""

    def __init__(self, spec: DemoSensorSpec, model: Any, seed: int, stream_index: int,
                 source: Optional[Callable[[], np.ndarray]] = None) -> None:
        from vsf_sensor_ros.sensor import sensor_from_config
        self.spec = spec
        self.source = source
        self.sensor = sensor_from_config(dict(spec.config))
        self.sensor.attach(model)
        self.names: List[str] = list(self.sensor.measurement_names())
        self.slots = np.arange(len(self.names), dtype=np.int64)
        self._rng = np.random.default_rng([int(seed), int(stream_index)])

    @property
    def synthetic(self) -> bool:
        """True when the physical reading is the package's own model (no independent source)."""
        return self.source is None

    def measure(self, state: SimState, true_values: Optional[np.ndarray] = None) -> np.ndarray:
        """One measured vector, ``(#meas,)`` float64 SI: physical reading (``true_values`` when already
        computed) + offset + noise on the physical entries.
        """
        if self.source is not None:
            true_values = self.source()
        elif true_values is None:
            true_values = self.sensor.predict(state).detach().cpu().numpy()
        out = np.asarray(true_values, dtype=np.float64).copy()
        out[self.slots] += self.spec.offset + self._rng.normal(0.0, self.spec.noise_std, len(self.slots))
        return out
