"""MuJoCo contacts and sensors (no ROS): force conventions pinned by resting weights, hand-derived layouts."""

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.contact_sources.trajectory import PressProfile
from vsf_sensor_ros.contact_sources.mujoco_scene import (LOAD_SITE, PAD_SITE, MujocoScene, MujocoSceneConfig,
                                                         PressPlan, contact_rows, contacts_by_pair,
                                                         load_reading, pad_reading, robot_spec)
from vsf_sensor_ros.contact_sources.sim_sensors import (SOURCE_MUJOCO_FORCE, SOURCE_MUJOCO_TOUCH,
                                                        measured_source_label)
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.urdf import UrdfError

G = 9.81          # MuJoCo's default gravity magnitude (m/s^2)
BODIES = ["punyo", "object", "table"]

# A 2 kg box, 0.2 x 0.1 x 0.05 m, resting centred on a static slab whose top face is z = 0.
BOX_ON_SLAB = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body name="slab" pos="0 0 -0.05"><geom type="box" size="0.5 0.5 0.05"/></body>
    <body name="box" pos="0.3 -0.2 0.025"><freejoint/>
      <geom type="box" size="0.1 0.05 0.025" mass="2.0"/></body>
  </worldbody>
</mujoco>
"""


def settled(xml, seconds=1.0):
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    for _ in range(int(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)
    mujoco.mj_forward(model, data)
    return model, data


def test_a_resting_box_presses_the_slab_with_its_weight_downward():
    model, data = settled(BOX_ON_SLAB)
    rows = contact_rows(model, data)
    assert len(rows) == 4                                   # box on box: one contact per bottom corner
    # MuJoCo orders the pair by geom: the slab (defined first) is geom1 -> body1.
    assert set(rows.body1) == {"slab"} and set(rows.body2) == {"box"}
    # force on body1 (the supporting slab) by body2 (the box): its weight, m g downward
    np.testing.assert_allclose(rows.forces.sum(axis=0), [0.0, 0.0, -2.0 * G], atol=1e-6)
    # by symmetry each corner carries a quarter of it
    np.testing.assert_allclose(rows.forces[:, 2], -2.0 * G / 4.0, rtol=1e-3)
    # the contact points are the corners of the bottom face (0.3 +- 0.1, -0.2 +- 0.05, z = 0);
    # MuJoCo puts them midway through the (sub-millimetre) overlap
    corners = {(round(x, 3), round(y, 3)) for x, y in rows.points[:, :2]}
    assert corners == {(0.2, -0.25), (0.2, -0.15), (0.4, -0.25), (0.4, -0.15)}
    assert np.abs(rows.points[:, 2]).max() < 1e-3
    np.testing.assert_allclose(rows.normals, np.tile([0.0, 0.0, 1.0], (4, 1)), atol=1e-9)  # slab -> box
    assert (rows.depths > 0).all() and rows.depths.max() < 1e-3


def test_a_box_on_a_ground_plane_presses_the_world_body_with_its_weight():
    # the plane belongs to MuJoCo's world body, whose model name is "world"
    slab = '<body name="slab" pos="0 0 -0.05"><geom type="box" size="0.5 0.5 0.05"/></body>'
    assert slab in BOX_ON_SLAB
    xml = BOX_ON_SLAB.replace(slab, '<geom type="plane" size="1 1 0.1"/>')
    model, data = settled(xml)
    rows = contact_rows(model, data)
    assert set(rows.body1) == {"world"} and set(rows.body2) == {"box"}
    np.testing.assert_allclose(rows.forces.sum(axis=0), [0.0, 0.0, -2.0 * G], atol=1e-6)
    assert {(round(x, 3), round(y, 3)) for x, y in rows.points[:, :2]} == {
        (0.2, -0.25), (0.2, -0.15), (0.4, -0.25), (0.4, -0.15)}
    pairs = contacts_by_pair(rows, ["box", "world"])
    np.testing.assert_allclose(pairs[("box", "world")].forces.sum(0).numpy(), [0, 0, 2.0 * G], atol=1e-6)


def test_pairs_come_in_both_orders_with_opposite_forces_and_foreign_bodies_are_dropped():
    model, data = settled(BOX_ON_SLAB)
    rows = contact_rows(model, data)
    pairs = contacts_by_pair(rows, ["box", "slab"])
    assert list(pairs) == [("box", "slab"), ("slab", "box")]          # table order, box first
    np.testing.assert_allclose(pairs[("box", "slab")].forces.sum(0).numpy(), [0, 0, 2.0 * G], atol=1e-6)
    np.testing.assert_allclose(pairs[("slab", "box")].forces.numpy(), -pairs[("box", "slab")].forces.numpy())
    np.testing.assert_allclose(pairs[("slab", "box")].points.numpy(), pairs[("box", "slab")].points.numpy())
    assert list(contacts_by_pair(rows, ["slab", "box"])) == [("slab", "box"), ("box", "slab")]
    assert contacts_by_pair(rows, ["box", "table"]) == {}              # the slab is not in the table


def test_the_mjcf_arm_puts_the_bubble_apex_where_the_closed_form_ik_says():
    scene = MujocoScene()
    assert scene.joint_names == ew.EMBEDDED_JOINTS
    # HOME: apex 1 cm above the object's top face centre, bubble facing down (embedded_world's IK)
    for name, q in ew.HOME.items():
        scene.data.qpos[scene.model.joint(name).qposadr[0]] = q
    mujoco.mj_forward(scene.model, scene.data)
    T = scene.body_transform("punyo")
    apex = T[:3, :3] @ [0.0, 0.0, ew.BUBBLE_HEIGHT] + T[:3, 3]
    np.testing.assert_allclose(apex, [0.45, 0.0, 0.05], atol=1e-9)
    np.testing.assert_allclose(T[:3, 2], [0.0, 0.0, -1.0], atol=1e-9)   # membrane normal straight down
    # the arm's masses come from the URDF: 2 + 1 + 1 + 0.6 + 0.3 + 0.1 kg
    arm = sum(scene.model.body(n).mass[0] for n in ew.EMBEDDED_LINKS)
    assert arm == pytest.approx(5.0)
    assert scene.model.body("punyo").mass[0] == 0.0                      # massless bubble


def test_urdf_import_keeps_links_joint_axes_ranges_and_rotated_inertia():
    urdf = """<robot name="r">
      <link name="world"/>
      <joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>
      <link name="a"/>
      <joint name="j" type="revolute"><origin xyz="0 0 0.5" rpy="0 0 1.5707963267948966"/>
        <parent link="a"/><child link="b"/><axis xyz="0 2 0"/>
        <limit lower="-1" upper="0.5" effort="1" velocity="1"/></joint>
      <link name="b"><inertial><origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/><mass value="3"/>
        <inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial></link>
    </robot>"""
    model = robot_spec(urdf).compile()
    assert [model.body(i).name for i in range(model.nbody)] == ["world", "a", "b"]   # fixed joint kept
    assert model.ngeom == 0 and list(model.body_gravcomp) == [0, 1, 1]
    j = model.joint("j")
    assert j.type[0] == mujoco.mjtJoint.mjJNT_HINGE
    np.testing.assert_allclose(j.range, [-1, 0.5])
    np.testing.assert_allclose(j.axis, [0, 1, 0])   # normalised
    # a quarter turn about z swaps the x and y principal moments: the tensor in b's frame is diag(2, 1, 3)
    R = Rotation.from_quat(np.roll(model.body("b").iquat, -1)).as_matrix()   # MuJoCo's quaternions: w first
    inertia = R @ np.diag(model.body("b").inertia) @ R.T
    np.testing.assert_allclose(inertia, np.diag([2.0, 1.0, 3.0]), atol=1e-9)
    np.testing.assert_allclose(model.body("b").ipos, [0.1, 0, 0])
    with pytest.raises(UrdfError) as err:
        robot_spec(urdf.replace('type="revolute"', 'type="floating"'))
    assert (err.value.reason, err.value.where, err.value.value) == ("joint_type", "j", "floating")


def test_the_scene_object_rests_with_its_weight_and_the_bubble_starts_free():
    scene = MujocoScene(MujocoSceneConfig(object_mass=0.5))
    plan = PressPlan(PressProfile(), ew.OBJECT_POSITION[:2], ew.OBJECT_SIZE[2])
    scene.reset(plan.targets(0.0))
    mujoco.mj_forward(scene.model, scene.data)
    pairs = scene.contacts(BODIES)
    assert set(pairs) == {("object", "table"), ("table", "object")}
    np.testing.assert_allclose(pairs[("table", "object")].forces.sum(0).numpy(), [0, 0, -0.5 * G], atol=1e-4)
    assert not scene.bubble_in_contact()
    np.testing.assert_allclose(pad_reading(scene, ["contact", "force_x", "force_y", "force_z"]), 0.0,
                               atol=1e-9)
    assert load_reading(scene).tolist() == [0.0, 0.0]    # the table's contacts are 4 cm below the zone


def pressed_scene(depth=0.01, seconds=5.0):
    """The scene held at the hold phase of a press (apex ``depth`` below the object's top face)."""
    pad_T = np.eye(4)
    pad_T[:3, 3] = [0.0, 0.0, ew.BUBBLE_HEIGHT]
    scene = MujocoScene(MujocoSceneConfig(pad_T=pad_T))
    profile = PressProfile(press_depth=depth)
    plan = PressPlan(profile, ew.OBJECT_POSITION[:2], ew.OBJECT_SIZE[2])
    scene.reset(plan.targets(0.0))
    while scene.time < seconds:
        scene.set_targets(plan.targets(scene.time + 0.01))
        scene.step(10)
    mujoco.mj_forward(scene.model, scene.data)
    return scene


def test_pressing_mujocos_force_sensor_and_its_contact_forces_agree_on_the_force_on_the_bubble():
    scene = pressed_scene()
    pairs = scene.contacts(BODIES)
    on_bubble = pairs[("punyo", "object")].forces.sum(0).numpy()
    # the object pushes the bubble up: a few newtons against the 1 cm press
    assert on_bubble[2] > 3.0
    # second method: MuJoCo's force sensor (the flange's force on the massless bubble, pad frame)
    # must be minus the summed contact force, rotated into the pad frame
    R_pad = scene.body_transform("punyo")[:3, :3]                      # pad_T has no rotation
    np.testing.assert_allclose(scene.sensor(PAD_SITE), -(R_pad.T @ on_bubble), atol=1e-6)
    reading = pad_reading(scene, ["contact", "force_x", "force_y", "force_z"])
    assert reading[0] == 1.0
    np.testing.assert_allclose(reading[1:], R_pad.T @ on_bubble, atol=1e-6)
    assert reading[3] < -3.0            # Klampt semantics: pressing the outward pad reads negative z


def test_the_pad_reads_in_its_own_frame_when_tsensor_rotates():
    plain = pressed_scene(seconds=4.5)
    turned_T = np.eye(4)
    turned_T[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]   # pad x = bubble y
    turned_T[:3, 3] = [0.0, 0.0, ew.BUBBLE_HEIGHT]
    scene = MujocoScene(MujocoSceneConfig(pad_T=turned_T))
    plan = PressPlan(PressProfile(), ew.OBJECT_POSITION[:2], ew.OBJECT_SIZE[2])
    scene.reset(plan.targets(0.0))
    while scene.time < 4.5:
        scene.set_targets(plan.targets(scene.time + 0.01))
        scene.step(10)
    mujoco.mj_forward(scene.model, scene.data)
    names = ["force_x", "force_y", "force_z"]
    f_plain, f_turned = pad_reading(plain, names), pad_reading(scene, names)
    assert abs(f_plain[0]) > 0.5                     # mid-press the bubble also feels a sideways force
    # the same physics (the site does not change it): rotated components, R_padᵀ f
    np.testing.assert_allclose(f_turned, turned_T[:3, :3].T @ f_plain, atol=1e-9)


def test_the_touch_sensor_sums_the_normal_forces_of_the_bubble_on_the_top_face():
    scene = pressed_scene()
    rows = contact_rows(scene.model, scene.data)
    normal_sum = 0.0
    for k in range(len(rows)):
        if {rows.body1[k], rows.body2[k]} == {"punyo", "object"}:
            normal_sum += abs(float(rows.forces[k] @ rows.normals[k]))
    assert normal_sum > 3.0
    np.testing.assert_allclose(scene.sensor(LOAD_SITE)[0], normal_sum, rtol=1e-9)
    np.testing.assert_allclose(load_reading(scene), [1.0, normal_sum], rtol=1e-9)
    np.testing.assert_allclose(load_reading(scene, max_threshold=1.0), [1.0, 1.0])
    assert load_reading(scene, min_threshold=normal_sum + 1.0).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("make, setting, value", [
    (lambda: MujocoScene(MujocoSceneConfig(object_size=(0.1, -0.1, 0.1))), "object_size", (0.1, -0.1, 0.1)),
    (lambda: MujocoScene(MujocoSceneConfig(arm_kp=(1.0, 2.0))), "arm_kp", (1.0, 2.0)),
    (lambda: MujocoScene(MujocoSceneConfig(solref=(0.001, 1.0))), "solref", (0.001, 1.0)),
])
def test_bad_settings_are_named(make, setting, value):
    with pytest.raises(SettingError) as err:
        make()
    assert (err.value.setting, err.value.value) == (setting, value)


def test_a_target_out_of_reach_and_an_unknown_joint_are_refused():
    with pytest.raises(InputError) as err:
        PressPlan(PressProfile(), (2.0, 0.0), 0.04)
    # the first target checked: the apex at the clearance above the top
    assert (err.value.argument, err.value.reason) == ("apex", "out_of_reach")
    assert err.value.value == pytest.approx((2.0, 0.0, 0.04 + PressProfile().clearance))
    with pytest.raises(InputError) as err:
        MujocoScene().set_targets({"elbow": 0.0})
    assert (err.value.argument, err.value.value, err.value.reason) == ("joints", ["elbow"], "unknown_joint")


def test_measured_source_labels():
    for kind, attachment, mode, label in (
            ("ContactSensor", "punyo", "independent", SOURCE_MUJOCO_FORCE),
            ("IsaacContactSensor", "object", "independent", SOURCE_MUJOCO_TOUCH),
            ("PunyoPressureSensor", "punyo", "independent", "synthetic-model"),
            ("ContactSensor", "punyo", "model", "synthetic-model")):
        assert measured_source_label(kind, attachment, mode, backend="mujoco") == label
    with pytest.raises(SettingError) as err:
        measured_source_label("ContactSensor", "punyo", "both", backend="mujoco")
    assert (err.value.setting, err.value.value, err.value.reason) == ("measured_source", "both", "invalid")
