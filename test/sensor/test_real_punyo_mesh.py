"""The Punyo models on the real membrane mesh (shared fixture, OpenVSF's Kinova + Punyo).

Independent references: the base outline is close to an ellipse whose semi-axes are half
the mesh's x / y extents (a = 0.05262 m, b = 0.04 m: pi a b = 6.61e-3 m^2), and the shadow
of a bubble is convex, so its area equals the 2-D convex hull of the projected vertices.
(The fixture README's "about 8e-3 m^2" is a rough figure; the outline's ellipse and hull
both give 6.60e-3 m^2.)
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import trimesh

from vsf_sensor_ros.sensor import (ClosestTriangleQuery, ContactState, PunyoDenseForceSensor,
                                   PunyoPressureSensor, SimState)

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "kinova_punyo"
PLY = FIXTURES / "punyo_mesh_complete.ply"
pytestmark = pytest.mark.skipif(not PLY.exists(), reason=f"shared fixture {PLY} absent (user clone)")


@pytest.fixture(scope="module")
def mesh():
    return trimesh.load(str(PLY), process=False)


@pytest.fixture(scope="module")
def punyo_pose():
    """World pose of the Punyo frame: an end-effector pose composed with the fixture's punyo2ee."""
    ee = np.eye(4)
    c, s = math.cos(0.7), math.sin(0.7)
    ee[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    ee[:3, 3] = [0.4, -0.1, 0.3]
    p2ee = np.array(json.loads((FIXTURES / "punyo2end_effector_transform.json").read_text())["punyo2ee"])
    return ee @ p2ee


def test_mesh_has_390_vertices_and_776_triangles(mesh):
    assert mesh.vertices.shape == (390, 3) and mesh.faces.shape == (776, 3)


def test_base_area_matches_the_ellipse_of_the_outline_and_the_convex_hull(mesh):
    from scipy.spatial import ConvexHull
    s = PunyoPressureSensor("pressure", "punyo")
    s.attach(mesh)
    ext = mesh.vertices.max(0) - mesh.vertices.min(0)
    ellipse = math.pi * (ext[0] / 2) * (ext[1] / 2)
    assert s.base_area == pytest.approx(ellipse, rel=0.01)
    assert s.base_area == pytest.approx(ConvexHull(mesh.vertices[:, :2]).volume, rel=1e-9)


def test_klampt_rigid_object_loaded_from_the_ply_gives_the_same_models(mesh):
    klampt = pytest.importorskip("klampt")
    world = klampt.WorldModel()
    obj = world.makeRigidObject("punyo")
    geom = klampt.Geometry3D()
    assert geom.loadFile(str(PLY))
    obj.geometry().set(geom)
    a, b = PunyoPressureSensor("p", "punyo"), PunyoPressureSensor("p", "punyo")
    a.attach(obj)
    b.attach(mesh)
    assert a.base_area == pytest.approx(b.base_area, rel=1e-12)
    d = PunyoDenseForceSensor("f", "punyo")
    d.attach(obj)
    assert len(d.measurement_names()) == 3 * 390 and d.measurement_names()[-1] == "p389_z"


def test_closest_points_match_brute_force_near_the_real_surface(mesh):
    rng = np.random.default_rng(2)
    surf, _ = trimesh.sample.sample_surface(mesh, 200, seed=4)
    pts = surf + 0.004 * rng.standard_normal(surf.shape)
    r = ClosestTriangleQuery(mesh.vertices, mesh.faces).query(pts)
    tris = mesh.triangles
    cp = trimesh.triangles.closest_point(np.tile(tris, (len(pts), 1, 1)), np.repeat(pts, len(tris), axis=0))
    brute = np.linalg.norm(cp - np.repeat(pts, len(tris), axis=0), axis=1).reshape(len(pts), -1).min(1)
    np.testing.assert_allclose(r.distance, brute, atol=1e-12)
    np.testing.assert_allclose(r.weights.sum(1), 1.0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dense_force_on_the_real_mesh_conserves_force_and_matches_its_jacobian(mesh, punyo_pose, dtype):
    rng = np.random.default_rng(0)
    local, _ = trimesh.sample.sample_surface(mesh, 100, seed=5)
    local = local + 5e-4 * rng.standard_normal(local.shape)
    T = punyo_pose
    pts = torch.tensor(local @ T[:3, :3].T + T[:3, 3], dtype=dtype)
    f = torch.tensor(rng.standard_normal((100, 3)), dtype=dtype)
    elems = torch.full((100,), -1)
    elems[::10] = torch.arange(0, 390, 39)                     # 10 per-vertex contacts
    st = SimState({"punyo": torch.tensor(T, dtype=dtype), "object": torch.eye(4, dtype=dtype)}, {},
                  {("punyo", "object"): ContactState(pts, f, elems)})
    s = PunyoDenseForceSensor("punyo_force", "punyo")
    s.attach(mesh)
    out, J = s.predict_with_jacobian(st)
    assert out.dtype == dtype and out.shape == (1170,) and bool(torch.isfinite(out).all())
    # weights sum to 1 per contact, so the vertex forces add up to R^T sum_c f_c
    R = torch.tensor(T[:3, :3], dtype=dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(out.reshape(-1, 3).sum(0), R.T @ f.sum(0), **tol)
    torch.testing.assert_close(J.to_dense() @ f.reshape(-1), out, **tol)
    assert len(J.values) == 10 * 9 + 90 * 27


def test_pressure_on_the_real_mesh_matches_its_jacobian_and_the_hand_formula(mesh, punyo_pose):
    rng = np.random.default_rng(1)
    f = torch.tensor(rng.standard_normal((20, 3)), dtype=torch.float64)
    st = SimState({"punyo": torch.tensor(punyo_pose), "object": torch.eye(4, dtype=torch.float64)}, {},
                  {("punyo", "object"): ContactState(torch.zeros(20, 3, dtype=torch.float64), f)})
    s = PunyoPressureSensor("punyo_pressure", "punyo")
    s.attach(mesh)
    s.set_calibration({"tare": [101325.0]})
    n_world = punyo_pose[:3, 2]                                 # base normal +z of the Punyo frame
    expect = 101325.0 - f.numpy().sum(0) @ n_world / s.base_area
    assert s.predict(st).item() == pytest.approx(expect, rel=1e-12)
    J = s.sparse_force_jacobian(st).to_dense()
    assert (J @ f.reshape(-1)).item() == pytest.approx(expect - 101325.0, rel=1e-10)
