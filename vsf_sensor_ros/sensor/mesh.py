"""Triangle-mesh helpers for mesh-based sensors (Punyo dense force, Punyo pressure).

* :func:`triangle_mesh_of` extracts ``(vertices, triangles)`` from a Klampt
  body, a ``trimesh.Trimesh`` or a ``(V, F)`` pair.
* :class:`ClosestTriangleQuery` maps points to their closest point on the
  mesh and the barycentric weights of that point in its triangle; it is built
  once per mesh and answers batches of points without Python loops.
* :func:`projected_area` is the area of the mesh's shadow on a plane.

Everything here is numpy/scipy on the CPU in float64; callers cast the
results to their own dtype/device.  Klampt is never imported: Klampt objects
are read through their methods (duck typing).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

__all__ = [
    "ClosestTriangleQuery", "ClosestTriangleResult", "projected_area", "triangle_mesh_of",
    "validate_mesh",
]

# Region codes of ClosestTriangleResult.region: which feature of the triangle holds the closest
# point.  Vertices are the ends of the edges (parameter 0 or 1).
REGION_FACE, REGION_AB, REGION_AC, REGION_BC = 0, 1, 2, 3


def validate_mesh(vertices: Any, triangles: Any, label: str = "mesh") -> Tuple[np.ndarray, np.ndarray]:
    """Return ``(V, F)`` as float64 ``(V, 3)`` and int64 ``(T, 3)`` contiguous copies.

    Args:
        vertices: array-like ``(V, 3)`` of finite coordinates (m).
        triangles: array-like ``(T, 3)`` of integer vertex indices, ``T >= 1``.
        label: name used in error messages.

    Raises:
        ValueError: wrong shapes, non-finite vertices, non-integer or
            out-of-range indices, or no triangles; the message names the value.
    """
    V = np.array(vertices, dtype=np.float64, copy=True)
    if V.ndim != 2 or V.shape[1] != 3:
        raise ValueError(f"{label}: vertices must have shape (V, 3), got {V.shape}")
    if not np.all(np.isfinite(V)):
        row = int(np.nonzero(~np.isfinite(V).all(axis=1))[0][0])
        raise ValueError(f"{label}: vertex {row} is non-finite: {V[row].tolist()}")
    F_in = np.asarray(triangles)
    if F_in.ndim != 2 or F_in.shape[1] != 3:
        raise ValueError(f"{label}: triangles must have shape (T, 3), got {F_in.shape}")
    if F_in.shape[0] == 0:
        raise ValueError(f"{label}: mesh has no triangles")
    if not np.issubdtype(F_in.dtype, np.integer):
        raise ValueError(f"{label}: triangles must be an integer array, got dtype {F_in.dtype}")
    F = np.array(F_in, dtype=np.int64, copy=True)
    bad = (F < 0) | (F >= len(V))
    if bad.any():
        t, j = (int(x[0]) for x in np.nonzero(bad))
        raise ValueError(f"{label}: triangle {t} has vertex index {int(F[t, j])} outside "
                         f"0..{len(V) - 1}")
    return np.ascontiguousarray(V), np.ascontiguousarray(F)


def triangle_mesh_of(model: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Vertices and triangles of a body's triangle mesh, in the body frame.

    Accepts (checked in this order):

    * a ``(vertices, triangles)`` tuple or list of array-likes;
    * a ``trimesh.Trimesh`` (anything with ``.vertices`` and ``.faces``);
    * a Klampt ``RobotModelLink`` / ``RigidObjectModel`` (anything with
      ``.geometry()``) whose geometry type is ``'TriangleMesh'``, read with
      ``getVertices()/getIndices()`` or ``.vertices/.indices`` (Klampt 0.10).

    Returns:
        ``(V, F)``: float64 ``(V, 3)`` vertices (m, body frame) and int64
        ``(T, 3)`` vertex indices; fresh arrays owned by the caller.

    Raises:
        ValueError: the model holds no non-empty triangle mesh (the message
            names the model and its geometry type), or the mesh arrays are
            malformed (see :func:`validate_mesh`).
    """
    if isinstance(model, (tuple, list)) and len(model) == 2:
        return validate_mesh(model[0], model[1], "mesh tuple")
    if hasattr(model, "vertices") and hasattr(model, "faces") and not callable(model.vertices):
        return validate_mesh(model.vertices, model.faces, f"{type(model).__name__}")
    if hasattr(model, "geometry") and callable(model.geometry):
        name = model.getName() if hasattr(model, "getName") else repr(model)
        geom = model.geometry()
        gtype = geom.type() if hasattr(geom, "type") else type(geom).__name__
        empty = geom.empty() if hasattr(geom, "empty") else False
        if empty or gtype != "TriangleMesh":
            raise ValueError(f"body {name!r} has no triangle mesh (geometry type "
                             f"{gtype or 'empty'!r}); a mesh-based sensor needs one")
        mesh = geom.getTriangleMesh()
        if hasattr(mesh, "getVertices"):
            V, F = mesh.getVertices(), mesh.getIndices()
        else:
            V, F = mesh.vertices, mesh.indices
        V, F = np.asarray(V, dtype=np.float64), np.asarray(F)
        if V.size == 0 or F.size == 0:
            raise ValueError(f"body {name!r} has an empty triangle mesh")
        return validate_mesh(V.reshape(-1, 3), F.reshape(-1, 3), f"body {name!r}")
    raise ValueError(f"cannot read a triangle mesh from an object of type {type(model).__name__}; "
                     "pass a Klampt link/rigid object, a trimesh.Trimesh or a (V, F) tuple")


