"""Triangle-mesh helpers of the mesh-based sensors: mesh extraction, exact closest triangle, projected area
(CPU float64 numpy/scipy and the numba kernels of :mod:`._mesh_kernels`; Klampt read by duck typing)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

from .errors import InputError

__all__ = [
    "ClosestTriangleQuery", "ClosestTriangleResult", "projected_area", "triangle_mesh_of",
    "validate_mesh",
]

# ClosestTriangleResult.region: the triangle's feature holding the closest point (vertices: edge ends)
REGION_FACE, REGION_AB, REGION_AC, REGION_BC = 0, 1, 2, 3


def _finite_rows(a: np.ndarray, what: str, noun: str, argument: str, n: str) -> None:
    """InputError unless ``a`` is ``(n, 3)`` (``'shape'``) and finite (``'not_finite'``: first bad row)."""
    if a.ndim != 2 or a.shape[1] != 3:
        raise InputError(f"{what} must have shape ({n}, 3), got {a.shape}", argument, a.shape, "shape",
                         f"({n}, 3)")
    if not np.all(np.isfinite(a)):
        row = int(np.nonzero(~np.isfinite(a).all(axis=1))[0][0])
        raise InputError(f"{noun} {row} is non-finite: {a[row].tolist()}", argument, a[row].tolist(),
                         "not_finite")


def validate_mesh(vertices: Any, triangles: Any, label: str = "mesh") -> Tuple[np.ndarray, np.ndarray]:
    """``(V, F)``: contiguous copies, float64 ``(V, 3)`` finite vertices (m), int64 ``(T, 3)`` indices
    (``T >= 1``); ``label`` names the mesh.  InputError: ``'vertices'`` / ``'triangles'``, ``reason``
    ``'shape'``, ``'not_finite'``, ``'empty'``, ``'dtype'`` or ``'index'`` (``expected`` the range)."""
    V = np.array(vertices, dtype=np.float64, copy=True)
    _finite_rows(V, f"{label}: vertices", f"{label}: vertex", "vertices", "V")
    F_in = np.asarray(triangles)
    if F_in.ndim != 2 or F_in.shape[1] != 3:
        raise InputError(f"{label}: triangles must have shape (T, 3), got {F_in.shape}",
                         "triangles", F_in.shape, "shape", "(T, 3)")
    if F_in.shape[0] == 0:
        raise InputError(f"{label}: mesh has no triangles", "triangles", F_in.shape, "empty")
    if not np.issubdtype(F_in.dtype, np.integer):
        raise InputError(f"{label}: triangles must be an integer array, got dtype {F_in.dtype}",
                         "triangles", F_in.dtype, "dtype")
    F = np.array(F_in, dtype=np.int64, copy=True)
    bad = (F < 0) | (F >= len(V))
    if bad.any():
        t, j = (int(x[0]) for x in np.nonzero(bad))
        raise InputError(f"{label}: triangle {t} has vertex index {int(F[t, j])} outside "
                         f"0..{len(V) - 1}", "triangles", int(F[t, j]), "index", (0, len(V) - 1))
    return np.ascontiguousarray(V), np.ascontiguousarray(F)


def triangle_mesh_of(model: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Fresh ``(V, F)`` (:func:`validate_mesh`, body frame) of a ``(vertices, triangles)`` pair, a
    ``trimesh.Trimesh`` or a Klampt link / rigid object with a ``'TriangleMesh'`` geometry.  InputError:
    ``'model'`` with ``'no_mesh'`` (``value`` its name) or ``'type'``, or as :func:`validate_mesh`."""
    if isinstance(model, (tuple, list)) and len(model) == 2:
        return validate_mesh(model[0], model[1], "mesh tuple")
    if hasattr(model, "vertices") and hasattr(model, "faces") and not callable(model.vertices):
        return validate_mesh(model.vertices, model.faces, f"{type(model).__name__}")
    if hasattr(model, "geometry") and callable(model.geometry):
        name = model.getName() if hasattr(model, "getName") else repr(model)
        geom = model.geometry()
        if geom.empty() or geom.type() != "TriangleMesh":
            raise InputError(f"body {name!r} has no triangle mesh (geometry type "
                             f"{geom.type() or 'empty'!r}); a mesh-based sensor needs one",
                             "model", name, "no_mesh")
        mesh = geom.getTriangleMesh()
        V, F = np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.indices)
        if V.size == 0 or F.size == 0:
            raise InputError(f"body {name!r} has an empty triangle mesh", "model", name, "no_mesh")
        return validate_mesh(V.reshape(-1, 3), F.reshape(-1, 3), f"body {name!r}")
    raise InputError(f"cannot read a triangle mesh from an object of type {type(model).__name__}; "
                     "pass a Klampt link/rigid object, a trimesh.Trimesh or a (V, F) tuple",
                     "model", type(model).__name__, "type")


