"""A short headless Klampt/ODE press session (no ROS): contact-free start, press, signs, pressure.

Shortened profile (simulated seconds): tare 1.0, approach 0.3, press 0.3,
hold 0.4, release 0.2, retreat 0.2 -> hold over [1.6, 2.0) s, run 2.5 s.
"""
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.contact_sources.contact_sim import ContactSimulation
from vsf_sensor_ros.contact_sources.sim_world import BUBBLE, OBJECT, TABLE, build_scene, load_assets
from vsf_sensor_ros.contact_sources.trajectory import PressProfile, PressTrajectory, bubble_tip
from vsf_sensor_ros.sensor import sensor_from_config

G = 9.8
PROFILE = PressProfile(tare_s=1.0, approach_s=0.3, press_s=0.3, hold_s=0.4, release_s=0.2, retreat_s=0.2,
                       clearance=0.02, press_depth=0.01)
RUN_S = 2.5
KINOVA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "kinova_punyo"


def run_session(world: str, assets_dir=None, run_s: float = RUN_S):
    assets = load_assets(world, assets_dir)
    scene = build_scene(assets, object_mass=0.3)
    tip = bubble_tip(np.asarray(assets.bubble_mesh.vertices), assets.bubble_normal_local)
    traj = PressTrajectory(scene.robot, scene.bubble, tip, assets.bubble_normal_local, assets.object_xy,
                           scene.touch_z(0.01), PROFILE, scene.config_from_joints(assets.seed_config))
    sim = ContactSimulation(scene, traj)
    pressure = sensor_from_config({"name": "p", "type": "PunyoPressureSensor", "attachment": BUBBLE})
    pressure.attach(scene.bubble)
    steps = []
    while sim.time < run_s - 1e-9:
        sim.step()
        state = sim.sim_state()
        steps.append({"t": sim.time, "phase": PROFILE.phase(sim.time), "contacts": sim.contact_arrays(),
                      "pressure": float(pressure.predict(state)[0]), "T_bubble": sim.body_transform(BUBBLE),
                      "q": sim.joint_positions()})
    return scene, sim, steps


@pytest.fixture(scope="module")
def embedded():
    return run_session("embedded")


def _in(steps, phase):
    return [s for s in steps if s["phase"] == phase]


def test_session_starts_with_a_contact_free_stretch_longer_than_one_second(embedded):
    _, _, steps = embedded
    first = next(s["t"] for s in steps if any(BUBBLE in pair for pair in s["contacts"]))
    assert first > 1.0 + 1e-9            # the whole tare phase (1.0 s) is free of bubble contact
    tare = _in(steps, "tare")
    assert len(tare) >= 99               # 1.0 s at 0.01 s per step


def test_object_rests_on_the_table_with_its_weight_during_the_tare(embedded):
    # 0.3 kg box: the table pushes it up with m g = 0.3 * 9.8 = 2.94 N; it pushes the table down.
    _, _, steps = embedded
    for s in _in(steps, "tare")[20:]:     # after the 1 mm drop has settled
        f_obj = s["contacts"][(OBJECT, TABLE)][1].sum(axis=0)
        np.testing.assert_allclose(f_obj, [0.0, 0.0, 0.3 * G], atol=0.02)
        np.testing.assert_allclose(s["contacts"][(TABLE, OBJECT)][1].sum(axis=0), -f_obj)


def test_bubble_presses_the_object_and_the_force_on_the_bubble_points_away_from_it(embedded):
    # The bubble is above the box, so the box pushes it *up* (+z), away from the box;
    # the box is pushed down by the same amount (both orders, same points).
    _, _, steps = embedded
    hold = _in(steps, "hold")
    assert len(hold) >= 39
    for s in hold:
        pts, f_bubble = s["contacts"][(BUBBLE, OBJECT)]
        pts2, f_object = s["contacts"][(OBJECT, BUBBLE)]
        np.testing.assert_array_equal(pts, pts2)
        np.testing.assert_array_equal(f_object, -f_bubble)
        total = f_bubble.sum(axis=0)
        assert total[2] > 2.0                                   # a real press, newtons
        assert total[2] > 0.8 * np.linalg.norm(total)           # mostly normal (< 37 deg off vertical)
        # contact points lie over the box's top face, between box and bubble
        box_top = ew.OBJECT_SIZE[2]
        assert np.all(pts[:, 2] > box_top - 0.005) and np.all(pts[:, 2] < box_top + 0.02)