@dataclass
class ClosestTriangleResult:
    """Answer of :meth:`ClosestTriangleQuery.query` for ``M`` points.

    Attributes:
        triangle: ``(M,)`` int64, index of the closest triangle.
        point: ``(M, 3)`` float64, closest point on the mesh (mesh frame, m).
        weights: ``(M, 3)`` float64 barycentric weights of ``point`` w.r.t.
            the triangle's corners ``triangles[triangle]``: finite, ``>= 0``,
            summing to 1 (to rounding), ``point = Σ_j weights[:, j] V[F[t, j]]``.
        distance: ``(M,)`` float64, ``|query point − point|`` (m).
        region: ``(M,)`` int8 feature holding ``point``: 0 face interior,
            1 edge ab, 2 edge ac, 3 edge bc (vertices are edge ends).
    """

    triangle: np.ndarray
    point: np.ndarray
    weights: np.ndarray
    distance: np.ndarray
    region: np.ndarray


class ClosestTriangleQuery:
    """Exact batched closest-point-on-mesh query, built once per mesh.

    Method: a KD-tree over triangle centroids gives each query point its
    ``k`` nearest-centroid candidate triangles; the exact point-triangle
    distance is evaluated for all candidates at once (vectorised: projection
    onto the triangle's plane when it falls inside, else the closest point on
    each of the three edges, parameters clamped to [0, 1]).  Correctness
    bound: with ``r_max`` the largest centroid-to-corner distance of any
    triangle, a triangle whose centroid is at least ``d_k`` away (the k-th
    candidate's centroid distance) is at least ``d_k − r_max`` away, so when
    ``d_k − r_max ≥`` the best distance found, no unvisited triangle can be
    closer.  Points failing the bound are re-queried with ``k`` doubled
    (vectorised over those points) until they pass or ``k`` covers every
    triangle, which is exact by exhaustion.  Points on or near the surface
    pass in the first round; far-away points take up to ``log2(T/k)`` rounds.

    Degenerate triangles (zero area: collinear or coincident corners, within
    a relative tolerance of 1e-12) never use the face projection; their
    closest point is the closest point on their edges, and zero-length edges
    resolve to their first corner, so weights stay finite and sum to 1.

    Attributes:
        vertices: ``(V, 3)`` float64, read-only.
        triangles: ``(T, 3)`` int64, read-only.
        k: candidates evaluated per point in the first round.
    """

    def __init__(self, vertices: Any, triangles: Any, k: int = 8) -> None:
        V, F = validate_mesh(vertices, triangles)
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        V.setflags(write=False)
        F.setflags(write=False)
        self.vertices: np.ndarray = V
        self.triangles: np.ndarray = F
        self.k: int = min(int(k), len(F))
        a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
        centroids = (a + b + c) / 3.0
        self._radius_max = float(np.max(np.linalg.norm(
            np.stack([a, b, c]) - centroids[None], axis=2)))
        self._tree = cKDTree(centroids)
        ab, ac = b - a, c - a
        d00 = np.einsum("ij,ij->i", ab, ab)
        d01 = np.einsum("ij,ij->i", ab, ac)
        d11 = np.einsum("ij,ij->i", ac, ac)
        dbc = d00 - 2.0 * d01 + d11                        # |c - b|^2
        denom = d00 * d11 - d01 * d01                      # |ab x ac|^2
        face_ok = denom > 1e-12 * d00 * d11

        def inv(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
            out = np.zeros_like(x)
            np.divide(1.0, x, out=out, where=ok)
            return out
        # One row per per-triangle constant; gathering [:, idx] gives contiguous (M, k) rows.
        self._consts = np.ascontiguousarray(np.stack([
            a[:, 0], a[:, 1], a[:, 2], ab[:, 0], ab[:, 1], ab[:, 2], ac[:, 0], ac[:, 1], ac[:, 2],
            d00, d01, d11, dbc, inv(denom, face_ok), inv(d00, d00 > 0), inv(d11, d11 > 0),
            inv(dbc, dbc > 0), face_ok.astype(np.float64),
        ]))
        self.face_ok: np.ndarray = face_ok

    @property
    def num_vertices(self) -> int:
        """Number of mesh vertices ``V``."""
        return len(self.vertices)

    @property
    def num_triangles(self) -> int:
        """Number of mesh triangles ``T``."""
        return len(self.triangles)

    def constants(self) -> np.ndarray:
        """Per-triangle constants ``(18, T)`` float64 (rows: a, ab, ac, |ab|², ab·ac,
        |ac|², |bc|², 1/|ab×ac|² (0 if degenerate), 1/|ab|², 1/|ac|², 1/|bc|² (0 if
        zero), face_ok).  Used to re-evaluate weights differentiably in torch."""
        return self._consts

    # -- core evaluation on candidate triangles -----------------------------------------------
    def _evaluate(self, P: np.ndarray, idx: np.ndarray):
        """Squared distance and features of points ``P (M, 3)`` to candidates ``idx (M, K)``."""
        C = self._consts[:, idx]                                  # (18, M, K)
        apx = P[:, 0:1] - C[0]
        apy = P[:, 1:2] - C[1]
        apz = P[:, 2:3] - C[2]
        d00, d01, d11, dbc = C[9], C[10], C[11], C[12]
        pp = apx * apx + apy * apy + apz * apz
        d20 = apx * C[3] + apy * C[4] + apz * C[5]               # ap . ab
        d21 = apx * C[6] + apy * C[7] + apz * C[8]               # ap . ac
        # face: projection p' = a + v ab + w ac
        v = (d11 * d20 - d01 * d21) * C[13]
        w = (d00 * d21 - d01 * d20) * C[13]
        inside = (v >= 0.0) & (w >= 0.0) & (v + w <= 1.0) & (C[17] > 0.0)
        dist_f = pp - 2.0 * (v * d20 + w * d21) + v * v * d00 + 2.0 * v * w * d01 + w * w * d11
        # edges, parameters clamped to the segment
        t = np.clip(d20 * C[14], 0.0, 1.0)
        dist_ab = pp - 2.0 * t * d20 + t * t * d00
        s = np.clip(d21 * C[15], 0.0, 1.0)
        dist_ac = pp - 2.0 * s * d21 + s * s * d11
        bpbc = d21 - d20 - d01 + d00                              # (p - b) . (c - b)
        r = np.clip(bpbc * C[16], 0.0, 1.0)
        dist_bc = pp - 2.0 * d20 + d00 - 2.0 * r * bpbc + r * r * dbc
        dist = np.stack([np.where(inside, dist_f, np.inf), dist_ab, dist_ac, dist_bc])
        region = dist.argmin(axis=0)
        best = np.take_along_axis(dist, region[None], axis=0)[0]
        return np.maximum(best, 0.0), region, v, w, t, s, r

    def query(self, points: Any) -> ClosestTriangleResult:
        """Closest mesh point, triangle and barycentric weights for each point.

        Args:
            points: ``(M, 3)`` finite coordinates in the mesh frame (m).

        Returns:
            :class:`ClosestTriangleResult` (float64 / int64 numpy arrays).
            Ties (a point equidistant from two triangles, e.g. on a shared
            edge) resolve to either triangle; both give the same point.

        Raises:
            ValueError: ``points`` is not ``(M, 3)`` or holds NaN/inf.
        """
        P = np.asarray(points, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != 3:
            raise ValueError(f"query points must have shape (M, 3), got {P.shape}")
        if not np.all(np.isfinite(P)):
            row = int(np.nonzero(~np.isfinite(P).all(axis=1))[0][0])
            raise ValueError(f"query point {row} is non-finite: {P[row].tolist()}")
        M, T = len(P), self.num_triangles
        tri = np.zeros(M, dtype=np.int64)
        reg = np.zeros(M, dtype=np.int64)
        par = np.zeros((5, M))                                    # v, w, t, s, r of the winner
        todo = np.arange(M)
        k = self.k
        while len(todo):
            cd, idx = self._tree.query(P[todo], k=k)
            cd, idx = cd.reshape(len(todo), k), idx.reshape(len(todo), k)
            d2, region, *params = self._evaluate(P[todo], idx)
            j = d2.argmin(axis=1)[:, None]
            tri[todo] = np.take_along_axis(idx, j, axis=1)[:, 0]
            reg[todo] = np.take_along_axis(region, j, axis=1)[:, 0]
            for row, p in enumerate(params):
                par[row, todo] = np.take_along_axis(p, j, axis=1)[:, 0]
            if k >= T:
                break
            dbest = np.sqrt(np.take_along_axis(d2, j, axis=1)[:, 0])
            # unvisited triangles are >= cd[:, -1] - r_max away; the slack covers rounding of dbest
            unsure = cd[:, -1] - self._radius_max < dbest * (1.0 + 1e-9) + 1e-12
            todo = todo[unsure]
            k = min(2 * k, T)
        weights = _weights_from_region(reg, *par)
        corners = self.vertices[self.triangles[tri]]              # (M, 3, 3)
        point = np.einsum("mj,mjk->mk", weights, corners)
        return ClosestTriangleResult(
            triangle=tri, point=point, weights=weights,
            distance=np.linalg.norm(P - point, axis=1), region=reg.astype(np.int8))


def _weights_from_region(reg: np.ndarray, v: np.ndarray, w: np.ndarray, t: np.ndarray,
                         s: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Barycentric weights ``(M, 3)`` from the winning feature and its parameters."""
    wa = np.select([reg == REGION_FACE, reg == REGION_AB, reg == REGION_AC], [1.0 - v - w, 1.0 - t, 1.0 - s],
                   0.0)
    wb = np.select([reg == REGION_FACE, reg == REGION_AB, reg == REGION_BC], [v, t, 1.0 - r], 0.0)
    wc = np.select([reg == REGION_FACE, reg == REGION_AC, reg == REGION_BC], [w, s, r], 0.0)
    return np.stack([wa, wb, wc], axis=1)


def projected_area(vertices: Any, triangles: Any, normal: Sequence[float]) -> float:
    """Area (m²) of the mesh's orthographic shadow on the plane normal to ``normal``.

    The shadow is the *union* of the projected triangles, so overlapping
    parts (the top and bottom of a closed membrane) count once; this is the
    seed's ``trimesh.Trimesh.projected(normal).area`` without its padding.
    Computed exactly (to floating point) as a polygon union with shapely.

    Args:
        vertices: ``(V, 3)`` array-like (m).
        triangles: ``(T, 3)`` integer array-like.
        normal: 3-vector, any non-zero length; its sign does not matter.

    Raises:
        ValueError: malformed mesh, or a zero / non-finite ``normal``.
    """
    import shapely  # imported here: only needed at attach time

    V, F = validate_mesh(vertices, triangles)
    n = np.asarray(normal, dtype=np.float64).reshape(-1)
    if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) == 0.0:
        raise ValueError(f"projected_area: normal must be a finite non-zero 3-vector, got {normal!r}")
    n = n / np.linalg.norm(n)
    # orthonormal in-plane basis (e1, e2) perpendicular to n
    helper = np.eye(3)[int(np.argmin(np.abs(n)))]
    e1 = np.cross(n, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    xy = np.stack([V @ e1, V @ e2], axis=1)[F]                   # (T, 3, 2)
    # drop triangles seen edge-on (zero shadow area): they add nothing and upset the overlay
    ab, ac = xy[:, 1] - xy[:, 0], xy[:, 2] - xy[:, 0]
    area2 = np.abs(ab[:, 0] * ac[:, 1] - ab[:, 1] * ac[:, 0])
    scale = max(float(np.ptp(xy.reshape(-1, 2), axis=0).max()), 1e-300)
    xy = xy[area2 > 1e-14 * scale * scale]
    if len(xy) == 0:
        return 0.0
    return float(shapely.union_all(shapely.polygons(xy)).area)
