"""Demo sensors of the simulated session and their stand-in "measured" streams (no ROS).

Each stream is an independent implementation where one exists, else the package's model (labelled
synthetic), plus an offset and noise (docs/demo.md, where the measured streams come from).
:func:`demo_sensor_specs` is the single source of the demo's sensor set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from vsf_sensor_ros.sensor.base_sensor import SimState

from .sim_world import BUBBLE, OBJECT, TABLE, SceneAssets
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
        config: the ``sensor_from_config`` dict: ``name``, ``type``, ``attachment`` and type settings
            (sensor node parameter names).
        offset: constant added to each physical entry of the measured stream (SI: Pa or N).
        noise_std: standard deviation of the Gaussian noise added to each physical entry (SI).
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

    * ``punyo_pressure`` -- ``PunyoPressureSensor`` on the bubble, base normal = the membrane normal;
      measured = gauge pressure + 101325 Pa, noise 5 Pa.
    * ``punyo_force`` -- ``PunyoDenseForceSensor`` on the bubble; offset 0.001 N per entry, noise 0.002 N.
    * ``punyo_pad`` -- Klampt ``ContactSensor`` on the bubble, patch 6 x 6 cm centred on the membrane tip
      with z along the outward normal, ``patchTolerance`` 1 cm (the dome curves away from the tangent
      plane), all three axes; offset 0.05 N, noise 0.02 N.
    * ``object_load`` -- Isaac-style contact sensor on the object, centred on its top face (``position`` =
      (0, 0, height/2)) with ``radius`` 3 cm: a load cell under the pressed spot.  It sums only the bubble's
      contacts; the table's, at the bottom face 4+ cm away, stay outside (a whole-body sensor would read the
      net contact force, i.e. the box's weight, however hard it is pressed).  Every step; offset 0.05 N,
      noise 0.05 N.
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


SOURCE_SYNTHETIC = "synthetic-model"
"""Label of a measured stream that is the package's own model + offset + noise."""
SOURCE_KLAMPT_NATIVE = "klampt-native-contact-sensor"
"""Label of a measured stream from Klampt's own C++ ``ContactSensor`` in the same ODE world."""
SOURCE_SIM_FORCES = "simulator-contact-forces"
"""Label of a measured stream from the contact forces the simulator sums itself."""
SOURCE_TEXT = {SOURCE_SYNTHETIC: "synthetic: model + offset + noise",
               SOURCE_KLAMPT_NATIVE: "independent: Klampt's C++ ContactSensor",
               SOURCE_SIM_FORCES: "independent: simulator's contact forces"}
"""Short human-readable form of each label (plot titles and legends)."""
MEASURED_SOURCE_MODES = ("independent", "model")
"""Values of the simulator's ``measured_source`` parameter."""


def measured_source_label(sensor_type: str, attachment: str, mode: str,
                          contact_body_names: Sequence[str]) -> str:
    """Where the simulator's ``<s>/measured`` of a demo sensor comes from, as a label.

    The single decision :func:`independent_source` follows (so a demo can label the streams without a
    simulator of its own): with ``mode`` ``independent``, a ``ContactSensor`` on a robot link (every
    simulated body but the object and the table) reads from Klampt's own C++ sensor
    (:data:`SOURCE_KLAMPT_NATIVE`), an ``IsaacContactSensor`` on the object from the simulator's summed
    bubble-object force when the bubble is in the contact body table (:data:`SOURCE_SIM_FORCES`); everything
    else, and every sensor with ``mode`` ``model``, is :data:`SOURCE_SYNTHETIC`.

    Args:
        sensor_type: the sensor's ``type`` (``ContactSensor``, ``PunyoPressureSensor`` ...).
        attachment: the body it is attached to.
        mode: the simulator's ``measured_source`` parameter.
        contact_body_names: the simulator's contact body table.

    Raises:
        ValueError: ``mode`` is not in :data:`MEASURED_SOURCE_MODES`.
    """
    if mode not in MEASURED_SOURCE_MODES:
        raise ValueError(f"measured_source must be one of {MEASURED_SOURCE_MODES}, got {mode!r}")
    if mode == "independent":
        if sensor_type == "ContactSensor" and attachment not in (OBJECT, TABLE):
            return SOURCE_KLAMPT_NATIVE
        if sensor_type == "IsaacContactSensor" and attachment == OBJECT and BUBBLE in contact_body_names:
            return SOURCE_SIM_FORCES
    return SOURCE_SYNTHETIC


