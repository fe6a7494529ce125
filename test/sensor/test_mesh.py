"""Mesh helpers: closest-triangle query, barycentric weights, projected area, mesh extraction.

Expected values are derived by hand in each test (comments show the arithmetic), or
by an independent second method (trimesh's proximity query, a 2-D convex hull, a
rasterised point-in-triangle count).
"""
import math

import numpy as np
import pytest
import trimesh

from vsf_sensor_ros.sensor.errors import InputError
from vsf_sensor_ros.sensor.mesh import ClosestTriangleQuery, projected_area, triangle_mesh_of

# One right triangle in the z = 0 plane: a = origin, b = +x, c = +y.
TRI_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
TRI_F = np.array([[0, 1, 2]])

# Unit square in z = 0 split along the diagonal (0,0)-(1,1).
SQ_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
SQ_F = np.array([[0, 1, 2], [0, 2, 3]])


def _check_consistent(q: ClosestTriangleQuery, points: np.ndarray) -> None:
    """Every result: weights finite, >= 0, sum to 1, and reproduce the closest point."""
    r = q.query(points)
    assert np.all(np.isfinite(r.weights))
    assert np.all(r.weights >= 0.0)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, atol=1e-12)
    corners = q.vertices[q.triangles[r.triangle]]           # (M, 3, 3)
    np.testing.assert_allclose(np.einsum("mj,mjk->mk", r.weights, corners), r.point, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(points - r.point, axis=1), r.distance, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# single triangle, every Voronoi region
# ----------------------------------------------------------------------------------------------
def test_point_above_face_projects_straight_down_with_barycentric_weights():
    q = ClosestTriangleQuery(TRI_V, TRI_F)
    r = q.query(np.array([[0.2, 0.3, 0.5]]))
    # p = a + 0.2 (b - a) + 0.3 (c - a)  ->  weights (1 - 0.2 - 0.3, 0.2, 0.3)
    np.testing.assert_allclose(r.point, [[0.2, 0.3, 0.0]], atol=1e-15)
    np.testing.assert_allclose(r.weights, [[0.5, 0.2, 0.3]], atol=1e-15)
    np.testing.assert_allclose(r.distance, [0.5], atol=1e-15)
    assert r.triangle.tolist() == [0]


def test_points_beyond_each_vertex_snap_to_that_vertex():
    q = ClosestTriangleQuery(TRI_V, TRI_F)
    pts = np.array([[-1.0, -2.0, 0.3],    # behind a: both (p-a).ab and (p-a).ac negative
                    [2.0, -1.0, 0.3],     # beyond b
                    [-0.5, 3.0, -0.2]])   # beyond c
    r = q.query(pts)
    np.testing.assert_allclose(r.weights, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(r.point, TRI_V, atol=1e-15)
    # |(2,-1,0.3) - (1,0,0)| = sqrt(1 + 1 + 0.09)
    assert r.distance[1] == pytest.approx(math.sqrt(2.09))


def test_points_outside_each_edge_project_onto_the_edge():
    q = ClosestTriangleQuery(TRI_V, TRI_F)
    pts = np.array([[0.25, -2.0, 0.0],   # below edge ab: foot (0.25, 0, 0) = 0.75 a + 0.25 b
                    [-3.0, 0.6, 1.0],    # left of edge ac: foot (0, 0.6, 0) = 0.4 a + 0.6 c
                    [1.0, 1.0, 0.2]])    # beyond edge bc: foot (0.5, 0.5, 0) = 0.5 b + 0.5 c
    r = q.query(pts)
    np.testing.assert_allclose(r.point, [[0.25, 0, 0], [0, 0.6, 0], [0.5, 0.5, 0]], atol=1e-15)
    np.testing.assert_allclose(r.weights, [[0.75, 0.25, 0], [0.4, 0, 0.6], [0, 0.5, 0.5]], atol=1e-15)
    # distance to bc foot: |(0.5, 0.5, 0.2)| = sqrt(0.54)
    assert r.distance[2] == pytest.approx(math.sqrt(0.54))


def test_points_exactly_on_edges_and_vertices():
    q = ClosestTriangleQuery(TRI_V, TRI_F)
    pts = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.3, 0.0, 0.0], [0.0, 0.0, 0.0]])
    r = q.query(pts)
    np.testing.assert_allclose(r.weights, [[0, 0.5, 0.5], [0, 0, 1], [0.7, 0.3, 0], [1, 0, 0]],
                               atol=1e-15)
    np.testing.assert_allclose(r.distance, 0.0, atol=1e-15)


