"""sensor_node over real DDS: predictions, Jacobians, markers, residuals and bad input.

One node process (``python -m vsf_sensor_ros.ros.sensor_node``) serves this module: the package's
embedded world and four sensors (a Punyo pressure and a dense force sensor on the bubble, a Klampt
ContactSensor patch on the flange link, an Isaac load sensor on the object).  The tests here change
nothing in it but counters (read as differences) and the robot's configuration (each test that needs
one sends it itself), and each uses its own stamps, so they pass in any order.  Tests that change the
node (tares, calibration, live parameters, sensors added) start their own node:
``test_sensor_node_state.py``.

Values are checked against (a) numbers derived by hand from the world's transforms and (b) the
library's own prediction for the same state, built independently here from ``embedded_world()`` and
the sensor classes.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState, PointCloud2

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS
from vsf_sensor_ros.ros.messages.readings import read_cloud_fields
from vsf_sensor_ros.sensor import SimState, with_reverse_pairs

from .node_helpers import BEST_EFFORT, Probe
from .sensor_node_scene import (MEASURED_SCALE, PRESSURE_TARE_FROM_FILE, SENSORS, body_names, counter, diag,
                                empty_cloud, first_send, for_stamp, library_models, library_state,
                                measured_pressure, posed_world, rows_to_cloud, scene_contacts, send_pose,
                                stamp, start_node, wait_stamp)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def running(tmp_path_factory, rclpy_context):
    """The module's node process and probe (see the module docstring for what tests may change)."""
    with start_node(tmp_path_factory.mktemp("sensor_node"), "sensor_node_probe") as r:
        yield r


@pytest.fixture
def node(running):
    return running[0]


@pytest.fixture
def probe(running) -> Probe:
    return running[1]


@pytest.fixture
def world():
    """A fresh embedded world per test, in the configuration the test sends to the node."""
    return posed_world()


@pytest.fixture
def posed(probe, world):
    """The node's robot in JOINT_POS (sent by this test, not left over by another)."""
    send_pose(probe)
    return world


def _scene_step(probe: Probe, world, t):
    """Publish the scene contacts at ``t``; the contacts rows and hand-derived geometry."""
    rows, g = scene_contacts(world)
    probe.send("/contacts", rows_to_cloud(rows, t))
    return rows, g


# --------------------------------------------------------------------------- behaviour
def test_calibration_file_is_loaded_at_start_and_empty_cloud_still_publishes(node, probe):
    # An empty cloud: no contacts, yet every sensor publishes, stamped with the cloud's stamp.
    t = stamp(10)
    first_send(probe)("/contacts", empty_cloud(t))   # the module's first contacts (see deliver)
    p = wait_stamp(probe, "/pressure/predicted", t)
    # no contact: pressure = tare, and the tare came from the calibration file (500 Pa)
    assert p.fluid_pressure == PRESSURE_TARE_FROM_FILE
    assert p.header.frame_id == "punyo"
    for s in ("force", "patch", "load"):
        assert wait_stamp(probe, f"/{s}/predicted", t)
    jac = wait_stamp(probe, "/pressure/jacobian", t)
    assert jac.width * jac.height == 0


