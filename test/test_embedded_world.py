"""The package's own world (bubble mesh, 4-joint arm, table, object) and the Kinova + Punyo world."""
import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.world import WORLD_FRAME

FIXTURE = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures" / "kinova_punyo"
needs_fixture = pytest.mark.skipif(not (FIXTURE / "kinova_gen3.urdf").is_file(),
                                   reason=f"Kinova/Punyo fixture absent at {FIXTURE}")


# ------------------------------------------------------------------ bubble mesh

def test_bubble_is_a_closed_sphere_like_surface_with_the_documented_vertex_count():
    m = ew.bubble_mesh()
    # apex + 10 dome rings (rim included) + 3 inner base rings of 24, + base centre
    assert len(m.vertices) == 1 + 10 * 24 + 3 * 24 + 1 == 314
    # closed genus-0 triangulation: F = 2V - 4, Euler characteristic 2
    assert len(m.faces) == 2 * 314 - 4
    assert m.euler_number == 2
    assert m.is_watertight and m.is_winding_consistent
    assert m.volume > 0                     # outward normals


def test_bubble_size_base_plane_and_dome_direction():
    m = ew.bubble_mesh(radius=0.05, height=0.03)
    np.testing.assert_allclose(m.bounds, [[-0.05, -0.05, 0.0], [0.05, 0.05, 0.03]], atol=1e-15)
    on_base = np.abs(m.vertices[:, 2]) < 1e-15
    assert on_base.sum() == 24 + 3 * 24 + 1           # rim + inner base rings + centre
    assert (m.vertices[~on_base, 2] > 0).all()        # the dome bulges toward +z
    base_faces = on_base[m.faces].all(axis=1)
    np.testing.assert_allclose(m.face_normals[base_faces], np.tile([0, 0, -1.0], (base_faces.sum(), 1)),
                               atol=1e-12)           # outward normal of the base is -z: base normal +z
    # base polygon area = 1/2 * n * R^2 * sin(2 pi / n) = 12 * 0.0025 * sin(15 deg)
    expected_area = 12 * 0.0025 * math.sin(math.radians(15))
    assert m.area_faces[base_faces].sum() == pytest.approx(expected_area, rel=1e-12)
    # inscribed in the half ellipsoid of volume 2/3 pi R^2 h: slightly smaller
    analytic = 2.0 / 3.0 * math.pi * 0.05 ** 2 * 0.03
    assert 0.97 * analytic < m.volume < analytic


def test_bubble_parameters_and_elliptic_base():
    m = ew.bubble_mesh(radius=0.057, radius_y=0.04, height=0.031, n_rings=6, n_segments=16, n_base_rings=2)
    assert len(m.vertices) == 2 + (6 + 2 - 1) * 16
    np.testing.assert_allclose(m.extents, [0.114, 0.08, 0.031], atol=1e-15)
    assert m.is_watertight
    m1 = ew.bubble_mesh(n_base_rings=1)                 # base is a single fan from the centre
    assert m1.is_watertight and len(m1.vertices) == 2 + 10 * 24


@pytest.mark.parametrize("kwargs, reason", [
    (dict(radius=0.0), "not_positive"), (dict(height=-0.01), "not_positive"),
    (dict(radius=float("nan")), "not_positive"), (dict(radius_y=-0.02), "not_positive"),
    (dict(n_segments=2), "too_few"), (dict(n_rings=1), "too_few"), (dict(n_base_rings=0), "too_few"),
])
def test_bubble_rejects_bad_parameters(kwargs, reason):
    with pytest.raises(SettingError) as err:
        ew.bubble_mesh(**kwargs)
    (setting, value), = kwargs.items()
    assert (err.value.setting, err.value.reason) == (setting, reason)
    np.testing.assert_equal(err.value.value, value)


@needs_fixture
def test_bubble_orientation_matches_the_real_punyo_mesh():
    # The real mesh's base faces are those the partial variant lacks.  Their outward normal points
    # mostly along -z and the membrane lies on the +z side of the base plane: the same as the bubble.
    full = trimesh.load(str(FIXTURE / "punyo_mesh_complete.ply"), process=False)
    part = trimesh.load(str(FIXTURE / "punyo_mesh_partial.ply"), process=False)
    kept = {tuple(f) for f in np.sort(part.faces, axis=1)}
    base = np.array([tuple(f) not in kept for f in np.sort(full.faces, axis=1)])
    assert base.sum() == 776 - 714
    n_out = (full.face_normals[base] * full.area_faces[base, None]).sum(0)
    n_out /= np.linalg.norm(n_out)
    assert n_out[2] < -0.9                               # base outward normal ~ -z (tilted ~23 deg)
    c = full.triangles_center[base].mean(0)
    heights = (full.vertices - c) @ -n_out               # height above the base plane along the base normal
    assert heights.min() > -1e-4 and heights.max() > 0.02


def test_shipped_meshes_equal_the_generated_ones():
    box = trimesh.creation.box
    for fn, mesh in ((ew.BUBBLE_MESH_FILE, ew.bubble_mesh()), ("table.ply", box(ew.TABLE_SIZE)),
                     ("object.ply", box(ew.OBJECT_SIZE))):
        shipped = trimesh.load(str(ew.DATA_DIR / fn), process=False)
        np.testing.assert_allclose(shipped.vertices, mesh.vertices, atol=1e-8, err_msg=fn)  # 8-digit ASCII
        np.testing.assert_array_equal(shipped.faces, mesh.faces)