def independent_source(spec: DemoSensorSpec, sim: Any, sensor: Any) -> Optional[Callable[[], np.ndarray]]:
    """A reading of ``spec``'s quantity by an implementation independent of the package's model.

    * ``ContactSensor`` on a robot link: Klampt's own C++ ``ContactSensor`` added to the simulator with the
      model's settings (``sensor.settings()``, Klampt-formatted); its measurements ``[contact, force_x,
      force_y, force_z]`` (the axes of ``hasForce``).
    * ``IsaacContactSensor`` on the object: ``[in_contact, value]`` with ``value`` = the magnitude of the
      contact force between the bubble and the object as the simulator sums it
      (``ContactSimulation.summed_contact_force``), thresholded like the Isaac sensor (``< minThreshold`` →
      0 and not in contact, ``> maxThreshold`` → clamped).  It covers the whole bubble–object contact, not
      just the sensor's ``radius``: where the bubble touches the box outside that radius the two disagree,
      as a real load cell and the model would.
    * anything else: None (the stream stays synthetic).

    Args:
        spec: the demo sensor.
        sim: the :class:`~vsf_sensor_ros.contact_sources.contact_sim.ContactSimulation`.
        sensor: the package model of ``spec`` (attached), for its settings and measurement names.

    Raises:
        ValueError: Klampt's sensor reports other measurement names than the model.
    """
    label = measured_source_label(spec.config["type"], spec.config["attachment"], "independent",
                                  sim.contact_body_names)
    if label == SOURCE_KLAMPT_NATIVE:
        sim.add_klampt_contact_sensor(spec.name, spec.config["attachment"], sensor.settings())
        names = sim.klampt_sensor_names(spec.name)
        if names != list(sensor.measurement_names()):
            raise ValueError(f"Klampt's ContactSensor {spec.name!r} measures {names}, the model "
                             f"{sensor.measurement_names()}")
        return lambda: sim.klampt_sensor_reading(spec.name)
    if label == SOURCE_SIM_FORCES:
        lo = float(spec.config.get("minThreshold", 0.0))
        hi = float(spec.config.get("maxThreshold", np.inf))

        def load() -> np.ndarray:
            value = float(np.linalg.norm(sim.summed_contact_force(BUBBLE, OBJECT)))
            if value < lo or value == 0.0:
                return np.zeros(2)
            return np.array([1.0, min(value, hi)])
        return load
    return None


class MeasuredStream:
    """Stand-in for a real sensor: a physical reading (independent or model) plus offset and noise.

    Args:
        spec: the demo sensor.
        model: the Klampt model of the attachment body, passed to ``attach``.
        seed: noise seed; streams built with the same ``(seed, stream_index)`` produce the same noise
            sequence.
        stream_index: distinguishes the streams of one run.
        source: the independent reading (:func:`independent_source`), in the model's measurement layout;
            None = the library model on the state (a synthetic stream).

    Raises:
        ValueError: the config is rejected by ``sensor_from_config``.

    Attributes:
        slots: ``(k,)`` int64 indices of the physical entries that get the offset and noise (default: all);
            set it to the entries the measured message carries so flags such as ``contact`` stay clean.
    """

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
        """One measured vector: physical reading + offset + noise on the physical entries.

        The physical reading is ``source()`` when the stream has one, else the model's prediction on
        ``state`` (``true_values`` when already computed).

        Args:
            state: the simulator's state of this step.
            true_values: the noiseless prediction when already computed (synthetic streams).

        Returns:
            ``(#meas,)`` float64 in SI units.
        """
        if self.source is not None:
            true_values = self.source()
        elif true_values is None:
            true_values = self.sensor.predict(state).detach().cpu().numpy()
        out = np.asarray(true_values, dtype=np.float64).copy()
        out[self.slots] += self.spec.offset + self._rng.normal(0.0, self.spec.noise_std, len(self.slots))
        return out