def test_predictions_match_hand_derivation_and_library_for_the_same_state(node, probe, posed):
    world = posed
    t = stamp(20)
    rows, g = _scene_step(probe, world, t)
    pressure = wait_stamp(probe, "/pressure/predicted", t)
    force = wait_stamp(probe, "/force/predicted", t)
    patch = wait_stamp(probe, "/patch/predicted", t)
    load = wait_stamp(probe, "/load/predicted", t)
    assert [m.header.frame_id for m in (pressure, force, patch, load)] == \
        ["punyo", "punyo", "patch_frame", "load_frame"]   # sensor frames: Tsensor, position

    R, Rt = g["Tp"][:3, :3], g["Tt"][:3, :3]
    # Pressure: tare - (1/A) sum_c (R^T f_c) . n, n = +z of the bubble; A = area of the 24-gon base.
    A = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)
    expected_p = PRESSURE_TARE_FROM_FILE - ((R.T @ g["f0"])[2] + (R.T @ g["f3"])[2]) / A
    assert pressure.fluid_pressure == pytest.approx(expected_p, rel=1e-9)
    # Dense force: vertex 5 reads R^T f0, vertex 17 reads R^T f3, every other vertex 0 (float32 cloud).
    cols = read_cloud_fields(force, ["x", "y", "z", "fx", "fy", "fz"])
    F = np.stack([cols["fx"], cols["fy"], cols["fz"]], axis=1)
    expected_F = np.zeros_like(F)
    expected_F[5], expected_F[17] = R.T @ g["f0"], R.T @ g["f3"]
    np.testing.assert_allclose(F, expected_F, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.stack([cols["x"], cols["y"], cols["z"]], axis=1), g["V"], atol=1e-7)
    # Klampt patch at the flange origin, Tsensor = identity: force in the link frame = Rt^T f2.
    fp = patch.wrench.force
    np.testing.assert_allclose([fp.x, fp.y, fp.z], Rt.T @ g["f2"], rtol=1e-12, atol=1e-12)
    # Isaac load on the object: |net force on the object| = |-f0 - f2|: row 1 gives -f0 (the pair
    # (object, punyo) is in the message, so row 3 is not reversed again), and row 2, reported only as
    # (tool_link, object), implies -f2 on the object at the flange origin (the contact-row rule).
    # -f0 - f2 = (-1.5, -1.75, 1): |.| = sqrt(6.3125)
    assert load.wrench.force.z == pytest.approx(math.sqrt(6.3125), rel=1e-12)

    # The library, fed the same state built here, agrees with the node.
    models = library_models(world)
    models["pressure"].set_calibration({"tare": np.array([PRESSURE_TARE_FROM_FILE])})
    st = library_state(world, rows)
    st = SimState(st.body_transforms, {}, with_reverse_pairs(st.contacts))   # the node's row rule
    assert pressure.fluid_pressure == pytest.approx(models["pressure"].predict(st).item(), rel=1e-12)
    np.testing.assert_allclose(F.reshape(-1), models["force"].predict(st).numpy(), rtol=1e-6, atol=1e-6)
    lp = models["patch"].predict(st).numpy()
    np.testing.assert_allclose([fp.x, fp.y, fp.z], lp[1:], rtol=1e-12)
    assert load.wrench.force.z == pytest.approx(models["load"].predict(st).numpy()[1], rel=1e-12)


def _triples(cloud: PointCloud2):
    c = read_cloud_fields(cloud, ["row", "col", "value"])
    return {(int(r), int(k)): v for r, k, v in zip(c["row"], c["col"], c["value"])}


