"""Rigid-transform helpers: ROS poses, Klampt transforms, URDF roll-pitch-yaw, as ``(4, 4)`` float64
body -> parent matrices; quaternions in ROS order ``(x, y, z, w)``; rotations by scipy's ``Rotation``.
"""
from __future__ import annotations

import warnings
from typing import List, Sequence, Tuple

import numpy as np
from scipy.spatial.transform import Rotation

from .sensor.errors import InputError

__all__ = ["klampt_to_matrix", "matrix_to_klampt", "rpy_from_matrix", "rpy_matrix",
           "transform_from_xyz_quat", "validate_transform", "xyz_quat_from_transform"]

#: a quaternion shorter than this is taken as zero (no rotation can be read from it)
_MIN_QUAT_NORM = 1e-9


def transform_from_xyz_quat(xyz: Sequence[float], quat_xyzw: Sequence[float]) -> np.ndarray:
    """``(4, 4)`` float64 ``[[R, t], [0, 0, 0, 1]]`` from ``xyz`` (m) and a ROS-ordered ``(x, y, z, w)``
    quaternion (normalised).

    Raises:
        InputError: ``argument`` ``'xyz'`` or ``'quat_xyzw'``; ``reason`` ``'shape'``, ``'not_finite'``
            or ``'zero_norm'`` (a quaternion of norm below 1e-9); ``value`` the shape or the values.
    """
    p = np.asarray(xyz, dtype=np.float64).reshape(-1)
    q = np.asarray(quat_xyzw, dtype=np.float64).reshape(-1)
    for name, v, n in (("xyz", p, 3), ("quat_xyzw", q, 4)):
        if v.shape != (n,):
            raise InputError(f"{name} must have length {n}, got shape {v.shape}", name, v.shape, "shape")
    for name, v in (("xyz", p), ("quat_xyzw", q)):
        if not np.isfinite(v).all():
            raise InputError(f"non-finite pose: xyz={p.tolist()} quat_xyzw={q.tolist()}", name, v.tolist(),
                             "not_finite")
    # Scale by the largest component before the norm: squaring components above ~1.3e154 overflows to inf,
    # and scipy would then normalise the quaternion to zero (identity).
    big = float(np.abs(q).max())
    norm = big * float(np.linalg.norm(q / big)) if big > 0.0 else 0.0
    if norm < _MIN_QUAT_NORM:
        raise InputError(f"quaternion (x, y, z, w)={q.tolist()} has zero norm", "quat_xyzw", q.tolist(),
                         "zero_norm")
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat(q / big).as_matrix()     # scalar-last = ROS order; normalises
    T[:3, 3] = p
    return T


def xyz_quat_from_transform(T: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(xyz (3,), quat_xyzw (4,))`` float64 of a rigid ``T``, unit quaternion in ROS order, ``w >= 0``.

    Raises:
        ValueError: ``T`` is not a valid rigid transform (:func:`validate_transform`).
    """
    T = validate_transform(T, "T")
    q = Rotation.from_matrix(T[:3, :3]).as_quat()
    if q[3] < 0:                     # one of the two equal quaternions: the one with w >= 0
        q = -q
    return T[:3, 3].copy(), q / np.linalg.norm(q)


def klampt_to_matrix(T_klampt: Tuple[Sequence[float], Sequence[float]]) -> np.ndarray:
    """Convert a Klampt ``(R, t)`` (R column-major 9-list) to a ``(4, 4)`` float64 matrix."""
    R, t = T_klampt
    T = np.eye(4)
    T[:3, :3] = np.asarray(R, dtype=np.float64).reshape(3, 3).T
    T[:3, 3] = t
    return T


def matrix_to_klampt(T: np.ndarray) -> Tuple[List[float], List[float]]:
    """Convert a ``(4, 4)`` matrix to Klampt's ``(R, t)`` (R column-major 9-list)."""
    T = np.asarray(T, dtype=np.float64)
    return T[:3, :3].T.reshape(-1).tolist(), T[:3, 3].tolist()


def validate_transform(T: object, label: str, tol: float = 1e-5) -> np.ndarray:
    """A rigid ``(4, 4)`` as a clean float64 array, its rotation snapped to the nearest one (SVD) when
    within ``tol`` (max-abs of ``RᵀR − I`` and the bottom row); ``label`` names it in errors.

    Raises:
        InputError: ``argument`` ``label``; ``reason`` ``'not_numeric'``, ``'shape'`` (``value`` the
            shape), ``'not_finite'``, ``'bottom_row'`` (the row) or ``'not_rotation'`` (the block: not
            orthonormal, or a reflection).
    """
    try:
        A = np.array(T, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{label} is not a numeric 4x4 array: {exc}", label, T, "not_numeric") from None
    if A.shape != (4, 4):
        raise InputError(f"{label} must have shape (4, 4), got {A.shape}", label, A.shape, "shape", (4, 4))
    if not np.isfinite(A).all():
        raise InputError(f"{label} has non-finite entries: {A.tolist()}", label, A.tolist(), "not_finite")
    if np.abs(A[3] - [0, 0, 0, 1]).max() > tol:
        raise InputError(f"{label} bottom row must be [0, 0, 0, 1], got {A[3].tolist()}",
                         label, A[3].tolist(), "bottom_row", [0, 0, 0, 1])
    R = A[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > tol or np.linalg.det(R) < 0:
        raise InputError(f"{label} rotation block is not a proper rotation: {R.tolist()}", label, R.tolist(),
                         "not_rotation")
    U, _, Vt = np.linalg.svd(R)
    A[:3, :3] = U @ Vt
    A[3] = [0, 0, 0, 1]
    return A


def rpy_matrix(rpy: Sequence[float]) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw (rad) as a ``(3, 3)`` rotation ``Rz(yaw) Ry(pitch) Rx(roll)``.

    Raises:
        InputError: not three finite numbers (``argument`` ``'rpy'``, ``value`` as a list, ``reason``
            ``'shape'`` or ``'not_finite'``).
    """
    a = np.asarray(rpy, dtype=np.float64).reshape(-1)
    if a.shape != (3,) or not np.isfinite(a).all():
        raise InputError(f"rpy must be three finite angles (rad), got {list(rpy)!r}", "rpy", list(rpy),
                         "shape" if a.shape != (3,) else "not_finite")
    return Rotation.from_euler("xyz", a).as_matrix()     # lowercase = extrinsic (fixed) axes


def rpy_from_matrix(R: np.ndarray) -> Tuple[float, float, float]:
    """URDF ``(roll, pitch, yaw)`` (rad) of a ``(3, 3)`` rotation; inverse of :func:`rpy_matrix` (at gimbal
    lock yaw is 0, scipy's warning silenced).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r, p, y = Rotation.from_matrix(np.asarray(R, dtype=np.float64)).as_euler("xyz")
    return float(r), float(p), float(y)
