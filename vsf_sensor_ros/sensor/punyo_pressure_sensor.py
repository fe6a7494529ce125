"""Punyo bubble pressure from the contact forces on its membrane (seed ``PunyoPressureSensor``)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ._punyo_common import (
    check_config_keys, check_model_name, contacts_on, numpy_pose, parse_tare)
from .base_sensor import BaseSensor, SimState, SparseJacobian, rigid_transform
from .errors import SettingError
from .mesh import projected_area, triangle_mesh_of

__all__ = ["PunyoPressureSensor"]


class PunyoPressureSensor(BaseSensor):
    """One pressure reading (Pa) of a Punyo bubble (seed ``PunyoPressureSensor``): ``p = tare − gain ·
    (1/A_base) Σ_c (Rᵀ f_c) · n`` (``n`` the unit base normal, ``A_base`` (m²) the mesh's shadow along it);
    Jacobian ``−(gain/A_base) R n`` per contact.  As the seed, ``tare_sim_avg`` does not shift the reading
    (docs/python_api.md)."""

    type_name = "PunyoPressureSensor"
    supports_gain = True

    def __init__(self, name: str, punyo_link: str, base_normal_local: Sequence[float] = (0.0, 0.0, 1.0),
                 variance: float = 0.0) -> None:
        """Raises ValueError for a zero/non-finite/non-3 normal or a negative/non-finite variance."""
        super().__init__(name, punyo_link)
        self.base_normal_local = base_normal_local       # validated by the property setter
        try:
            var = float(variance)
        except (TypeError, ValueError):
            var = math.nan
        if not math.isfinite(var) or var < 0.0:
            raise SettingError(f"sensor {name!r}: variance must be a finite number >= 0 (Pa^2), got "
                               f"{variance!r}", "variance", variance)
        self.variance: float = var
        self.base_area: Optional[float] = None
        self.object: Any = None
        self.tare: Optional[np.ndarray] = None
        self.gain: float = 1.0
        self._calib: Dict[str, np.ndarray] = {}

    @property
    def base_normal_local(self) -> torch.Tensor:
        """Unit base normal (body frame), a ``(3,)`` of torch's default dtype (seed).  Set from any finite
        non-zero 3-vector (normalised, ``base_area`` kept), else SettingError naming it."""
        return self._normal_tensor

    @base_normal_local.setter
    def base_normal_local(self, value: Any) -> None:
        try:
            raw = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
            n = np.asarray(raw, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):                  # e.g. 'up', [1, 'x', 0], ragged lists
            n = None
        if n is None or n.shape != (3,) or not np.all(np.isfinite(n)) or float(np.linalg.norm(n)) == 0.0:
            raise SettingError(f"sensor {self.name!r}: base_normal_local must be a finite non-zero 3-vector, "
                               f"got {value!r}", "base_normal_local", value)
        self._normal_np: np.ndarray = n / np.linalg.norm(n)
        self._normal_tensor: torch.Tensor = torch.tensor(self._normal_np, dtype=torch.get_default_dtype())

    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "PunyoPressureSensor":
        """Build from ``{'attachment', 'base_normal_local' (default [0, 0, 1]), 'variance' (Pa², 0)}``;
        SettingError: unknown keys (named), missing ``attachment``, bad values."""
        body = check_config_keys(cls.__name__, cls.type_name, name, config,
                                 ("base_normal_local", "variance"))
        return cls(name, body, config.get("base_normal_local", (0.0, 0.0, 1.0)),
                   config.get("variance", 0.0))

    def attach(self, model: Any) -> None:
        """Compute ``A_base`` from the body's mesh.  ValueError (unchanged): no mesh, zero shadow area.
        UserWarning: a Klampt body of another name (attached anyway, as the seed)."""
        check_model_name(model, self.attachModelName, self.name)
        V, F = triangle_mesh_of(model)
        area = projected_area(V, F, self._normal_np)
        if not area > 0.0:
            raise ValueError(f"sensor {self.name!r}: the mesh's shadow along "
                             f"{self._normal_np.tolist()} has zero area")
        self.base_area, self.object = area, model

    def measurement_names(self) -> List[str]:
        """``['pressure']``."""
        return ["pressure"]

    def measurement_errors(self) -> Optional[List[float]]:
        """``[sqrt(variance)]`` (Pa)."""
        return [math.sqrt(self.variance)]

    # -- model -------------------------------------------------------------------------------
    def _require_attached(self) -> None:
        if self.base_area is None:
            raise RuntimeError(f"sensor {self.name!r}: call attach() with the body's mesh first")

    def _gradient_row(self, state: SimState):
        """``(forces (N, 3), −(1/A) R n (3,), pairs, offsets)`` of the state's contacts on the body."""
        self._require_attached()
        R, _ = rigid_transform(state, self.attachModelName)
        pairs, states, offsets = contacts_on(state, self.attachModelName, self.name, R.dtype, R.device)
        forces = torch.cat([c.forces for c in states]) if states else torch.zeros(0, 3, dtype=R.dtype,
                                                                                  device=R.device)
        n = torch.as_tensor(self._normal_np, dtype=R.dtype, device=R.device)
        return forces, -(R @ n) * (self.gain / self.base_area), pairs, offsets

    def predict_torch(self, state: SimState) -> torch.Tensor:
        """``(1,)`` pressure (Pa), differentiable.  RuntimeError: not attached; ValueError: unknown body, bad
        transform, contacts of another dtype/device."""
        forces, g, _, _ = self._gradient_row(state)
        p = (forces @ g).sum().reshape(1)
        if self.tare is not None:
            p = p + torch.as_tensor(self.tare, dtype=p.dtype, device=p.device)
        return p

    def _numpy_outputs(self, state: SimState, jac: bool):
        """The numpy face (the rig's; the torch methods wrap it): ``(p (1,), (rows, cols,
        values, shape, pairs, offsets) or None, #contacts)`` of a float32/64 CPU state, else None."""
        self._require_attached()
        pose = numpy_pose(state, self.attachModelName)
        if pose is None:
            return None
        R, _, T = pose
        pairs, states, offsets = contacts_on(state, self.attachModelName, self.name, T.dtype, T.device)
        n = offsets[-1]
        forces = states[0].forces.detach().numpy() if len(states) == 1 else \
            np.concatenate([c.forces.detach().numpy() for c in states] or [np.zeros((0, 3), R.dtype)])
        g = R @ self._normal_np.astype(R.dtype, copy=False)
        g *= -(self.gain / self.base_area)                    # = -(R n) * (gain / A) in R's dtype, one op
        p = (forces @ g).sum(keepdims=True)                   # (1,) of the state's dtype
        if self.tare is not None:
            p += self.tare.astype(g.dtype)
        if not jac:
            return p, None, n
        values = np.empty((n, 3), dtype=g.dtype)
        values[:] = g                                           # n copies of g (np.tile is slower)
        rows, cols = np.zeros(3 * n, dtype=np.int64), np.arange(3 * n, dtype=np.int64)  # row 0, cols 3c + k
        return p, (rows, cols, values.reshape(-1), (1, 3 * n), pairs, offsets), n

    def predict(self, state: SimState) -> torch.Tensor:
        """:meth:`predict_torch` without autograd (numpy for float32/float64 CPU states)."""
        out = self._numpy_outputs(state, False)
        if out is None:
            with torch.no_grad():
                return self.predict_torch(state)
        return torch.from_numpy(out[0])

    def sparse_force_jacobian(self, state: SimState) -> SparseJacobian:
        """Row 0, columns ``3c + k``, value ``(−(1/A) R n)[k]``: 3 entries per contact."""
        out = self._numpy_outputs(state, True)
        if out is not None:
            return SparseJacobian(*map(torch.from_numpy, out[1][:3]), *out[1][3:])   # fresh arrays per call
        with torch.no_grad():
            forces, g, pairs, offsets = self._gradient_row(state)
            n = offsets[-1]
            return SparseJacobian(
                rows=torch.zeros(3 * n, dtype=torch.int64, device=g.device),
                cols=torch.arange(3 * n, dtype=torch.int64, device=g.device),
                values=g.repeat(n), shape=(1, 3 * n), pairs=list(pairs), offsets=list(offsets))

    def predict_with_jacobian(self, state: SimState) -> Tuple[torch.Tensor, SparseJacobian]:
        """``(predict(state), sparse_force_jacobian(state))`` in one pass; raises as :meth:`predict_torch`."""
        out = self._numpy_outputs(state, True)
        if out is None:
            return self.predict(state), self.sparse_force_jacobian(state)
        return torch.from_numpy(out[0]), SparseJacobian(*map(torch.from_numpy, out[1][:3]), *out[1][3:])

    # -- calibration ---------------------------------------------------------------------------
    def set_calibration(self, calib_dict: dict) -> None:
        """Set ``{'tare', 'tare_sim_avg', 'gain'}``, each ``(1,)`` or scalar; ``{}`` clears, absent gain = 1.
        ValueError (previous kept): unknown keys, wrong size, non-finite, gain <= 0."""
        calib = parse_tare(calib_dict, self.name, 1, allow_gain=True)
        self._calib = calib
        self.tare = calib["tare"].copy() if "tare" in calib else None
        self.gain = float(calib["gain"][0]) if "gain" in calib else 1.0

    def get_calibration(self) -> dict:
        """``{'tare': (1,)}`` (plus ``'tare_sim_avg'`` / ``'gain'`` when set), ``{}`` when uncalibrated."""
        return {k: v.copy() for k, v in self._calib.items()}
