"""The node's contact-row rule: a contact reported once per body pair reaches the sensors on either body.

A bridge that writes one row per contact -- only ``(object, punyo)`` with the force on the object --
must give the sensors on ``punyo`` the force ``-f`` on the bubble, their Jacobian columns must name the
message rows with the sign of the row's force, a pair present in both orders must not count twice, and
a tare must see the contact.

In-process tests run the node's own step (decode, ``with_implied_pairs``, ``SimState``,
``SensorHandle.predict``) and compare the published Jacobian with central differences over the message's
force values; the DDS tests run the node process (``sensor_node_scene``) and compare with values
derived by hand: the Punyo pressure model ``p = tare - (1/A) sum_c (R^T f_c) . n`` with ``n = +z``
of the bubble and ``A`` the area of its 24-gon base.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS
from vsf_sensor_ros.ros import kinds
from vsf_sensor_ros.rig.contacts import with_implied_pairs
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields
from vsf_sensor_ros.ros.sensor_handle import SensorHandle
from vsf_sensor_ros.sensor import SimState

from .sensor_node_scene import (F64, N_TARE, PRESSURE_TARE_FROM_FILE, body_names, first_send, library_models,
                                measured_pressure, posed_world, rows_to_cloud, send_pose, stamp, start_node,
                                wait_stamp)

A = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)     # the bubble's base area (m^2)
G1, G2 = np.array([0.5, -0.25, -3.0]), np.array([-0.5, 0.25, -2.0])    # forces on the object (N)


@pytest.fixture(scope="module")
def world():
    return posed_world()


def one_order_rows(world, g1=G1, g2=G2):
    """Two bubble contacts written once each, as ``(object, punyo)`` with the force on the object, and
    a tool-table style row between two other bodies in between (rows 0, 2 touch the bubble)."""
    Tp, Tt = world.body_transform("punyo"), world.body_transform("tool_link")
    V = np.asarray(world.body_mesh("punyo").vertices)
    p5, p17 = Tp[:3, :3] @ V[5] + Tp[:3, 3], Tp[:3, :3] @ V[17] + Tp[:3, 3]
    return [("object", "punyo", p5, g1, -1, 5),
            ("tool_link", "object", Tt[:3, 3], np.array([1.0, 2.0, -4.0]), -1, -1),
            ("object", "punyo", p17, g2, -1, 17)]


def flipped(rows):
    """The same contacts written the other way round: ``(punyo, object)``, force on the bubble."""
    return [(b, a, p, -f, e2, e1) for a, b, p, f, e1, e2 in rows]


# --------------------------------------------------------------------------- in-process: the node's step
def _step(world, sensor, rows):
    """The node's pipeline for one message: ``(values, jacobian as {(meas, message col): value})``."""
    cloud = rows_to_cloud(rows, stamp(1))
    decoded = with_implied_pairs(pointcloud2_to_contacts(cloud, body_names(), F64))
    state = SimState(world.body_transforms(F64), {}, decoded.contacts)
    verts = np.asarray(world.body_mesh("punyo").vertices) if "Dense" in type(sensor).__name__ else None
    layout = kinds.sensor_layout(type(sensor).__name__, "punyo", sensor.measurement_names(),
                                 sensor.measurement_errors(), verts)
    r = SensorHandle.predict(SimpleNamespace(sensor=sensor, layout=layout), state, decoded, True)
    jac = {}
    for i, c, v in zip(r.jacobian.rows.tolist(), r.jacobian_cols.tolist(), r.jacobian.values.tolist()):
        jac[(i, c)] = jac.get((i, c), 0.0) + v
    return r, jac


@pytest.mark.parametrize("name", ["pressure", "force"])
def test_jacobian_columns_are_message_rows_with_the_rows_sign(world, name):
    """d reading / d (message row force), by central differences over the message's force values."""
    sensor = library_models(world)[name]
    rows = one_order_rows(world)
    r, jac = _step(world, sensor, rows)
    n_meas = len(r.values)
    fd = np.zeros((n_meas, 3 * len(rows)))
    h = 1e-3
    for row in range(len(rows)):
        for k in range(3):
            plus, minus = [list(x) for x in rows], [list(x) for x in rows]
            plus[row][3] = rows[row][3] + h * np.eye(3)[k]
            minus[row][3] = rows[row][3] - h * np.eye(3)[k]
            up, down = _step(world, sensor, plus)[0].values, _step(world, sensor, minus)[0].values
            fd[:, 3 * row + k] = (up - down) / (2 * h)
    dense = np.zeros_like(fd)
    for (i, c), v in jac.items():
        dense[i, c] += v
    assert np.abs(fd).max() > 0.5            # the bubble contacts do move the reading
    np.testing.assert_allclose(dense, fd, atol=1e-6 * np.abs(fd).max())
    assert not dense[:, 3:6].any()           # row 1 does not touch the bubble


