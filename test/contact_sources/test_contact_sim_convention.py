"""Klampt's simulator force convention, pinned by a resting weight (pure Klampt, no ROS).

A 1 kg block at rest on a support: Newton's third law says the support feels
m·g = 1 kg · 9.8 m/s² = 9.8 N *downward* (world -z) from the block, and the
block feels 9.8 N upward.  Klampt's gravity is (0, 0, -9.8) m/s².
"""
import tempfile
from pathlib import Path

import klampt
import numpy as np
import trimesh

from vsf_sensor_ros.contact_sources.contact_sim import contacts_between
from vsf_sensor_ros.world import trimesh_to_klampt

G = 9.8  # Klampt's default |gravity|, m/s^2
MASS = 1.0  # kg
WEIGHT = MASS * G  # 9.8 N


def _add_block(world: klampt.WorldModel, z_bottom: float) -> klampt.RigidObjectModel:
    block = world.makeRigidObject("block")
    block.geometry().setTriangleMesh(trimesh_to_klampt(trimesh.creation.box((0.1, 0.1, 0.1))))
    m = block.getMass()
    m.setMass(MASS)
    m.setCom([0.0, 0.0, 0.0])
    m.setInertia([MASS * 0.02 / 12.0] * 3)  # (0.1^2 + 0.1^2)/12 per axis
    block.setMass(m)
    block.setTransform([1, 0, 0, 0, 1, 0, 0, 0, 1], [0.0, 0.0, z_bottom + 0.05 + 0.001])
    return block


def _settle(world: klampt.WorldModel) -> klampt.Simulator:
    sim = klampt.Simulator(world)
    sim.enableContactFeedbackAll()
    for _ in range(300):          # 1.5 s: the block drops 1 mm and comes to rest
        sim.simulate(0.005)
    return sim


def test_block_on_terrain_table_pushes_the_table_down_with_its_weight():
    world = klampt.WorldModel()
    table = world.makeTerrain("table")
    slab = trimesh.creation.box((1.0, 1.0, 0.1))
    slab.apply_translation([0.0, 0.0, -0.05])          # top face at z = 0
    table.geometry().setTriangleMesh(trimesh_to_klampt(slab))
    block = _add_block(world, 0.0)
    sim = _settle(world)
    tid, bid = table.getID(), block.getID()

    # Raw Klampt: getContactForces(a, b) is the force on b (by a), despite its docstring.
    raw = np.asarray(sim.getContactForces(tid, bid)).reshape(-1, 3).sum(axis=0)
    np.testing.assert_allclose(raw, [0.0, 0.0, +WEIGHT], atol=0.05)
    raw_rev = np.asarray(sim.getContactForces(bid, tid)).reshape(-1, 3).sum(axis=0)
    np.testing.assert_allclose(raw_rev, [0.0, 0.0, -WEIGHT], atol=0.05)

    # Contract (force applied to body1 by body2): the supporting table feels m g downward ...
    pts, f_on_table = contacts_between(sim, tid, bid)
    np.testing.assert_allclose(f_on_table.sum(axis=0), [0.0, 0.0, -WEIGHT], atol=0.05)
    # ... and the block feels it upward, at the same points.
    pts2, f_on_block = contacts_between(sim, bid, tid)
    np.testing.assert_allclose(f_on_block.sum(axis=0), [0.0, 0.0, +WEIGHT], atol=0.05)
    np.testing.assert_allclose(pts2, pts)
    # Klampt's contactForce(a, b) does not depend on the argument order (same vector both
    # ways), so it cannot tell which body a force acts on: the simulator never uses it.
    np.testing.assert_allclose(sim.contactForce(tid, bid), sim.contactForce(bid, tid))
    # The contact points lie on the block's bottom face (z = 0 up to the 2.5 mm padding), under it.
    assert len(pts) >= 3
    assert np.all(np.abs(pts[:, 2]) < 0.003)
    assert np.all(np.abs(pts[:, :2]) <= 0.05 + 1e-6)


# Root link "world" + fixed joint: Klampt drops "world" and welds "plate" to the world frame.
URDF_PLATE = """<robot name="plate_robot">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="plate"/></joint>
  <link name="plate">
    <inertial><mass value="5.0"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><mesh filename="{mesh}"/></geometry></collision>
  </link>
</robot>
"""


def plate_world() -> klampt.WorldModel:
    """A Klampt world holding one robot: the welded link ``plate``, a 0.6 x 0.6 x 0.1 m slab whose
    top face is at z = 0 of the link frame."""
    with tempfile.TemporaryDirectory() as tmp:
        slab = trimesh.creation.box((0.6, 0.6, 0.1))
        slab.apply_translation([0.0, 0.0, -0.05])      # top face at z = 0 of the link frame
        mesh = Path(tmp) / "plate.off"
        slab.export(str(mesh))
        urdf = Path(tmp) / "plate.urdf"
        urdf.write_text(URDF_PLATE.format(mesh=mesh))
        world = klampt.WorldModel()
        assert world.loadElement(str(urdf)) >= 0
    return world


def test_block_on_robot_link_pushes_the_link_down_with_its_weight():
    # The support is a robot link (as the bubble is in the press simulation).
    world = plate_world()
    robot = world.robot(0)
    link = robot.link("plate")
    assert robot.numLinks() == 1 and robot.getJointType(0) == "weld"
    block = _add_block(world, 0.0)
    sim = _settle(world)
    _, f_on_link = contacts_between(sim, link.getID(), block.getID())
    np.testing.assert_allclose(f_on_link.sum(axis=0), [0.0, 0.0, -WEIGHT], atol=0.05)
    _, f_on_block = contacts_between(sim, block.getID(), link.getID())
    np.testing.assert_allclose(f_on_block.sum(axis=0), [0.0, 0.0, +WEIGHT], atol=0.05)
