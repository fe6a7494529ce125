"""URDFs and meshes as other tools write them: non-unit joint axes, mimic chains and reported
mimic values, and mesh files whose vertex order must survive loading (OBJ seams, PLY, STL).

Every URDF and mesh file is written by the test itself.  Expected values are worked out by
hand (angles, offsets, the file's own vertex lines), never read back from the code under test.
"""
import math
import warnings

import numpy as np
import pytest
import torch
import trimesh

from vsf_sensor_ros.mesh_io import load_mesh, read_obj_geometry
from vsf_sensor_ros.sensor import ContactState, PunyoDenseForceSensor, SimState
from vsf_sensor_ros.sensor.errors import InputError
from vsf_sensor_ros.urdf import UrdfError
from vsf_sensor_ros.world import WORLD_FRAME, World


def _yaw(T: torch.Tensor) -> float:
    R = T.numpy()[:3, :3]
    assert abs(R[2, 2] - 1.0) < 1e-12, "expected a rotation about z only"
    return math.atan2(R[1, 0], R[0, 0])


def _joint(name, jtype, parent, child, axis="0 0 1", mimic="", origin=""):
    return (f'<joint name="{name}" type="{jtype}">{origin}<parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="{axis}"/>'
            f'<limit lower="-3" upper="3" effort="1" velocity="1"/>{mimic}</joint>')


def _robot(*parts, links=()):
    body = "".join(f'<link name="{n}"/>' for n in links)
    return f'<robot name="r"><link name="world"/>{body}{"".join(parts)}</robot>'


# ------------------------------------------------------------------ 1. joint axis not unit length

AXIS2 = _robot(
    _joint("fix", "fixed", "world", "base", axis="0 0 0"),      # a fixed joint's axis is never used
    _joint("turn", "revolute", "base", "rot", axis="0 0 2"),
    _joint("slide", "prismatic", "base", "pri", axis="0 0 2"),
    links=("base", "rot", "pri"))


def test_non_unit_revolute_axis_turns_q_radians_and_warns_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = World.from_urdf(AXIS2)
    msgs = [str(c.message) for c in caught if "normalised" in str(c.message)]
    assert len(msgs) == 1, msgs                           # one warning naming both joints
    assert "'turn'" in msgs[0] and "'slide'" in msgs[0] and "[0.0, 0.0, 2.0]" in msgs[0]
    w.set_joint_positions(["turn"], [0.5])
    assert _yaw(w.body_transforms()["rot"]) == pytest.approx(0.5, abs=1e-12)   # not 1.0


def test_non_unit_prismatic_axis_moves_q_metres():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = World.from_urdf(AXIS2)
    w.set_joint_positions(["slide"], [0.05])
    np.testing.assert_allclose(w.body_transforms()["pri"].numpy()[:3, 3], [0, 0, 0.05], atol=1e-12)


