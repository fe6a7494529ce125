"""Punyo dense force field: local force on every membrane vertex (seed ``PunyoDenseForceSensor``)."""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch

from ._punyo_common import (
    check_config_keys, check_model_name, contacts_on, numpy_pose, parse_tare)
from .base_sensor import BaseSensor, Pair, SimState, SparseJacobian, rigid_transform
from .errors import InputError
from .mesh import REGION_AB, REGION_AC, REGION_BC, REGION_FACE, ClosestTriangleQuery, triangle_mesh_of

__all__ = ["PunyoDenseForceSensor", "barycentric_weights"]

_EMPTY_I = np.zeros(0, dtype=np.int64)


def barycentric_weights(vertices: Any, triangles: Any, points: Any) -> np.ndarray:
    """``(M, V)`` float64 weights of points ``(M, 3)`` (mesh frame, m) over the vertices (seed
    ``barycentric_weights``, of the closest mesh point: never negative).  ValueError: bad mesh or points."""
    q = ClosestTriangleQuery(vertices, triangles)
    res = q.query(points)
    out = np.zeros((len(res.triangle), len(q.vertices)))
    # np.add.at: a degenerate triangle may name one vertex twice
    np.add.at(out, (np.arange(len(res.triangle))[:, None], q.triangles[res.triangle]), res.weights)
    return out


class _Map(NamedTuple):
    """How one state's contacts on the sensor body map onto mesh vertices (CPU float64, int64 indices)."""

    R: np.ndarray              # (3, 3) body -> world rotation
    local: np.ndarray          # (N, 3) rows R^T f_c
    pv_c: np.ndarray           # (Npv,) rows of per-vertex contacts
    pv_v: np.ndarray           # (Npv,) their vertices
    b_c: np.ndarray            # (Nb,) rows of barycentric contacts
    b_tri: np.ndarray          # (Nb,) closest triangle
    b_reg: np.ndarray          # (Nb,) feature holding the closest point (mesh.REGION_*)
    b_par: np.ndarray          # (5, Nb) its parameters (barycentric weights: _mesh_kernels.finish)
    pairs: List[Pair]
    offsets: List[int]
    cast: Optional[Tuple[torch.dtype, torch.device]]   # the state's, for the outputs; None: float64 CPU


