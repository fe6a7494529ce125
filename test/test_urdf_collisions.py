"""A URDF link with several ``<collision>`` elements: its geometry is their union (URDF specification).

Klampt's loader alone keeps only the first piece, so a pad made of two pieces had
half its shadow and read twice the pressure.  Every expected vertex below is the
file's vertex moved by the piece's ``<origin>`` by hand (rpy "0 0 pi/2": (x, y, z)
-> (-y, x, z)); the pressure is the model's equation with the hand-derived area.
"""
import math
import warnings

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import ContactState, SimState
from vsf_sensor_ros.sensor.punyo_pressure_sensor import PunyoPressureSensor
from vsf_sensor_ros.urdf import UrdfError, collision_elements
from vsf_sensor_ros.world import World

# Klampt reads a link's mesh file in single precision: 0.1 comes back as 0.10000000149
ATOL, REL = 1e-8, 1e-7

# piece A: the square [0, 0.1]^2 (z = 0), vertices in this (non-sorted) file order
PAD_A_OBJ = """v 0.1 0.1 0
v 0 0 0
v 0.1 0 0
v 0 0.1 0
f 2 3 1
f 2 1 4
"""
# piece B, an ASCII PLY: the same square, another vertex order
PAD_B_PLY = """ply
format ascii 1.0
element vertex 4
property double x
property double y
property double z
element face 2
property list uchar int vertex_indices
end_header
0 0.1 0
0.1 0.1 0
0 0 0
0.1 0 0
3 2 3 1
3 2 1 0
"""


def _robot(collisions: str) -> str:
    """A base link and a ``pad`` link 0.5 m above it (fixed joint) holding ``collisions``."""
    return f"""<robot name="two_piece_pad">
  <link name="base"/>
  <link name="pad">{collisions}</link>
  <joint name="pad_mount" type="fixed">
    <origin xyz="0 0 0.5" rpy="0 0 0"/><parent link="base"/><child link="pad"/>
  </joint>
</robot>"""


TWO_PIECES = """
    <collision><geometry><mesh filename="pad_a.obj"/></geometry></collision>
    <collision><origin xyz="0.2 0 0" rpy="0 0 1.5707963267948966"/>
      <geometry><mesh filename="pad_b.ply"/></geometry></collision>"""

# piece A as in the file; piece B rotated +90 deg about z, then moved 0.2 m along x:
# (0, .1) -> (-.1, 0) -> (.1, 0);  (.1, .1) -> (-.1, .1) -> (.1, .1);
# (0, 0) -> (0, 0) -> (.2, 0);      (.1, 0) -> (0, .1) -> (.2, .1)
EXPECTED_V = np.array([[0.1, 0.1, 0.0], [0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0],
                       [0.1, 0.0, 0.0], [0.1, 0.1, 0.0], [0.2, 0.0, 0.0], [0.2, 0.1, 0.0]])
# file faces (0-based), piece B's shifted by piece A's 4 vertices
EXPECTED_F = np.array([[1, 2, 0], [1, 0, 3], [6, 7, 5], [6, 5, 4]])


@pytest.fixture
def mesh_dir(tmp_path):
    (tmp_path / "pad_a.obj").write_text(PAD_A_OBJ)
    (tmp_path / "pad_b.ply").write_text(PAD_B_PLY)
    return tmp_path


def _world(mesh_dir, collisions: str) -> World:
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # nothing about the pieces is only warned about
        return World.from_urdf(_robot(collisions), base_dir=mesh_dir)


def test_collision_elements_lists_every_piece_in_document_order():
    import xml.etree.ElementTree as ET
    root = ET.fromstring(_robot(TWO_PIECES))
    pieces = collision_elements(root)
    assert list(pieces) == ["pad"]                       # 'base' has none
    assert [p.find("geometry/mesh").get("filename") for p in pieces["pad"]] == ["pad_a.obj", "pad_b.ply"]