def test_jacobian_columns_index_contact_message_rows(node, probe, posed):
    t = stamp(21)
    _, g = _scene_step(probe, posed, t)
    R = g["Tp"][:3, :3]
    # Dense force, per-vertex mode: d(p_v,i)/d(f_r,k) = R[k, i] for (v, r) = (5, 0), (17, 3).
    jf = _triples(wait_stamp(probe, "/force/jacobian", t))
    expected = {}
    for v, r in ((5, 0), (17, 3)):
        for i in range(3):
            for k in range(3):
                if R[k, i] != 0.0:
                    expected[(3 * v + i, 3 * r + k)] = R[k, i]
    assert set(jf) == set(expected)
    for key, val in expected.items():
        assert jf[key] == pytest.approx(val, abs=1e-12)
    # Pressure: row 0, columns of rows 0 and 3 only, value -(1/A) (R n)_k.
    A = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)
    jp = _triples(wait_stamp(probe, "/pressure/jacobian", t))
    n_world = R[:, 2]
    expected_p = {(0, 3 * r + k): -n_world[k] / A for r in (0, 3) for k in range(3) if n_world[k] != 0}
    assert set(jp) == set(expected_p)
    for key, val in expected_p.items():
        assert jp[key] == pytest.approx(val, rel=1e-9)
    # Isaac load on the object, |F| with F = f_row1 - f_row2 (row 2 reaches the object only through
    # the implied pair (object, tool_link) with -f): d|F|/d f_row1 = F/|F|, d|F|/d f_row2 = -F/|F|.
    jl = _triples(wait_stamp(probe, "/load/jacobian", t))
    assert {c // 3 for (_, c) in jl} == {1, 2}
    F = -g["f0"] - g["f2"]
    (r_value,) = {r for (r, _) in jl}
    for k in range(3):
        assert jl[(r_value, 3 + k)] == pytest.approx(F[k] / np.linalg.norm(F), rel=1e-9)
        assert jl[(r_value, 6 + k)] == pytest.approx(-F[k] / np.linalg.norm(F), rel=1e-9)


def test_markers_show_contact_points_on_the_sensor_body(node, probe, posed):
    # rows 0 and 3 act on the bubble: two contact points, in the world frame, with the cloud's stamp
    t = stamp(22)
    _scene_step(probe, posed, t)
    arrays = probe.received["/force/markers"]
    assert probe.spin_until(lambda: any(mk.header.stamp == t for a in arrays for mk in a.markers), 5.0)
    arr = [a for a in arrays if a.markers and a.markers[0].header.stamp == t][-1]
    pts = next(mk for mk in arr.markers if mk.ns == "force/contacts")
    assert len(pts.points) == 2 and pts.header.frame_id == "world"
    arrows = next(mk for mk in arr.markers if mk.ns == "force/forces")
    assert len(arrows.points) == 4


def test_best_effort_and_reliable_publishers_are_both_accepted(node, probe):
    t1, t2 = stamp(30), stamp(31)
    # best effort may drop a sample: resend until one arrives
    for _ in range(10):
        probe.send("/contacts", empty_cloud(t1), qos=BEST_EFFORT)
        if probe.spin_until(lambda: for_stamp(probe, "/pressure/predicted", t1), 0.5):
            break
    assert for_stamp(probe, "/pressure/predicted", t1)
    probe.send("/contacts", empty_cloud(t2))
    assert wait_stamp(probe, "/pressure/predicted", t2)


def test_residual_is_measured_minus_predicted_at_the_same_stamp(node, probe, posed):
    # the contacts first: a stamp earlier than another test's resets the pairing buffers, and
    # that must not drop the measured message of this step
    t = stamp(40)
    _scene_step(probe, posed, t)
    pred = wait_stamp(probe, "/pressure/predicted", t).fluid_pressure
    first_send(probe)("/pressure/measured", measured_pressure(1000.0, t))   # the module's first
    res = wait_stamp(probe, "/pressure/residual", t)
    assert res.fluid_pressure == pytest.approx(1000.0 * MEASURED_SCALE - pred, rel=1e-12)
    assert res.header.frame_id == "punyo"


# --------------------------------------------------------------------------- bad input
def _missing_field_cloud(t):
    msg = empty_cloud(t)
    msg.fields = [f for f in msg.fields if f.name != "fz"]
    msg.width, msg.row_step, msg.point_step = 1, 8, 8
    msg.data = bytes(8)
    return msg


BAD_CASES = ["missing_field", "bad_size", "non_finite", "body_index_out_of_range",
             "element_index_out_of_range", "joint_state_empty", "joint_state_short", "joint_nan"]


BAD_CASES = ["missing_field", "bad_size", "non_finite", "body_index_out_of_range",
             "element_index_out_of_range", "joint_state_empty", "joint_state_short", "joint_nan"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_rejected_counted_and_the_node_lives(node, probe, world, case):
    proc = node
    rows, _ = scene_contacts(world)
    before = diag(probe)
    t = stamp(100 + BAD_CASES.index(case))
    reason = case
    if case == "missing_field":
        probe.send("/contacts", _missing_field_cloud(t))
    elif case == "bad_size":
        msg = rows_to_cloud(rows, t)
        msg.data = bytes(msg.data)[:-5]       # data length disagrees with width x point_step
        probe.send("/contacts", msg)
    elif case == "non_finite":
        bad = list(rows)
        bad[2] = (bad[2][0], bad[2][1], bad[2][2], np.array([np.nan, 0.0, 1.0]), -1, -1)
        probe.send("/contacts", rows_to_cloud(bad, t))
    elif case == "body_index_out_of_range":
        msg = rows_to_cloud(rows, t)
        raw = bytearray(msg.data)
        off = next(f.offset for f in msg.fields if f.name == "body2")
        raw[off:off + 4] = (len(body_names()) + 3).to_bytes(4, "little")
        msg.data = bytes(raw)
        probe.send("/contacts", msg)
    elif case == "element_index_out_of_range":
        bad = list(rows)
        bad[3] = bad[3][:4] + (100000, -1)
        probe.send("/contacts", rows_to_cloud(bad, t))
    elif case == "joint_state_empty":
        probe.send("/joint_states", JointState(name=["elbow_pitch"], position=[]))
    elif case == "joint_state_short":
        probe.send("/joint_states", JointState(name=["elbow_pitch", "shoulder_yaw"], position=[0.1]))
    else:
        reason = "non_finite"
        probe.send("/joint_states", JointState(name=["elbow_pitch"], position=[float("nan")]))
    key = f"rejected.{reason}"
    assert probe.spin_until(lambda: counter(diag(probe), "/sensor_node: inputs", key) >
                            counter(before, "/sensor_node: inputs", key), 10.0)
    probe.spin_for(0.2)
    # rejected whole: no sensor published anything for that stamp
    for s in SENSORS:
        assert not for_stamp(probe, f"/{s}/predicted", t)
    assert proc.alive()
    t_ok = stamp(200 + int(t.sec))
    probe.send("/contacts", empty_cloud(t_ok))
    assert wait_stamp(probe, "/pressure/predicted", t_ok)


def test_bad_measured_message_is_counted_per_sensor(node, probe):
    before = diag(probe)
    probe.send("/pressure/measured", measured_pressure(float("inf"), stamp(300)))
    key = "rejected.non_finite"
    assert probe.spin_until(lambda: counter(diag(probe), "/sensor_node: pressure", key) >
                            counter(before, "/sensor_node: pressure", key), 10.0)


def test_stamp_going_backwards_recovers_and_is_reported(node, probe):
    probe.send("/contacts", empty_cloud(stamp(450)))
    assert wait_stamp(probe, "/pressure/predicted", stamp(450))
    before = diag(probe)
    t = stamp(1, 5)     # earlier than the step before: a simulator reset
    probe.send("/contacts", empty_cloud(t))
    assert wait_stamp(probe, "/pressure/predicted", t)
    key = "stamp_jumps_backwards"
    assert probe.spin_until(lambda: counter(diag(probe), "/sensor_node: inputs", key) >
                            counter(before, "/sensor_node: inputs", key), 10.0)
    t2 = stamp(2)
    probe.send("/contacts", empty_cloud(t2))
    assert wait_stamp(probe, "/pressure/predicted", t2)


def test_free_body_pose_with_a_zero_quaternion_is_rejected(node, probe):
    before = diag(probe)
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.pose.orientation.w = 0.0   # (0, 0, 0, 0): no rotation
    first_send(probe)("/object/pose", msg)   # counted as received (poses_received), then rejected
    key = "rejected.pose_invalid"
    assert probe.spin_until(lambda: counter(diag(probe), "/sensor_node: inputs", key) >
                            counter(before, "/sensor_node: inputs", key), 10.0)


def test_diagnostics_report_rate_latency_and_calibration_per_sensor(node, probe):
    for k in range(20):
        probe.send("/contacts", empty_cloud(stamp(400, k * 1000)))
        time.sleep(0.005)
    rep = diag(probe)
    st = rep["/sensor_node: pressure"]
    assert st["type"] == "PunyoPressureSensor" and st["attachment"] == "punyo"
    # the calibration file's entry gives no sample count (a tare's count: test_sensor_node_state.py)
    assert st["calibration"] == "loaded from file (? samples)"
    assert float(st["latency_ms_max"]) >= 0.0 and "rate_hz" in st
