"""Timings of the ROS-free Punyo models against a straightforward dense reference.

Plain functions (a harness calls them): each returns per-call seconds for
``predict`` + sparse Jacobian of the library and for a dense reference of the
same formulas written the way the seed writes them (trimesh closest point,
a dense ``(N, V)`` weight matrix, dense ``(3V, N, 3)`` / ``(1, N, 3)``
Jacobians), plus the bytes of the sparse and dense Jacobians.  The reference
numbers are checked equal to the library's before timing.

``python -m benchmarks.bench_library`` prints a table for 10 / 100 / 1000
contacts on the real Punyo mesh (or an icosphere when the shared fixture is
absent), on one thread.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import torch
import trimesh

from benchmarks import assets
from vsf_sensor_ros.sensor import (ClosestTriangleQuery, ContactState, PunyoDenseForceSensor,
                                   PunyoPressureSensor, SimState)

MeshVF = Tuple[np.ndarray, np.ndarray]


def punyo_mesh() -> Optional[MeshVF]:
    """The real Punyo membrane ``(V, F)`` from the assets (:mod:`benchmarks.assets`), or None."""
    d = assets.kinova_punyo_dir()
    if d is None:
        return None
    m = trimesh.load(str(d / "punyo_mesh_complete.ply"), process=False)
    return np.asarray(m.vertices), np.asarray(m.faces)


def fallback_mesh() -> MeshVF:
    """An icosphere of similar size (642 vertices) when the fixture is absent."""
    m = trimesh.creation.icosphere(subdivisions=3, radius=0.05)
    return np.asarray(m.vertices), np.asarray(m.faces)


def per_call_seconds(fn: Callable[[], object], min_time: float = 0.2, batches: int = 5,
                     clock: Callable[[], float] = time.process_time) -> float:
    """Median over ``batches`` of the mean time of ``fn()``, each batch running >= ``min_time / batches``.

    ``clock`` defaults to the process's CPU time: for this single-threaded code it equals
    wall time on an idle core, and it stays meaningful on a shared, loaded machine.
    Pass ``time.perf_counter`` for wall time.
    """
    fn()                                                     # warm-up (caches, lazy imports)
    n, t0 = 0, clock()
    while clock() - t0 < min_time / batches / 4 or n == 0:
        fn()
        n += 1
    per = max((clock() - t0) / n, 1e-9)
    reps = max(1, int(min_time / batches / per))
    times = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(reps):
            fn()
        times.append((clock() - t0) / reps)
    return float(np.median(times))


def _scenario(mesh_VF: MeshVF, n_contacts: int, mode: str, dtype: torch.dtype, seed: int):
    """World pose, contact points near the surface, forces and elements for ``mode``."""
    rng = np.random.default_rng(seed)
    V, F = mesh_VF
    mesh = trimesh.Trimesh(V, F, process=False)
    local, _ = trimesh.sample.sample_surface(mesh, n_contacts, seed=seed)
    local = local + 2e-4 * rng.standard_normal(local.shape)
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    R = q * np.sign(np.diag(r))
    R = R if np.linalg.det(R) > 0 else -R
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, rng.uniform(-0.5, 0.5, 3)
    pts = local @ R.T + T[:3, 3]
    forces = rng.standard_normal((n_contacts, 3))
    if mode == "barycentric":
        elems = np.full(n_contacts, -1)
    elif mode == "per_vertex":
        elems = rng.integers(0, len(V), n_contacts)
    elif mode == "mixed":
        elems = np.where(rng.random(n_contacts) < 0.5, rng.integers(0, len(V), n_contacts), -1)
    else:
        raise ValueError(f"mode must be 'barycentric', 'per_vertex' or 'mixed', got {mode!r}")
    state = SimState({"punyo": torch.tensor(T, dtype=dtype), "object": torch.eye(4, dtype=dtype)}, {},
                     {("punyo", "object"): ContactState(torch.tensor(pts, dtype=dtype),
                                                        torch.tensor(forces, dtype=dtype),
                                                        torch.tensor(elems))})
    return mesh, T, pts, forces, elems, state


def reference_dense_force(mesh: trimesh.Trimesh, T: np.ndarray, pts: np.ndarray, forces: np.ndarray,
                          elems: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Seed-style dense force model: ``(prediction (3V,), Jacobian (3V, N, 3))``.

    Closest point by ``trimesh.proximity.closest_point``, barycentric weights by
    ``trimesh.triangles.points_to_barycentric``, a dense ``(N, V)`` weight matrix
    and a dense Jacobian filled per (d, e) as the seed does.
    """
    V = len(mesh.vertices)
    R = T[:3, :3]
    W = np.zeros((len(pts), V))
    pv = elems >= 0
    W[np.nonzero(pv)[0], elems[pv]] = 1.0
    bary = np.nonzero(~pv)[0]
    if len(bary):
        local = (pts[bary] - T[:3, 3]) @ R
        _, _, tri = trimesh.proximity.closest_point(mesh, local)
        w = trimesh.triangles.points_to_barycentric(mesh.triangles[tri], local)
        np.add.at(W, (np.repeat(bary, 3), mesh.faces[tri].reshape(-1)), w.reshape(-1))
    pred = (W.T @ (forces @ R)).reshape(-1)
    J = np.zeros((3 * V, len(pts), 3))
    for d in range(3):
        for e in range(3):
            J[d::3, :, e] = R[e, d] * W.T
    return pred, J


