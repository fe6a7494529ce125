"""Numba kernels of :class:`~vsf_sensor_ros.sensor.mesh.ClosestTriangleQuery` and the dense force, all
compiled (or loaded from the cache) at import.  Ties keep the first minimum; early exits skip only
candidates strictly farther than the best."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

__all__ = ["dense_force_outputs", "finish", "grid_best", "pairs_eval", "table_best", "warm_up"]


def _jit(fn: Callable) -> Callable:
    """``njit(cache=True)`` when numba finds a writable cache location, else plain ``njit``."""
    try:
        return njit(cache=True, nogil=True)(fn)
    except RuntimeError:                       # "cannot cache function ...: no locator available"
        return njit(nogil=True)(fn)


@_jit
def _eval_one(px: float, py: float, pz: float, CT: np.ndarray, j: int):
    """Squared distance, region and ``(v, w, t, s, r)`` of point ``p`` to triangle ``j``."""
    apx, apy, apz = px - CT[j, 0], py - CT[j, 1], pz - CT[j, 2]
    pp = apx * apx + apy * apy + apz * apz
    d20 = apx * CT[j, 3] + apy * CT[j, 4] + apz * CT[j, 5]
    d21 = apx * CT[j, 6] + apy * CT[j, 7] + apz * CT[j, 8]
    d00, d01, d11, dbc = CT[j, 9], CT[j, 10], CT[j, 11], CT[j, 12]
    v = (d11 * d20 - d01 * d21) * CT[j, 13]
    w = (d00 * d21 - d01 * d20) * CT[j, 13]
    best = math.inf
    if min(v, w) >= 0.0 and v + w <= 1.0:
        best = pp - (v * d20 + w * d21)
    region = 0
    t = min(max(d20 * CT[j, 14], 0.0), 1.0)
    d = pp - t * (2.0 * d20 - t * d00)
    if d < best:
        best, region = d, 1
    s = min(max(d21 * CT[j, 15], 0.0), 1.0)
    d = pp - s * (2.0 * d21 - s * d11)
    if d < best:
        best, region = d, 2
    bpbc = d21 - d20 - d01 + d00
    r = min(max(bpbc * CT[j, 16], 0.0), 1.0)
    d = pp - 2.0 * d20 + d00 - r * (2.0 * bpbc - r * dbc)
    if d < best:
        best, region = d, 3
    return max(best, 0.0), region, v, w, t, s, r


@_jit
def _best_in_row(P: np.ndarray, i: int, table: np.ndarray, lower: np.ndarray, row: int, CT: np.ndarray,
                 tri: np.ndarray, reg: np.ndarray, par: np.ndarray, best2: np.ndarray) -> None:
    """Closest of the candidates ``table[row]`` to ``P[i]`` into slot ``i``, stopping at the first lower bound
    (``lower[row]``, ascending) above the best; padding repeats the first candidate with bound ``inf``."""
    px, py, pz = P[i, 0], P[i, 1], P[i, 2]
    first = table[row, 0]
    bd = math.inf
    for k in range(table.shape[1]):
        c = table[row, k]
        if k > 0 and (c == first or (lower[row, k] > 0.0 and lower[row, k] * lower[row, k] > bd)):
            break
        d2, rg, v, w, t, s, r = _eval_one(px, py, pz, CT, c)
        if k == 0 or d2 < bd:
            bd = d2
            tri[i], reg[i] = c, rg
            par[0, i], par[1, i], par[2, i], par[3, i], par[4, i] = v, w, t, s, r
    best2[i] = bd


@_jit
def grid_best(P: np.ndarray, lo: np.ndarray, cell: float, shape: np.ndarray, grid_row: np.ndarray,
              narrow: np.ndarray, wide: np.ndarray, narrow_lower: np.ndarray, wide_lower: np.ndarray,
              CT: np.ndarray, tri: np.ndarray, reg: np.ndarray, par: np.ndarray, best2: np.ndarray) -> int:
    """Grid path for every point of ``P (M, 3)``; returns how many are off the grid (``tri = -1``, every
    non-finite point among them)."""
    s0, s1, s2 = shape[0], shape[1], shape[2]
    # three passes, so that the points' cache misses overlap (the tables outgrow the caches): 1. grid rows
    # into tri (tested as floats: a non-finite point is off the grid), 2. a touch of each first candidate's
    # bound and constants (into best2, overwritten), 3. the search
    for i in range(P.shape[0]):
        x, y, z = (P[i, 0] - lo[0]) / cell, (P[i, 1] - lo[1]) / cell, (P[i, 2] - lo[2]) / cell
        on = x >= 0.0 and y >= 0.0 and z >= 0.0 and x < s0 and y < s1 and z < s2
        tri[i] = grid_row[(int(x) * s1 + int(y)) * s2 + int(z)] if on else -1
    missing = 0
    for touch in (True, False):
        for i in range(P.shape[0]):
            row = tri[i]
            if row == -1:
                missing += 0 if touch else 1
                continue
            table, lower, r = (narrow, narrow_lower, row) if row >= 0 else (wide, wide_lower, -2 - row)
            if touch:
                best2[i] = lower[r, 0] + CT[table[r, 0], 0] + CT[table[r, 0], 8] + CT[table[r, 0], 16]
            else:
                _best_in_row(P, i, table, lower, r, CT, tri, reg, par, best2)
    return missing


@_jit
def table_best(P: np.ndarray, idx: np.ndarray, CT: np.ndarray, tri: np.ndarray, reg: np.ndarray,
               par: np.ndarray, best2: np.ndarray) -> None:
    """Closest of candidates ``idx[i] (K,)`` for each point ``P[i]`` (no padding in ``idx``)."""
    for i in range(P.shape[0]):
        px, py, pz = P[i, 0], P[i, 1], P[i, 2]
        bd = math.inf
        for k in range(idx.shape[1]):
            c = idx[i, k]
            d2, rg, v, w, t, s, r = _eval_one(px, py, pz, CT, c)
            if k == 0 or d2 < bd:
                bd = d2
                tri[i], reg[i] = c, rg
                par[0, i], par[1, i], par[2, i], par[3, i], par[4, i] = v, w, t, s, r
        best2[i] = bd


@_jit
def pairs_eval(P: np.ndarray, owner: np.ndarray, cand: np.ndarray, CT: np.ndarray, d2: np.ndarray,
               region: np.ndarray, prm: np.ndarray) -> None:
    """Squared distance, region and ``(5, n)`` parameters of each pair ``(P[owner[n]], cand[n])``."""
    for n in range(owner.shape[0]):
        i = owner[n]
        dd, rg, v, w, t, s, r = _eval_one(P[i, 0], P[i, 1], P[i, 2], CT, cand[n])
        d2[n], region[n] = dd, rg
        prm[0, n], prm[1, n], prm[2, n], prm[3, n], prm[4, n] = v, w, t, s, r


@_jit
def _weights(rg: int, par: np.ndarray, i: int):
    """Barycentric weights of slot ``i`` from its region and parameters ``par (5, M)``."""
    if rg == 0:
        return max(1.0 - par[0, i] - par[1, i], 0.0), par[0, i], par[1, i]
    if rg == 1:
        return 1.0 - par[2, i], par[2, i], 0.0
    if rg == 2:
        return 1.0 - par[3, i], 0.0, par[3, i]
    return 0.0, 1.0 - par[4, i], par[4, i]


@_jit
def finish(P: np.ndarray, tri: np.ndarray, reg: np.ndarray, par: np.ndarray, V: np.ndarray,
           F: np.ndarray, weights: np.ndarray, point: np.ndarray, dist: np.ndarray) -> None:
    """Barycentric weights ``(M, 3)``, closest point ``(M, 3)`` and distance ``(M,)`` per point."""
    for i in range(P.shape[0]):
        w0, w1, w2 = _weights(reg[i], par, i)
        weights[i, 0], weights[i, 1], weights[i, 2] = w0, w1, w2
        a, b, c = F[tri[i], 0], F[tri[i], 1], F[tri[i], 2]
        acc = 0.0
        for k in range(3):
            x = w0 * V[a, k] + w1 * V[b, k] + w2 * V[c, k]
            point[i, k] = x
            e = P[i, k] - x
            acc += e * e
        dist[i] = math.sqrt(acc)


@_jit
def dense_force_outputs(local: np.ndarray, pv_c: np.ndarray, pv_v: np.ndarray, b_c: np.ndarray,
                        tri: np.ndarray, reg: np.ndarray, par: np.ndarray, F: np.ndarray, Rt: np.ndarray,
                        out: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                        jac: bool) -> None:
    """Punyo dense-force prediction ``out (3V,)`` (zeros on entry) and, with ``jac``, COO entries
    ``(3 v + d, 3 c + e, w Rt[d, e])`` (``9 n_pv + 27 n_b``): ``local (N, 3)`` rows ``Rᵀ f_c``; per-vertex
    contacts ``pv_c`` on ``pv_v`` first, then barycentric ``b_c`` on the corners ``F[tri]`` of their closest
    triangles, weights as :func:`finish` of ``reg`` / ``par``."""
    k = 0
    for n in range(pv_c.shape[0]):
        c, v = pv_c[n], pv_v[n]
        for d in range(3):
            out[3 * v + d] += local[c, d]
        if jac:
            for d in range(3):
                for e in range(3):
                    rows[k], cols[k], vals[k] = 3 * v + d, 3 * c + e, Rt[d, e]
                    k += 1
    for n in range(b_c.shape[0]):
        c = b_c[n]
        w3 = _weights(reg[n], par, n)
        for j in range(3):
            v, w = F[tri[n], j], w3[j]
            for d in range(3):
                out[3 * v + d] += w * local[c, d]
            if jac:
                for d in range(3):
                    for e in range(3):
                        rows[k], cols[k], vals[k] = 3 * v + d, 3 * c + e, w * Rt[d, e]
                        k += 1


def warm_up() -> None:
    """Compile (or load from the cache) every kernel for exactly the argument types ``mesh.py`` passes."""
    V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    F = np.array([[0, 1, 2]], dtype=np.int64)
    V.setflags(write=False)                    # the query's mesh arrays are read-only (another
    F.setflags(write=False)                    # numba type than writable ones)
    CT = np.zeros((1, 18))
    CT[0, 3], CT[0, 7], CT[0, 9], CT[0, 11], CT[0, 12] = 1.0, 1.0, 1.0, 1.0, 2.0
    CT[0, 13:17] = 1.0, 1.0, 1.0, 0.5
    P = np.array([[0.2, 0.2, 0.1]])
    one, low = np.zeros((1, 1), dtype=np.int64), np.zeros((1, 1))
    tri, reg, par, best2 = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((5, 1)), low[0]
    grid_best(P, np.zeros(3), 1.0, np.ones(3, dtype=np.int64), np.zeros(1, dtype=np.int64), one, one,
              low, low, CT, tri, reg, par, best2)
    table_best(P, one, CT, tri, reg, par, best2)
    pairs_eval(P, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), CT, best2, reg, par)
    finish(P, tri, reg, par, V, F, np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1))
    for jac in (False, True):
        dense_force_outputs(np.zeros((1, 3)), reg, reg, reg, tri, reg, par, F, np.zeros((3, 3)), np.zeros(3),
                            np.zeros(36, dtype=np.int64), np.zeros(36, dtype=np.int64), np.zeros(36), jac)


warm_up()                                     # at import: a query object never compiles on use