def test_pressure_reads_the_same_from_either_order(world):
    sensor = library_models(world)["pressure"]
    rows = one_order_rows(world)
    R = world.body_transform("punyo")[:3, :3]
    # force on the bubble = -g: p = -(1/A) (R^T (-(g1 + g2)))_z = (R^T (g1 + g2))_z / A
    expected = (R.T @ (G1 + G2))[2] / A
    a, _ = _step(world, sensor, rows)
    b, _ = _step(world, sensor, flipped(rows))
    assert a.values[0] == pytest.approx(expected, rel=1e-12)
    assert b.values[0] == pytest.approx(expected, rel=1e-12)
    assert a.n_on_body == 2 and a.touched


def test_a_pair_in_both_orders_is_used_as_given(world):
    """Both orders of (object, punyo) in one message: the bubble reads its own rows only, once."""
    sensor = library_models(world)["pressure"]
    rows = one_order_rows(world)
    # the (punyo, object) rows carry a different force than -g on purpose: they are used as given
    both = rows + [("punyo", "object", rows[0][2], np.array([0.0, 0.0, 7.0]), 5, -1)]
    R = world.body_transform("punyo")[:3, :3]
    r, jac = _step(world, sensor, both)
    assert r.values[0] == pytest.approx(-(R.T @ np.array([0.0, 0.0, 7.0]))[2] / A, rel=1e-12)
    assert r.n_on_body == 1
    assert {c // 3 for (_, c) in jac} == {3}


def _gz_step(world, sensor, forces):
    """The node's gz pipeline for the bubble contacts of :func:`one_order_rows` listed once each as
    gz does, in opposite orders: row 0 ``block / bubble`` (body_1 force ``forces[0]`` on the block),
    row 1 ``bubble / block`` (body_1 force ``forces[1]`` on the bubble).  ``(values, dense
    Jacobian over the two rows' written forces)``."""
    ros_gz = pytest.importorskip("ros_gz_interfaces.msg", reason="make venv builds ros_gz_interfaces")
    from geometry_msgs.msg import Vector3
    from vsf_sensor_ros.ros.messages.gz_contacts import ContactBodyMap, gz_contacts_to_contacts
    rows = one_order_rows(world)
    msg = ros_gz.Contacts()
    for (c1, c2), p, f in zip((("block::box::collision", "bubble_model::punyo::collision"),
                               ("bubble_model::punyo::collision", "block::box::collision")),
                              (rows[0][2], rows[2][2]), forces):
        c = ros_gz.Contact(collision1=ros_gz.Entity(name=c1), collision2=ros_gz.Entity(name=c2))
        c.positions = [Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2]))]
        w = ros_gz.JointWrench()
        w.body_1_wrench.force = Vector3(x=float(f[0]), y=float(f[1]), z=float(f[2]))
        c.wrenches = [w]
        msg.contacts.append(c)
    decoded = gz_contacts_to_contacts(msg, body_names(), ContactBodyMap.parse(["bubble_model::*=punyo",
                                                                               "block::*=object"]), F64)
    decoded = with_implied_pairs(decoded, {"punyo"})
    state = SimState(world.body_transforms(F64), {}, decoded.contacts)
    layout = kinds.sensor_layout(type(sensor).__name__, "punyo", sensor.measurement_names(),
                                 sensor.measurement_errors(), None)
    r = SensorHandle.predict(SimpleNamespace(sensor=sensor, layout=layout), state, decoded, True)
    dense = np.zeros((len(r.values), 6))
    for i, c, v in zip(r.jacobian.rows.tolist(), r.jacobian_cols.tolist(), r.jacobian.values.tolist()):
        dense[i, c] += v
    return r, dense


def test_gz_contacts_listed_in_opposite_orders_are_two_contacts(world):
    """gz lists each contact once: ``block / bubble`` then ``bubble / block`` are two contacts, and
    the bubble feels both (the cloud rule would read the second only, as the same contact twice)."""
    sensor = library_models(world)["pressure"]
    R = world.body_transform("punyo")[:3, :3]
    r, jac = _gz_step(world, sensor, (G1, -G2))
    # forces on the bubble: -G1 (row 0 is the force on the block) and -G2 (row 1 is on the bubble)
    assert r.values[0] == pytest.approx((R.T @ (G1 + G2))[2] / A, rel=1e-12)
    assert r.n_on_body == 2
    # d p / d (written row force): row 0 is on the block, +(R n)_k / A; row 1 on the bubble, -(R n)_k / A
    np.testing.assert_allclose(jac[0], np.concatenate([R[:, 2], -R[:, 2]]) / A, rtol=1e-9, atol=1e-12)
    # and by central differences over the message's two written forces
    h = 1e-3
    for k in range(6):
        e = np.zeros(6)
        e[k] = h
        up = _gz_step(world, sensor, (G1 + e[:3], -G2 + e[3:]))[0].values[0]
        down = _gz_step(world, sensor, (G1 - e[:3], -G2 - e[3:]))[0].values[0]
        assert jac[0, k] == pytest.approx((up - down) / (2 * h), abs=1e-6 * np.abs(jac).max())


