"""sensor_node over real DDS: predictions, Jacobians, tare, residuals, live parameters, bad input.

One node process (``python -m vsf_sensor_ros.ros.sensor_node``) runs for the whole module with the
package's embedded world and four sensors: a Punyo pressure and a dense force sensor on the bubble,
a Klampt ContactSensor patch on the flange link and an Isaac load sensor on the object.  The test
publishes joint states and contact clouds and checks what comes back against (a) numbers derived by
hand from the world's transforms and (b) the library's own prediction for the same state, built
independently here from ``embedded_world()`` and the sensor classes.

Tests run in file order and share the node; each uses its own range of stamps.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2, PointField
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS, embedded_world
from vsf_sensor_ros.ros.contacts_msg import contacts_to_pointcloud2
from vsf_sensor_ros.ros.outputs import read_cloud_fields
from vsf_sensor_ros.sensor import ContactState, SimState

from .node_helpers import BEST_EFFORT, NodeProcess, Probe, joint_state, write_params

F64 = torch.float64
N_TARE = 3
SENSORS = ["pressure", "force", "patch", "load"]
PRESSURE_TARE_FROM_FILE = 500.0          # Pa, written to the calibration file before start
MEASURED_SCALE = 100.0                   # pressure measured in hPa


def node_params(calibration_file: str) -> dict:
    return {
        "sensors": SENSORS,
        "tare_samples": N_TARE,
        "calibration_file": calibration_file,
        "markers_max_rate": 0.0,
        "diagnostics_period": 0.2,
        "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
        "pressure.measured_scale": MEASURED_SCALE,
        "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo",
        "patch.type": "ContactSensor", "patch.attachment": "tool_link",
        "patch.patchMin": [-0.05, -0.05], "patch.patchMax": [0.05, 0.05],
        "patch.hasForce": [True, True, True],
        "load.type": "IsaacContactSensor", "load.attachment": "object",
        "load.position": [0, 0, 0],      # integers in the file are accepted for doubles
    }


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def node(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("sensor_node")
    cal = d / "calibration.yaml"
    cal.write_text(yaml.safe_dump({"sensors": {"pressure": {
        "type": "PunyoPressureSensor", "calibration": {"tare": [PRESSURE_TARE_FROM_FILE]}}}}))
    params = write_params(d / "params.yaml", node_params(str(cal)))
    proc = NodeProcess(params, d / "node.log").start()
    yield proc, cal
    code = proc.stop()
    out = proc.output()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


@pytest.fixture(scope="module")
def probe(node, rclpy_context):
    p = Probe("sensor_node_probe")
    for s in SENSORS:
        kind = {"pressure": FluidPressure, "force": PointCloud2, "patch": WrenchStamped,
                "load": WrenchStamped}[s]
        p.listen(f"/{s}/predicted", kind)
        p.listen(f"/{s}/residual", kind)
        p.listen(f"/{s}/jacobian", PointCloud2)
    p.listen("/force/markers", MarkerArray)
    p.listen("/diagnostics", DiagnosticArray)
    proc, _ = node
    assert p.wait_for_subscriber("/contacts", PointCloud2, timeout=30.0), proc.output()[-3000:]
    assert p.wait_for_subscriber("/joint_states", JointState)
    assert p.wait_for_subscriber("/pressure/measured", FluidPressure)
    # outputs are matched once a report arrived (the node publishes diagnostics from the start)
    assert p.spin_until(lambda: len(p.received["/diagnostics"]) > 0, 15.0)
    yield p
    p.destroy_node()


@pytest.fixture(scope="module")
def world():
    return embedded_world()


# --------------------------------------------------------------------------- helpers
JOINT_NAMES = ["elbow_pitch", "gripper_finger", "shoulder_yaw"]   # reordered, partial, one extra
JOINT_POS = [0.3, 0.01, -0.2]


def stamp(sec: int, nsec: int = 0) -> Time:
    return Time(sec=sec, nanosec=nsec)


def for_stamp(probe: Probe, topic: str, t: Time):
    return [m for m in probe.received[topic] if m.header.stamp == t]


def wait_stamp(probe: Probe, topic: str, t: Time, timeout: float = 10.0):
    assert probe.spin_until(lambda: for_stamp(probe, topic, t), timeout), f"no {topic} at {t}"
    return for_stamp(probe, topic, t)[-1]


def empty_cloud(t: Time) -> PointCloud2:
    return contacts_to_pointcloud2({}, body_names(), stamp=t, frame_id="world")


_NAMES = None


def body_names():
    global _NAMES
    if _NAMES is None:
        _NAMES = list(embedded_world().body_names)
    return _NAMES


def scene_contacts(world):
    """Contacts used by several tests, in world coordinates, with hand-derived expectations.

    Message rows (pairs interleaved on purpose):
      0: (punyo, object)   at bubble vertex 5,  force f0, elem1 = 5
      1: (object, punyo)   at the same point,   force -f0 (on the object), elem2 = 5
      2: (tool_link, object) at the flange origin, force f2
      3: (punyo, object)   at bubble vertex 17, force f3, elem1 = 17
    """
    Tp = world.body_transform("punyo")
    Tt = world.body_transform("tool_link")
    V = np.asarray(world.body_mesh("punyo").vertices)
    p5 = Tp[:3, :3] @ V[5] + Tp[:3, 3]
    p17 = Tp[:3, :3] @ V[17] + Tp[:3, 3]
    f0, f2, f3 = np.array([0.5, -0.25, 3.0]), np.array([1.0, 2.0, -4.0]), np.array([-0.5, 0.0, 2.0])
    rows = [("punyo", "object", p5, f0, 5, -1), ("object", "punyo", p5, -f0, -1, 5),
            ("tool_link", "object", Tt[:3, 3], f2, -1, -1), ("punyo", "object", p17, f3, 17, -1)]
    return rows, dict(Tp=Tp, Tt=Tt, V=V, f0=f0, f2=f2, f3=f3)


def rows_to_cloud(rows, t: Time) -> PointCloud2:
    """Build the cloud row by row (struct layout by hand, float64, body indices uint32, elems int32)."""
    names = body_names()
    dt = np.dtype([("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("fx", "<f8"), ("fy", "<f8"), ("fz", "<f8"),
                   ("body1", "<u4"), ("body2", "<u4"), ("elem1", "<i4"), ("elem2", "<i4")])
    rec = np.zeros(len(rows), dtype=dt)
    for i, (b1, b2, p, f, e1, e2) in enumerate(rows):
        rec[i] = (p[0], p[1], p[2], f[0], f[1], f[2], names.index(b1), names.index(b2), e1, e2)
    fields = [PointField(name=n, offset=dt.fields[n][1],
                         datatype={"<f8": PointField.FLOAT64, "<u4": PointField.UINT32,
                                   "<i4": PointField.INT32}[dt.fields[n][0].str], count=1)
              for n in dt.names]
    msg = PointCloud2(height=1, width=len(rows), fields=fields, is_bigendian=False, point_step=dt.itemsize,
                      row_step=dt.itemsize * len(rows), is_dense=True)
    msg.header.stamp, msg.header.frame_id = t, "world"
    msg.data = rec.tobytes()
    return msg


def library_models(world):
    """The sensors as the library builds them from the same configuration (independent of the node)."""
    from vsf_sensor_ros.sensor import sensor_from_config
    p = node_params("")
    out = {}
    for s in SENSORS:
        cfg = {"name": s}
        cfg.update({k.split(".", 1)[1]: v for k, v in p.items()
                    if k.startswith(s + ".") and k.split(".", 1)[1] not in ("measured_scale",)})
        sensor = sensor_from_config(cfg)
        sensor.attach(world.body_model(cfg["attachment"]))
        out[s] = sensor
    return out


def library_state(world, rows):
    contacts = {}
    for b1, b2, p, f, e1, e2 in rows:
        contacts.setdefault((b1, b2), []).append((p, f, e1, e2))
    cs = {pair: ContactState(torch.tensor(np.array([r[0] for r in v]), dtype=F64),
                             torch.tensor(np.array([r[1] for r in v]), dtype=F64),
                             torch.tensor([r[2] for r in v]), torch.tensor([r[3] for r in v]))
          for pair, v in contacts.items()}
    return SimState(world.body_transforms(F64), {}, cs)


def diag(probe: Probe):
    return probe.diagnostics(timeout=5.0)


def counter(report, status: str, key: str) -> int:
    return int(report.get(status, {}).get(key, "0"))


# --------------------------------------------------------------------------- behaviour
def test_calibration_file_is_loaded_at_start_and_empty_cloud_still_publishes(node, probe):
    # An empty cloud: no contacts, yet every sensor publishes, stamped with the cloud's stamp.
    t = stamp(10)
    probe.send("/contacts", empty_cloud(t))
    p = wait_stamp(probe, "/pressure/predicted", t)
    # no contact: pressure = tare, and the tare came from the calibration file (500 Pa)
    assert p.fluid_pressure == PRESSURE_TARE_FROM_FILE
    assert p.header.frame_id == "punyo"
    for s in ("force", "patch", "load"):
        assert wait_stamp(probe, f"/{s}/predicted", t)
    jac = wait_stamp(probe, "/pressure/jacobian", t)
    assert jac.width * jac.height == 0


def test_predictions_match_hand_derivation_and_library_for_the_same_state(node, probe, world):
    probe.send("/joint_states", joint_state(JOINT_NAMES, JOINT_POS))
    probe.spin_for(0.3)
    world.set_joint_positions(JOINT_NAMES, JOINT_POS)
    rows, g = scene_contacts(world)
    t = stamp(20)
    probe.send("/contacts", rows_to_cloud(rows, t))
    pressure = wait_stamp(probe, "/pressure/predicted", t)
    force = wait_stamp(probe, "/force/predicted", t)
    patch = wait_stamp(probe, "/patch/predicted", t)
    load = wait_stamp(probe, "/load/predicted", t)
    assert [m.header.frame_id for m in (pressure, force, patch, load)] == \
        ["punyo", "punyo", "tool_link", "object"]

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
    # Isaac load on the object: |net force on the object| = |-f0|.
    assert load.wrench.force.z == pytest.approx(np.linalg.norm(g["f0"]), rel=1e-12)

    # The library, fed the same state built here, agrees with the node.
    models = library_models(world)
    models["pressure"].set_calibration({"tare": np.array([PRESSURE_TARE_FROM_FILE])})
    st = library_state(world, rows)
    assert pressure.fluid_pressure == pytest.approx(models["pressure"].predict(st).item(), rel=1e-12)
    np.testing.assert_allclose(F.reshape(-1), models["force"].predict(st).numpy(), rtol=1e-6, atol=1e-6)
    lp = models["patch"].predict(st).numpy()
    np.testing.assert_allclose([fp.x, fp.y, fp.z], lp[1:], rtol=1e-12)
    assert load.wrench.force.z == pytest.approx(models["load"].predict(st).numpy()[1], rel=1e-12)


def _triples(cloud: PointCloud2):
    c = read_cloud_fields(cloud, ["row", "col", "value"])
    return {(int(r), int(k)): v for r, k, v in zip(c["row"], c["col"], c["value"])}


def test_jacobian_columns_index_contact_message_rows(node, probe, world):
    world.set_joint_positions(JOINT_NAMES, JOINT_POS)
    rows, g = scene_contacts(world)
    t = stamp(20)   # published by the previous test
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
    # Isaac load on the object reads only row 1 (the (object, punyo) contact).
    jl = _triples(wait_stamp(probe, "/load/jacobian", t))
    assert {c // 3 for (_, c) in jl} == {1}


def test_markers_show_contact_points_on_the_sensor_body(node, probe):
    # rows 0 and 3 act on the bubble: two contact points, in the world frame, with the cloud's stamp
    t = stamp(20)
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


def _measured_pressure(hpa: float, t: Time) -> FluidPressure:
    m = FluidPressure(fluid_pressure=hpa)
    m.header.stamp = t
    return m


def test_tare_refused_before_any_measured_sample(node, probe):
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False
    assert "no measured sample" in r.message


def test_tare_refused_when_every_sample_has_contact(node, probe, world):
    world.set_joint_positions(JOINT_NAMES, JOINT_POS)
    rows, _ = scene_contacts(world)
    for k in range(N_TARE):
        t = stamp(40 + k)
        probe.send("/pressure/measured", _measured_pressure(1000.0, t))
        probe.send("/contacts", rows_to_cloud(rows, t))
        wait_stamp(probe, "/pressure/residual", t)
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is False
    assert "have contact" in r.message


def test_residual_is_measured_minus_predicted_at_the_same_stamp(node, probe):
    t = stamp(40)
    pred = for_stamp(probe, "/pressure/predicted", t)[-1].fluid_pressure
    res = for_stamp(probe, "/pressure/residual", t)[-1]
    assert res.fluid_pressure == pytest.approx(1000.0 * MEASURED_SCALE - pred, rel=1e-12)
    assert res.header.frame_id == "punyo"


def test_tare_averages_the_contact_free_samples_and_reports_count_and_offset(node, probe):
    # Contact-free steps with measured 1013.0, 1013.2, 1013.4 hPa -> 101300, 101320, 101340 Pa.
    # Contact-free prediction before the tare = 500 Pa (file tare) ... the tare offset averages the
    # measured pressure: (101300 + 101320 + 101340) / 3 = 101320 Pa.
    hpa = [1013.0, 1013.2, 1013.4]
    for k, v in enumerate(hpa):
        t = stamp(50 + k)
        probe.send("/contacts", empty_cloud(t))
        probe.send("/pressure/measured", _measured_pressure(v, t))
        wait_stamp(probe, "/pressure/residual", t)
    r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
    assert r.success is True, r.message
    assert f"tared with {N_TARE} of {N_TARE} samples" in r.message
    assert "101320" in r.message and "Pa" in r.message
    # the next contact-free prediction reads the new tare
    t = stamp(60)
    probe.send("/contacts", empty_cloud(t))
    assert wait_stamp(probe, "/pressure/predicted", t).fluid_pressure == pytest.approx(101320.0, rel=1e-12)


def test_tare_all_answers_for_every_sensor(node, probe):
    r = probe.call(Trigger, "/tare", Trigger.Request())
    # one line per sensor: the pressure sensor has contact-free pairs; the others have no measured
    # data yet, so the global tare fails (test_tare_all.py covers the all-sensor success)
    lines = r.message.split("\n")
    parts = {p.split(":", 1)[0]: p for p in lines}
    assert len(lines) == len(SENSORS) and set(parts) == set(SENSORS)
    assert "tared with 3 of 3 samples" in parts["pressure"]
    for s in ("force", "patch", "load"):
        assert "no measured sample" in parts[s], parts[s]
    assert r.success is False


def test_save_calibration_writes_the_tare_to_yaml(node, probe):
    _, cal = node
    r = probe.call(Trigger, "/save_calibration", Trigger.Request())
    assert r.success is True, r.message
    data = yaml.safe_load(cal.read_text())
    assert data["sensors"]["pressure"]["calibration"]["tare"] == pytest.approx([101320.0], rel=1e-12)
    assert data["sensors"]["pressure"]["samples"] == N_TARE


def _measured_forces(forces: np.ndarray, t: Time) -> PointCloud2:
    """A measured dense-force cloud: fields fx fy fz (float64) per vertex, built by hand."""
    dt = np.dtype([("fx", "<f8"), ("fy", "<f8"), ("fz", "<f8")])
    rec = np.zeros(len(forces), dtype=dt)
    rec["fx"], rec["fy"], rec["fz"] = forces[:, 0], forces[:, 1], forces[:, 2]
    msg = PointCloud2(height=1, width=len(forces), is_bigendian=False, point_step=24,
                      row_step=24 * len(forces), is_dense=True,
                      fields=[PointField(name=n, offset=8 * i, datatype=PointField.FLOAT64, count=1)
                              for i, n in enumerate(("fx", "fy", "fz"))])
    msg.header.stamp, msg.header.frame_id = t, "punyo"
    msg.data = rec.tobytes()
    return msg


def test_tare_on_start_tares_once_n_contact_free_pairs_exist(node, probe, world):
    # Dense force: measured 0.25, 0.5, 0.75 N on every vertex/axis over three contact-free steps;
    # the raw contact-free prediction is 0, so the offset is their mean, 0.5 N, on every entry.
    assert probe.set_params({"tare_on_start": True})[0].successful
    nv = len(world.body_mesh("punyo").vertices)
    probe.wait_for_subscriber("/force/measured", PointCloud2)
    for k, v in enumerate((0.25, 0.5, 0.75)):
        t = stamp(65, k)
        probe.send("/contacts", empty_cloud(t))
        probe.send("/force/measured", _measured_forces(np.full((nv, 3), v), t))
        wait_stamp(probe, "/force/residual", t)
    t = stamp(66)
    probe.send("/contacts", empty_cloud(t))
    cols = read_cloud_fields(wait_stamp(probe, "/force/predicted", t), ["fx", "fy", "fz"])
    np.testing.assert_allclose(np.stack([cols["fx"], cols["fy"], cols["fz"]]), 0.5, rtol=1e-6)
    assert probe.set_params({"tare_on_start": False})[0].successful


def test_live_parameter_change_is_applied_and_invalid_value_rejected(node, probe, world):
    world.set_joint_positions(JOINT_NAMES, JOINT_POS)
    rows, g = scene_contacts(world)
    res = probe.set_params({"patch.fSaturation": [1.0, 1.0, 1.0]})
    assert res[0].successful, res[0].reason
    t = stamp(70)
    probe.send("/contacts", rows_to_cloud(rows, t))
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
    probe.send("/pressure/measured", _measured_pressure(2.0, t))
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


def test_sensor_added_and_removed_at_run_time(node, probe):
    topic = "/extra/predicted"
    probe.listen(topic, WrenchStamped)
    res = probe.set_params({"sensors": SENSORS + ["extra"], "extra.type": "IsaacContactSensor",
                            "extra.attachment": "object", "extra.radius": 0.5}, atomic=True)
    assert res[0].successful, res[0].reason
    assert probe.spin_until(lambda: probe.count_publishers(topic) == 1, 10.0)
    assert probe.spin_until(lambda: probe.count_subscribers("/extra/measured") >= 1, 5.0)
    t = stamp(80)
    probe.spin_for(0.5)
    probe.send("/contacts", empty_cloud(t))
    assert wait_stamp(probe, topic, t).header.frame_id == "object"
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
    probe.send("/object/pose", pose)
    probe.spin_for(0.3)
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
def _missing_field_cloud(t):
    msg = empty_cloud(t)
    msg.fields = [f for f in msg.fields if f.name != "fz"]
    msg.width, msg.row_step, msg.point_step = 1, 8, 8
    msg.data = bytes(8)
    return msg


BAD_CASES = ["missing_field", "bad_size", "non_finite", "body_index_out_of_range",
             "element_index_out_of_range", "joint_state_empty", "joint_state_short", "joint_nan"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_rejected_counted_and_the_node_lives(node, probe, world, case):
    proc, _ = node
    world.set_joint_positions(JOINT_NAMES, JOINT_POS)
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
    assert probe.spin_until(lambda: counter(diag(probe), "sensor_node: inputs", key) >
                            counter(before, "sensor_node: inputs", key), 10.0)
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
    probe.send("/pressure/measured", _measured_pressure(float("inf"), stamp(300)))
    key = "rejected.non_finite"
    assert probe.spin_until(lambda: counter(diag(probe), "sensor_node: pressure", key) >
                            counter(before, "sensor_node: pressure", key), 10.0)


def test_stamp_going_backwards_recovers_and_is_reported(node, probe):
    before = diag(probe)
    t = stamp(1, 5)     # earlier than every stamp so far: a simulator reset
    probe.send("/contacts", empty_cloud(t))
    assert wait_stamp(probe, "/pressure/predicted", t)
    key = "stamp_jumps_backwards"
    assert probe.spin_until(lambda: counter(diag(probe), "sensor_node: inputs", key) >
                            counter(before, "sensor_node: inputs", key), 10.0)
    t2 = stamp(2)
    probe.send("/contacts", empty_cloud(t2))
    assert wait_stamp(probe, "/pressure/predicted", t2)


def test_free_body_pose_with_a_zero_quaternion_is_rejected(node, probe):
    before = diag(probe)
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.pose.orientation.w = 0.0   # (0, 0, 0, 0): no rotation
    probe.send("/object/pose", msg)
    key = "rejected.pose_invalid"
    assert probe.spin_until(lambda: counter(diag(probe), "sensor_node: inputs", key) >
                            counter(before, "sensor_node: inputs", key), 10.0)


def test_diagnostics_report_rate_latency_and_calibration_per_sensor(node, probe):
    for k in range(20):
        probe.send("/contacts", empty_cloud(stamp(400, k * 1000)))
        time.sleep(0.005)
    rep = diag(probe)
    st = rep["sensor_node: pressure"]
    assert st["type"] == "PunyoPressureSensor" and st["attachment"] == "punyo"
    assert "tared with 3 samples" in st["calibration"]
    assert float(st["latency_ms_max"]) >= 0.0 and "rate_hz" in st