# ----------------------------------------------------------------------------------------------
# two triangles: the right one is picked
# ----------------------------------------------------------------------------------------------
def test_unit_square_picks_the_triangle_under_the_point():
    q = ClosestTriangleQuery(SQ_V, SQ_F)
    r = q.query(np.array([[0.75, 0.25, 1.0], [0.25, 0.75, -2.0]]))
    # (0.75, 0.25) lies below the diagonal (x > y): triangle 0 = (v0, v1, v2).
    # p = v0 + s (v1 - v0) + t (v2 - v0) = (s + t, t): t = 0.25, s = 0.5 -> (0.25, 0.5, 0.25)
    # (0.25, 0.75) lies above it: triangle 1 = (v0, v2, v3), p = (s, s + t): s = 0.25, t = 0.5
    assert r.triangle.tolist() == [0, 1]
    np.testing.assert_allclose(r.weights, [[0.25, 0.5, 0.25], [0.25, 0.25, 0.5]], atol=1e-15)
    np.testing.assert_allclose(r.distance, [1.0, 2.0], atol=1e-15)


def test_point_on_the_shared_diagonal_is_split_between_its_two_vertices_only():
    q = ClosestTriangleQuery(SQ_V, SQ_F)
    r = q.query(np.array([[0.4, 0.4, 0.0]]))
    # either triangle: 0.6 on v0 and 0.4 on v2, nothing on the third corner
    corners = SQ_F[r.triangle[0]]
    w = dict(zip(corners.tolist(), r.weights[0].tolist()))
    assert w[0] == pytest.approx(0.6) and w[2] == pytest.approx(0.4)
    assert sum(v for k, v in w.items() if k not in (0, 2)) == pytest.approx(0.0, abs=1e-15)


# ----------------------------------------------------------------------------------------------
# degenerate triangles
# ----------------------------------------------------------------------------------------------
def test_collinear_triangle_gives_closest_point_on_the_segment():
    V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    q = ClosestTriangleQuery(V, np.array([[0, 1, 2]]))
    pts = np.array([[1.5, 1.0, 0.0], [-1.0, 0.0, 0.5], [3.0, -1.0, 0.0]])
    r = q.query(pts)
    # the triangle is the segment [0, 2] on the x axis: feet (1.5,0,0), (0,0,0), (2,0,0)
    np.testing.assert_allclose(r.point, [[1.5, 0, 0], [0, 0, 0], [2, 0, 0]], atol=1e-15)
    # |(-1, 0, 0.5) - (0, 0, 0)| = sqrt(1 + 0.25);  |(3, -1, 0) - (2, 0, 0)| = sqrt(2)
    np.testing.assert_allclose(r.distance, [1.0, math.sqrt(1.25), math.sqrt(2.0)], atol=1e-15)
    _check_consistent(q, pts)


def test_triangle_with_all_vertices_coincident_maps_everything_to_that_vertex():
    V = np.array([[1.0, 1.0, 1.0]] * 3)
    q = ClosestTriangleQuery(V, np.array([[0, 1, 2]]))
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [5.0, -2.0, 1.0]])
    r = q.query(pts)
    np.testing.assert_allclose(r.point, np.ones((3, 3)), atol=1e-15)
    np.testing.assert_allclose(r.distance, [math.sqrt(3.0), 0.0, math.sqrt(25.0)], atol=1e-15)
    _check_consistent(q, pts)


def test_triangle_with_a_zero_length_edge_behaves_as_its_segment():
    # a == b, so the triangle is the segment a-c from (0,0,0) to (0,1,0)
    V = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    q = ClosestTriangleQuery(V, np.array([[0, 1, 2]]))
    r = q.query(np.array([[0.5, 0.5, 0.0]]))
    np.testing.assert_allclose(r.point, [[0.0, 0.5, 0.0]], atol=1e-15)
    assert r.distance[0] == pytest.approx(0.5)
    # weight on the segment's far end c is 0.5; the rest (0.5) sits on a/b in any split
    assert r.weights[0, 2] == pytest.approx(0.5)
    assert r.weights[0, :2].sum() == pytest.approx(0.5)


def test_degenerate_triangle_next_to_a_real_one_does_not_steal_the_face_region():
    V = np.vstack([TRI_V, [[0.0, 0.0, 5.0], [1.0, 0.0, 5.0], [2.0, 0.0, 5.0]]])
    F = np.array([[3, 4, 5], [0, 1, 2]])         # degenerate segment first, 5 m above
    q = ClosestTriangleQuery(V, F)
    r = q.query(np.array([[0.2, 0.2, 1.0], [1.0, 0.0, 4.0]]))
    assert r.triangle.tolist() == [1, 0]
    np.testing.assert_allclose(r.distance, [1.0, 1.0], atol=1e-15)


