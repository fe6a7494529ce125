"""Independent measured streams of the simulated demo: Klampt's own ContactSensor and the simulator's
summed contact force, against the package's models on the same contacts.

Resting weight: a 1 kg block at rest on a flat robot link; the link's outward normal is +z, so
the pad (force on the link, sensor frame = link frame) must read (0, 0, -m g) = (0, 0, -9.8) N,
in Klampt's C++ sensor and in the package's model alike.
"""
import klampt
import numpy as np
import torch

from test.contact_sources.test_contact_sim_convention import WEIGHT, _add_block, plate_world
from test.contact_sources.test_contact_sim_headless import PROFILE, RUN_S
from vsf_sensor_ros.contact_sources.contact_sim import (ContactSimulation, add_klampt_contact_sensor,
                                                        contacts_between)
from vsf_sensor_ros.contact_sources.sim_sensors import MeasuredStream, demo_sensor_specs, independent_source
from vsf_sensor_ros.contact_sources.sim_world import BUBBLE, OBJECT, build_scene, load_assets
from vsf_sensor_ros.contact_sources.trajectory import PressTrajectory, bubble_tip
from vsf_sensor_ros.sensor import ContactSensor, ContactState, SimState
from vsf_sensor_ros.world import klampt_to_matrix


def test_pad_and_klampt_native_sensor_agree_on_a_resting_weight():
    world = plate_world()
    link = world.robot(0).link("plate")
    block = _add_block(world, 0.0)
    pad = ContactSensor("pad", "plate", patchMin=[-0.1, -0.1], patchMax=[0.1, 0.1], patchTolerance=0.005,
                        hasForce=[True, True, True])
    sim = klampt.Simulator(world)
    sim.enableContactFeedback(link.getID(), block.getID())
    native = add_klampt_contact_sensor(sim, 0, "pad", link.getIndex(), pad.settings())
    assert list(native.measurementNames()) == pad.measurement_names()
    for _ in range(300):                                   # 1.5 s: the block comes to rest
        sim.simulate(0.005)
    sim.updateWorld()
    pts, f = contacts_between(sim, link.getID(), block.getID())
    state = SimState({"plate": torch.from_numpy(klampt_to_matrix(link.getTransform())),
                      "block": torch.eye(4, dtype=torch.float64)}, {},
                     {("plate", "block"): ContactState(torch.from_numpy(pts), torch.from_numpy(f))})
    expected = [1.0, 0.0, 0.0, -WEIGHT]
    got_native = np.asarray(native.getMeasurements())
    got_model = pad.predict(state).numpy()
    np.testing.assert_allclose(got_native, expected, atol=0.02)
    np.testing.assert_allclose(got_model, expected, atol=0.02)
    np.testing.assert_allclose(got_native, got_model, atol=0.02)


def test_demo_press_independent_pad_and_load_follow_the_models():
    assets = load_assets("embedded")
    scene = build_scene(assets, object_mass=0.3)
    tip = bubble_tip(np.asarray(assets.bubble_mesh.vertices), assets.bubble_normal_local)
    traj = PressTrajectory(scene.robot, scene.bubble, tip, assets.bubble_normal_local, assets.object_xy,
                           scene.touch_z(0.01), PROFILE, scene.config_from_joints(assets.seed_config))
    sim = ContactSimulation(scene, traj)
    specs = demo_sensor_specs(assets, scene.object_size)
    pad = MeasuredStream(specs["punyo_pad"], scene.bubble, 0, 0)
    load = MeasuredStream(specs["object_load"], scene.world.rigidObject(OBJECT), 0, 1)
    pressure = MeasuredStream(specs["punyo_pressure"], scene.bubble, 0, 2)
    pad.source = independent_source(pad.spec, sim, pad.sensor)
    load.source = independent_source(load.spec, sim, load.sensor)
    assert independent_source(pressure.spec, sim, pressure.sensor) is None
    assert not pad.synthetic and not load.synthetic and pressure.synthetic
    rows = {"tare": [], "hold": []}
    while sim.time < RUN_S - 1e-9:
        sim.step()
        phase = traj.profile.phase(sim.time)
        if phase in rows:
            state = sim.sim_state(extra_bodies=[OBJECT])
            rows[phase].append((pad.source(), pad.sensor.predict(state).numpy(),
                                load.source(), load.sensor.predict(state).numpy()))
    # contact-free: both implementations read exactly nothing
    for native_pad, model_pad, native_load, model_load in rows["tare"]:
        assert not native_pad.any() and not model_pad.any() and not native_load.any() and not model_load.any()
    hold = rows["hold"]
    assert len(hold) >= 30
    native_fz = np.mean([r[0][3] for r in hold])
    model_fz = np.mean([r[1][3] for r in hold])
    assert native_fz < -5.0                                  # the box pushes the bubble inward
    assert abs(native_fz - model_fz) < 0.1 * abs(model_fz)
    native_load = np.mean([r[2][1] for r in hold])
    model_load = np.mean([r[3][1] for r in hold])
    assert abs(native_load - model_load) < 0.1 * model_load
    assert BUBBLE in sim.contact_body_names
