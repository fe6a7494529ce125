"""Compiled (numba) closest-triangle query vs brute force.

On every point set the query must match a brute force over ALL triangles computed with
trimesh's own exact point-triangle routine: the distance to the mesh, and the distance to the
triangle the query picked (so the chosen triangle itself is a closest one, not just the reported
distance); its weights must reproduce its closest point.

Point sets: random surface samples with offsets from 0 to far off the mesh, exact vertices,
points on edges, and meshes with degenerate (collinear / coincident / zero-length-edge)
triangles; with the near-surface grid and with the KD-tree path alone.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import trimesh

from vsf_sensor_ros.sensor.mesh import ClosestTriangleQuery

from vsf_sensor_ros.sensor import _mesh_kernels

REPO = Path(__file__).resolve().parents[2]
PUNYO_PLY = REPO / ".." / "shared" / "fixtures" / "kinova_punyo" / "punyo_mesh_complete.ply"


def _brute(V: np.ndarray, F: np.ndarray, pts: np.ndarray):
    """``(M, T)`` distances from every point to every triangle (trimesh's exact routine)."""
    tris = V[F]
    out = np.empty((len(pts), len(tris)))
    for i0 in range(0, len(pts), 40):
        chunk = pts[i0:i0 + 40]
        q = np.repeat(chunk, len(tris), axis=0)
        cp = trimesh.triangles.closest_point(np.tile(tris, (len(chunk), 1, 1)), q)
        out[i0:i0 + 40] = np.linalg.norm(cp - q, axis=1).reshape(len(chunk), len(tris))
    return out


_QUERIES = {}


# how points are answered: near-surface grid (+ off-grid KD-tree path), no grid (KD-tree path)
PATHS = {"grid": {"grid": True}, "kd": {"grid": False}}


def _query(V: np.ndarray, F: np.ndarray, path: str) -> ClosestTriangleQuery:
    """A query object, built once per mesh and path (the grid takes ~0.5 s to build)."""
    key = (V.tobytes(), F.tobytes(), path)
    if key not in _QUERIES:
        _QUERIES[key] = ClosestTriangleQuery(V, F, **PATHS[path])
    return _QUERIES[key]


def _check_against_brute_force(V: np.ndarray, F: np.ndarray, pts: np.ndarray, path: str = "grid") -> None:
    a = _query(V, F, path).query(pts)
    # == brute force over all triangles: the distance, and the picked triangle is a closest one
    D = _brute(V, F, pts)
    scale = max(1.0, float(np.abs(V).max()))
    np.testing.assert_allclose(a.distance, D.min(axis=1), atol=1e-12 * scale, rtol=0)
    np.testing.assert_allclose(D[np.arange(len(pts)), a.triangle], D.min(axis=1), atol=1e-12 * scale, rtol=0)
    # weights finite, in [0, 1], summing to 1, reproducing the closest point
    assert np.all(np.isfinite(a.weights)) and np.all(a.weights >= 0.0) and np.all(a.weights <= 1.0)
    np.testing.assert_allclose(a.weights.sum(axis=1), 1.0, atol=1e-12)
    corners = V[F[a.triangle]]
    np.testing.assert_allclose(np.einsum("mj,mjk->mk", a.weights, corners), a.point, atol=1e-12 * scale)


def _bumpy_sphere():
    rng = np.random.default_rng(5)
    s = trimesh.creation.icosphere(subdivisions=3, radius=0.05)
    return s.vertices * (1.0 + 0.1 * rng.random((len(s.vertices), 1))), np.asarray(s.faces)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("offset", [0.0, 1e-4, 3e-3, 0.02, 0.5])
def test_random_points_near_and_far_agree_with_brute_force(offset, path):
    V, F = _bumpy_sphere()
    rng = np.random.default_rng(int(offset * 1e4) + 1)
    surf, _ = trimesh.sample.sample_surface(trimesh.Trimesh(V, F, process=False), 150, seed=9)
    _check_against_brute_force(V, F, surf + offset * rng.standard_normal(surf.shape), path=path)


def test_exact_vertices_and_points_on_edges():
    V, F = _bumpy_sphere()
    rng = np.random.default_rng(3)
    e = F[rng.integers(0, len(F), 100)]
    t = rng.random((100, 1))
    on_edges = (1 - t) * V[e[:, 0]] + t * V[e[:, 1]]
    midpoints = 0.5 * (V[e[:, 1]] + V[e[:, 2]])
    # a point pushed off a vertex along its position vector: the closest point is that vertex
    off_vertex = V[:80] * 1.05
    _check_against_brute_force(V, F, np.concatenate([V[:100], on_edges, midpoints, off_vertex]))


def test_degenerate_triangles_next_to_real_ones():
    # unit square (two triangles) plus: a collinear triangle along the top edge, a triangle with
    # all corners at (2, 2, 0), and a zero-length-edge triangle from (0, 0, 0) to (-1, 0, 0)
    V = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                  [0.5, 1, 0], [2, 2, 0], [-1, 0, 0], [0.25, 1.0, 0.0]])
    F = np.array([[0, 1, 2], [0, 2, 3], [3, 4, 2], [5, 5, 5], [0, 0, 6], [3, 7, 4]])
    rng = np.random.default_rng(4)
    pts = np.concatenate([
        rng.uniform(-2.0, 3.0, (300, 3)),                     # all around, on and off the plane
        rng.uniform(-2.0, 3.0, (100, 3)) * [1, 1, 0],         # in the plane
        V,                                                    # exactly on every corner
        [[0.5, 1.0, 0.3], [2.0, 2.0, 1.0], [-0.5, 0.0, 0.2], [-2.0, 0.0, 0.0]],
    ])
    for path in PATHS:
        _check_against_brute_force(V, F, pts, path=path)