def test_static_balance_of_the_pressed_object(embedded):
    # Box at rest: table force = weight + bubble push: F_table_z = m g - F_bubble_on_object_z.
    _, _, steps = embedded
    for s in _in(steps, "hold")[10:]:
        f_table = s["contacts"][(OBJECT, TABLE)][1].sum(axis=0)[2]
        f_bubble = s["contacts"][(OBJECT, BUBBLE)][1].sum(axis=0)[2]   # negative: pushes down
        assert f_table == pytest.approx(0.3 * G - f_bubble, abs=0.15 * abs(f_bubble) + 0.1)


def test_pressure_rises_by_the_normal_load_over_the_base_area_when_pressed(embedded):
    _, _, steps = embedded
    # Base area of the generated bubble (24-gon of radius 5 cm): 1/2 * 24 * 0.05^2 * sin(15 deg).
    area = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)
    assert area == pytest.approx(0.0077646, rel=1e-4)
    tare = _in(steps, "tare")
    assert all(s["pressure"] == 0.0 for s in tare)          # no contact, no gauge pressure
    for s in _in(steps, "hold"):
        f = s["contacts"][(BUBBLE, OBJECT)][1].sum(axis=0)
        n_world = s["T_bubble"][:3, :3] @ np.array([0.0, 0.0, 1.0])   # membrane normal, ~ -z when pressing
        assert n_world[2] < -0.99
        expected = -(f @ n_world) / area                     # = F_z / A for a bubble facing down
        assert s["pressure"] == pytest.approx(expected, rel=1e-6)
        assert s["pressure"] > 2.0 / area                    # > 257 Pa: the press raised it


def test_bubble_leaves_the_object_after_the_retreat(embedded):
    _, _, steps = embedded
    last = steps[-1]
    assert last["phase"] == "rest" or last["phase"] == "retreat"
    assert not any(BUBBLE in pair for pair in last["contacts"])


def test_joint_names_are_the_urdf_movable_joint_names(embedded):
    scene, sim, steps = embedded
    root = ET.parse(ew.embedded_urdf_path()).getroot()
    urdf_movable = [j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"]
    assert urdf_movable == ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"]
    assert scene.joint_names == urdf_movable
    assert steps[-1]["q"].shape == (4,)
    # At the start the arm holds the bubble apex 2 cm above the touch height: the shoulder yaw
    # points at the object on the x axis (atan2(0, 0.45) = 0).
    assert steps[0]["q"][0] == pytest.approx(0.0, abs=1e-3)


def test_sim_state_carries_contact_bodies_in_float64_and_every_pair_in_both_orders(embedded):
    _, sim, _ = embedded
    state = sim.sim_state()
    assert set(state.body_transforms) == {BUBBLE, OBJECT, TABLE}
    assert state.dtype == torch.float64
    for (a, b), c in state.contacts.items():
        assert (b, a) in state.contacts
        torch.testing.assert_close(state.contacts[(b, a)].forces, -c.forces)


@pytest.mark.skipif(not (KINOVA_DIR / "kinova_gen3.urdf").is_file(),
                    reason="Kinova/Punyo fixture ../shared/fixtures/kinova_punyo absent")
def test_kinova_world_presses_with_the_real_punyo_mesh():
    scene, sim, steps = run_session("kinova", str(KINOVA_DIR), run_s=2.0)
    assert scene.joint_names == [f"Actuator{i}" for i in range(1, 8)]
    assert not any(BUBBLE in pair for s in _in(steps, "tare") for pair in s["contacts"])
    hold = _in(steps, "hold")
    assert len(hold) >= 39
    for s in hold:
        total = s["contacts"][(BUBBLE, OBJECT)][1].sum(axis=0)
        assert total[2] > 1.0 and total[2] > 0.8 * np.linalg.norm(total)
        assert s["pressure"] > 0.0