def test_unit_axes_do_not_warn():
    urdf = _robot(_joint("fix", "fixed", "world", "base"), _joint("turn", "revolute", "base", "rot"),
                  links=("base", "rot"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        World.from_urdf(urdf)


@pytest.mark.parametrize("jtype, axis", [
    ("revolute", "0 0 0"), ("continuous", "0 0 0"), ("prismatic", "0 0 0"), ("revolute", "0 nan 1"),
])
def test_zero_or_non_finite_axis_is_a_configuration_error_naming_the_joint(jtype, axis):
    urdf = _robot(_joint("fix", "fixed", "world", "base"), _joint("bad_j", jtype, "base", "l", axis=axis),
                  links=("base", "l"))
    with pytest.raises(UrdfError) as info:
        World.from_urdf(urdf)
    assert (info.value.reason, info.value.where) == ("zero_axis", "joint 'bad_j'")
    np.testing.assert_array_equal(info.value.value, [float(v) for v in axis.split()])


# ------------------------------------------------------------------ 2. mimic joints

def _mimic(src, mult, off=0.0):
    return f'<mimic joint="{src}" multiplier="{mult}" offset="{off}"/>'


# all three joints turn about the same z axis through the same origin, so the tip's yaw is
# q + m1 + m2 = q + 2 q - 2 q = q
CHAIN = _robot(
    _joint("fix", "fixed", "world", "base"),
    _joint("m2", "revolute", "l2", "tip", mimic=_mimic("m1", -1)),       # listed before its source
    _joint("q", "revolute", "base", "l1"),
    _joint("m1", "revolute", "l1", "l2", mimic=_mimic("q", 2)),
    links=("base", "l1", "l2", "tip"))


def test_mimic_chain_is_consistent_within_one_message():
    w = World.from_urdf(CHAIN)
    assert w.joint_names == ["q"]
    assert w.set_joint_positions(["q"], [0.3]) == []
    T = w.body_transforms()
    assert _yaw(T["l2"]) == pytest.approx(0.3 + 0.6, abs=1e-12)
    assert _yaw(T["tip"]) == pytest.approx(0.3, abs=1e-12)       # 0.9 if m2 used the old m1 (0)
    w.set_joint_positions(["q"], [-0.1])
    assert _yaw(w.body_transforms()["tip"]) == pytest.approx(-0.1, abs=1e-12)


GRIPPER = _robot(
    _joint("fix", "fixed", "world", "base"),
    _joint("grip", "prismatic", "base", "jaw", axis="1 0 0"),
    _joint("finger", "prismatic", "base", "finger_link", axis="1 0 0", mimic=_mimic("grip", -1)),
    _joint("tipj", "prismatic", "finger_link", "tip", axis="0 1 0", mimic=_mimic("finger", 10, 0.5)),
    links=("base", "jaw", "finger_link", "tip"))


def test_reported_mimic_value_is_used_and_its_mimics_follow_it():
    w = World.from_urdf(GRIPPER)
    assert w.set_joint_positions(["grip", "finger"], [0.02, -0.035]) == []   # finger is a joint
    T = w.body_transforms()
    np.testing.assert_allclose(T["jaw"].numpy()[:3, 3], [0.02, 0, 0], atol=1e-12)
    np.testing.assert_allclose(T["finger_link"].numpy()[:3, 3], [-0.035, 0, 0], atol=1e-12)   # not -0.02
    # tipj = 10 * finger + 0.5 = 0.15, from the reported finger value
    np.testing.assert_allclose(T["tip"].numpy()[:3, 3], [-0.035, 0.15, 0], atol=1e-12)
    # a later message without the mimic joint derives it again
    w.set_joint_positions(["grip"], [0.01])
    T = w.body_transforms()
    np.testing.assert_allclose(T["finger_link"].numpy()[:3, 3], [-0.01, 0, 0], atol=1e-12)
    np.testing.assert_allclose(T["tip"].numpy()[:3, 3], [-0.01, 0.4, 0], atol=1e-12)


def test_configuration_snapshot_keeps_a_reported_mimic_value():
    w = World.from_urdf(GRIPPER)
    w.set_joint_positions(["grip", "finger"], [0.02, -0.035])
    snap = w.configuration()
    # re-applying joint_positions() would re-derive finger = -grip = -0.02; the snapshot does not
    w.set_joint_positions(w.joint_names, [0.5])
    w.set_configuration(snap)
    np.testing.assert_allclose(w.body_transforms()["finger_link"].numpy()[:3, 3], [-0.035, 0, 0], atol=1e-12)
    with pytest.raises(InputError) as err:
        w.set_configuration(np.full_like(snap, np.nan))
    assert (err.value.argument, err.value.value, err.value.reason) == ("q", snap.shape, "not_finite")


def test_mimic_named_twice_is_rejected_and_nothing_applied():
    w = World.from_urdf(GRIPPER)
    before = w.body_transforms()["finger_link"].clone()
    with pytest.raises(InputError) as err:
        w.set_joint_positions(["grip", "finger", "finger"], [0.02, -0.03, -0.03])
    assert (err.value.argument, err.value.value, err.value.reason) == ("names", "finger", "duplicate")
    assert torch.equal(w.body_transforms()["finger_link"], before)


@pytest.mark.parametrize("tags, names", [
    ({"a": "b", "b": "a"}, ("a", "b")),
    ({"a": "b", "b": "c", "c": "a"}, ("a", "b", "c")),
    ({"a": "a"}, ("a",)),
])
def test_mimic_cycle_is_rejected_at_start_naming_the_joints(tags, names):
    parts = [_joint("fix", "fixed", "world", "base"), _joint("q", "revolute", "base", "lq")]
    for j, src in tags.items():
        parts.append(_joint(j, "revolute", "base", f"l{j}", mimic=_mimic(src, 1)))
    urdf = _robot(*parts, links=["base", "lq"] + [f"l{j}" for j in tags])
    with pytest.raises(UrdfError) as info:
        World.from_urdf(urdf)
    assert info.value.reason == "mimic_cycle" and set(info.value.value) == set(names)


# ------------------------------------------------------------------ 3. mesh vertex order

# a unit quad; vertex 1 (1, 0, 0) is listed first in no face, vertex 0 has two texture
# coordinates (a seam), so a per-corner loader makes 5 or 6 vertices of these 4
SEAM_OBJ = """# quad with a texture seam
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vt 0.5 0.5
vt 0.25 0.25
vn 0 0 1
f 3/3/1 4/4/1 1/5/1
f 1/1/1 2/2/1 3/6/1
"""
SEAM_V = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
SEAM_F = [[2, 3, 0], [0, 1, 2]]


def test_obj_with_texture_seam_keeps_the_files_four_vertices(tmp_path):
    p = tmp_path / "seam.obj"
    p.write_text(SEAM_OBJ)
    assert len(trimesh.load(str(p), process=False, force="mesh").vertices) > 4   # the fault being fixed
    m = load_mesh(p)
    np.testing.assert_array_equal(m.vertices, SEAM_V)
    np.testing.assert_array_equal(m.faces, SEAM_F)


def test_obj_objects_materials_quads_and_relative_indices(tmp_path):
    p = tmp_path / "multi.obj"
    p.write_text("""mtllib missing.mtl
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0 0 1
v 9 9 9
vt 0 0
o first
usemtl red
f 1/1 2/1 3/1 4/1
o second
g part
usemtl blue
f 5//1 1//1 2//1
f -3 -2 -1
""")
    m = load_mesh(p)
    # every v line, in order, even vertex 5 (9, 9, 9) that only the last face uses
    np.testing.assert_array_equal(m.vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1],
                                               [9, 9, 9]])
    # the quad fanned from its first corner; -3 -2 -1 = the last three vertices read
    np.testing.assert_array_equal(m.faces, [[0, 1, 2], [0, 2, 3], [4, 0, 1], [3, 4, 5]])


