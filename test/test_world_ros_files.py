"""Meshes and URDFs as the ROS tools read them: Collada placed as rviz2 places it (its unit
applied, its up axis ignored), a PLY's repeated positions kept as URDF link meshes, and xacro
documents expanded (or refused with the command that expands them).

Every file is written by the test; expected vertices, areas and transforms are worked out by
hand from the file's numbers.
"""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch

from vsf_sensor_ros.mesh_io import load_mesh
from vsf_sensor_ros.rig import launch_support as ls
from vsf_sensor_ros.sensor import ContactState, PunyoDenseForceSensor, PunyoPressureSensor, SimState
from vsf_sensor_ros.urdf import UrdfError, read_urdf
from vsf_sensor_ros.world import World


def _dae(up_axis="Z_UP", unit="0.001", node="", positions="0 0 0 100 0 0 100 200 0 0 200 0",
         primitive='<polylist count="1"><input semantic="VERTEX" source="#v" offset="0"/>'
                   '<vcount>4</vcount><p>0 1 2 3</p></polylist>', instances=1):
    """A Collada file with one geometry (default: a 100 x 200 quad at z = 0, in mm)."""
    asset = (f'<unit name="u" meter="{unit}"/>' if unit else "") + (f"<up_axis>{up_axis}</up_axis>"
                                                                    if up_axis else "")
    n = len(positions.split())
    nodes = "".join(f'<node id="n{i}">{node}<instance_geometry url="#g"/></node>' for i in range(instances))
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset>{asset}</asset>
  <library_geometries><geometry id="g"><mesh>
    <source id="p"><float_array id="pa" count="{n}">{positions}</float_array>
      <technique_common><accessor source="#pa" count="{n // 3}" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    {primitive}
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s">{nodes}</visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def _link_urdf(mesh_xml, origin=""):
    return (f'<robot name="r"><link name="world"/><link name="pad"><collision>{origin}<geometry>{mesh_xml}'
            f'</geometry></collision></link><joint name="fix" type="fixed"><parent link="world"/>'
            f'<child link="pad"/></joint></robot>')


# the quad in m: the file's mm divided by 1000, z = 0 kept (no Y-up rotation)
QUAD_M = [[0, 0, 0], [0.1, 0, 0], [0.1, 0.2, 0], [0, 0.2, 0]]


# ------------------------------------------------------------------ 1. Collada as rviz2 shows it

@pytest.mark.parametrize("up_axis", ["Z_UP", "Y_UP", "X_UP", ""])
def test_collada_keeps_the_files_axes_whatever_up_axis_says_and_applies_its_unit(tmp_path, up_axis):
    # rviz2 ignores <up_axis> (Assimp's IGNORE_UP_DIRECTION) and applies <unit meter>
    p = tmp_path / "quad.dae"
    p.write_text(_dae(up_axis=up_axis))
    m = load_mesh(p)
    np.testing.assert_allclose(m.vertices, QUAD_M, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m.faces, [[0, 1, 2], [0, 2, 3]])     # the quad fanned from corner 0


def test_collada_without_unit_is_in_metres(tmp_path):
    p = tmp_path / "quad.dae"
    p.write_text(_dae(unit=""))
    np.testing.assert_allclose(load_mesh(p).vertices, np.array(QUAD_M) * 1000, rtol=0, atol=1e-9)


@pytest.mark.parametrize("unit", ["0", "-1", "abc", "nan"])
def test_a_collada_unit_that_is_no_positive_length_is_refused_naming_it(tmp_path, unit):
    # 0 would collapse the mesh to a point, -1 mirror it; pycollada reads "abc" as no unit (1 m)
    p = tmp_path / "quad.dae"
    p.write_text(_dae(unit=unit))
    with pytest.raises(ValueError) as info:
        load_mesh(p)
    assert repr(unit) in str(info.value)


@pytest.mark.parametrize("env", [None, "index"])
def test_a_xacro_needing_a_package_names_it_with_or_without_an_ament_index(tmp_path, monkeypatch, env):
    # without AMENT_PREFIX_PATH xacro's own error never names the package $(find ...) wants
    if env is None:
        monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    else:
        monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    text = ('<robot name="k" xmlns:xacro="http://www.ros.org/wiki/xacro">'
            '<xacro:include filename="$(find kortex_description)/robots/gen3.xacro"/></robot>')
    with pytest.raises(UrdfError) as info:
        read_urdf(text)
    assert info.value.reason == "xacro_failed" and "kortex_description" in str(info.value)


def test_a_self_recursive_xacro_macro_is_refused_as_xacro(tmp_path):
    text = ('<robot name="k" xmlns:xacro="http://www.ros.org/wiki/xacro">'
            '<xacro:macro name="m"><xacro:m/></xacro:macro><xacro:m/></robot>')
    with pytest.raises(UrdfError) as info:
        read_urdf(text)
    assert info.value.reason == "xacro_failed"


