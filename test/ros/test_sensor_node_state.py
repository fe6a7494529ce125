"""sensor_node over real DDS: what changes the node -- tares, the calibration file, live parameters.

Every test starts its own node process (the four-sensor configuration of
``sensor_node_scene.node_params``, a calibration file giving the pressure sensor a 500 Pa tare) and
its own probe, so no test sees another's tares, parameters or buffered samples; steps that build on
each other (a tare, then tare-all, then save) share one test, and so one node start.
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.rig.calibration import HEADER
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields

from .sensor_node_scene import (N_TARE, diag, empty_cloud, first_send, for_stamp, measured_forces,
                                measured_pressure, posed_world, rows_to_cloud, scene_contacts, send_pose,
                                stamp, start_node, tare_pressure, wait_stamp)


@pytest.fixture
def fresh(tmp_path, rclpy_context):
    """``(process, probe, calibration file)`` of a node started for this test alone."""
    with start_node(tmp_path, "sensor_node_state_probe") as r:
        yield r


@pytest.fixture
def world():
    return posed_world()


def test_tare_refused_when_every_sample_has_contact(fresh, world):
    _, probe, _ = fresh
    send_pose(probe)
    rows, _ = scene_contacts(world)
    for k in range(N_TARE):
        t = stamp(40 + k)
        send = probe.send if k else first_send(probe)   # the first messages confirmed (see deliver)
        send("/pressure/measured", measured_pressure(1000.0, t))
        send("/contacts", rows_to_cloud(rows, t))
        wait_stamp(probe, "/pressure/residual", t)
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False


def test_tare_tare_all_and_save_on_one_node(fresh):
    """One node for the three answers of a tare (each a node start less): ``pressure/tare`` averages
    the contact-free samples (101320 Pa, see ``tare_pressure``) and the next prediction reads it;
    ``/tare`` tares it again from the same samples and lists the sensors that never received a
    measured message (test_tare_all.py covers the all-sensor success, test_real_drivers.py all or
    nothing); ``save_calibration`` writes that tare to the file."""
    _, probe, cal = fresh
    r = tare_pressure(probe)
    assert r.success is True, r.message
    assert f"{N_TARE} of {N_TARE} samples" in r.message and "101320" in r.message, r.message
    t = stamp(60)
    probe.send("/contacts", empty_cloud(t))
    assert wait_stamp(probe, "/pressure/predicted", t).fluid_pressure == pytest.approx(101320.0, rel=1e-12)
    assert probe.spin_until(lambda: "tared with 3 samples" in
                            diag(probe)["/sensor_node: pressure"]["calibration"], 5.0)
    r = probe.call(Trigger, "/tare", Trigger.Request())
    lines = r.message.split("\n")
    assert len(lines) == 2, lines
    assert lines[0].startswith("pressure: tared with 3 of 3 samples")
    assert lines[1] == "skipped (no measured stream): force, patch, load"
    assert r.success is True
    r = probe.call(Trigger, "/save_calibration", Trigger.Request())
    assert r.success is True, r.message
    text = cal.read_text()
    assert text.split("\n", 1)[0] == HEADER
    data = yaml.safe_load(text)
    assert data["sensors"]["pressure"]["calibration"]["tare"] == pytest.approx([101320.0], rel=1e-12)
    assert data["sensors"]["pressure"]["samples"] == N_TARE


def test_tare_on_start_tares_once_n_contact_free_pairs_exist(fresh, world):
    _, probe, _ = fresh
    # Dense force: measured 0.25, 0.5, 0.75 N on every vertex/axis over three contact-free steps;
    # the raw contact-free prediction is 0, so the offset is their mean, 0.5 N, on every entry.
    assert probe.set_params({"tare_on_start": True})[0].successful
    nv = len(world.body_mesh("punyo").vertices)
    probe.wait_for_subscriber("/force/measured", PointCloud2)
    for k, v in enumerate((0.25, 0.5, 0.75)):
        t = stamp(65, k)
        send = probe.send if k else first_send(probe)
        send("/contacts", empty_cloud(t))
        send("/force/measured", measured_forces(np.full((nv, 3), v), t))
        wait_stamp(probe, "/force/residual", t)
    t = stamp(66)
    probe.send("/contacts", empty_cloud(t))
    cols = read_cloud_fields(wait_stamp(probe, "/force/predicted", t), ["fx", "fy", "fz"])
    np.testing.assert_allclose(np.stack([cols["fx"], cols["fy"], cols["fz"]]), 0.5, rtol=1e-6)
    assert probe.set_params({"tare_on_start": False})[0].successful


def test_live_parameter_change_is_applied_and_invalid_value_rejected(fresh, world):
    _, probe, _ = fresh
    send_pose(probe)
    rows, _ = scene_contacts(world)
    t = stamp(70)
    first_send(probe)("/contacts", rows_to_cloud(rows, t))
    wait_stamp(probe, "/pressure/predicted", t)
    bad = probe.set_params({"pressure.measured_scale": -1.0})
    assert not bad[0].successful
    assert "pressure.measured_scale" in bad[0].reason and "-1.0" in bad[0].reason
    unknown = probe.set_params({"patch.colour": 3.0})
    assert not unknown[0].successful and "patch.colour" in unknown[0].reason
    assert not probe.set_params({"world_frame": "map"})[0].successful       # read-only
    # measured_scale applies to the next measured message: 2.0 Pa x 1 = 2 Pa, residual 2 - predicted
    assert probe.set_params({"pressure.measured_scale": 1})[0].successful    # int accepted for a double
    probe.send("/pressure/measured", measured_pressure(2.0, t))
    res = wait_stamp(probe, "/pressure/residual", t)
    pred = for_stamp(probe, "/pressure/predicted", t)[-1].fluid_pressure
    assert res.fluid_pressure == pytest.approx(2.0 - pred, rel=1e-12)
    # switching the Jacobian off stops <s>/jacobian
    assert probe.set_params({"load.publish_jacobian": False})[0].successful
    t = stamp(72)
    probe.send("/contacts", rows_to_cloud(rows, t))
    wait_stamp(probe, "/load/predicted", t)
    probe.spin_for(0.3)
    assert not for_stamp(probe, "/load/jacobian", t)


# --------------------------------------------------------------------------- bad input


def test_a_tare_before_any_measured_sample_is_refused_and_a_clock_offset_is_named(fresh):
    """A tare with nothing measured yet is refused.  Then contacts in simulation time (600 s) and the
    measured pressure stamped in wall-clock time (1.7e9 s + 600 s): 1.7e9 s apart, far beyond any
    tolerance -- no residual, and /diagnostics says why."""
    _, probe, _ = fresh
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False
    t_sim, t_wall = stamp(600), stamp(1_700_000_600)
    first_send(probe)("/contacts", empty_cloud(t_sim))
    wait_stamp(probe, "/pressure/predicted", t_sim)
    first_send(probe)("/pressure/measured", measured_pressure(1013.0, t_wall))
    assert probe.spin_until(lambda: diag(probe)["/sensor_node: pressure"]["pairing"] ==
                            "measured stamps are 1.7e+09 s ahead of contacts stamps: different clocks?", 10.0)
    assert not probe.received["/pressure/residual"]
    assert diag(probe)["/sensor_node: force"]["pairing"] == "ok"