def test_obj_index_out_of_range_names_the_line(tmp_path):
    p = tmp_path / "bad.obj"
    p.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")
    with pytest.raises(InputError) as err:
        read_obj_geometry(p)
    assert (err.value.argument, err.value.value, err.value.reason) == (f"{p}:4", 7, "index_out_of_range")
    assert err.value.expected == 3                  # the vertices defined so far


def test_ply_keeps_the_stored_vertex_order(tmp_path):
    p = tmp_path / "quad.ply"
    # vertices deliberately not in any sorted order; vertex 4 is used by no face
    verts = [[1, 1, 0], [0, 0, 0], [5, 5, 5], [1, 0, 0], [0, 1, 0]]
    faces = [[1, 3, 0], [1, 0, 4]]
    p.write_text("ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
                 + "".join(f"{x} {y} {z}\n" for x, y, z in verts)
                 + "".join(f"3 {a} {b} {c}\n" for a, b, c in faces))
    m = load_mesh(p)
    np.testing.assert_array_equal(m.vertices, verts)
    np.testing.assert_array_equal(m.faces, faces)


def _ascii_stl(tris):
    out = ["solid t"]
    for tri in tris:
        out.append("facet normal 0 0 1\nouter loop")
        out += [f"vertex {x} {y} {z}" for x, y, z in tri]
        out.append("endloop\nendfacet")
    return "\n".join(out + ["endsolid t\n"])


def test_stl_corners_merged_in_first_appearance_order(tmp_path):
    p = tmp_path / "quad.stl"
    # two triangles sharing the edge (1,1,0)-(0,0,0): 6 corners, 4 distinct positions
    p.write_text(_ascii_stl([[(1, 1, 0), (0, 1, 0), (0, 0, 0)], [(0, 0, 0), (1, 0, 0), (1, 1, 0)]]))
    m = load_mesh(p)
    np.testing.assert_array_equal(m.vertices, [[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(m.faces, [[0, 1, 2], [2, 3, 0]])


def _dense_prediction(w: World, body: str, elem: int, force) -> np.ndarray:
    """Dense sensor reading with one per-vertex contact on ``elem`` of ``body`` (identity pose)."""
    s = PunyoDenseForceSensor("dense", body)
    s.attach(w.body_model(body))
    T = w.body_transforms()
    c = ContactState(torch.zeros(1, 3, dtype=torch.float64), torch.tensor([force], dtype=torch.float64),
                     elems1=torch.tensor([elem]))
    st = SimState(T, {}, {(body, "other"): c})
    return s.predict(st).numpy().reshape(-1, 3)


def test_attached_obj_body_contacts_and_dense_cloud_follow_the_file(tmp_path):
    p = tmp_path / "seam.obj"
    p.write_text(SEAM_OBJ)
    w = World.from_urdf(_robot(_joint("fix", "fixed", "world", "base"), links=("base",)))
    w.attach_body("pad", str(p), WORLD_FRAME)
    np.testing.assert_array_equal(w.body_mesh("pad").vertices, SEAM_V)
    out = _dense_prediction(w, "pad", 1, [0.0, 0.0, 2.0])
    assert out.shape == (4, 3)                        # the predicted cloud has the file's 4 points
    np.testing.assert_allclose(out, [[0, 0, 0], [0, 0, 2], [0, 0, 0], [0, 0, 0]])   # on file vertex 1


@pytest.mark.parametrize("fmt", ["obj", "stl"])
def test_urdf_link_mesh_follows_the_file(tmp_path, fmt):
    p = tmp_path / f"pad.{fmt}"
    if fmt == "obj":
        p.write_text(SEAM_OBJ)
        want = SEAM_V
    else:
        p.write_text(_ascii_stl([[(1, 1, 0), (0, 1, 0), (0, 0, 0)], [(0, 0, 0), (1, 0, 0), (1, 1, 0)]]))
        want = [[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0]]
    urdf = (f'<robot name="r"><link name="world"/><link name="pad"><collision><geometry>'
            f'<mesh filename="pad.{fmt}"/></geometry></collision></link>'
            f'{_joint("fix", "fixed", "world", "pad")}</robot>')
    w = World.from_urdf(urdf, base_dir=tmp_path)
    np.testing.assert_allclose(w.body_mesh("pad").vertices, want, atol=1e-15)
    out = _dense_prediction(w, "pad", 1, [0.0, 3.0, 0.0])
    assert out.shape == (4, 3)
    np.testing.assert_allclose(out[1], [0, 3, 0])
    assert np.count_nonzero(out) == 1