# --------------------------------------------------------------------------- over DDS: the node process
@pytest.fixture(scope="module")
def running(tmp_path_factory, rclpy_context):
    with start_node(tmp_path_factory.mktemp("contact_pairs"), "contact_pairs_probe") as r:
        _, probe, _ = r
        send_pose(probe)
        yield r


def _triples(cloud: PointCloud2):
    c = read_cloud_fields(cloud, ["row", "col", "value"])
    return {(int(r), int(k)): v for r, k, v in zip(c["row"], c["col"], c["value"])}


def test_node_pressure_and_jacobian_from_one_order_rows(running, world):
    _, probe, _ = running
    R = world.body_transform("punyo")[:3, :3]
    rows = one_order_rows(world)
    t1, t2 = stamp(300), stamp(301)
    first_send(probe)("/contacts", rows_to_cloud(rows, t1))   # the module's first contacts (see deliver)
    probe.send("/contacts", rows_to_cloud(flipped(rows), t2))
    p1 = wait_stamp(probe, "/pressure/predicted", t1).fluid_pressure
    p2 = wait_stamp(probe, "/pressure/predicted", t2).fluid_pressure
    expected = PRESSURE_TARE_FROM_FILE + (R.T @ (G1 + G2))[2] / A
    assert p1 == pytest.approx(expected, rel=1e-12)
    assert p2 == pytest.approx(expected, rel=1e-12)
    # d p / d g_k (row force, on the object) = +(R n)_k / A, n = +z: columns of rows 0 and 2 only;
    # written the other way the row force is on the bubble: -(R n)_k / A
    for t, sign in ((t1, 1.0), (t2, -1.0)):
        jp = _triples(wait_stamp(probe, "/pressure/jacobian", t))
        expected_j = {(0, 3 * r + k): sign * R[k, 2] / A for r in (0, 2) for k in range(3) if R[k, 2] != 0}
        assert set(jp) == set(expected_j)
        for key, val in expected_j.items():
            assert jp[key] == pytest.approx(val, rel=1e-9)


def test_tare_refuses_samples_whose_contact_is_reported_from_the_other_body(running, world):
    _, probe, _ = running
    rows = one_order_rows(world)
    for k in range(N_TARE):
        t = stamp(310 + k)
        (probe.send if k else first_send(probe))("/pressure/measured", measured_pressure(1000.0, t))
        probe.send("/contacts", rows_to_cloud(rows, t))
        wait_stamp(probe, "/pressure/residual", t)
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False
    assert f"all {N_TARE} buffered samples have contact" in r.message, r.message


def test_with_implied_pairs_rows_forces_and_elements(world):
    rows = one_order_rows(world) + [("punyo", "tool_link", one_order_rows(world)[0][2], np.ones(3), 5, -1),
                                    ("tool_link", "punyo", one_order_rows(world)[0][2], -np.ones(3), -1, 5)]
    decoded = pointcloud2_to_contacts(rows_to_cloud(rows, stamp(2)), body_names(), F64)
    done = with_implied_pairs(decoded)
    # (object, punyo) -> (punyo, object); (tool_link, object) -> (object, tool_link); the tool-bubble
    # pair is in the message in both orders: nothing added for it
    assert done.implied == {("punyo", "object"), ("object", "tool_link")}
    assert set(decoded.contacts) == {("object", "punyo"), ("tool_link", "object"), ("punyo", "tool_link"),
                                     ("tool_link", "punyo")}
    c = done.contacts[("punyo", "object")]
    assert done.rows[("punyo", "object")].tolist() == [0, 2]
    np.testing.assert_array_equal(c.forces.numpy(), -np.stack([G1, G2]))
    assert c.elems1.tolist() == [5, 17] and c.elems2.tolist() == [-1, -1]
    assert done.rows[("object", "tool_link")].tolist() == [1]
    assert done.contacts[("punyo", "tool_link")] is decoded.contacts[("punyo", "tool_link")]
    assert decoded.implied == frozenset() and ("punyo", "object") not in decoded.contacts   # input unchanged


def test_with_implied_pairs_only_for_the_given_bodies(world):
    rows = one_order_rows(world)
    decoded = pointcloud2_to_contacts(rows_to_cloud(rows, stamp(3)), body_names(), F64)
    every = with_implied_pairs(decoded)
    only = with_implied_pairs(decoded, {"punyo"})
    # only the reverse read by a sensor on punyo is built; the other reverse is left out
    assert only.implied == {("punyo", "object")}
    assert list(only.contacts) == [("object", "punyo"), ("punyo", "object"), ("tool_link", "object")]
    a, b = only.contacts[("punyo", "object")], every.contacts[("punyo", "object")]
    np.testing.assert_array_equal(a.forces.numpy(), b.forces.numpy())
    np.testing.assert_array_equal(a.points.numpy(), b.points.numpy())
    assert a.elems1.tolist() == b.elems1.tolist() and a.elems2.tolist() == b.elems2.tolist()
    assert only.rows[("punyo", "object")].tolist() == [0, 2]
    assert with_implied_pairs(decoded, set()).implied == frozenset()