@dataclass
class ClosestTriangleResult:
    """Answer for ``M`` points (mesh frame, m): ``triangle`` ``(M,)`` int64, ``point`` ``(M, 3)``, ``weights``
    ``(M, 3)`` barycentric (>= 0, sum 1), ``distance`` ``(M,)``, ``region`` ``(M,)`` int8 (0 face, 1-3 edge
    ab/ac/bc)."""

    triangle: np.ndarray
    point: np.ndarray
    weights: np.ndarray
    distance: np.ndarray
    region: np.ndarray


class ClosestTriangleQuery:
    """Exact batched closest-point-on-mesh query (docs/performance.md): a near-surface grid of per-cell
    candidate lists (``grid=False`` skips it); off it, the ``k`` nearest of proxy points within ``h``
    (``cover_radius``) of every triangle, refined by an exact ball query.  Degenerate triangles use their
    edges only.
    ``vertices`` / ``triangles`` are read-only; ``consts``: ``(18, T)`` float64 per-triangle constants (a,
    ab, ac, dot products, their inverses, face_ok); ``grid_candidates``: slots per cell (0 without grid)."""

    def __init__(self, vertices: Any, triangles: Any, k: int = 12, grid: bool = True) -> None:
        V, F = validate_mesh(vertices, triangles)
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        # imported here, not with the package (numba costs ~50 MB and ~0.5 s)
        from . import _mesh_kernels
        V.setflags(write=False)
        F.setflags(write=False)
        self.vertices: np.ndarray = V
        self.triangles: np.ndarray = F
        a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
        centroids = (a + b + c) / 3.0
        radius = np.max(np.linalg.norm(np.stack([a, b, c]) - centroids[None], axis=2), axis=0)
        # a few proxies per typical triangle: k = 12 settle ~99 % of Punyo surface points in round one
        h = 0.5 * float(np.median(radius))
        if h <= 0.0:                                      # mostly collapsed triangles
            h = max(float(radius.max()), 1e-300)
        self.cover_radius: float = h
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
        self.consts: np.ndarray = np.ascontiguousarray(np.stack([
            a[:, 0], a[:, 1], a[:, 2], ab[:, 0], ab[:, 1], ab[:, 2], ac[:, 0], ac[:, 1], ac[:, 2],
            d00, d01, d11, dbc, inv(denom, face_ok), inv(d00, d00 > 0), inv(d11, d11 > 0),
            inv(dbc, dbc > 0), face_ok.astype(np.float64),
        ]))
        self._consts_t = np.ascontiguousarray(self.consts.T)    # (T, 18): the kernels' layout
        self._kernels = _mesh_kernels
        self._centroids, self._radius = centroids, radius
        proxies, labels = self._proxies(centroids, radius, h)
        self._proxy_tri = labels
        self._tree = cKDTree(proxies)
        self.k: int = min(int(k), len(labels))
        # slacks far above the rounding of the expanded |p - x|^2 formulas
        self._slack: float = 1e-7 * h
        self._bound_slack: float = 1e-6 * max(float(np.linalg.norm(np.ptp(V, axis=0))), h)
        # farther, squared distances lose the mesh's detail (and overflow near 1e154): refused
        self.centre: np.ndarray = 0.5 * (V.min(axis=0) + V.max(axis=0))
        self.max_query_distance: float = 1e6 * max(float(np.linalg.norm(np.ptp(V, axis=0))), 1.0)
        self._grid: Optional[tuple] = None                # grid_best's arguments after P (None: no grid)
        self.grid_candidates: int = 0
        if grid:
            self._build_grid(2.0 * h)

    def _proxies(self, centroids: np.ndarray, radius: np.ndarray, h: float):
        """Proxy points ``(P, 3)`` and their triangle labels ``(P,)`` covering the mesh within ``h``."""
        small = radius <= h
        big = np.nonzero(~small)[0]
        pts, labels = [centroids[small]], [np.nonzero(small)[0]]
        if len(big):
            V, F = self.vertices, self.triangles
            corners = V[F[big]]                                       # (B, 3, 3)
            edges = np.roll(corners, -1, axis=1) - corners            # ab, bc, ca
            longest = np.argmax(np.einsum("bij,bij->bi", edges, edges), axis=1)
            e1 = edges[np.arange(len(big)), longest]
            e1 /= np.linalg.norm(e1, axis=1, keepdims=True)           # r_t > h > 0: not collapsed
            # in-plane perpendicular: the component of the other edges orthogonal to e1
            rest = corners - corners[:, :1]
            perp = rest - np.einsum("bij,bj->bi", rest, e1)[..., None] * e1[:, None]
            j = np.argmax(np.einsum("bij,bij->bi", perp, perp), axis=1)
            e2 = perp[np.arange(len(big)), j]
            n2 = np.linalg.norm(e2, axis=1, keepdims=True)
            e2 = np.where(n2 > 0, e2 / np.where(n2 > 0, n2, 1.0), 0.0)   # collinear: one row of cells
            x = np.einsum("bij,bj->bi", rest, e1)
            y = np.einsum("bij,bj->bi", rest, e2)
            g = np.sqrt(2.0) * h
            nx = np.maximum(1, np.ceil((x.max(1) - x.min(1)) / g)).astype(np.int64)
            ny = np.maximum(1, np.ceil((y.max(1) - y.min(1)) / g)).astype(np.int64)
            counts = nx * ny
            owner = np.repeat(np.arange(len(big)), counts)            # ragged expansion, no loop
            local = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            ix, iy = local // ny[owner], local % ny[owner]
            cx = x.min(1)[owner] + (ix + 0.5) * g
            cy = y.min(1)[owner] + (iy + 0.5) * g
            centre = corners[owner, 0] + cx[:, None] * e1[owner] + cy[:, None] * e2[owner]
            n = len(owner)
            d2, region, prm = self._evaluate_pairs(centre, np.arange(n), big[owner])
            w, proxy, dist = np.empty((n, 3)), np.empty((n, 3)), np.empty(n)
            self._kernels.finish(centre, big[owner], region, prm, V, F, w, proxy, dist)
            near = d2 <= 0.5 * g * g * (1.0 + 1e-9)                 # cell's circumcircle meets it
            pts.append(proxy[near])
            labels.append(big[owner][near])
        return np.concatenate(pts), np.concatenate(labels)

    # -- core evaluation on candidate triangles -----------------------------------------------
    def _ball_pairs(self, C: np.ndarray, radius: np.ndarray, tree: Optional[cKDTree] = None,
                    labels: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Unique ``(owner, triangle)`` pairs, by owner: a proxy within ``radius[i]`` of ``C[i]``."""
        tree = self._tree if tree is None else tree
        labels = self._proxy_tri if labels is None else labels
        lists = tree.query_ball_point(C, radius)
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))
        n_tri = len(self.triangles)
        key = np.sort(np.repeat(np.arange(len(C)), counts) * n_tri + labels[flat])
        key = key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key   # (np.unique is far slower)
        return key // n_tri, key % n_tri

    def _evaluate_pairs(self, P: np.ndarray, owner: np.ndarray, cand: np.ndarray):
        """Squared distance ``(n,)``, region ``(n,)`` and parameters ``(5, n)`` (``v, w, t, s, r``) of point
        ``P[owner[i]]`` against triangle ``cand[i]``."""
        d2 = np.empty(len(owner))
        region = np.empty(len(owner), dtype=np.int64)
        prm = np.empty((5, len(owner)))
        self._kernels.pairs_eval(np.ascontiguousarray(P), owner, cand, self._consts_t, d2, region, prm)
        return d2, region, prm

    def _build_grid(self, r_med: float, slots: int = 16, max_wide: int = 128,
                    max_cells: int = 2_000_000) -> None:
        """Exact per-cell candidate lists in the band within ``r_med`` of the mesh (see class doc)."""
        self.grid_candidates = 0
        if not r_med > 0.0:
            return
        cell, band = 0.5 * r_med, r_med
        rho = cell * np.sqrt(3.0) / 2.0
        lo = self.vertices.min(axis=0) - band
        shape_f = np.maximum(1.0, np.ceil((self.vertices.max(axis=0) + band - lo) / cell))
        if not np.all(np.isfinite(shape_f)) or float(np.prod(shape_f)) > max_cells:
            return                                            # extreme aspect ratio: KD path only
        shape = shape_f.astype(np.int64)
        ijk = np.stack(np.unravel_index(np.arange(int(np.prod(shape))), tuple(shape)), axis=1)
        centres = lo + (ijk + 0.5) * cell
        # a centre within `band` of the mesh is within band + h of one of its proxies
        dp, _ = self._tree.query(centres, k=1, distance_upper_bound=band + self.cover_radius * 1.001)
        near = np.nonzero(np.isfinite(dp))[0]
        # upper bound of the centre's distance (a larger one only enlarges the exact candidate lists)
        kk = min(4, len(self._proxy_tri))
        _, proxy = self._tree.query(centres[near], k=kk)
        labels = self._proxy_tri[proxy.reshape(len(near), kk)]
        dist = np.sqrt(self._table_best(centres[near], labels)[3])
        cells = near[dist <= band]
        reach = dist[dist <= band] + 2.0 * rho + self._slack
        # candidates from a coarser proxy set (cover radius r_med): fewer pairs to sort and test
        coarse_pts, coarse_tri = self._proxies(self._centroids, self._radius, r_med)
        owner, cand = self._ball_pairs(centres[cells], reach + r_med, cKDTree(coarse_pts), coarse_tri)
        d2, _, _ = self._evaluate_pairs(centres[cells], owner, cand)
        keep = np.sqrt(d2) <= reach[owner]
        owner, cand, d2 = owner[keep], cand[keep], d2[keep]
        counts = np.bincount(owner, minlength=len(cells))
        order = np.lexsort((d2, owner))                        # per cell, closest candidate first
        owner, cand = owner[order], cand[order]
        # lower bound of a candidate's distance from any point of its cell, ascending along a row: the scan
        # stops at the first one beyond its best distance
        lower = np.sqrt(d2[order]) - rho - self._bound_slack
        start = np.cumsum(counts) - counts
        pos = np.arange(len(owner)) - start[owner]
        grid_row = np.full(int(np.prod(shape)), -1, dtype=np.int64)
        # `slots` wide for most cells, wider for the few crowded ones (grid_row >= 0 / <= -2 - row; -1: none)
        wide = int(min(max(int(counts.max(initial=0)), slots), max_wide))
        tables, lower_tables = [], []
        for t_id, (sel_cells, width) in enumerate((((counts >= 1) & (counts <= slots), slots),
                                                   ((counts > slots) & (counts <= wide), wide))):
            row_of_cell = np.full(len(cells), -1, dtype=np.int64)
            row_of_cell[sel_cells] = np.arange(int(sel_cells.sum()))
            table = np.repeat(cand[start[sel_cells]][:, None], width, axis=1)   # pad: closest one
            sel = sel_cells[owner]
            table[row_of_cell[owner[sel]], pos[sel]] = cand[sel]
            low = np.full(table.shape, np.inf)                 # padding: never needed
            low[row_of_cell[owner[sel]], pos[sel]] = lower[sel]
            lower_tables.append(low)
            grid_row[cells[sel_cells]] = row_of_cell[sel_cells] if t_id == 0 else -2 - row_of_cell[sel_cells]
            tables.append(table)
        self._grid = (lo, cell, shape, grid_row, *tables, *lower_tables, self._consts_t)
        self.grid_candidates = slots

    def query(self, points: Any) -> ClosestTriangleResult:
        """:class:`ClosestTriangleResult` of ``(M, 3)`` points (mesh frame, m); a tie goes to either triangle.
        InputError: ``'points'``, ``reason`` ``'shape'``, ``'not_finite'`` or ``'too_far'`` (beyond
        ``max_query_distance`` from ``centre``, the ``expected``)."""
        P, tri, reg, par = self._closest(points)
        weights, point, dist = np.empty((len(P), 3)), np.empty((len(P), 3)), np.empty(len(P))
        self._kernels.finish(P, tri, reg, par, self.vertices, self.triangles, weights, point, dist)
        return ClosestTriangleResult(triangle=tri, point=point, weights=weights, distance=dist,
                                     region=reg.astype(np.int8))

    def _closest(self, points: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(P, tri, region, params (5, M))`` of :meth:`query` (``P``: the points, C float64); its errors."""
        P = np.asarray(points, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != 3:
            _finite_rows(P, "query points", "query point", "points", "M")   # raises 'shape'
        if not (P.flags.c_contiguous and P.flags.writeable):   # one compiled specialisation only
            P = np.array(P, order="C")
        M = len(P)
        tri, reg, par = np.empty(M, dtype=np.int64), np.empty(M, dtype=np.int64), np.empty((5, M))
        kn, grid = self._kernels, self._grid
        missing = M if grid is None else kn.grid_best(P, *grid, tri, reg, par, np.empty(M))
        if missing:
            # finiteness checked only now: grid_best leaves every non-finite point off the grid
            _finite_rows(P, "query points", "query point", "points", "M")
            rest = np.flatnonzero(tri < 0) if missing < M else np.arange(M)
            t_, r_, p_ = self._query_kd(P[rest])
            tri[rest], reg[rest], par[:, rest] = t_, r_, p_
        return P, tri, reg, par

    def _table_best(self, P: np.ndarray, idx: np.ndarray):
        """Closest of the candidates ``idx (M, K)`` of each point ``P (M, 3)``: ``(tri, region, params (5, M),
        squared distance (M,))``."""
        M = len(P)
        tri, reg = np.empty(M, dtype=np.int64), np.empty(M, dtype=np.int64)
        par, best2 = np.empty((5, M)), np.empty(M)
        self._kernels.table_best(np.ascontiguousarray(P), np.ascontiguousarray(idx), self._consts_t, tri, reg,
                                 par, best2)
        return tri, reg, par, best2

    def _query_kd(self, P: np.ndarray):
        """Points off the grid, exact by the KD path: ``(tri, region, params (5, M))``; InputError for a point
        beyond ``max_query_distance`` (checked here, off the hot path)."""
        d = P - self.centre
        dist = np.hypot(np.hypot(d[:, 0], d[:, 1]), d[:, 2])            # no overflow of |d|^2
        far = np.flatnonzero(~(dist <= self.max_query_distance))
        if len(far):
            i = int(far[0])
            raise InputError(f"query point {P[i].tolist()} (mesh frame) is {float(dist[i]):.6g} m from the "
                             f"mesh centre, beyond the supported {self.max_query_distance:.6g} m "
                             "(1e6 x the mesh's bounding-box diagonal, at least 1e6 m)",
                             "points", P[i].tolist(), "too_far", self.max_query_distance)
        M = len(P)
        cd, proxy = self._tree.query(P, k=self.k)
        cd, idx = cd.reshape(M, self.k), self._proxy_tri[proxy.reshape(M, self.k)]
        tri, reg, par, best2 = self._table_best(P, idx)
        if self.k < len(self._proxy_tri):
            # a triangle without a proxy among the k nearest is >= cd[:, -1] - h away
            dbest = np.sqrt(best2) * (1.0 + 1e-9) + self._slack
            ids = np.nonzero(cd[:, -1] - self.cover_radius < dbest)[0]
            if len(ids):        # exact by a ball query of radius dbest + h
                owner, cand = self._ball_pairs(P[ids], dbest[ids] + self.cover_radius)
                d2, region, prm = self._evaluate_pairs(P[ids], owner, cand)
                order = np.lexsort((d2, owner))
                first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
                # the ball contains the first-round winner, so every point has a pair
                tri[ids], reg[ids], par[:, ids] = cand[first], region[first], prm[:, first]
        return tri, reg, par


def projected_area(vertices: Any, triangles: Any, normal: Sequence[float]) -> float:
    """Area (m²) of the mesh's shadow along ``normal``: the exact union of the projected triangles
    (shapely; the seed's ``Trimesh.projected(normal).area`` without padding).  ValueError: bad mesh/normal."""
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