def test_two_piece_link_mesh_is_the_union_with_origins_and_file_order(mesh_dir):
    w = _world(mesh_dir, TWO_PIECES)
    m = w.body_mesh("pad")
    np.testing.assert_allclose(m.vertices, EXPECTED_V, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(m.faces, EXPECTED_F)
    # the Klampt model a sensor attaches to carries the same union
    tm = w.body_model("pad").geometry().getTriangleMesh()
    np.testing.assert_allclose(np.array(tm.vertices), EXPECTED_V, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(np.array(tm.indices), EXPECTED_F)


def test_a_pad_of_two_pieces_reads_like_one_pad(mesh_dir):
    """A_base = shadow of [0, 0.2] x [0, 0.1] = 0.02 m^2 (the first piece alone: 0.01 m^2).

    3 N pressing down on the pad (world force (0, 0, -3), R = identity, n = z):
    pressure = 0 - (1 / 0.02) * (-3) = 150 Pa (the first piece alone: 300 Pa).
    """
    w = _world(mesh_dir, TWO_PIECES)
    s = PunyoPressureSensor("pressure", "pad")
    s.attach(w.body_model("pad"))
    assert s.base_area == pytest.approx(0.02, rel=REL)
    T = w.body_transforms(names=["pad", "base"])
    f = torch.tensor([[0.0, 0.0, -3.0]], dtype=torch.float64)
    p = torch.tensor([[0.05, 0.05, 0.5]], dtype=torch.float64)
    state = SimState(T, {}, {("pad", "base"): ContactState(p, f)})
    assert s.predict(state).item() == pytest.approx(150.0, rel=REL)
    # one piece reads like a pad of that piece only: twice the pressure on half the area
    one = _world(mesh_dir, TWO_PIECES.split("</collision>")[0] + "</collision>")
    s1 = PunyoPressureSensor("pressure", "pad")
    s1.attach(one.body_model("pad"))
    assert s1.base_area == pytest.approx(0.01, rel=REL)
    assert s1.predict(state).item() == pytest.approx(300.0, rel=REL)


def test_a_primitive_piece_joins_the_union_at_its_origin(mesh_dir):
    """A 0.1 x 0.1 x 0.02 box centred 0.01 m below the pad: corners x, y in [-0.05, 0.05],
    z in [-0.02, 0]; the mesh piece follows, as in its file."""
    w = _world(mesh_dir, """
    <collision><origin xyz="0 0 -0.01"/><geometry><box size="0.1 0.1 0.02"/></geometry></collision>
    <collision><geometry><mesh filename="pad_a.obj"/></geometry></collision>""")
    m = w.body_mesh("pad")
    assert len(m.vertices) == 8 + 4
    corners = {(x, y, z) for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.02, 0.0)}
    got = {tuple(round(float(c), 12) + 0.0 for c in v) for v in m.vertices[:8]}
    assert got == corners
    np.testing.assert_allclose(m.vertices[8:], EXPECTED_V[:4], rtol=0, atol=ATOL)
    assert m.faces[12:].tolist() == (EXPECTED_F[:2] + 8).tolist()     # the box's 12 triangles first
    assert m.faces[:12].max() == 7


def test_pieces_follow_their_link(mesh_dir):
    """The union is in the link frame: the pad link 0.5 m up puts piece B's (0.2, 0.1, 0) at
    (0.2, 0.1, 0.5) in the world."""
    w = _world(mesh_dir, TWO_PIECES)
    T = w.body_transform("pad")
    world_v = (T[:3, :3] @ EXPECTED_V[7] + T[:3, 3])
    np.testing.assert_allclose(world_v, [0.2, 0.1, 0.5], rtol=0, atol=ATOL)
    np.testing.assert_allclose(w.body_mesh("pad").vertices[7], EXPECTED_V[7], rtol=0, atol=ATOL)


def test_a_piece_without_triangles_is_an_error_naming_the_link(mesh_dir):
    (mesh_dir / "empty.off").write_text("OFF\n0 0 0\n")
    with pytest.raises(UrdfError) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the empty file is also warned about as unreadable
            World.from_urdf(_robot("""
    <collision><geometry><mesh filename="pad_a.obj"/></geometry></collision>
    <collision><geometry><mesh filename="empty.off"/></geometry></collision>"""), base_dir=mesh_dir)
    assert (info.value.reason, info.value.where) == ("mesh_unreadable", "URDF link 'pad': <collision> 2 of 2")
    assert info.value.value == "empty.off"


def test_links_with_one_piece_are_unchanged(mesh_dir):
    w = _world(mesh_dir, """
    <collision><geometry><mesh filename="pad_b.ply"/></geometry></collision>""")
    np.testing.assert_allclose(w.body_mesh("pad").vertices,
                               [[0, 0.1, 0], [0.1, 0.1, 0], [0, 0, 0], [0.1, 0, 0]], rtol=0, atol=ATOL)
    assert math.isclose(float(w.body_mesh("pad").area), 0.01, rel_tol=REL)
