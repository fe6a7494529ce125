"""The membrane estimate in another mesh's frame (library, no ROS).

Two mesh files of one membrane (same vertices, same order) differ by a rigid motion, fitted over their
clamped rings (Kabsch); see docs/membrane_force.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["MeshFrameTransform", "fit_mesh_transform", "total_wrench"]


@dataclass(frozen=True)
class MeshFrameTransform:
    """Rigid motion from the estimator's mesh frame to an output mesh frame.

    Attributes:
        R: ``(3, 3)`` float64 rotation, ``p_out = R p_mesh + t``.
        t: ``(3,)`` float64 translation, m.
        rms: RMS distance of the fitted vertices after the fit, m.
        max_error: largest distance of a fitted vertex after the fit, m.
    """

    R: np.ndarray
    t: np.ndarray
    rms: float = 0.0
    max_error: float = 0.0

    @classmethod
    def identity(cls) -> "MeshFrameTransform":
        """No change of frame."""
        return cls(np.eye(3), np.zeros(3))

    @property
    def angle_deg(self) -> float:
        """Rotation angle, degrees."""
        return float(np.rad2deg(Rotation.from_matrix(self.R).magnitude()))

    def points(self, p: np.ndarray) -> np.ndarray:
        """``(N, 3)`` positions (m) into the output frame, float64."""
        return np.asarray(p, dtype=np.float64) @ self.R.T + self.t

    def vectors(self, v: np.ndarray) -> np.ndarray:
        """``(N, 3)`` free vectors (forces, N) into the output frame, float64."""
        return np.asarray(v, dtype=np.float64) @ self.R.T


def fit_mesh_transform(mesh_points: np.ndarray, output_points: np.ndarray,
                       indices: Sequence[int], tolerance: float = 1e-3) -> MeshFrameTransform:
    """The rigid motion carrying ``mesh_points[indices]`` onto ``output_points[indices]``.

    Args:
        mesh_points: ``(V, 3)`` vertices in the estimator's mesh frame, m.
        output_points: ``(V, 3)`` the same vertices, same order, in the output frame, m.
        indices: vertices to fit on (the clamped boundary), at least 3 not on one line.
        tolerance: largest fitted-vertex distance accepted after the fit, m (default 1 mm).

    Returns:
        :class:`MeshFrameTransform` with the fit's RMS and largest error.

    Raises:
        ValueError: different vertex counts (naming both), fewer than 3 indices, or a fit whose largest
            error exceeds ``tolerance`` (the two files are not one membrane).
    """
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
    rot, _ = Rotation.align_vectors(pb - cb, pa - ca)  # rotation taking the centred a onto b
    R = rot.as_matrix()
    t = cb - R @ ca
    err = np.linalg.norm(pa @ R.T + t - pb, axis=1)
    if err.max() > tolerance:
        raise ValueError(f"the output mesh is not a rigid copy of the membrane mesh: its fitted vertices "
                         f"lie up to {err.max() * 1e3:.2f} mm apart (tolerance {tolerance * 1e3:.2f} mm)")
    return MeshFrameTransform(R, t, float(np.sqrt(np.mean(err ** 2))), float(err.max()))


def total_wrench(positions: np.ndarray, forces: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Resultant of point forces about the frame origin: ``(Σ f_i, Σ p_i × f_i)``.

    Args:
        positions: ``(V, 3)`` points of application, m.
        forces: ``(V, 3)`` forces, N, same frame.

    Returns:
        ``((3,) force N, (3,) torque N·m)``, float64.
    """
    p = np.asarray(positions, dtype=np.float64)
    f = np.asarray(forces, dtype=np.float64)
    return f.sum(axis=0), np.cross(p, f).sum(axis=0)