def test_collada_node_transforms_are_applied_before_the_unit(tmp_path):
    # vertex (100, 0, 0) mm: rotated 90 deg about z -> (0, 100, 0), then translated by (1, 2, 3)
    # -> (1, 102, 3) mm = (0.001, 0.102, 0.003) m; each of 2 instances has its own 4 vertices.
    # pycollada (like Assimp for rviz2) builds the rotation in float32: cos 90 deg ~ -4e-8
    p = tmp_path / "moved.dae"
    p.write_text(_dae(node="<translate>1 2 3</translate><rotate>0 0 1 90</rotate>", instances=2))
    m = load_mesh(p)
    assert m.vertices.shape == (8, 3)
    np.testing.assert_allclose(m.vertices[1], [0.001, 0.102, 0.003], rtol=0, atol=1e-8)
    np.testing.assert_allclose(m.vertices[6], [-0.199, 0.102, 0.003], rtol=0, atol=1e-8)   # (100, 200)
    np.testing.assert_array_equal(m.faces, [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])


def test_collada_vertices_are_the_position_array_not_one_per_corner(tmp_path):
    # two <triangles> blocks sharing one position array: 4 vertices, not 6 corners
    p = tmp_path / "two.dae"
    tri = '<triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>{}</p></triangles>'
    p.write_text(_dae(primitive=tri.format("0 1 2") + tri.format("2 3 0")))
    m = load_mesh(p)
    np.testing.assert_allclose(m.vertices, QUAD_M, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(m.faces, [[0, 1, 2], [2, 3, 0]])


def test_collada_link_mesh_is_upright_and_the_pressure_sensor_takes_it(tmp_path):
    """A Z_UP pad in mm as a URDF link: shadow 0.1 m x 0.2 m = 0.02 m^2 (rotated to Y-up it
    would stand on edge: no shadow).  3 N down: pressure = 3 / 0.02 = 150 Pa."""
    (tmp_path / "pad.dae").write_text(_dae())
    w = World.from_urdf(_link_urdf('<mesh filename="pad.dae"/>'), base_dir=tmp_path)
    np.testing.assert_allclose(w.body_mesh("pad").vertices, QUAD_M, rtol=0, atol=1e-12)
    s = PunyoPressureSensor("pressure", "pad")
    s.attach(w.body_model("pad"))
    assert s.base_area == pytest.approx(0.02, rel=1e-9)
    f = torch.tensor([[0.0, 0.0, -3.0]], dtype=torch.float64)
    c = ContactState(torch.zeros(1, 3, dtype=torch.float64), f)
    st = SimState(w.body_transforms(), {}, {("pad", "other"): c})
    assert s.predict(st).item() == pytest.approx(150.0, rel=1e-9)


def test_unreadable_collada_names_the_link_and_file(tmp_path):
    (tmp_path / "bad.dae").write_text("<COLLADA><asset>")
    with pytest.raises(UrdfError) as info:
        World.from_urdf(_link_urdf('<mesh filename="bad.dae"/>'), base_dir=tmp_path)
    assert (info.value.reason, info.value.value) == ("mesh_unreadable", "bad.dae")
    assert info.value.where == "URDF link 'pad': <collision> 1 of 1"


# ------------------------------------------------------------------ 2. the file's vertex table

DUP_PLY = """ply
format ascii 1.0
element vertex 6
property float x
property float y
property float z
element face 2
property list uchar int vertex_indices
end_header
0 0 0
1 0 0
1 1 0
1 1 0
0 1 0
0 0 0
3 0 1 2
3 3 4 5
"""
DUP_V = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0]]


def test_ply_link_mesh_keeps_repeated_positions_and_dense_indices(tmp_path):
    # a seam: positions 2 and 3, 0 and 5 repeat; the link keeps all 6 vertices in file order
    (tmp_path / "seam.ply").write_text(DUP_PLY)
    w = World.from_urdf(_link_urdf('<mesh filename="seam.ply"/>'), base_dir=tmp_path)
    np.testing.assert_array_equal(w.body_mesh("pad").vertices, DUP_V)
    np.testing.assert_array_equal(w.body_mesh("pad").faces, [[0, 1, 2], [3, 4, 5]])
    s = PunyoDenseForceSensor("dense", "pad")
    s.attach(w.body_model("pad"))
    f = torch.tensor([[0.0, 0.0, 2.0]], dtype=torch.float64)
    c = ContactState(torch.zeros(1, 3, dtype=torch.float64), f, elems1=torch.tensor([3]))
    out = s.predict(SimState(w.body_transforms(), {}, {("pad", "other"): c})).numpy().reshape(-1, 3)
    assert out.shape == (6, 3)                                # one reading per file vertex
    np.testing.assert_allclose(out[3], [0, 0, 2])             # on file vertex 3, not on its twin 2
    assert np.count_nonzero(out) == 1
    # the membrane node reads its attachment mesh the same way
    np.testing.assert_array_equal(load_mesh(str(tmp_path / "seam.ply")).vertices, DUP_V)


