"""``contacts_type: ros_gz_interfaces/msg/Contacts`` over real DDS: same outputs as the PointCloud2.

The four test sensors (``sensor_node_scene``) get one step of contacts twice: once as our
contacts ``PointCloud2`` (built from ``ContactState`` rows with ``contacts_to_pointcloud2``),
once, in a second node process started with ``contacts_type: ros_gz_interfaces/msg/Contacts``,
as the gz ``Contacts`` message a contact sensor would send for the same contacts:

* ``bubble_model::punyo::collision`` / ``block::box::collision`` (mapped to ``object`` by
  ``contact_body_map``): two points on the bubble (its mesh vertices 5 and 17), forces f0, f3;
* ``arm::tool_link::pad`` (the default map: its link ``tool_link``) / the block: the flange
  origin, force f2.

Predictions and Jacobians of every sensor must be equal value for value (the Jacobian cloud
byte for byte).  Then a malformed gz message (points without wrenches) is rejected and counted
as ``empty_wrenches`` while the node keeps serving the next good message.

Contacts that stop at a release (gz publishes only while something touches; the contacts cloud
with ``contacts_event_driven``): the node steps on the joint states' stamps and predicts the
contact-free state one ``contact_free_period`` after the last contacts message, and a tare taken
then uses those steps.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from geometry_msgs.msg import Vector3

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.sensor import ContactState

from std_srvs.srv import Trigger

from .node_helpers import joint_state, latest_status
from .sensor_node_scene import (JOINT_NAMES, JOINT_POS, N_TARE, PRESSURE_TARE_FROM_FILE, SENSORS, body_names,
                                first_send, measured_pressure, posed_world, send_pose, stamp, start_node,
                                wait_stamp)

ros_gz = pytest.importorskip("ros_gz_interfaces.msg",
                             reason="ros_gz_interfaces not importable (make venv builds it)")

GZ = {"contacts_type": "ros_gz_interfaces/msg/Contacts", "contact_body_map": ["block::*=object"]}
F0, F2, F3 = np.array([0.5, -0.25, 3.0]), np.array([1.0, 2.0, -4.0]), np.array([-0.5, 0.0, 2.0])


def _scene():
    w = posed_world()
    Tp, Tt = w.body_transform("punyo"), w.body_transform("tool_link")
    V = np.asarray(w.body_mesh("punyo").vertices)
    p5, p17 = Tp[:3, :3] @ V[5] + Tp[:3, 3], Tp[:3, :3] @ V[17] + Tp[:3, 3]
    return p5, p17, Tt[:3, 3]


def _cloud(t):
    p5, p17, flange = _scene()

    def rows(*a):
        return torch.tensor(np.array(a), dtype=torch.float64)
    cs = {("punyo", "object"): ContactState(rows(p5, p17), rows(F0, F3)),
          ("tool_link", "object"): ContactState(rows(flange), rows(F2))}
    normals = {("punyo", "object"): [[0, 0, 1], [0, 0, 1]], ("tool_link", "object"): [[0, 0, -1]]}
    depths = {("punyo", "object"): [0.001, 0.002], ("tool_link", "object"): [0.0005]}
    msg = contacts_to_pointcloud2(cs, body_names(), normals=normals, depths=depths)
    msg.header.stamp = t
    return msg


def _gz_contact(c1, c2, points, forces, normals, depths):
    c = ros_gz.Contact(collision1=ros_gz.Entity(name=c1, type=ros_gz.Entity.COLLISION),
                       collision2=ros_gz.Entity(name=c2, type=ros_gz.Entity.COLLISION))
    c.positions = [Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in points]
    c.normals = [Vector3(x=float(n[0]), y=float(n[1]), z=float(n[2])) for n in normals]
    c.depths = [float(d) for d in depths]
    ws = []
    for f in forces:
        w = ros_gz.JointWrench()
        w.body_1_wrench.force = Vector3(x=float(f[0]), y=float(f[1]), z=float(f[2]))
        w.body_2_wrench.force = Vector3(x=-float(f[0]), y=-float(f[1]), z=-float(f[2]))
        ws.append(w)
    c.wrenches = ws
    return c


def _gz(t):
    p5, p17, flange = _scene()
    msg = ros_gz.Contacts(contacts=[
        _gz_contact("bubble_model::punyo::collision", "block::box::collision", [p5, p17], [F0, F3],
                    [(0, 0, 1), (0, 0, 1)], [0.001, 0.002]),
        _gz_contact("arm::tool_link::pad", "block::box::collision", [flange], [F2], [(0, 0, -1)], [0.0005])])
    msg.header.stamp, msg.header.frame_id = t, "bubble_model::punyo::contact_sensor"
    return msg


def _values(msg):
    """A prediction's numbers: FluidPressure, WrenchStamped or a PointCloud2's bytes."""
    if hasattr(msg, "fluid_pressure"):
        return (msg.fluid_pressure, msg.variance)
    if hasattr(msg, "wrench"):
        f, q = msg.wrench.force, msg.wrench.torque
        return (f.x, f.y, f.z, q.x, q.y, q.z)
    return ([(f.name, f.offset, f.datatype, f.count) for f in msg.fields], msg.width, bytes(msg.data))


def _one_step(tmp, name, gz, message):
    """Start a node (reading gz contacts when ``gz``), send the step, return its outputs."""
    t = stamp(31)
    tmp.mkdir()
    start = start_node(tmp, name, GZ if gz else None)
    with start as (proc, probe, _):
        send_pose(probe)
        msg = message(t)
        probe.send("/contacts", msg)
        topics = [f"/{s}/{o}" for s in SENSORS for o in ("predicted", "jacobian")]

        def got(k):
            return [m for m in probe.received.get(k, []) if m.header.stamp == t]
        assert probe.spin_until(lambda: all(got(k) for k in topics), 20.0), \
            ([k for k in topics if not got(k)], proc.output()[-3000:])
        out = {k: _values(got(k)[-1]) for k in topics}
        if gz:
            # a malformed gz message: rejected whole, counted, the node keeps going
            bad = _gz(stamp(32))
            bad.contacts[0].wrenches = []
            probe.send("/contacts", bad)
            probe.send("/contacts", _gz(stamp(33)))
            assert probe.spin_until(lambda: any(m.header.stamp == stamp(33)
                                                for m in probe.received["/pressure/predicted"]), 10.0)
            assert not [m for m in probe.received["/pressure/predicted"] if m.header.stamp == stamp(32)]
            counts = {}
            assert probe.spin_until(lambda: counts.update(_inputs(probe)) or
                                    counts.get("rejected.empty_wrenches") == "1", 10.0), counts
            # a self-contact (both collisions are the bubble's), a wrench in the box's frame: rejected;
            # a collision of a body the node does not know: used, counted by name
            selfc = _gz(stamp(34))
            selfc.contacts[0].collision2.name = "bubble_model::punyo::collision_2"
            framed = _gz(stamp(35))
            framed.contacts[0].wrenches[0].header.frame_id = "block::box"
            shelf = _gz(stamp(36))
            shelf.contacts[1].collision1.name = "shelf::board::collision"
            for m in (selfc, framed, shelf, _gz(stamp(37))):
                probe.send("/contacts", m)
            assert probe.spin_until(lambda: any(m.header.stamp == stamp(37)
                                                for m in probe.received["/pressure/predicted"]), 10.0)
            sent = {m.header.stamp.sec for m in probe.received["/pressure/predicted"]}
            assert {36, 37} <= sent and not {34, 35} & sent
            want = {"rejected.same_body": "1", "rejected.wrench_frame": "1",
                    "contacts.unknown_bodies": "board=1"}
            assert probe.spin_until(lambda: counts.update(_inputs(probe)) or
                                    all(counts.get(k) == v for k, v in want.items()), 10.0), counts
            assert proc.alive()
    return out


def _inputs(probe):
    diag = probe.diagnostics()
    return next((kv for name, kv in diag.items() if name.endswith("inputs")), {})


def test_gz_contacts_give_the_predictions_and_jacobians_of_the_same_pointcloud2(tmp_path, rclpy_context):
    cloud = _one_step(tmp_path / "cloud", "gz_cloud_probe", False, _cloud)
    gz = _one_step(tmp_path / "gz", "gz_contacts_probe", True, _gz)
    assert set(cloud) == set(gz)
    for k in cloud:
        assert gz[k] == cloud[k], k
    # the step does touch every sensor: the comparison is not between zeros
    assert cloud["/pressure/predicted"][0] > 0
    assert any(v != 0 for v in cloud["/patch/predicted"][:3])
    assert cloud["/load/predicted"][2] != 0
    for s in SENSORS:
        assert cloud[f"/{s}/jacobian"][1] > 0, s      # non-empty Jacobian clouds


PERIOD_MS = 250          # contact_free_period of the release tests
RELEASE_MS = 100_200     # stamp of the last contacts message


def _t(ms):
    return stamp(ms // 1000, (ms % 1000) * 1_000_000)


def _joints(ms):
    """The test pose, stamped ``ms`` (the simulator's clock: contact-free steps follow it)."""
    js = joint_state(JOINT_NAMES, JOINT_POS)
    js.header.stamp = _t(ms)
    return js


@pytest.mark.parametrize("source", ["gz", "cloud"])
def test_contacts_stopping_at_a_release_step_contact_free_and_a_tare_then_succeeds(tmp_path, rclpy_context,
                                                                                   source):
    # gz contacts are event-driven by default; the contacts cloud when contacts_event_driven says so
    extra = dict(GZ) if source == "gz" else {"contacts_event_driven": True}
    extra["contact_free_period"] = PERIOD_MS / 1000
    touch = _gz if source == "gz" else _cloud
    with start_node(tmp_path, f"contact_free_{source}_probe", extra) as (proc, probe, _):
        send = first_send(probe)
        send("/joint_states", _joints(100_000))   # the first joint stamp: the period counts from it
        # touching: joints, contacts and a measured pressure (1030 hPa) every 50 ms up to the release
        for k, ms in enumerate(range(100_000, RELEASE_MS + 1, 50)):
            t = _t(ms)
            probe.send("/joint_states", _joints(ms))
            (send if k == 0 else probe.send)("/contacts", touch(t))
            (send if k == 0 else probe.send)("/pressure/measured", measured_pressure(1030.0, t))
            assert wait_stamp(probe, "/pressure/predicted", t).fluid_pressure > PRESSURE_TARE_FROM_FILE + 1.0
        # released: the simulator sends no contacts, its joint states and the measured 1013.2 hPa go on
        for ms in range(RELEASE_MS + 50, 101_201, 50):
            probe.send("/joint_states", _joints(ms))
            probe.send("/pressure/measured", measured_pressure(1013.2, _t(ms)))
            probe.spin_for(0.02)
        # steps: the first joint stamp >= 100.200 + 0.250 s, then every 0.250 s of joint stamps
        free = [100_450, 100_700, 100_950, 101_200]
        for ms in free:
            wait_stamp(probe, "/pressure/predicted", _t(ms))
        after = sorted({m.header.stamp.sec * 1000 + m.header.stamp.nanosec // 1_000_000
                        for m in probe.received["/pressure/predicted"]
                        if (m.header.stamp.sec, m.header.stamp.nanosec) > (100, 200_000_000)})
        assert after == free
        # the contact-free value: nothing added to the file's tare (500 Pa); the patch reads no force
        assert {m.fluid_pressure for m in probe.received["/pressure/predicted"]
                if m.header.stamp in [_t(ms) for ms in free]} == {PRESSURE_TARE_FROM_FILE}
        f = wait_stamp(probe, "/patch/predicted", _t(free[0])).wrench.force
        assert (f.x, f.y, f.z) == (0.0, 0.0, 0.0)
        # residual through the release: 1013.2 hPa = 101320 Pa measured - 500 Pa predicted
        assert wait_stamp(probe, "/pressure/residual", _t(free[0])).fluid_pressure == pytest.approx(100820.0)
        wait_stamp(probe, "/pressure/residual", _t(free[2]))
        # tare: the last N_TARE contact-free pairs measured 101320 Pa each, and the raw contact-free
        # prediction is 0 Pa, so the offset is 101320 - 0 = 101320 Pa
        r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
        assert r.success is True, r.message
        assert f"tared with {N_TARE} of {N_TARE} samples" in r.message and "101320" in r.message, r.message
        probe.send("/joint_states", _joints(101_450))
        assert wait_stamp(probe, "/pressure/predicted", _t(101_450)).fluid_pressure == pytest.approx(101320.0)
        inputs = {}
        assert probe.spin_until(lambda: inputs.update(latest_status(probe, "/sensor_node: inputs")) or
                                int(inputs.get("contact_free.steps", "0")) >= 5, 10.0), inputs
        assert inputs["contact_free.late_contacts"] == "0" and inputs["stamp_jumps_backwards"] == "0"
        assert proc.alive()
