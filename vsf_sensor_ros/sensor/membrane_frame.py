"""The membrane estimate in another mesh file's frame: a rigid motion fitted over the clamped rings of two
meshes of one membrane (Kabsch; docs/membrane_force.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Tuple

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["MeshFrameTransform", "fit_mesh_transform", "total_wrench"]


@dataclass(frozen=True)
class MeshFrameTransform:
    """Rigid motion ``p_out = R p_mesh + t`` (``R`` ``(3, 3)``, ``t`` ``(3,)`` m, float64) from the
    estimator's mesh frame to an output one, with the fit's ``rms`` and ``max_error`` (m); by default
    no change of frame."""

    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    t: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rms: float = 0.0
    max_error: float = 0.0

    @property
    def angle_deg(self) -> float:
        """Rotation angle, degrees."""
        return float(np.rad2deg(Rotation.from_matrix(self.R).magnitude()))

    def points(self, p: np.ndarray) -> np.ndarray:
        """``(N, 3)`` positions (m) into the output frame, float64."""
        return self.vectors(p) + self.t

    def vectors(self, v: np.ndarray) -> np.ndarray:
        """``(N, 3)`` free vectors (forces, N) into the output frame, float64."""
        return np.asarray(v, dtype=np.float64) @ self.R.T


def fit_mesh_transform(mesh_points: np.ndarray, output_points: np.ndarray,
                       indices: Sequence[int], tolerance: float = 1e-3) -> MeshFrameTransform:
    """The rigid motion (Kabsch) carrying ``mesh_points[indices]`` onto ``output_points[indices]`` (``(V, 3)``
    m, same vertex order).  ValueError: vertex counts differ (both named), fewer than 3 indices, an error
    above ``tolerance`` (m)."""
    a = np.asarray(mesh_points, dtype=np.float64)
    b = np.asarray(output_points, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"the output mesh must list the same vertices as the membrane mesh: "
                         f"{b.shape[0] if b.ndim == 2 else b.shape} against {a.shape[0]}")
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size < 3:
        raise ValueError(f"need at least 3 vertices to fit a frame, got {idx.size}")
    pa, pb = a[idx], b[idx]
    ca, cb = pa.mean(axis=0), pb.mean(axis=0)
    R = Rotation.align_vectors(pb - cb, pa - ca)[0].as_matrix()  # rotation taking the centred a onto b
    t = cb - R @ ca
    err = np.linalg.norm(pa @ R.T + t - pb, axis=1)
    if err.max() > tolerance:
        raise ValueError(f"the output mesh is not a rigid copy of the membrane mesh: its fitted vertices "
                         f"lie up to {err.max() * 1e3:.2f} mm apart (tolerance {tolerance * 1e3:.2f} mm)")
    return MeshFrameTransform(R, t, float(np.sqrt(np.mean(err ** 2))), float(err.max()))


def total_wrench(positions: np.ndarray, forces: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(Σ f_i (3,) N, Σ p_i × f_i (3,) N·m)`` float64 of ``(V, 3)`` forces at ``(V, 3)`` positions (m)."""
    p = np.asarray(positions, dtype=np.float64)
    f = np.asarray(forces, dtype=np.float64)
    return f.sum(axis=0), np.cross(p, f).sum(axis=0)