def test_real_punyo_mesh_near_and_off_the_surface():
    if not PUNYO_PLY.exists():
        pytest.skip(f"shared fixture {PUNYO_PLY} absent")
    m = trimesh.load(str(PUNYO_PLY), process=False)
    V, F = np.asarray(m.vertices), np.asarray(m.faces)
    rng = np.random.default_rng(12)
    surf, _ = trimesh.sample.sample_surface(m, 300, seed=12)
    scales = np.repeat([0.0, 2e-4, 2e-3, 2e-2], 75)[:, None]
    pts = surf + scales * rng.standard_normal(surf.shape)
    _check_against_brute_force(V, F, pts)
    _check_against_brute_force(V, F, pts[150:], path="kd")              # the off-surface half, KD path too


def test_queries_compile_nothing_after_construction():
    # the kernels are compiled (or loaded from the cache) when the query object is built, with the
    # argument types the queries use: no query, on any path, may trigger a new specialisation
    V, F = _bumpy_sphere()
    q = ClosestTriangleQuery(V, F)
    kernels = (_mesh_kernels.grid_best, _mesh_kernels.table_best, _mesh_kernels.pairs_eval,
               _mesh_kernels.finish)
    before = [len(k.signatures) for k in kernels]
    assert all(n >= 1 for n in before)
    rng = np.random.default_rng(0)
    pts = np.concatenate([V[:50] * 1.001, V[:50] * 3.0, rng.normal(size=(20, 3))])   # grid, KD, refine
    ro = pts.copy()
    ro.setflags(write=False)                                  # a read-only input array too
    q.query(pts)
    q.query(ro)
    q.query(np.asfortranarray(pts))
    ClosestTriangleQuery(V, F, grid=False).query(pts)
    assert [len(k.signatures) for k in kernels] == before


def test_dense_force_sensor_calls_compile_nothing_after_attach():
    import torch

    from vsf_sensor_ros.sensor import ContactState, PunyoDenseForceSensor, SimState
    V, F = _bumpy_sphere()
    s = PunyoDenseForceSensor("f", "punyo")
    s.attach((V, F))
    kernels = (_mesh_kernels.grid_best, _mesh_kernels.finish, _mesh_kernels.dense_force_outputs)
    before = [len(k.signatures) for k in kernels]
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for elems in (None, torch.tensor([-1, 3, -1]), torch.tensor([1, 3, 2], dtype=torch.int32)):
            st = SimState({"punyo": torch.eye(4, dtype=dtype), "o": torch.eye(4, dtype=dtype)}, {},
                          {("punyo", "o"): ContactState(torch.tensor(V[:3] * 1.01, dtype=dtype),
                                                        torch.ones(3, 3, dtype=dtype), elems)})
            s.predict_with_jacobian(st)
            s.predict(st)
            s.sparse_force_jacobian(st)
    assert [len(k.signatures) for k in kernels] == before


def test_kernels_work_without_any_writable_cache_location(tmp_path):
    # numba raises at decoration when no cache location is writable (a read-only install and no
    # writable home); the kernels must then compile uncached instead of failing the import.
    # Simulated for a copy of the package: its __pycache__ is a file, and NUMBA_CACHE_DIR, HOME
    # and XDG_CACHE_HOME point below /dev/null, so every numba cache locator fails.
    shutil.copytree(REPO / "vsf_sensor_ros", tmp_path / "vsf_sensor_ros",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "vsf_sensor_ros" / "sensor" / "__pycache__").write_text("not a directory")
    (tmp_path / "probe.py").write_text("import numba\n\n\n@numba.njit(cache=True)\ndef f(x):\n"
                                       "    return x\n")
    (tmp_path / "__pycache__").write_text("not a directory")
    code = textwrap.dedent("""
        try:
            import probe                   # a plain cached njit: must fail in this environment
            print("probe cached")
        except RuntimeError:
            print("probe failed")
        import numpy as np
        from vsf_sensor_ros.sensor.mesh import ClosestTriangleQuery
        q = ClosestTriangleQuery(np.array([[0., 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
        r = q.query(np.array([[0.2, 0.3, 0.5]]))
        print(json.dumps(r.weights.tolist()))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR="/dev/null/numba", HOME="/dev/null",
               XDG_CACHE_HOME="/dev/null/cache", PYTHONPATH=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    probe, weights = out.stdout.strip().splitlines()
    assert probe == "probe failed"
    # projection of (0.2, 0.3, 0.5) onto z = 0 is (0.2, 0.3): weights (1 - 0.2 - 0.3, 0.2, 0.3)
    np.testing.assert_allclose(json.loads(weights), [[0.5, 0.2, 0.3]], atol=1e-15)
    assert not list(tmp_path.rglob("*.nbi"))                  # nothing was cached anywhere