# ------------------------------------------------------------------ embedded world

def test_embedded_world_bodies_and_joints():
    w = ew.embedded_world()
    assert w.link_names == ["base_link", "shoulder_link", "upper_arm_link", "forearm_link", "wrist_link",
                            "tool_link"] == ew.EMBEDDED_LINKS
    assert w.body_names == ew.EMBEDDED_LINKS + [WORLD_FRAME, "punyo", "table", "object"]
    assert w.joint_names == ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"]
    assert w.body_parent("punyo") == ew.END_LINK == "tool_link"
    assert w.free_body_names == ["table", "object"]
    assert len(w.body_model("punyo").geometry().getTriangleMesh().vertices) == 314
    assert Path(ew.embedded_urdf_path()).parent == Path(ew.__file__).parent / "data"
    assert ew.embedded_world(with_scene=False).body_names == ew.EMBEDDED_LINKS + [WORLD_FRAME, "punyo"]


def test_embedded_arm_kinematics_by_hand():
    w = ew.embedded_world(with_scene=False)
    w.set_joint_positions(ew.EMBEDDED_JOINTS, [0, 0, 0, 0])
    # straight up: 0.10 + 0.08 + 0.30 + 0.25 + 0.06 = 0.79; bubble apex 0.03 higher
    np.testing.assert_allclose(w.body_transform("tool_link")[:3, 3], [0, 0, 0.79], atol=1e-12)
    np.testing.assert_allclose(w.body_transform("punyo") @ [0, 0, 0.03, 1], [0, 0, 0.82, 1], atol=1e-12)
    # shoulder pitch +90 deg: the arm lies along +x at the shoulder height 0.18; yaw +90 deg turns it to +y
    w.set_joint_positions(["shoulder_pitch", "shoulder_yaw"], [math.pi / 2, math.pi / 2])
    np.testing.assert_allclose(w.body_transform("tool_link")[:3, 3], [0, 0.61, 0.18], atol=1e-12)
    np.testing.assert_allclose(w.body_transform("tool_link")[:3, 2], [0, 1, 0], atol=1e-12)


def test_home_puts_the_bubble_apex_1cm_above_the_object_facing_down():
    w = ew.embedded_world()
    T = w.body_transform("punyo")
    np.testing.assert_allclose(T[:3, 2], [0, 0, -1], atol=1e-12)               # dome faces down
    # object top = 0.02 + 0.04 / 2 = 0.04; apex 0.01 above it, over the object's centre x = 0.45
    np.testing.assert_allclose(T @ [0, 0, ew.BUBBLE_HEIGHT, 1], [0.45, 0.0, 0.05, 1], atol=1e-12)
    np.testing.assert_allclose(w.joint_positions(), [ew.HOME[j] for j in ew.EMBEDDED_JOINTS])


def test_table_top_at_zero_and_object_resting_on_it():
    w = ew.embedded_world()
    table = w.body_mesh("table").copy().apply_transform(w.body_transform("table"))
    obj = w.body_mesh("object").copy().apply_transform(w.body_transform("object"))
    assert table.bounds[1, 2] == pytest.approx(0.0, abs=1e-15)
    assert obj.bounds[0, 2] == pytest.approx(0.0, abs=1e-15)
    assert obj.bounds[1, 2] == pytest.approx(0.04, abs=1e-15)
    np.testing.assert_allclose(table.bounds[:, :2], [[0.25, -0.4], [0.85, 0.4]], atol=1e-15)


@pytest.mark.parametrize("target", [(0.45, 0.0, 0.03), (0.3, 0.2, 0.1), (0.5, -0.1, 0.0)])
def test_tool_down_positions_reach_the_asked_apex(target):
    w = ew.embedded_world(with_scene=False)
    q = ew.tool_down_joint_positions(*target)
    w.set_joint_positions(list(q), list(q.values()))
    T = w.body_transform("punyo")
    np.testing.assert_allclose(T @ [0, 0, ew.BUBBLE_HEIGHT, 1], list(target) + [1], atol=1e-12)
    np.testing.assert_allclose(T[:3, 2], [0, 0, -1], atol=1e-12)


def test_tool_down_positions_out_of_reach():
    with pytest.raises(ValueError):
        ew.tool_down_joint_positions(1.0, 0.0, 0.0)     # 0.55 m of arm cannot reach ~1 m


# ------------------------------------------------------------------ Kinova + Punyo

@needs_fixture
def test_kinova_world_from_fixture():
    w = ew.kinova_world(FIXTURE)
    assert w.body_names == ew.KINOVA_LINKS + [WORLD_FRAME, "punyo", "table", "object"]
    assert w.joint_names == ew.KINOVA_JOINTS
    assert len(w.body_mesh("punyo").vertices) == 390
    T_ee = w.body_transform(ew.KINOVA_END_LINK)
    T_mount = ew.kinova_punyo_transform(FIXTURE)
    np.testing.assert_allclose(w.body_transform("punyo"), T_ee @ T_mount, atol=1e-7)
    assert ew.kinova_world(FIXTURE, with_scene=False).body_names[-1] == "punyo"


@needs_fixture
def test_kinova_assets_from_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(ew.ASSETS_ENV, str(FIXTURE))
    assert ew.default_assets_dir() == FIXTURE.resolve()
    assert "punyo" in ew.kinova_world().body_names


def test_kinova_assets_missing_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        ew.kinova_world(tmp_path)