# ----------------------------------------------------------------------------------------------
# against an independent method on a real-sized mesh
# ----------------------------------------------------------------------------------------------
def _brute_force_distance(V: np.ndarray, F: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Distance to the mesh by trimesh's exact point-triangle routine on EVERY triangle.

    (trimesh.proximity.closest_point itself prunes candidates approximately and was
    measured to miss the closest triangle for about 1 % of near-surface points.)
    """
    tris = V[F]
    out = np.empty(len(pts))
    for i0 in range(0, len(pts), 50):
        chunk = pts[i0:i0 + 50]
        cp = trimesh.triangles.closest_point(np.tile(tris, (len(chunk), 1, 1)),
                                             np.repeat(chunk, len(tris), axis=0))
        d = np.linalg.norm(cp - np.repeat(chunk, len(tris), axis=0), axis=1)
        out[i0:i0 + 50] = d.reshape(len(chunk), len(tris)).min(axis=1)
    return out


@pytest.mark.parametrize("offset_scale", [0.0, 0.01, 0.3, 5.0])
def test_distances_match_brute_force_over_all_triangles_on_a_perturbed_sphere(offset_scale):
    rng = np.random.default_rng(7)
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.05)
    V = sphere.vertices * (1.0 + 0.1 * rng.random((len(sphere.vertices), 1)))
    mesh = trimesh.Trimesh(V, sphere.faces, process=False)
    surf, _ = trimesh.sample.sample_surface(mesh, 200, seed=3)
    pts = surf + offset_scale * 0.05 * rng.standard_normal(surf.shape)
    q = ClosestTriangleQuery(V, sphere.faces)
    r = q.query(pts)
    np.testing.assert_allclose(r.distance, _brute_force_distance(V, sphere.faces, pts), atol=1e-12)
    _check_consistent(q, pts)


def test_grid_path_and_kd_path_give_identical_answers():
    rng = np.random.default_rng(11)
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.05)
    surf, _ = trimesh.sample.sample_surface(sphere, 400, seed=2)
    pts = surf + 0.003 * rng.standard_normal(surf.shape)
    with_grid = ClosestTriangleQuery(sphere.vertices, sphere.faces)
    kd_only = ClosestTriangleQuery(sphere.vertices, sphere.faces, grid=False)
    assert with_grid.grid_candidates == 16 and kd_only.grid_candidates == 0
    a, b = with_grid.query(pts), kd_only.query(pts)
    np.testing.assert_allclose(a.distance, b.distance, atol=1e-15)
    np.testing.assert_allclose(a.point, b.point, atol=1e-15)


def test_query_of_zero_points_returns_empty_arrays():
    r = ClosestTriangleQuery(SQ_V, SQ_F).query(np.zeros((0, 3)))
    assert r.triangle.shape == (0,) and r.weights.shape == (0, 3) and r.point.shape == (0, 3)


@pytest.mark.parametrize("bad, reason, value", [
    (np.zeros((2, 2)), "shape", (2, 2)),
    (np.array([[0.0, np.nan, 0.0]]), "not_finite", [0.0, np.nan, 0.0]),
    (np.array([[np.inf, 0.0, 0.0]]), "not_finite", [np.inf, 0.0, 0.0]),
])
def test_bad_query_points_raise_naming_the_problem(bad, reason, value):
    with pytest.raises(InputError) as err:
        ClosestTriangleQuery(SQ_V, SQ_F).query(bad)
    assert (err.value.argument, err.value.reason) == ("points", reason)
    np.testing.assert_equal(err.value.value, value)


@pytest.mark.parametrize("V, F, argument, reason, value", [
    (SQ_V, np.array([[0, 1, 4]]), "triangles", "index", 4),     # index out of range names the index
    (SQ_V, np.array([[0, -1, 2]]), "triangles", "index", -1),
    (SQ_V[:, :2], SQ_F, "vertices", "shape", (4, 2)),
    (SQ_V, SQ_F[:, :2], "triangles", "shape", (2, 2)),
    (np.array([[0.0, 0.0, np.nan]] * 3), TRI_F, "vertices", "not_finite", [0.0, 0.0, np.nan]),
    (SQ_V, np.zeros((0, 3), dtype=int), "triangles", "empty", (0, 3)),
    (SQ_V, SQ_F.astype(float) + 0.5, "triangles", "dtype", np.float64),
])
def test_bad_meshes_raise_naming_the_problem(V, F, argument, reason, value):
    with pytest.raises(InputError) as err:
        ClosestTriangleQuery(V, F)
    assert (err.value.argument, err.value.reason) == (argument, reason)
    np.testing.assert_equal(err.value.value, value)


# ----------------------------------------------------------------------------------------------
# projected area
# ----------------------------------------------------------------------------------------------
def test_projected_area_of_unit_square_along_its_normal_is_one_and_edge_on_is_zero():
    assert projected_area(SQ_V, SQ_F, [0, 0, 1]) == pytest.approx(1.0)
    assert projected_area(SQ_V, SQ_F, [0, 0, -3]) == pytest.approx(1.0)   # length and sign ignored
    assert projected_area(SQ_V, SQ_F, [1, 0, 0]) == pytest.approx(0.0, abs=1e-12)


def test_projected_area_of_tilted_view_is_cosine_scaled():
    th = 0.3
    # viewing along (0, sin th, cos th): the unit square shrinks by cos th
    assert projected_area(SQ_V, SQ_F, [0, math.sin(th), math.cos(th)]) == pytest.approx(math.cos(th))


def test_projected_area_is_the_union_not_the_sum_of_triangles():
    box = trimesh.creation.box(extents=[1.0, 2.0, 3.0])
    # top and bottom faces both project onto the 1 x 2 rectangle: union 2, sum of |projections| 4
    assert projected_area(box.vertices, box.faces, [0, 0, 1]) == pytest.approx(2.0)
    assert projected_area(box.vertices, box.faces, [1, 0, 0]) == pytest.approx(6.0)
    dup = np.vstack([TRI_F, TRI_F])
    assert projected_area(TRI_V, dup, [0, 0, 1]) == pytest.approx(0.5)


def test_projected_area_of_a_dome_matches_its_convex_hull_and_a_raster_count():
    from scipy.spatial import ConvexHull
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.04)
    keep = sphere.triangles_center[:, 2] > 0.0
    dome = trimesh.Trimesh(sphere.vertices, sphere.faces[keep])
    area = projected_area(dome.vertices, dome.faces, [0, 0, 1])
    hull = ConvexHull(dome.vertices[dome.faces].reshape(-1, 3)[:, :2]).volume
    assert area == pytest.approx(hull, rel=1e-9)       # the dome's shadow is convex
    # rasterised estimate: fraction of a 1000 x 1000 grid covered by some projected triangle
    assert area == pytest.approx(_raster_area(dome.vertices[:, :2], dome.faces), rel=2e-3)
    # and it is close to the disc pi r^2 (the polygonal rim lies inside the circle)
    assert 0.95 * math.pi * 0.04 ** 2 < area < math.pi * 0.04 ** 2


def _raster_area(xy: np.ndarray, faces: np.ndarray, n: int = 1000) -> float:
    """Area covered by the union of 2-D triangles, counting covered n x n grid-cell centres.

    Each triangle marks the cell centres inside it (edge-function test) within its own
    bounding box; the covered fraction times the box area estimates the union's area.
    """
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    h = (hi - lo) / n
    covered = np.zeros((n, n), dtype=bool)
    for a, b, c in xy[faces]:
        i0, j0 = np.floor((np.minimum(np.minimum(a, b), c) - lo) / h).astype(int)
        i1, j1 = np.ceil((np.maximum(np.maximum(a, b), c) - lo) / h).astype(int)
        gx = lo[0] + (np.arange(i0, i1) + 0.5) * h[0]
        gy = lo[1] + (np.arange(j0, j1) + 0.5) * h[1]
        X, Y = np.meshgrid(gx, gy, indexing="ij")

        def side(u, v):
            return (v[0] - u[0]) * (Y - u[1]) - (v[1] - u[1]) * (X - u[0])
        s1, s2, s3 = side(a, b), side(b, c), side(c, a)
        inside = ((s1 >= 0) & (s2 >= 0) & (s3 >= 0)) | ((s1 <= 0) & (s2 <= 0) & (s3 <= 0))
        covered[i0:i1, j0:j1] |= inside
    return float(covered.mean() * (hi[0] - lo[0]) * (hi[1] - lo[1]))


def test_projected_area_rejects_a_zero_normal():
    with pytest.raises(ValueError):
        projected_area(SQ_V, SQ_F, [0, 0, 0])


# ----------------------------------------------------------------------------------------------
# triangle_mesh_of
# ----------------------------------------------------------------------------------------------
def test_triangle_mesh_of_accepts_tuple_and_trimesh():
    V, F = triangle_mesh_of((SQ_V.tolist(), SQ_F.tolist()))
    assert V.dtype == np.float64 and F.dtype == np.int64
    np.testing.assert_array_equal(V, SQ_V)
    np.testing.assert_array_equal(F, SQ_F)
    V2, F2 = triangle_mesh_of(trimesh.Trimesh(SQ_V, SQ_F, process=False))
    np.testing.assert_array_equal(V2, SQ_V)
    np.testing.assert_array_equal(F2, SQ_F)


def test_triangle_mesh_of_reads_a_klampt_rigid_object():
    klampt = pytest.importorskip("klampt")
    world = klampt.WorldModel()
    obj = world.makeRigidObject("punyo")
    m = klampt.TriangleMesh()
    m.setVertices(SQ_V)
    m.setIndices(SQ_F.astype(np.int32))
    obj.geometry().setTriangleMesh(m)
    V, F = triangle_mesh_of(obj)
    np.testing.assert_array_equal(V, SQ_V)
    np.testing.assert_array_equal(F, SQ_F)
    assert F.dtype == np.int64


def test_triangle_mesh_of_a_klampt_body_without_mesh_names_the_body():
    klampt = pytest.importorskip("klampt")
    world = klampt.WorldModel()
    empty = world.makeRigidObject("empty_body")
    ball = world.makeRigidObject("ball_body")
    gp = klampt.GeometricPrimitive()
    gp.setSphere([0, 0, 0], 0.1)
    ball.geometry().setGeometricPrimitive(gp)
    for body in (empty, ball):
        with pytest.raises(InputError) as err:
            triangle_mesh_of(body)
        assert (err.value.argument, err.value.value, err.value.reason) == ("model", body.getName(), "no_mesh")


def test_triangle_mesh_of_rejects_other_objects():
    with pytest.raises(ValueError):
        triangle_mesh_of("not a mesh")


# ----------------------------------------------------------------------------------------------
# far-off points: answered exactly up to 1e6 x the mesh size, refused beyond
# ----------------------------------------------------------------------------------------------
def test_points_up_to_a_million_mesh_sizes_away_get_exact_weights_summing_to_one():
    q = ClosestTriangleQuery(SQ_V, SQ_F)
    # square: centre (0.5, 0.5, 0), box diagonal sqrt(2) -> bound 1e6 * sqrt(2) = 1.41421e6 m
    assert q.max_query_distance == pytest.approx(1e6 * math.sqrt(2.0))
    r = q.query(np.array([[0.25, 0.5, 1.4e6], [1e6, 0.25, 0.0]]))
    # (0.25, 0.5) lies in triangle (0, 2, 3) (y > x): x = v, y = v + w -> v = w = 0.25, u = 0.5
    assert r.triangle[0] == 1
    np.testing.assert_allclose(r.weights[0], [0.5, 0.25, 0.25], atol=1e-12)
    # (1e6, 0.25, 0) is closest to the edge x = 1 at y = 0.25: vertices 1 (1,0) and 2 (1,1),
    # weights 0.75 and 0.25, distance 1e6 - 1
    assert r.distance[1] == pytest.approx(1e6 - 1.0)
    w = dict(zip(q.triangles[r.triangle[1]].tolist(), r.weights[1].tolist()))
    assert w.get(1, 0.0) == pytest.approx(0.75) and w.get(2, 0.0) == pytest.approx(0.25)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("far", [1.5e6, 1e155, 1e300])
def test_points_beyond_the_bound_raise_naming_the_point_and_leave_no_trace(far):
    q = ClosestTriangleQuery(SQ_V, SQ_F)
    with pytest.raises(InputError) as err:
        q.query(np.array([[0.2, 0.1, 0.0], [0.5, 0.5, far]]))
    assert (err.value.argument, err.value.value, err.value.reason) == ("points", [0.5, 0.5, far], "too_far")
    assert err.value.expected == q.max_query_distance

    # the next query is unaffected: (0.3, 0.1, 0.3) projects onto triangle (0, 1, 2) at
    # a + v(b - a) + w(c - a) = (v + w, w) = (0.3, 0.1): w = 0.1, v = 0.2, u = 0.7
    r = q.query(np.array([[0.3, 0.1, 0.3]]))
    assert r.triangle[0] == 0
    np.testing.assert_allclose(r.weights[0], [0.7, 0.2, 0.1], atol=1e-12)
