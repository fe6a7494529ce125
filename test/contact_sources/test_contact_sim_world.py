"""Scene building and the press trajectory of the contact simulator (Klampt models, no physics)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.contact_sources.sim_world import (BUBBLE, CONTACT_PADDING, OBJECT, TABLE,
                                                      build_scene, load_assets)
from vsf_sensor_ros.contact_sources.trajectory import PressProfile, PressTrajectory, bubble_tip
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.world import klampt_to_matrix, rpy_from_matrix

KINOVA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "kinova_punyo"
needs_kinova = pytest.mark.skipif(not (KINOVA_DIR / "kinova_gen3.urdf").is_file(),
                                  reason="Kinova/Punyo fixture ../shared/fixtures/kinova_punyo absent")


def _urdf_rpy(rpy) -> np.ndarray:
    """The URDF convention written out: R = Rz(yaw) Ry(pitch) Rx(roll), from cos/sin directly.

    (Independent of the package's scipy-based helper, whose quaternion path can leave
    sin(pitch) one ulp short of 1 at pitch = 90 deg, where an arcsin-based inverse
    loses ~1e-8.)
    """
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


@pytest.mark.parametrize("rpy", [(0.3, -0.7, 2.0), (-2.5, 0.2, -0.4), (0.0, math.pi / 2, 0.5)])
def test_rpy_from_matrix_inverts_the_urdf_convention(rpy):
    R = _urdf_rpy(rpy)
    np.testing.assert_allclose(_urdf_rpy(rpy_from_matrix(R)), R, atol=1e-12)


def test_embedded_scene_has_bubble_link_table_and_box_and_only_they_collide():
    scene = build_scene(load_assets("embedded"))
    robot = scene.robot
    # The bubble is a fixed child of the flange, with the generated mesh in its vertex order.
    bubble = robot.link(BUBBLE)
    assert robot.link(bubble.getParent()).getName() == ew.END_LINK
    assert robot.getJointType(bubble.getIndex()) == "weld"
    tm = bubble.geometry().getTriangleMesh()
    np.testing.assert_allclose(np.array(tm.vertices), ew.bubble_mesh().vertices, atol=1e-9)
    # Only bubble, table and object collide (arm meshes dropped for speed).
    assert set(scene.body_ids) == {BUBBLE, TABLE, OBJECT}
    assert scene.joint_names == ew.EMBEDDED_JOINTS
    # Box 6 x 6 x 4 cm on a table whose top is at z = 0: top face at 4 cm.
    assert scene.object_top_z == pytest.approx(0.04)
    # Touch height: top + table/object gap (2.5 mm) + object padding (2.5 mm) + bubble padding.
    assert scene.touch_z(0.01) == pytest.approx(0.04 + 0.005 + 0.01)
    assert CONTACT_PADDING == 0.0025


@needs_kinova
def test_kinova_bubble_link_sits_at_punyo2ee_on_the_end_effector():
    scene = build_scene(load_assets("kinova", str(KINOVA_DIR)))
    robot = scene.robot
    q = scene.config_from_joints({f"Actuator{i}": 0.3 * i for i in range(1, 8)})
    robot.setConfig(q)
    T_ee = klampt_to_matrix(robot.link("EndEffector_Link").getTransform())
    T_b = klampt_to_matrix(robot.link(BUBBLE).getTransform())
    doc = json.loads((KINOVA_DIR / "punyo2end_effector_transform.json").read_text())
    expected = np.array(doc["punyo2ee"])
    np.testing.assert_allclose(np.linalg.inv(T_ee) @ T_b, expected, atol=1e-7)
    assert scene.joint_names == [f"Actuator{i}" for i in range(1, 8)]
    assert set(scene.body_ids) == {BUBBLE, TABLE, OBJECT}
    n_vertices = len(robot.link(BUBBLE).geometry().getTriangleMesh().vertices)
    assert n_vertices == 390                                   # punyo_mesh_complete.ply


def test_profile_heights_follow_the_phases():
    p = PressProfile(tare_s=1.0, approach_s=1.0, press_s=1.0, hold_s=1.0, release_s=1.0, retreat_s=1.0,
                     clearance=0.05, press_depth=0.01)
    np.testing.assert_allclose(p.boundaries(), [0, 1, 2, 3, 4, 5, 6])
    t = np.array([0.0, 0.99, 1.5, 2.0, 2.5, 3.5, 4.5, 5.5, 6.0, 9.0])
    # cosine profile: halfway through a move the height is the mean of its ends
    expected = [0.05, 0.05, 0.025, 0.0, -0.005, -0.01, -0.005, 0.025, 0.05, 0.05]
    np.testing.assert_allclose(p.height(t), expected, atol=1e-12)
    assert [p.phase(x) for x in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 7.0)] == \
        ["tare", "approach", "press", "hold", "release", "retreat", "rest"]


@pytest.mark.parametrize("field,value", [("tare_s", 0.5), ("hold_s", 0.0), ("press_depth", -0.001),
                                         ("clearance", float("nan"))])
def test_profile_rejects_bad_values_naming_them(field, value):
    p = PressProfile(**{field: value})
    with pytest.raises(SettingError) as err:
        p.validate()
    assert (err.value.setting, err.value.reason) == (field, "out_of_range")
    np.testing.assert_equal(err.value.value, value)


def test_trajectory_puts_the_bubble_tip_over_the_object_facing_down():
    assets = load_assets("embedded")
    scene = build_scene(assets)
    tip = bubble_tip(np.asarray(assets.bubble_mesh.vertices), assets.bubble_normal_local)
    np.testing.assert_allclose(tip, [0.0, 0.0, ew.BUBBLE_HEIGHT])       # the dome apex
    p = PressProfile(tare_s=1.0, approach_s=0.5, press_s=0.5, hold_s=0.5, release_s=0.5, retreat_s=0.5,
                     clearance=0.03, press_depth=0.01)
    top = scene.touch_z(0.01)
    traj = PressTrajectory(scene.robot, scene.bubble, tip, assets.bubble_normal_local, assets.object_xy, top,
                           p, scene.config_from_joints(assets.seed_config))
    for t, h in ((0.0, 0.03), (1.5, 0.0), (2.25, -0.01)):
        q, _ = traj.command(t)
        scene.robot.setConfig(q.tolist())
        T = klampt_to_matrix(scene.bubble.getTransform())
        np.testing.assert_allclose(T[:3, :3] @ tip + T[:3, 3], [0.45, 0.0, top + h], atol=1e-5)
        np.testing.assert_allclose(T[:3, :3] @ [0.0, 0.0, 1.0], [0.0, 0.0, -1.0], atol=1e-5)
    # the commanded velocity is the finite difference of neighbouring samples; zero when holding
    _, dq_hold = traj.command(2.25)
    np.testing.assert_allclose(dq_hold, 0.0, atol=1e-9)
    _, dq_move = traj.command(1.25)
    assert np.abs(dq_move).max() > 0.0


def _press(scene, assets):
    tip = bubble_tip(np.asarray(assets.bubble_mesh.vertices), assets.bubble_normal_local)
    return PressTrajectory(scene.robot, scene.bubble, tip, assets.bubble_normal_local, assets.object_xy,
                           scene.touch_z(0.01), PressProfile(), scene.config_from_joints(assets.seed_config))


def test_simulation_rejects_unknown_contact_bodies_naming_them():
    from vsf_sensor_ros.contact_sources.contact_sim import ContactSimulation
    assets = load_assets("embedded")
    scene = build_scene(assets)
    traj = _press(scene, assets)
    for kw, setting, value, reason in (
            (dict(contact_body_names=[BUBBLE, "floor"]), "contact_body_names", ["floor"], "unknown_body"),):
        with pytest.raises(SettingError) as err:
            ContactSimulation(scene, traj, **kw)
        assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, reason)


def test_sim_state_adds_transforms_of_extra_bodies():
    from vsf_sensor_ros.contact_sources.contact_sim import ContactSimulation
    assets = load_assets("embedded")
    scene = build_scene(assets)
    sim = ContactSimulation(scene, _press(scene, assets), contact_body_names=[BUBBLE, TABLE])
    state = sim.sim_state(extra_bodies=[OBJECT, BUBBLE])
    assert list(state.body_transforms) == [BUBBLE, TABLE, OBJECT]
    # table frame = slab centre (0.55, 0, -0.02); the box starts 1 mm above the table: z = 0.021
    np.testing.assert_allclose(state.body_transforms[TABLE][:3, 3].numpy(), ew.TABLE_POSITION)
    np.testing.assert_allclose(state.body_transforms[OBJECT][:3, 3].numpy(), [0.45, 0.0, 0.021], atol=1e-9)