def test_single_mesh_piece_is_scaled_then_placed_by_its_origin(tmp_path):
    # v = (1, 0, 0): scale 2 -> (2, 0, 0); yaw 90 deg -> (0, 2, 0); + (1, 0, 0.5) -> (1, 2, 0.5)
    (tmp_path / "seam.ply").write_text(DUP_PLY)
    w = World.from_urdf(_link_urdf('<mesh filename="seam.ply" scale="2 2 2"/>',
                                   f'<origin xyz="1 0 0.5" rpy="0 0 {math.pi / 2!r}"/>'), base_dir=tmp_path)
    v = w.body_mesh("pad").vertices
    assert v.shape == (6, 3)
    np.testing.assert_allclose(v[1], [1, 2, 0.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(v[4], [-1, 0, 0.5], rtol=0, atol=1e-12)      # (0, 1, 0) -> (0, 2) -> (-2, 0)
    with pytest.raises(UrdfError) as info:
        World.from_urdf(_link_urdf('<mesh filename="seam.ply" scale="2 2"/>'), base_dir=tmp_path)
    assert (info.value.reason, info.value.where, info.value.value) == (
        "mesh_scale", "URDF link 'pad': <collision> 1 of 1", "2 2")


# ------------------------------------------------------------------ 3. xacro

XACRO = """<?xml version="1.0"?>
<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="L" value="0.25"/>
  <xacro:macro name="plain_link" params="n"><link name="${n}"/></xacro:macro>
  <link name="world"/>
  <xacro:plain_link n="base"/>
  <joint name="fix" type="fixed"><parent link="world"/><child link="base"/></joint>
  <link name="tip"><collision><geometry><box size="${L} ${2*L} 0.1"/></geometry></collision></link>
  <joint name="lift" type="prismatic"><origin xyz="0 0 ${4*L}"/><parent link="base"/><child link="tip"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def _check_expanded(w: World):
    # tip 4 L = 1.0 m above base; its box L x 2 L x 0.1 = 0.25 x 0.5 x 0.1
    assert w.link_names == ["base", "tip"]
    np.testing.assert_allclose(w.body_transforms()["tip"].numpy()[:3, 3], [0, 0, 1.0], atol=1e-12)
    g = w.body_model("tip").geometry().convert("TriangleMesh").getTriangleMesh()
    v = np.array(g.vertices)
    np.testing.assert_allclose(v.max(axis=0) - v.min(axis=0), [0.25, 0.5, 0.1], atol=1e-12)


def test_xacro_file_and_text_are_expanded(tmp_path):
    f = tmp_path / "arm.urdf.xacro"
    f.write_text(XACRO)
    _check_expanded(World.from_urdf(str(f)))
    _check_expanded(World.from_urdf(XACRO))                  # as robot_description text
    text = ls.urdf_for_state_publisher(str(f))               # robot_state_publisher gets the same URDF
    root = ET.fromstring(text)                               # expanded: numbers, no xacro elements
    assert [float(x) for x in root.find("joint[@name='lift']/origin").get("xyz").split()] == [0, 0, 1.0]
    assert [float(x) for x in root.find("link[@name='tip']//box").get("size").split()] == [0.25, 0.5, 0.1]
    assert not [el.tag for el in root.iter() if el.tag.startswith("{http://www.ros.org/wiki/xacro}")]


def test_xacro_that_cannot_be_expanded_is_refused_saying_how(tmp_path, monkeypatch):
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))    # an index without the package
    f = tmp_path / "kinova.urdf.xacro"
    f.write_text('<robot name="k" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                 '<xacro:include filename="$(find kortex_description)/robots/gen3.xacro"/></robot>')
    with pytest.raises(UrdfError) as info:
        World.from_urdf(str(f))
    assert (info.value.reason, info.value.where) == ("xacro_failed", str(f))
    with pytest.raises(UrdfError) as info:
        read_urdf(f.read_text())                                 # the same as robot_description text
    assert (info.value.reason, info.value.where) == ("xacro_failed", "robot_description")
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.urdf_for_state_publisher(str(f))
    assert (info.value.parameter, info.value.value, info.value.reason) == ("urdf", str(f), "unreadable")


def test_plain_urdf_is_read_as_is(tmp_path):
    f = tmp_path / "r.urdf"
    urdf = _link_urdf('<box size="1 1 1"/>')
    f.write_text(urdf)
    assert read_urdf(str(f)) == (urdf, tmp_path.resolve())
    assert read_urdf(urdf) == (urdf, None)
