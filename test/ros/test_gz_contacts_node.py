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
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Vector3
from sensor_msgs.msg import JointState, PointCloud2

from vsf_sensor_ros.ros.messages.contacts import contacts_to_pointcloud2
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import NodeProcess, Probe, write_params
from .sensor_node_scene import (KINDS, SENSORS, body_names, node_params, posed_world, send_pose, stamp,
                                start_node, write_calibration)

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


@contextmanager
def _start_gz_node(d, probe_name):
    """``start_node`` for a node reading gz contacts: the same sensors, waited for on that type."""
    params = node_params(str(write_calibration(d / "calibration.yaml")))
    params.update(GZ)
    proc = NodeProcess(write_params(d / "params.yaml", params), d / "node.log").start()
    p = Probe(probe_name)
    try:
        for s, kind in KINDS.items():
            p.listen(f"/{s}/predicted", kind)
            p.listen(f"/{s}/jacobian", PointCloud2)
        assert p.wait_for_subscriber("/contacts", ros_gz.Contacts, timeout=90.0), proc.output()[-3000:]
        assert p.wait_for_subscriber("/joint_states", JointState)
        assert p.spin_until(lambda: len(p.listen("/diagnostics", DiagnosticArray)) > 0, 15.0)
        yield proc, p, None
    finally:
        p.destroy_node()
        code = proc.stop()
        out = proc.output()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


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
    start = _start_gz_node(tmp, name) if gz else start_node(tmp, name)
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