def bench_dense_force(mesh_VF: MeshVF, n_contacts: int, mode: str = "barycentric",
                      dtype: torch.dtype = torch.float64, seed: int = 0,
                      min_time: float = 0.2) -> Dict[str, float]:
    """Per-call seconds of the dense-force model, library vs dense reference.

    Returns:
        ``library_s``: ``predict_with_jacobian`` (one closest-point search);
        ``library_separate_s``: ``predict`` then ``sparse_force_jacobian``;
        ``reference_s``: :func:`reference_dense_force`;
        ``query_s``: the library's closest-triangle query alone (grid + KD paths);
        ``query_kd_s``: the same query with the near-surface grid disabled;
        ``trimesh_query_s``: ``trimesh.proximity.closest_point`` alone;
        ``sparse_bytes`` / ``dense_bytes``: Jacobian storage (COO vs dense float64);
        ``max_abs_diff``: library vs reference prediction (sanity).
    """
    mesh, T, pts, forces, elems, state = _scenario(mesh_VF, n_contacts, mode, dtype, seed)
    sensor = PunyoDenseForceSensor("punyo_force", "punyo")
    sensor.attach(mesh_VF)
    pred, J = sensor.predict_with_jacobian(state)
    ref_pred, ref_J = reference_dense_force(mesh, T, pts, forces, elems)
    query = ClosestTriangleQuery(*mesh_VF)
    query_kd = ClosestTriangleQuery(*mesh_VF, grid=False)
    local = (pts - T[:3, 3]) @ T[:3, :3]
    return {
        "library_s": per_call_seconds(lambda: sensor.predict_with_jacobian(state), min_time),
        "library_separate_s": per_call_seconds(
            lambda: (sensor.predict(state), sensor.sparse_force_jacobian(state)), min_time),
        "reference_s": per_call_seconds(lambda: reference_dense_force(mesh, T, pts, forces, elems), min_time),
        "query_s": per_call_seconds(lambda: query.query(local), min_time),
        "query_kd_s": per_call_seconds(lambda: query_kd.query(local), min_time),
        "trimesh_query_s": per_call_seconds(lambda: trimesh.proximity.closest_point(mesh, local), min_time),
        "sparse_bytes": float(J.nbytes()),
        "dense_bytes": float(ref_J.nbytes),
        "max_abs_diff": float(np.max(np.abs(pred.double().numpy() - ref_pred), initial=0.0)),
    }


def reference_pressure(base_area: float, n_local: np.ndarray, T: np.ndarray, forces: np.ndarray,
                       tare: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """Seed-style pressure: ``(prediction (1,), dense Jacobian (1, N, 3))``."""
    n_world = T[:3, :3] @ n_local
    pred = np.array([tare - (forces @ n_world).sum() / base_area])
    J = np.tile(-(n_world / base_area), (1, len(forces), 1))
    return pred, J


def bench_pressure(mesh_VF: MeshVF, n_contacts: int, dtype: torch.dtype = torch.float64, seed: int = 0,
                   min_time: float = 0.2) -> Dict[str, float]:
    """Per-call seconds of ``predict`` + ``sparse_force_jacobian`` of the pressure model vs
    :func:`reference_pressure`, with Jacobian bytes (keys as :func:`bench_dense_force`)."""
    mesh, T, pts, forces, elems, state = _scenario(mesh_VF, n_contacts, "barycentric", dtype, seed)
    sensor = PunyoPressureSensor("punyo_pressure", "punyo")
    sensor.attach(mesh_VF)
    pred = sensor.predict(state)
    J = sensor.sparse_force_jacobian(state)
    n_local = sensor.base_normal_local.double().numpy()       # the seed keeps it as a tensor
    ref_pred, ref_J = reference_pressure(sensor.base_area, n_local, T, forces)
    return {
        "library_s": per_call_seconds(lambda: (sensor.predict(state), sensor.sparse_force_jacobian(state)),
                                      min_time),
        "reference_s": per_call_seconds(
            lambda: reference_pressure(sensor.base_area, n_local, T, forces), min_time),
        "sparse_bytes": float(J.nbytes()),
        "dense_bytes": float(ref_J.nbytes),
        "max_abs_diff": float(np.max(np.abs(pred.double().numpy() - ref_pred))),
    }


def main() -> None:
    """Print the table for 10 / 100 / 1000 contacts (one torch thread)."""
    torch.set_num_threads(1)
    mesh = punyo_mesh()
    label = "real Punyo mesh (390 vertices)"
    if mesh is None:
        mesh, label = fallback_mesh(), "icosphere (642 vertices; Punyo fixture absent)"
    print(f"mesh: {label}")
    print("CPU ms per call (one thread); library = predict + sparse Jacobian, reference = seed-style dense")
    print(f"{'model':<28}{'N':>6}{'library ms':>12}{'separate ms':>13}{'reference ms':>14}"
          f"{'query ms':>10}{'kd-only ms':>12}{'trimesh q ms':>14}{'sparse kB':>11}{'dense kB':>11}")
    for n in (10, 100, 1000):
        for mode in ("barycentric", "per_vertex"):
            r = bench_dense_force(mesh, n, mode)
            print(f"{'dense force ' + mode:<28}{n:>6}{r['library_s'] * 1e3:>12.3f}"
                  f"{r['library_separate_s'] * 1e3:>13.3f}{r['reference_s'] * 1e3:>14.3f}"
                  f"{r['query_s'] * 1e3:>10.3f}{r['query_kd_s'] * 1e3:>12.3f}"
                  f"{r['trimesh_query_s'] * 1e3:>14.3f}"
                  f"{r['sparse_bytes'] / 1e3:>11.1f}{r['dense_bytes'] / 1e3:>11.1f}")
        r = bench_pressure(mesh, n)
        print(f"{'pressure':<28}{n:>6}{r['library_s'] * 1e3:>12.3f}{'':>13}{r['reference_s'] * 1e3:>14.3f}"
              f"{'':>36}{r['sparse_bytes'] / 1e3:>11.1f}{r['dense_bytes'] / 1e3:>11.1f}")


if __name__ == "__main__":
    main()