class PunyoDenseForceSensor(BaseSensor):
    """Dense force field of a Punyo membrane (seed ``PunyoDenseForceSensor``): ``3·V`` outputs ``p{i}_x/y/z``,
    the force (N, mesh frame) ``F_i = gain ⊙ Σ_c w_ic Rᵀ f_c + (tare − tare_sim_avg)_i``; Jacobian block
    ``w_ic Rᵀ`` (times gain).  ``elems1[c] >= 0`` puts ``w = 1`` on that vertex, else the exact closest mesh
    point's barycentric weights split the force (per contact: the seed's deviation).  Outputs in the
    state's dtype/device (docs/python_api.md)."""

    type_name = "PunyoDenseForceSensor"
    supports_gain = True

    def __init__(self, sensor_name: str, attachModelName: str) -> None:
        super().__init__(sensor_name, attachModelName)
        self.vertices: Optional[np.ndarray] = None
        self.triangles: Optional[np.ndarray] = None
        self.query: Optional[ClosestTriangleQuery] = None
        self.object: Any = None
        self._names: List[str] = []
        self._calib: Dict[str, np.ndarray] = {}
        self._calib_cache: Dict[Tuple[str, Any, Any], Any] = {}
        self._torch_cache: Dict[Tuple[torch.dtype, torch.device], Tuple[torch.Tensor, torch.Tensor]] = {}

    # -- configuration --------------------------------------------------------------------
    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "PunyoDenseForceSensor":
        """Build from ``{'attachment': body}`` (optional ``'type'`` must match); SettingError: unknown keys
        (named), missing/empty ``attachment``."""
        body = check_config_keys(cls.__name__, cls.type_name, name, config, ())
        return cls(name, body)

    def attach(self, model: Any) -> None:
        """Read the body's triangle mesh (:func:`.mesh.triangle_mesh_of`) and build its query.  ValueError
        (unchanged): no mesh, a vertex count disagreeing with the calibration.  UserWarning: another name."""
        check_model_name(model, self.attachModelName, self.name)
        V, F = triangle_mesh_of(model)
        q = ClosestTriangleQuery(V, F)
        for key in ("tare", "gain"):
            if key in self._calib and len(self._calib[key]) != 3 * len(V):
                raise ValueError(f"sensor {self.name!r}: calibration has {len(self._calib[key])} entries "
                                 f"but the new mesh has {len(V)} vertices ({3 * len(V)} entries)")
        self.vertices, self.triangles, self.query, self.object = q.vertices, q.triangles, q, model
        self._names = [f"p{i}_{axis}" for i in range(len(V)) for axis in "xyz"]
        self._torch_cache.clear()

    @property
    def num_vertices(self) -> int:
        """Number of mesh vertices ``V`` (0 before ``attach``)."""
        return 0 if self.vertices is None else len(self.vertices)

    def measurement_names(self) -> List[str]:
        """``['p0_x', 'p0_y', 'p0_z', 'p1_x', …]``, ``3·V`` names."""
        return list(self._names)

    # -- contact -> vertex mapping ---------------------------------------------------------
    def _require_attached(self) -> ClosestTriangleQuery:
        if self.query is None:
            raise RuntimeError(f"sensor {self.name!r}: call attach() with the body's mesh first")
        return self.query

    def _map(self, state: SimState) -> _Map:
        """Where each contact on the body lands on the mesh (every output path starts here); raises as
        :meth:`predict`."""
        q = self._require_attached()
        name = self.attachModelName
        pose = numpy_pose(state, name)                 # None: not float32/64 on the CPU
        T = state.body_transforms[name]
        if pose is not None and T.dtype == torch.float64:
            R, t, cast = pose[0], pose[1], None
        else:                                          # float64 copies (rigid_transform: the torch check)
            R, t = (x.detach().to(device="cpu", dtype=torch.float64).numpy()
                    for x in rigid_transform(state, name))
            cast = (T.dtype, T.device)
        pairs, states, offsets = contacts_on(state, name, self.name, T.dtype, T.device)
        pts, frc, elems = [], [], []
        for pair, c in zip(pairs, states):
            e = None
            if c.elems1 is not None and len(c):
                e = c.elems1.detach().cpu().numpy()
                lo, hi = e.min(), e.max()
                if lo < -1 or hi >= self.num_vertices:                 # no vertex and not -1: named
                    row = int(np.flatnonzero((e < -1) | (e >= self.num_vertices))[0])
                    nv = self.num_vertices
                    raise InputError(f"sensor {self.name!r}: contacts {pair} row {row} has elems1 = "
                                     f"{int(e[row])}, not a vertex index 0..{nv - 1} or -1 (barycentric)",
                                     "elems1", int(e[row]), "index", (-1, nv - 1))
                if hi < 0:                                             # all -1: all barycentric
                    e = None
            p, f = c.points, c.forces
            if p.requires_grad or f.requires_grad:
                p, f = p.detach(), f.detach()
            if cast is not None:                       # float64 on the CPU (numpy has no bfloat16)
                p, f = p.to(device="cpu", dtype=torch.float64), f.to(device="cpu", dtype=torch.float64)
            pts.append(p.numpy())
            frc.append(f.numpy())
            elems.append(e)
        if len(states) == 1:
            points, forces, elem = pts[0], frc[0], elems[0]
        elif states:
            points, forces = np.concatenate(pts), np.concatenate(frc)
            elem = None if all(e is None for e in elems) else np.concatenate(
                [np.full(len(p), -1, dtype=np.int64) if e is None else e for p, e in zip(pts, elems)])
        else:
            points = forces = np.zeros((0, 3))
            elem = None
        local = forces @ R                                             # rows R^T f_c
        if elem is None:                                               # all barycentric
            pv_c, pv_v, b_c, b_pts = _EMPTY_I, _EMPTY_I, np.arange(len(points)), points
        else:
            pv = elem >= 0
            pv_c, b_c = np.flatnonzero(pv), np.flatnonzero(~pv)
            pv_v = elem[pv_c].astype(np.int64, copy=False)
            b_pts = points[b_c]
        # no weights, points or distances: _outputs' kernel evaluates the weights itself
        _, b_tri, b_reg, b_par = q._closest((b_pts - t) @ R)
        return _Map(R, local, pv_c, pv_v, b_c, b_tri, b_reg, b_par, pairs, offsets, cast)

    def _numpy_outputs(self, state: SimState, jac: bool, any_state: bool = False):
        """The numpy face (the rig's; :meth:`_outputs` wraps it): ``(prediction (3V,), (rows, cols, values,
        shape, pairs, offsets) or None, #contacts)`` float64 of one compiled pass, calibrated; None for a
        state not float64 on the CPU unless ``any_state`` (then uncalibrated: the torch face casts first)."""
        T = state.body_transforms.get(self.attachModelName)
        if not (any_state or isinstance(T, torch.Tensor) and T.dtype == torch.float64 and T.is_cpu):
            return None
        m = self._map(state)
        nnz = 9 * len(m.pv_c) + 27 * len(m.b_c) if jac else 0
        out = np.zeros(3 * self.num_vertices)
        rows, cols, vals = np.empty(nnz, dtype=np.int64), np.empty(nnz, dtype=np.int64), np.empty(nnz)
        self.query._kernels.dense_force_outputs(                           # (attached: _map checked)
            m.local, m.pv_c, m.pv_v, m.b_c, m.b_tri, m.b_reg, m.b_par, self.triangles,
            np.ascontiguousarray(m.R.T), out, rows, cols, vals, jac)
        if m.cast is None and self._calib:                 # as _calibrated, in numpy (float64 both)
            gain, offset = self._calib_tensor("gain"), self._calib_tensor("tare")
            if gain is not None:
                out *= gain
                vals *= gain[rows]                           # of each value's row
            if offset is not None:
                out += offset
        parts = (rows, cols, vals, (3 * self.num_vertices, 3 * m.offsets[-1]), m.pairs, m.offsets)
        return out, parts if jac else None, m.offsets[-1]

    def _outputs(self, state: SimState, pred: bool,
                 jac: bool) -> Tuple[Optional[torch.Tensor], Optional[SparseJacobian]]:
        """``(prediction or None, SparseJacobian or None)`` in the state's dtype/device."""
        out, parts, _ = self._numpy_outputs(state, jac, True)
        T = state.body_transforms[self.attachModelName]                 # (checked by _map)
        dtype, device, cast = T.dtype, T.device, not (T.dtype == torch.float64 and T.is_cpu)   # as _Map.cast
        prediction = J = None
        if pred:
            prediction = torch.from_numpy(out).to(device=device, dtype=dtype)
            prediction = self._calibrated(prediction) if cast else prediction   # (else calibrated)
        if jac:
            rows, cols, vals, shape, pairs, offsets = parts
            rows_t, cols_t = torch.from_numpy(rows).to(device), torch.from_numpy(cols).to(device)
            vals_t = torch.from_numpy(vals).to(device=device, dtype=dtype)
            gain = self._calib_tensor("gain", dtype, device) if cast else None   # of each value's row
            J = SparseJacobian(rows_t, cols_t, vals_t if gain is None else vals_t * gain[rows_t], shape,
                               pairs, offsets)      # (the map's own fresh lists)
        return prediction, J

    # -- predictions ---------------------------------------------------------------------------
    def predict(self, state: SimState) -> torch.Tensor:
        """Predicted ``(3V,)`` local vertex forces (N), no autograd.  RuntimeError: not attached; ValueError
        naming pair and value: unknown body, bad transform, contacts' dtype, bad ``elems1``, too far."""
        return self._outputs(state, True, False)[0]

    def predict_torch(self, state: SimState) -> torch.Tensor:
        """:meth:`predict`, differentiable w.r.t. forces, points and the body transform; raises as it."""
        m = self._map(state)
        R, t = rigid_transform(state, self.attachModelName)
        states = [state.contacts[p] for p in m.pairs]
        if states:
            points = torch.cat([c.points for c in states])
            forces = torch.cat([c.forces for c in states])
        else:
            points = forces = torch.zeros(0, 3, dtype=R.dtype, device=R.device)
        local = forces @ R                                             # rows R^T f_c
        out = torch.zeros(self.num_vertices, 3, dtype=R.dtype, device=R.device)

        def index(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(a).to(R.device)
        if len(m.pv_c):
            out = out.index_add(0, index(m.pv_v), local[index(m.pv_c)])
        if len(m.b_c):
            b_c = index(m.b_c)
            weights = self._torch_weights((points[b_c] - t) @ R, m.b_tri, m.b_reg)
            split = weights[:, :, None] * local[b_c][:, None, :]
            out = out.index_add(0, index(self.triangles[m.b_tri]).reshape(-1), split.reshape(-1, 3))
        return self._calibrated(out.reshape(-1))

    def _torch_weights(self, local: torch.Tensor, tri: np.ndarray, regions: np.ndarray) -> torch.Tensor:
        """Barycentric weights of the closest points, re-evaluated differentiably in torch."""
        key = (local.dtype, local.device)
        if key not in self._torch_cache:
            q = self._require_attached()
            self._torch_cache[key] = (torch.as_tensor(q.consts, dtype=local.dtype, device=local.device),
                                      torch.zeros((), dtype=local.dtype, device=local.device))
        consts, zero = self._torch_cache[key]
        C = consts[:, torch.from_numpy(np.asarray(tri, dtype=np.int64)).to(local.device)]
        reg = torch.from_numpy(np.asarray(regions, dtype=np.int64)).to(local.device)
        ap = local - C[0:3].T
        d20 = (ap * C[3:6].T).sum(1)
        d21 = (ap * C[6:9].T).sum(1)
        d00, d01, d11 = C[9], C[10], C[11]
        v = (d11 * d20 - d01 * d21) * C[13]
        w = (d00 * d21 - d01 * d20) * C[13]
        tt = torch.clamp(d20 * C[14], 0.0, 1.0)
        s = torch.clamp(d21 * C[15], 0.0, 1.0)
        r = torch.clamp((d21 - d20 - d01 + d00) * C[16], 0.0, 1.0)
        f, e_ab, e_ac, e_bc = (reg == REGION_FACE), (reg == REGION_AB), (reg == REGION_AC), (reg == REGION_BC)
        wa = torch.where(f, 1.0 - v - w, torch.where(e_ab, 1.0 - tt, torch.where(e_ac, 1.0 - s, zero)))
        wb = torch.where(f, v, torch.where(e_ab, tt, torch.where(e_bc, 1.0 - r, zero)))
        wc = torch.where(f, w, torch.where(e_ac, s, torch.where(e_bc, r, zero)))
        return torch.stack([wa, wb, wc], dim=1)

    # -- Jacobians --------------------------------------------------------------------------
    def sparse_force_jacobian(self, state: SimState) -> SparseJacobian:
        """COO Jacobian: 27 entries per barycentric contact, 9 per per-vertex one (duplicates sum)."""
        return self._outputs(state, False, True)[1]

    def predict_with_jacobian(self, state: SimState) -> Tuple[torch.Tensor, SparseJacobian]:
        """``(predict(state), sparse_force_jacobian(state))`` sharing one closest-point search."""
        return self._outputs(state, True, True)

    # -- calibration ---------------------------------------------------------------------------
    def set_calibration(self, calib_dict: dict) -> None:
        """Set ``{'tare', 'tare_sim_avg', 'gain'}``, each ``(3V,)`` (``{}`` clears; no gain = 1); ValueError
        (previous kept) as :func:`._punyo_common.parse_tare`."""
        length = 3 * self.num_vertices if self.vertices is not None else None
        self._calib = parse_tare(calib_dict, self.name, length, allow_gain=True)
        self._calib_cache.clear()

    def get_calibration(self) -> dict:
        """The calibration dict set last (copies of float64 arrays), ``{}`` when none."""
        return {k: v.copy() for k, v in self._calib.items()}

    def _calib_tensor(self, entry: str, dtype: Any = None, device: Any = None) -> Any:
        """``(3V,)`` cached tensor (no dtype: array) of ``'gain'`` or of tare − tare_sim_avg, or None."""
        if entry not in self._calib:
            return None
        key = (entry, dtype, device)
        if key not in self._calib_cache:
            value = self._calib["gain"] if entry == "gain" else \
                self._calib["tare"] - self._calib.get("tare_sim_avg", 0.0)
            self._calib_cache[key] = torch.as_tensor(value, dtype=dtype, device=device) if dtype else value
        return self._calib_cache[key]

    def _calibrated(self, raw: torch.Tensor) -> torch.Tensor:
        """``gain ⊙ raw + offset`` (each only when calibrated) of a ``(3V,)`` contact term."""
        gain = self._calib_tensor("gain", raw.dtype, raw.device)
        offset = self._calib_tensor("tare", raw.dtype, raw.device)
        out = raw if gain is None else raw * gain
        return out if offset is None else out + offset
