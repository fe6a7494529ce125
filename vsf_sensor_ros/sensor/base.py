"""Sensor and calibrator contracts (seed: ``vsf.sensor.BaseSensor`` / ``BaseCalibrator``).

A sensor model maps a :class:`~vsf_sensor_ros.sensor.state.SimState` to a
measurement vector of ``len(measurement_names())`` floats and gives the
Jacobian of that vector with respect to every contact force acting on the
sensor's body, in two forms:

* dense, as the seed: ``{(sensor_body, other_body): Tensor[#meas, N_pair, 3]}``,
  entry ``(i, j, k)`` = d measurement ``i`` / d force component ``k`` (world
  frame) of contact ``j`` of that pair;
* sparse (:class:`SparseJacobian`): COO triples over the contacts of
  ``contact_bodies(state)`` concatenated in that order, column ``3·c + k``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .state import SimState

Pair = Tuple[str, str]


@dataclass
class SparseJacobian:
    """COO Jacobian of a sensor's measurements w.r.t. the concatenated contact forces.

    Attributes:
        rows: ``(nnz,)`` int64, measurement index.
        cols: ``(nnz,)`` int64, ``3·c + k`` with ``c`` the contact's index in
            the concatenation of ``pairs`` (in order) and ``k`` the world
            force axis.
        values: ``(nnz,)`` float, same dtype/device as the state.
        shape: ``(#meas, 3·N)`` with ``N`` the total contact count.
        pairs: the ``(sensor_body, other_body)`` pairs, in concatenation order.
        offsets: ``len(pairs) + 1`` ints; contacts of ``pairs[p]`` are
            ``offsets[p] .. offsets[p+1]-1`` of the concatenation.
    """

    rows: torch.Tensor
    cols: torch.Tensor
    values: torch.Tensor
    shape: Tuple[int, int]
    pairs: List[Pair]
    offsets: List[int]

    def to_dense(self) -> torch.Tensor:
        """Dense ``(#meas, 3·N)`` matrix (duplicates summed)."""
        out = torch.zeros(self.shape, dtype=self.values.dtype, device=self.values.device)
        out.index_put_((self.rows, self.cols), self.values, accumulate=True)
        return out

    def to_pair_dict(self) -> Dict[Pair, torch.Tensor]:
        """Seed-form dense dict ``{pair: Tensor[#meas, N_pair, 3]}``."""
        dense = self.to_dense()
        m = self.shape[0]
        return {
            pair: dense[:, 3 * self.offsets[p]:3 * self.offsets[p + 1]].reshape(
                m, self.offsets[p + 1] - self.offsets[p], 3)
            for p, pair in enumerate(self.pairs)
        }

    def nbytes(self) -> int:
        """Bytes held by ``rows``, ``cols`` and ``values``."""
        return sum(t.element_size() * t.numel() for t in (self.rows, self.cols, self.values))


def sparse_from_pair_dict(jac: Dict[Pair, torch.Tensor], pairs: Sequence[Pair],
                          num_measurements: int, dtype: torch.dtype,
                          device: torch.device) -> SparseJacobian:
    """Build a :class:`SparseJacobian` from a seed-form dense dict (nonzeros only).

    A generic fallback for sensors whose Jacobian is small; sensors with
    large outputs build their sparse form directly.
    """
    offsets = [0]
    rows, cols, vals = [], [], []
    for pair in pairs:
        J = jac[pair]
        n = J.shape[1]
        flat = J.reshape(num_measurements, 3 * n)
        r, c = flat.nonzero(as_tuple=True)
        rows.append(r)
        cols.append(c + 3 * offsets[-1])
        vals.append(flat[r, c])
        offsets.append(offsets[-1] + n)
    empty_i = torch.zeros(0, dtype=torch.int64, device=device)
    return SparseJacobian(
        rows=torch.cat(rows) if rows else empty_i,
        cols=torch.cat(cols) if cols else empty_i.clone(),
        values=torch.cat(vals) if vals else torch.zeros(0, dtype=dtype, device=device),
        shape=(num_measurements, 3 * offsets[-1]),
        pairs=list(pairs),
        offsets=offsets,
    )


class BaseSensor:
    """A model predicting a real sensor's reading from a ``SimState`` (seed ``BaseSensor``).

    Subclasses fill in ``measurement_names``, ``predict_torch`` and
    ``measurement_force_jacobian`` (and usually ``sparse_force_jacobian``
    for speed).  ``predict`` defaults to ``predict_torch`` without gradient
    tracking; subclasses may override it with a faster path that returns
    the same numbers.

    Attributes:
        name: the sensor's name (unique in a node).
        attachModelName: body (link or attached rigid body) it is attached to.
        type_name: the ``type`` string used in configuration dicts.
    """

    type_name: str = "BaseSensor"

    def __init__(self, name: str = "", attachModelName: str = "") -> None:
        self.name: str = name
        self.attachModelName: str = attachModelName

    # -- configuration -------------------------------------------------------
    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "BaseSensor":
        """Build a sensor from a plain dict (the node's parameter namespace).

        ``config`` holds ``attachment`` (body name) and type-specific keys.

        Raises:
            ValueError: a missing or invalid key, named in the message.
        """
        raise NotImplementedError(f"{cls.__name__}.from_config")

    def attach(self, model: Any) -> None:
        """Attach to a body model (Klampt link/rigid object, or a mesh object)."""

    # -- measurement contract -------------------------------------------------
    def measurement_names(self) -> List[str]:
        """One name per measurement entry."""
        return []

    def measurement_errors(self) -> Optional[List[float]]:
        """Standard deviation of each entry, or None for isotropic/unknown."""
        return None

    def predict(self, state: SimState) -> torch.Tensor:
        """Predicted measurement, ``(#meas,)`` of the state's dtype/device."""
        with torch.no_grad():
            return self.predict_torch(state)

    def predict_torch(self, state: SimState) -> torch.Tensor:
        """Differentiable prediction, ``(#meas,)`` of the state's dtype/device."""
        raise NotImplementedError

    def measurement_force_jacobian(self, state: SimState) -> Dict[Pair, torch.Tensor]:
        """Seed-form dense Jacobians ``{(sensor_body, other): Tensor[#meas, N, 3]}``."""
        return self.sparse_force_jacobian(state).to_pair_dict()

    def sparse_force_jacobian(self, state: SimState) -> SparseJacobian:
        """COO Jacobian over the contacts of ``contact_bodies(state)`` concatenated."""
        pairs = self.contact_bodies(state)
        dense = self.measurement_force_jacobian(state)
        return sparse_from_pair_dict(dense, pairs, len(self.measurement_names()),
                                     state.dtype, state.device)

    def update(self, state: SimState) -> None:
        """Advance internal state (stateful sensors); no-op by default."""

    def contact_bodies(self, state: SimState) -> List[Pair]:
        """Pairs ``(sensor_body, other_body)`` in the order of the Jacobian blocks."""
        return [(self.attachModelName, b) for b in state.bodies_in_contact(self.attachModelName)]

    def in_contact(self, state: SimState) -> bool:
        """True when something touches what this sensor senses (a tare needs this False).

        Default: at least one contact point acts on the sensor's body (a pair
        ``(attachModelName, other)`` holding one or more contacts).  Sensors
        with a sensing region (a Klampt patch, an Isaac radius) override it
        with contacts inside that region, so a body resting elsewhere (a box
        on a table) does not block a tare.

        Raises:
            ValueError: the body is not in the state (named).
        """
        state.bodies_in_contact(self.attachModelName)      # raises ValueError naming unknown bodies
        return any(len(c) > 0 for (b1, _), c in state.contacts.items() if b1 == self.attachModelName)

    # -- calibration and internal state -------------------------------------------
    def set_calibration(self, calib_dict: dict) -> None:
        """Apply a calibration dict (e.g. ``{'tare': array}``)."""

    def get_calibration(self) -> dict:
        """Current calibration dict (empty when uncalibrated)."""
        return {}

    def reset(self) -> None:
        """Reset internal state of a stateful sensor."""

    def get_internal_state(self) -> dict:
        """Extra internal state (stateful sensors)."""
        return {}

    def set_internal_state(self, state: dict) -> None:
        """Restore internal state from ``get_internal_state()``."""


class BaseCalibrator:
    """Calibrates a sensor from a data sequence (seed ``BaseCalibrator``)."""

    def compatible(self, sensor: BaseSensor) -> bool:
        """True when this calibrator can calibrate ``sensor``."""
        raise NotImplementedError

    def calibrate(self, sensor: BaseSensor, sim: Any,
                  command_sequence: List[Dict[str, Any]],
                  observation_sequence: List[Dict[str, Any]]) -> int:
        """Calibrate ``sensor`` via ``sensor.set_calibration``; return samples used."""
        raise NotImplementedError
