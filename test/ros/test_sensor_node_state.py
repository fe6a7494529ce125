"""sensor_node over real DDS: what changes the node -- tares, the calibration file, live parameters,
sensors added and removed.

Every test starts its own node process (the four-sensor configuration of
``sensor_node_scene.node_params``, a calibration file giving the pressure sensor a 500 Pa tare) and
its own probe, so no test sees another's tares, parameters or buffered samples; steps that build on
each other (a tare, then tare-all, then save) share one test, and so one node start.
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.calibration_file import HEADER
from vsf_sensor_ros.ros.frames import TFMessage
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields

from .sensor_node_scene import (N_TARE, SENSORS, diag, empty_cloud, first_send, for_stamp, measured_forces,
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
    assert "have contact" in r.message


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
    rows, g = scene_contacts(world)
    res = probe.set_params({"patch.fSaturation": [1.0, 1.0, 1.0]})
    assert res[0].successful, res[0].reason
    t = stamp(70)
    first_send(probe)("/contacts", rows_to_cloud(rows, t))
    f = wait_stamp(probe, "/patch/predicted", t).wrench.force
    local = g["Tt"][:3, :3].T @ g["f2"]
    np.testing.assert_allclose([f.x, f.y, f.z], np.clip(local, -1.0, 1.0), atol=1e-12)
    bad = probe.set_params({"patch.fSaturation": [-1.0, 1.0, 1.0]})
    assert not bad[0].successful
    assert "patch.fSaturation" in bad[0].reason and "-1.0" in bad[0].reason
    t = stamp(71)
    probe.send("/contacts", rows_to_cloud(rows, t))
    f = wait_stamp(probe, "/patch/predicted", t).wrench.force
    np.testing.assert_allclose([f.x, f.y, f.z], np.clip(local, -1.0, 1.0), atol=1e-12)
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


def test_sensor_added_and_removed_at_run_time(fresh):
    proc, probe, _ = fresh
    topic = "/extra/predicted"
    probe.listen(topic, WrenchStamped)
    res = probe.set_params({"sensors": SENSORS + ["extra"], "extra.type": "IsaacContactSensor",
                            "extra.attachment": "object", "extra.radius": 0.5}, atomic=True)
    assert res[0].successful, res[0].reason
    assert probe.spin_until(lambda: probe.count_publishers(topic) == 1, 10.0)
    assert probe.spin_until(lambda: probe.count_subscribers("/extra/measured") >= 1, 5.0)
    t = stamp(80)
    probe.spin_for(0.5)
    first_send(probe)("/contacts", empty_cloud(t))
    # stamped with the new sensor's frame (at its position on the object), announced by the node
    assert wait_stamp(probe, topic, t).header.frame_id == "extra_frame"
    if TFMessage is None:   # no TF here: the node names the frame to provide in its log
        announced = "--frame-id object --child-frame-id extra_frame"
        assert probe.spin_until(lambda: announced in proc.output(), 5.0)
    r = probe.call(Trigger, "/extra/tare", Trigger.Request())
    assert r.success is False and "no measured sample" in r.message
    # The new sensor senses within 0.5 m of the object origin (0.45, 0, 0.02).  A contact there
    # reads |f| = 5 N; after the object's pose moves it 1 m up, the same world point is 1 m away.
    row = [("object", "punyo", np.array([0.45, 0.0, 0.02]), np.array([0.0, 3.0, 4.0]), -1, -1)]
    t = stamp(81)
    probe.send("/contacts", rows_to_cloud(row, t))
    assert wait_stamp(probe, topic, t).wrench.force.z == pytest.approx(5.0, rel=1e-12)
    pose = PoseStamped()
    pose.header.frame_id = "world"
    pose.pose.position.x, pose.pose.position.z, pose.pose.orientation.w = 0.45, 1.02, 1.0
    first_send(probe)("/object/pose", pose)
    t = stamp(82)
    probe.send("/contacts", rows_to_cloud(row, t))
    assert wait_stamp(probe, topic, t).wrench.force.z == 0.0
    pose.pose.position.z = 0.02
    probe.send("/object/pose", pose)
    res = probe.set_params({"sensors": SENSORS})
    assert res[0].successful, res[0].reason
    assert probe.spin_until(lambda: probe.count_publishers(topic) == 0, 10.0)
    # a sensor with an unknown type is refused and nothing changes
    res = probe.set_params({"sensors": SENSORS + ["bogus"], "bogus.type": "NoSuchSensor",
                            "bogus.attachment": "object"}, atomic=True)
    assert not res[0].successful and "bogus.type" in res[0].reason


# --------------------------------------------------------------------------- bad input


def test_a_tare_before_any_measured_sample_is_refused_and_a_clock_offset_is_named(fresh):
    """A tare with nothing measured yet is refused.  Then contacts in simulation time (600 s) and the
    measured pressure stamped in wall-clock time (1.7e9 s + 600 s): 1.7e9 s apart, far beyond any
    tolerance -- no residual, and /diagnostics says why."""
    _, probe, _ = fresh
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False
    assert "no measured sample" in r.message
    t_sim, t_wall = stamp(600), stamp(1_700_000_600)
    first_send(probe)("/contacts", empty_cloud(t_sim))
    wait_stamp(probe, "/pressure/predicted", t_sim)
    first_send(probe)("/pressure/measured", measured_pressure(1013.0, t_wall))
    assert probe.spin_until(lambda: diag(probe)["/sensor_node: pressure"]["pairing"] ==
                            "measured stamps are 1.7e+09 s ahead of contacts stamps: different clocks?", 10.0)
    assert not probe.received["/pressure/residual"]
    assert diag(probe)["/sensor_node: force"]["pairing"] == "ok"
