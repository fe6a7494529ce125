"""The rig: one step from decoded arrays to every sensor's checked prediction, then pairing (no ROS); all
or nothing (a failing step raises :class:`~.sensors.StepRejected`, only a used step is committed)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

from ..sensor.base_sensor import SimState, as_sim_state
from .contacts import DecodedContacts, check_elements, with_implied_pairs
from .kinematics import BodyTransforms
from .pairing import Pair
from .sensors import Prediction, RigSensor, SensorResult, StepRejected, check_predictions


@dataclass
class Step:
    """One checked step, not yet used: the contacts ``stamp_ns``, ``decoded`` with implied pairs, its
    ``state`` (``SimState``), ``results`` per enabled sensor, ``jumped_back`` (stamp before the last used)."""

    stamp_ns: int
    decoded: DecodedContacts
    state: SimState
    results: List[SensorResult]
    jumped_back: bool


class Rig:
    """The transforms of ``world`` (``dtype`` / ``device``), the ``sensors`` (name -> ``RigSensor``) and the
    step; ``last_stamp`` (ns or None), ``stamp_jumps`` and ``last_stamp_jump`` count the resets."""

    def __init__(self, world: Any, dtype: torch.dtype = torch.float64,
                 device: torch.device = torch.device("cpu")) -> None:
        self.world = world
        self.transforms = BodyTransforms(world, dtype, device)
        self.sensors: Dict[str, RigSensor] = {}
        self.last_stamp: Optional[int] = None
        self.stamp_jumps = 0
        self.last_stamp_jump = "none"
        self._dense_vertex_counts: Dict[str, int] = {}
        self._sensor_bodies: frozenset = frozenset()

    def add(self, sensor: RigSensor) -> None:
        """Add (or replace) a sensor; its layout's ``frame_id`` and (dense force) ``vertices`` are read."""
        self.sensors[sensor.name] = sensor
        self._dense_vertex_counts = {s.layout.frame_id: len(s.layout.vertices) for s in self.sensors.values()
                                     if s.layout.codec.per_vertex}
        # bodies some sensor reads pairs (body, *) of: the only implied reverse pairs worth building
        self._sensor_bodies = frozenset(s.sensor.attachModelName for s in self.sensors.values())

    def predict(self, decoded: DecodedContacts, stamp_ns: int,
                want_jacobian: Callable[[RigSensor], bool] = lambda s: False) -> Step:
        """Every sensor's checked prediction for ``decoded`` under the joint state of ``stamp_ns`` (ns);
        ``want_jacobian(sensor)``: compute its Jacobian.  StepRejected (nothing kept):
        ``element_index_out_of_range``, ``model_error``, ``non_finite_prediction``, ``out_of_range``."""
        bad = check_elements(decoded, self._dense_vertex_counts)
        if bad is not None:
            raise StepRejected("element_index_out_of_range", bad)
        decoded = with_implied_pairs(decoded, self._sensor_bodies)   # every contact on a sensor's body
        state = as_sim_state(SimState(self.transforms.at(stamp_ns), {}, decoded.contacts))  # not per model
        results = []
        for s in self.sensors.values():
            if not getattr(s.sensor, "enabled", True):  # Klampt's 'enabled' setting
                continue
            try:
                results.append(s.predict(state, decoded, want_jacobian(s)))
            except (ValueError, IndexError, RuntimeError) as exc:
                raise StepRejected("model_error", f"{s.name}: {exc}") from exc
        bad = check_predictions(results)
        if bad is not None:
            raise StepRejected(*bad)
        # stamp 0 is no time (a source that never stamps): never a reset, never the last stamp
        jumped = stamp_ns != 0 and self.last_stamp is not None and stamp_ns < self.last_stamp
        return Step(stamp_ns, decoded, state, results, jumped)

    def commit(self, step: Step, reset: bool) -> None:
        """Use ``step``: with ``reset`` (its stamp went back: a simulator reset) every sensor's pairing
        buffers and state are cleared and the jump counted first."""
        if reset:
            self.stamp_jumps += 1
            self.last_stamp_jump = f"{self.last_stamp * 1e-9:.9f} -> {step.stamp_ns * 1e-9:.9f} s"
            for s in self.sensors.values():
                s.clear_buffers()
                s.sensor.reset()
        if step.stamp_ns != 0:
            self.last_stamp = step.stamp_ns
        for r in step.results:
            r.handle.last_values = r.values

    def pair_prediction(self, step: Step, r: SensorResult,
                        key_ns: Optional[int] = None) -> "Optional[Pair[Prediction, np.ndarray]]":
        """Offer a used step's prediction to its sensor's pairer under ``key_ns`` (default the step's
        stamp; a header-less measured stream pairs by receive time); the pair it makes, or None."""
        key = step.stamp_ns if key_ns is None else key_ns
        return r.handle.pairer.add_prediction(key, (r.values, step.state, not r.touched, step.stamp_ns))

    def pair_measured(self, name: str, stamp_ns: int,
                      measured: np.ndarray) -> "Optional[Pair[Prediction, np.ndarray]]":
        """Offer sensor ``name``'s measured vector (``(#meas,)`` float64 SI, NaN = not carried) stamped
        ``stamp_ns``; a stamp that went back clears its measured buffers first.  The pair, or None."""
        s = self.sensors[name]
        s.measured_accepted += 1
        s.measured_went_back(stamp_ns)
        return s.pairer.add_measurement(stamp_ns, measured)


__all__ = ["Rig", "Step"]
