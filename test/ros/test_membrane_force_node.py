"""membrane_force_node over real DDS: a synthetic push on a ray-cast dome, read by sensor_node.

Scene (as the estimator's own tests, :mod:`test.sensor.membrane_scenes`): a spherical-cap membrane
(rim 40 mm, sphere 50 mm, base 60 mm in front of a distortion-free 200 x 160 px camera), clamped on
its rim, inflated to 4 kPa gauge.  Hand-derived expectations:

* a push of 1.5 N along the inward normal of one vertex, the membrane's clamped response
  rendered as a depth image: the published total is 1.5 N (5 %) along that inward normal, the
  largest force sits on that vertex;
* the published cloud is in the frame of the attachment mesh, which is the dome turned by a
  known rotation (30 deg about z, then 10 deg about x) and shifted: forces are that rotation
  times the library estimator's values, vertex for vertex;
* ``sensor_node`` given one contact of the same 1.5 N at that vertex predicts exactly that force
  there; its residual is measured minus predicted, and sums to nearly zero (5 %).
"""
from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
import trimesh
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Float32
from std_srvs.srv import Trigger
from builtin_interfaces.msg import Time

import torch

from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.camera import InputRejected, depth_from_image
from vsf_sensor_ros.ros.kinds import sensor_layout
from vsf_sensor_ros.ros.messages.readings import decode_measured, read_cloud_fields
from vsf_sensor_ros.sensor import ContactState
from vsf_sensor_ros.sensor.membrane_force_estimator import MembraneForceEstimator

from ..sensor.membrane_scenes import camera, disc_mesh, render_depth
from .node_helpers import ROOT, Probe, deliver_counted, write_params

P_REF = 105000.0            # Pa absolute (1050 hPa, exact in float32)
P0 = 4000.0                 # gauge, Pa
PUSH_N = 1.5
DP = 40.0                   # Pa rise under the push
R_OUT = Rotation.from_euler("zx", [30.0, 10.0], degrees=True).as_matrix()
T_OUT = np.array([0.01, -0.02, 0.005])
NODE = "membrane_force_node"


def _image_32f(depth: np.ndarray, sec: int) -> Image:
    d = depth.astype(np.float32)
    msg = Image(height=d.shape[0], width=d.shape[1], encoding="32FC1", is_bigendian=0, step=4 * d.shape[1],
                data=d.tobytes())
    msg.header.stamp, msg.header.frame_id = Time(sec=sec), "camera_depth_optical_frame"
    return msg


def _camera_info(cam) -> CameraInfo:
    return CameraInfo(width=cam.width, height=cam.height, distortion_model="plumb_bob", d=[0.0] * 5,
                      k=[cam.fx, 0.0, cam.cx, 0.0, cam.fy, cam.cy, 0.0, 0.0, 1.0])


def _hpa(pa: float) -> Float32:
    return Float32(data=pa / 100.0)


def _pa(pa: float) -> float:
    """The pressure as the node gets it: float32 hPa x 100."""
    return float(np.float32(pa / 100.0)) * 100.0


def test_16uc1_depth_is_scaled_by_the_depth_unit_and_bad_images_are_named():
    raw = np.array([[0, 1, 2], [65535, 1000, 7]], dtype=np.uint16)
    # big-endian, rows padded to 8 bytes: step and byte order honoured
    data = b"".join(row.astype(">u2").tobytes() + b"\0\0" for row in raw)
    msg = Image(height=2, width=3, encoding="16UC1", is_bigendian=1, step=8, data=data)
    assert depth_from_image(msg, 1e-4).ravel() == pytest.approx([0.0, 1e-4, 2e-4, 6.5535, 0.1, 7e-4])
    with pytest.raises(InputRejected) as e:
        depth_from_image(Image(height=2, width=3, encoding="rgb8", step=9, data=bytes(18)), 1e-3)
    assert e.value.reason == "bad_encoding"
    with pytest.raises(InputRejected) as e:
        depth_from_image(Image(height=2, width=3, encoding="16UC1", step=8, data=bytes(10)), 1e-3)
    assert e.value.reason == "wrong_size" and "16 bytes, got 10" in str(e.value)
    with pytest.raises(InputRejected) as e:     # a step below a row (3 x 2 bytes), whatever the data
        depth_from_image(Image(height=2, width=3, encoding="16UC1", step=4, data=bytes(12)), 1e-3)
    assert e.value.reason == "wrong_size" and "step 4" in str(e.value) and "6 bytes" in str(e.value)


def test_an_organised_cloud_gives_its_z_as_the_depth_image():
    from sensor_msgs.msg import PointField
    from vsf_sensor_ros.ros.messages.camera import depth_from_cloud
    z = np.array([[0.05, 0.06, 0.0], [0.07, np.nan, 0.08]], dtype=np.float32)
    rec = np.zeros((2, 3), dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("rgb", "<f4")])
    rec["x"], rec["z"] = 1.0, z
    msg = PointCloud2(height=2, width=3, is_bigendian=False, point_step=16, row_step=48, is_dense=False,
                      fields=[PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                              for i, n in enumerate(("x", "y", "z", "rgb"))], data=rec.tobytes())
    out = depth_from_cloud(msg)
    assert out.shape == (2, 3) and np.isnan(out[1, 1])
    assert np.nan_to_num(out).ravel() == pytest.approx(np.nan_to_num(z.astype(np.float64)).ravel())
    msg.fields = msg.fields[:2]                                # no z
    with pytest.raises(InputRejected) as e:
        depth_from_cloud(msg)
    assert e.value.reason == "bad_cloud_layout"


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    import meshio
    d = tmp_path_factory.mktemp("membrane")
    dome = disc_mesh(0.04, rings=8, cap_radius=0.05, base_z=0.06)
    vtk = d / "dome.vtk"
    cells = [("triangle", dome.triangles), ("vertex", dome.boundary[:, None])]
    meshio.Mesh(dome.points, cells).write(str(vtk))
    ply = d / "dome_attached.ply"
    trimesh.Trimesh(dome.points @ R_OUT.T + T_OUT, dome.triangles, process=False).export(str(ply))
    cam = camera()
    est = MembraneForceEstimator(dome, cam, np.eye(3), ambient_pressure=P_REF - P0, window=3)
    # depths as the 32FC1 images carry them (float32), so the library reads what the node reads
    ref = render_depth(cam, dome.points, dome.triangles).astype(np.float32).astype(np.float64)
    est.set_reference([ref, ref], [_pa(P_REF), _pa(P_REF)])
    # the clamped response to an inward push at the vertex nearest (12 mm, 0) and a 40 Pa rise
    off = np.linalg.norm(dome.points[dome.interior, :2] - [0.012, 0.0], axis=1)
    vertex = int(dome.interior[np.argmin(off)])
    model = est.model
    load = DP * model.g0
    load[vertex] -= PUSH_N * model.normals[vertex]
    free = dome.interior
    dof = (3 * free[:, None] + np.arange(3)).ravel()
    u = np.zeros(3 * len(dome.points))
    u[dof] = np.linalg.solve(model.K[dof][:, dof].toarray(), load.reshape(-1)[dof])
    pushed = render_depth(cam, dome.points + u.reshape(-1, 3), dome.triangles)
    pushed = pushed.astype(np.float32).astype(np.float64)
    return dict(dir=d, dome=dome, vtk=vtk, ply=ply, cam=cam, est=est, ref=ref, pushed=pushed, vertex=vertex,
                normal=model.normals[vertex].copy())


@pytest.fixture(scope="module")
def nodes(scene, rclpy_context):
    d = scene["dir"]
    mparams = write_params(d / "membrane.yaml", {
        "mesh": str(scene["vtk"]), "attachment_mesh": str(scene["ply"]), "frame_id": "membrane",
        "camera_rotation_deg": 0.0, "ambient_pressure": P_REF - P0, "window": 3, "reference_frames": 2,
        "depth_topic": "camera/depth", "camera_info_topic": "camera/info",
        "pressure_topic": "bubble/pressure",
        # a pressure is sent when it changes, not as a 100 Hz stream: held, it must not go stale
        "pressure_timeout": 0.0,
        "force_topic": "/mforce/measured", "input_reliability": "reliable",
        "pressure_reliability": "reliable",
        "diagnostics_period": 0.2,
    }, node_name=NODE)
    sparams = write_params(d / "sensor.yaml", {
        "contact_body_names": ["membrane", "world"], "bodies": ["membrane"],
        "membrane.mesh": str(scene["ply"]), "membrane.parent_link": "world",
        "membrane.transform": [float(v) for v in np.eye(4).reshape(-1)], "membrane.pose_topic": "",
        "sensors": ["mforce"], "mforce.type": "PunyoDenseForceSensor", "mforce.attachment": "membrane",
        "diagnostics_period": 0.2, "markers_max_rate": 0.0,
    })
    env = child_env()
    mcmd = module_command("vsf_sensor_ros.ros.membrane_force_node", ["--params-file", str(mparams)])
    scmd = module_command("vsf_sensor_ros.ros.sensor_node", ["--params-file", str(sparams)])
    mproc = ManagedProcess(NODE, mcmd, env, d / "membrane.log", cwd=ROOT)
    sproc = ManagedProcess("sensor_node", scmd, env, d / "sensor.log", cwd=ROOT)
    mproc.start()
    sproc.start()
    probe = Probe("membrane_probe", target=NODE)
    try:
        for topic, kind in (("/mforce/measured", PointCloud2), ("/membrane_surface", PointCloud2),
                            ("/membrane_total_force", WrenchStamped), ("/mforce/predicted", PointCloud2),
                            ("/mforce/residual", PointCloud2), ("/diagnostics", DiagnosticArray)):
            probe.listen(topic, kind)
        assert probe.wait_for_subscriber("/camera/depth", Image, timeout=90.0), mproc.output()[-3000:]
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), sproc.output()[-3000:]
        assert probe.wait_for_subscriber("/mforce/measured", PointCloud2, timeout=30.0)
        # confirmed by the node's counters (a lost first message would leave it waiting)
        deliver_counted(probe, "/camera/info", _camera_info(scene["cam"]), f"/{NODE}", "camera_info_received")
        deliver_counted(probe, "/bubble/pressure", _hpa(P_REF), f"/{NODE}", "pressures_received")
        yield probe
    finally:
        probe.destroy_node()
        codes = (mproc.stop(), sproc.stop())
        outs = (mproc.output(), sproc.output())
    assert codes == (0, 0), outs[0][-3000:] + outs[1][-3000:]
    assert all("Traceback" not in o for o in outs), outs[0][-3000:]


def _at(probe: Probe, topic: str, sec: int, timeout: float = 15.0):
    got = lambda: [m for m in probe.received[topic] if m.header.stamp.sec == sec]  # noqa: E731
    assert probe.spin_until(lambda: bool(got()), timeout), f"nothing on {topic} stamped {sec}"
    return got()[-1]


def _forces(msg: PointCloud2, n: int) -> np.ndarray:
    names = [f"p{i}_{a}" for i in range(n) for a in "xyz"]
    layout = sensor_layout("PunyoDenseForceSensor", "membrane", names, None, np.zeros((n, 3)))
    return decode_measured(layout, msg, 1.0).reshape(n, 3)    # sensor_node's own measured decoder


def _status(probe: Probe) -> dict:
    msgs = probe.received["/diagnostics"]
    start = len(msgs)
    probe.spin_until(lambda: any(s.name == f"/{NODE}" for m in msgs[start:] for s in m.status), 5.0)
    for m in reversed(msgs[start:]):
        for s in m.status:
            if s.name == f"/{NODE}":
                return {kv.key: kv.value for kv in s.values}
    raise AssertionError("no diagnostics from the membrane node")


def test_a_push_is_published_as_sensor_nodes_measured_stream(nodes, scene):
    probe, dome, v = nodes, scene["dome"], scene["vertex"]
    n = len(dome.points)
    for sec in (1, 2):                         # the reference: two contact-free frames
        probe.send("/camera/depth", _image_32f(scene["ref"], sec))
        probe.spin_for(0.2)
    _at(probe, "/mforce/measured", 2)          # the frame completing the reference is estimated too
    probe.send("/bubble/pressure", _hpa(P_REF + DP))
    probe.spin_for(0.5)
    probe.send("/camera/depth", _image_32f(scene["pushed"], 3))
    msg = _at(probe, "/mforce/measured", 3)
    assert msg.header.frame_id == "membrane" and msg.width * msg.height == n
    assert [f.name for f in msg.fields] == ["x", "y", "z", "fx", "fy", "fz"]
    measured = _forces(msg, n)
    # the library on the same frames, in the attachment frame by the rotation we built it with
    lib = scene["est"].estimate(scene["pushed"], pressure=_pa(P_REF + DP))
    assert np.abs(measured - lib.contact_forces @ R_OUT.T).max() < 1e-6
    # hand-derived: 1.5 N along the pushed vertex's inward normal, largest on that vertex
    expected = -PUSH_N * (R_OUT @ scene["normal"])
    assert measured.sum(axis=0) == pytest.approx(expected, abs=0.05 * PUSH_N)
    assert int(np.argmax(np.linalg.norm(measured, axis=1))) == v
    assert np.abs(measured[dome.boundary]).max() == 0.0
    # positions in the attachment frame: the library's, moved rigidly; the pushed vertex moved inward
    xyz = read_cloud_fields(msg, ["x", "y", "z"])
    pos = np.stack([xyz["x"], xyz["y"], xyz["z"]], axis=1)
    assert np.abs(pos - (lib.positions @ R_OUT.T + T_OUT)).max() < 1e-6     # float32 rounding
    assert (pos[v] - (dome.points[v] @ R_OUT.T + T_OUT)) @ (R_OUT @ scene["normal"]) < -1e-3
    total = _at(probe, "/membrane_total_force", 3).wrench
    assert [total.force.x, total.force.y, total.force.z] == pytest.approx(measured.sum(axis=0), abs=1e-5)
    assert _at(probe, "/membrane_surface", 3).width == n

    # sensor_node takes it as the measured stream of its PunyoDenseForceSensor
    contact = ContactState(torch.tensor(dome.points[[v]] @ R_OUT.T + T_OUT), torch.tensor(expected[None, :]),
                           elems1=torch.tensor([v]))
    probe.send("/contacts", contacts_to_pointcloud2({("membrane", "world"): contact}, ["membrane", "world"],
                                                    stamp=Time(sec=3), frame_id="world"))
    pred = _forces(_at(probe, "/mforce/predicted", 3), n)
    assert pred[v] == pytest.approx(expected, abs=1e-6) and np.abs(np.delete(pred, v, 0)).max() == 0.0
    res = _forces(_at(probe, "/mforce/residual", 3), n)
    assert np.abs(res - (measured - pred)).max() < 1e-5
    assert np.linalg.norm(res.sum(axis=0)) < 0.05 * PUSH_N     # in sum, measured = the applied push


def test_bad_frames_are_counted_by_reason_and_the_node_stays_up(nodes, scene):
    probe = nodes
    before = _status(probe)
    ref = scene["ref"]
    probe.send("/camera/depth", _image_32f(ref[:-1], 20))                    # one row short
    nan = np.full_like(ref, np.nan)
    probe.send("/camera/depth", _image_32f(nan, 21))                         # all NaN
    sparse = np.zeros_like(ref)
    sparse[::7, ::7] = ref[::7, ::7]                                         # most vertices unread
    probe.send("/camera/depth", _image_32f(sparse, 22))
    probe.send("/camera/depth", _image_32f(ref, 23))                        # a good one still goes
    _at(probe, "/mforce/measured", 23)
    probe.spin_for(0.5)
    after = _status(probe)
    for reason in ("wrong_size", "nan", "too_few_valid_pixels"):
        assert int(after.get(f"rejected.{reason}", 0)) == int(before.get(f"rejected.{reason}", 0)) + 1, after
    assert not [m for m in probe.received["/mforce/measured"] if m.header.stamp.sec in (20, 21, 22)]
    assert int(after["frames_received"]) >= int(before["frames_received"]) + 4


def test_32fc1_infinities_and_nan_are_kept_for_the_estimator_as_no_reading():
    d = np.array([[0.05, np.inf, -np.inf], [np.nan, 0.0, 0.07]], dtype=np.float32)
    msg = Image(height=2, width=3, encoding="32FC1", is_bigendian=0, step=12, data=d.tobytes())
    out = depth_from_image(msg, 1e-3)
    assert out[0, 0] == pytest.approx(0.05) and out[1, 2] == pytest.approx(0.07) and out[1, 1] == 0.0
    assert out[0, 1] == np.inf and out[0, 2] == -np.inf and np.isnan(out[1, 0])


def test_reset_reference_collects_a_new_reference(nodes, scene):
    probe = nodes
    answer = probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request())
    assert answer.success and "next 2 frames" in answer.message
    probe.send("/bubble/pressure", _hpa(P_REF))
    probe.spin_for(0.5)
    probe.send("/camera/depth", _image_32f(scene["ref"], 30))
    probe.spin_for(1.0)
    status = _status(probe)
    assert status["reference"] == "collecting 1 of 2 frames" and status["reference_resets"] == "1"
    assert not [m for m in probe.received["/mforce/measured"] if m.header.stamp.sec == 30]
    probe.send("/camera/depth", _image_32f(scene["ref"], 31))
    forces = _forces(_at(probe, "/mforce/measured", 31), len(scene["dome"].points))
    assert np.abs(forces).max() < 1e-9                  # the reference frame itself: no contact
    assert _status(probe)["reference"].startswith("set from 2 frames")


def test_a_stamped_pressure_pairs_with_the_frame_of_its_stamp(scene, rclpy_context):
    """FluidPressure: a frame waits for the pressure of its own stamp (it may come later), and a
    frame whose stamp no pressure matches while later ones exist is rejected as no_pressure."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import FluidPressure

    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    overrides = [Parameter("mesh", value=str(scene["vtk"])), Parameter("camera_rotation_deg", value=0.0),
                 Parameter("ambient_pressure", value=P_REF - P0), Parameter("window", value=3),
                 Parameter("reference_frames", value=1), Parameter("pressure_scale", value=1.0),
                 Parameter("pressure_type", value="sensor_msgs/msg/FluidPressure")]
    node = MembraneForceNode("stamped_membrane_node", parameter_overrides=overrides)
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        out = []
        node._publish = lambda header, res: out.append((header.stamp.sec, res))   # what would go out

        def pressure(pa: float, sec: int) -> FluidPressure:
            m = FluidPressure(fluid_pressure=pa)
            m.header.stamp = Time(sec=sec)
            return m
        node._on_pressure(pressure(P_REF, 1))
        node._on_image(_image_32f(scene["ref"], 1))                     # the reference
        node._on_image(_image_32f(scene["pushed"], 2))                  # before its pressure: waits
        assert [s for s, _ in out] == [1] and len(node.pressures.pending) == 1
        node._on_pressure(pressure(P_REF + 500.0, 3))                   # another frame's: still waits?
        assert len(out) == 1 and node.rejected["no_pressure"] == 1      # no: later stamps passed it
        node._on_image(_image_32f(scene["pushed"], 4))
        node._on_pressure(pressure(P_REF + DP, 4))                      # its own pressure arrives
        assert [s for s, _ in out] == [1, 4]
        assert out[1][1].pressure_change == pytest.approx(DP)           # paired with stamp 4's pressure
    finally:
        node.destroy_node()


# -- bad input a careless or hostile user sends: counted by reason, named, nothing wrong published -----
def _count(status: dict, reason: str) -> int:
    return int(status.get(f"rejected.{reason}", 0))


def _fresh_reference(probe: Probe, scene, secs) -> None:
    """A new reference from two contact-free frames at P_REF (each test stands on its own)."""
    probe.send("/bubble/pressure", _hpa(P_REF))
    probe.spin_for(0.3)
    assert probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request()).success
    for sec in secs:
        probe.send("/camera/depth", _image_32f(scene["ref"], sec))
    _at(probe, "/mforce/measured", secs[-1])


def test_infinite_depths_of_a_rep_117_driver_are_holes_and_the_reference_is_set(nodes, scene):
    """A 32FC1 driver writing +Inf where it sees nothing and -Inf where it is too near (REP 117):
    the reference is set from such frames, and the push reads 1.5 N along the inward normal."""
    probe, dome, v = nodes, scene["dome"], scene["vertex"]
    near = np.zeros(scene["ref"].shape, dtype=bool)
    near[40:44, 90:94] = True

    def zed(depth):
        out = np.where(depth > 0, depth, np.inf)
        out[near] = -np.inf
        return out
    probe.send("/bubble/pressure", _hpa(P_REF))
    probe.spin_for(0.3)
    assert probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request()).success
    before = _status(probe)
    for sec in (160, 161):
        probe.send("/camera/depth", _image_32f(zed(scene["ref"]), sec))
    n = len(dome.points)
    assert np.abs(_forces(_at(probe, "/mforce/measured", 161), n)).max() < 1e-9   # the reference: no force
    assert _status(probe)["reference"].startswith("set from 2 frames")
    probe.send("/bubble/pressure", _hpa(P_REF + DP))
    probe.spin_for(0.5)
    probe.send("/camera/depth", _image_32f(zed(scene["pushed"]), 162))
    measured = _forces(_at(probe, "/mforce/measured", 162), n)
    expected = -PUSH_N * (R_OUT @ scene["normal"])
    assert measured.sum(axis=0) == pytest.approx(expected, abs=0.05 * PUSH_N)
    assert int(np.argmax(np.linalg.norm(measured, axis=1))) == v
    after = _status(probe)
    assert _count(after, "nan") == _count(before, "nan")


def test_a_pressure_in_the_wrong_unit_is_not_used_and_names_the_scale(nodes, scene):
    probe = nodes
    _fresh_reference(probe, scene, (38, 39))
    before = _status(probe)
    good = before["pressure_pa"]
    probe.send("/bubble/pressure", Float32(data=P_REF))        # Pa on a hPa topic: x 100 = 10.5 MPa
    probe.spin_for(0.5)
    after = _status(probe)
    assert _count(after, "implausible_pressure") == _count(before, "implausible_pressure") + 1
    assert after["pressure_pa"] == good                         # the previous pressure stays in use
    # 105000 x 100 Pa is no absolute pressure; 105000 x 1 is: the scale to set is named
    assert "105000" in after["last_rejection"] and "set pressure_scale: 1.0" in after["last_rejection"]
    probe.send("/camera/depth", _image_32f(scene["ref"], 40))
    forces = _forces(_at(probe, "/mforce/measured", 40), len(scene["dome"].points))
    assert np.abs(forces).max() < 1e-9       # the reference frame at the reference pressure: no force


def test_a_reference_frame_in_millimetres_is_rejected_naming_the_depth(nodes, scene):
    probe = nodes
    assert probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request()).success
    before = _status(probe)
    probe.send("/camera/depth", _image_32f(scene["ref"] * 1000.0, 50))     # a 32FC1 image in mm
    probe.spin_for(0.5)
    after = _status(probe)
    assert _count(after, "depth_out_of_range") == _count(before, "depth_out_of_range") + 1
    assert after["reference"] == "collecting 0 of 2 frames"                # not collected
    # the median depth of the rendered dome in mm, by hand from the frame itself
    mm = (scene["ref"] * 1000.0).astype(np.float32).astype(np.float64)     # as the 32FC1 image holds it
    assert f"median {float(np.median(mm[mm > 0])):.4g} m" in after["last_rejection"]
    for sec in (51, 52):
        probe.send("/camera/depth", _image_32f(scene["ref"], sec))
    assert np.abs(_forces(_at(probe, "/mforce/measured", 52), len(scene["dome"].points))).max() < 1e-9


def test_live_sets_are_refused_by_name_and_the_node_goes_on(nodes, scene):
    """Every parameter is read-only; a misspelt name is refused naming it and the closest one."""
    probe = nodes
    _fresh_reference(probe, scene, (53, 54))
    res = probe.set_params({"depth_unti": 0.002})[0]
    assert not res.successful and "'depth_unti'" in res.reason and "'depth_unit'" in res.reason, res.reason
    res = probe.set_params({"pressure_scale": 1.0})[0]
    assert not res.successful and "read-only" in res.reason and "pressure_scale" in res.reason, res.reason
    res = probe.set_params({"pressure_scale": 1.0, "depth_unti": 1}, atomic=True)[0]
    assert not res.successful
    assert _status(probe)["config_problems"] == "none"
    probe.send("/camera/depth", _image_32f(scene["ref"], 55))
    _at(probe, "/mforce/measured", 55)


def test_a_changed_camera_info_is_counted_and_taken_by_reset_reference(nodes, scene):
    """Last in this module: it leaves the node on the second camera."""
    from ..sensor.membrane_scenes import camera as make_camera
    probe, dome = nodes, scene["dome"]
    _fresh_reference(probe, scene, (58, 59))
    before = _status(probe)
    small = make_camera(100, 80, 40.0)                              # the same view at half resolution
    probe.send("/camera/info", _camera_info(small))
    probe.spin_for(0.5)
    after = _status(probe)
    assert _count(after, "camera_info_changed") == _count(before, "camera_info_changed") + 1
    assert "100x80 camera" in after["last_rejection"] and "200x160 camera" in after["last_rejection"]
    probe.send("/camera/depth", _image_32f(scene["ref"], 60))       # the first camera still in use
    _at(probe, "/mforce/measured", 60)
    answer = probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request())
    assert answer.success and "camera 100x80 camera" in answer.message and "was 200x160" in answer.message
    ref_small = render_depth(small, dome.points, dome.triangles).astype(np.float32).astype(np.float64)
    probe.send("/camera/depth", _image_32f(scene["ref"], 61))       # the old size: now the wrong one
    for sec in (62, 63):
        probe.send("/camera/depth", _image_32f(ref_small, sec))
    forces = _forces(_at(probe, "/mforce/measured", 63), len(dome.points))
    assert np.abs(forces).max() < 1e-9
    status = _status(probe)
    assert status["reference"].startswith("set from 2 frames")
    assert _count(status, "wrong_size") >= _count(after, "wrong_size") + 1
    assert not [m for m in probe.received["/mforce/measured"] if m.header.stamp.sec == 61]


def _bare_node(scene, name, **extra):
    """An in-process node on the dome (no DDS traffic; its callbacks are called directly)."""
    from rclpy.parameter import Parameter
    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    values = dict(mesh=str(scene["vtk"]), camera_rotation_deg=0.0, ambient_pressure=P_REF - P0, window=3,
                  reference_frames=1)
    values.update(extra)
    return MembraneForceNode(name, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])


def test_frames_after_an_unusable_camera_info_name_why_and_reset_says_what_is_missing(scene, rclpy_context):
    # pressure_timeout 0: the staleness check off, so a loaded machine cannot make the pressure stale
    node = _bare_node(scene, "camera_info_membrane_node", pressure_timeout=0.0)
    try:
        answer = node._on_reset(Trigger.Request(), Trigger.Response())
        assert answer.success and "no usable CameraInfo yet on camera/depth/camera_info" in answer.message
        cam = scene["cam"]
        info = _camera_info(cam)
        info.k = [0.0, 0.0, cam.cx, 0.0, cam.fy, cam.cy, 0.0, 0.0, 1.0]          # fx = 0
        node._on_camera_info(info)
        assert node.estimator is None and node.rejected["bad_camera_info"] == 1
        folded = _camera_info(cam)
        folded.d = [-1e6, 0.0, 0.0, 0.0, 0.0]                  # folds inside the membrane's image
        node._on_camera_info(folded)
        assert node.estimator is None and node.rejected["bad_camera_info"] == 2
        node._on_camera_info(info)
        node._on_pressure(_hpa(1e-3))        # rejected in between: the frame still names the CameraInfo's
        assert node.rejected["implausible_pressure"] == 1
        node._on_pressure(_hpa(P_REF))
        node._on_image(_image_32f(scene["ref"], 1))
        text = node.last["last_rejection"]
        assert node.rejected["no_camera_info"] == 1
        assert "3 received" in text and "fx" in text, text
        # a usable CameraInfo after it: frames go
        node._on_camera_info(_camera_info(cam))
        out = []
        node._publish = lambda header, res: out.append(header.stamp.sec)
        node._on_image(_image_32f(scene["ref"], 2))
        assert out == [2]
        # a later unusable one: counted as changed; the reset that would take it changes nothing
        node._on_camera_info(info)
        assert node.rejected["camera_info_changed"] == 1
        answer = node._on_reset(Trigger.Request(), Trigger.Response())
        assert not answer.success and "nothing reset" in answer.message and "fx" in answer.message
        assert node.estimator.model is not None                      # the reference stays
        node._on_image(_image_32f(scene["ref"], 3))
        assert out == [2, 3]
    finally:
        node.destroy_node()


def test_stamped_pressures_on_another_clock_are_named_with_both_stamps(scene, rclpy_context):
    from sensor_msgs.msg import FluidPressure
    node = _bare_node(scene, "clock_membrane_node", pressure_scale=1.0, qos_depth=2,
                      pressure_type="sensor_msgs/msg/FluidPressure")
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        m = FluidPressure(fluid_pressure=P_REF)
        m.header.stamp = Time(sec=1000)                    # the pressure driver on wall time
        node._on_pressure(m)
        node._on_image(_image_32f(scene["ref"], 1))        # frames on sim time: far before it
        assert node.rejected["no_pressure"] == 1
        text = node.last["last_rejection"]
        assert "stamped 1.000 s" in text and "1000.000 s" in text, text
    finally:
        node.destroy_node()


@pytest.mark.parametrize("pressure_timeout", [0.5, 0.0])
def test_a_frame_dropped_waiting_for_its_pressure_says_whether_pressures_came(scene, rclpy_context,
                                                                              pressure_timeout):
    """Stamped pressures: a frame that waited past qos_depth is dropped as no_pressure.  None came
    while it waited: said so, never 'clocks' (also with pressure_timeout 0, the staleness check
    off); pressures came, all stamped before it (a driver on a clock behind): the clocks."""
    from sensor_msgs.msg import FluidPressure

    def fluid(sec: int) -> FluidPressure:
        m = FluidPressure(fluid_pressure=P_REF)
        m.header.stamp = Time(sec=sec)
        return m
    node = _bare_node(scene, "waited_membrane_node", pressure_scale=1.0, qos_depth=2,
                      pressure_type="sensor_msgs/msg/FluidPressure", pressure_timeout=pressure_timeout)
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        node._on_pressure(fluid(1))
        for sec in (2, 3, 4):                   # no pressure after stamp 1 comes: the third drops the first
            node._on_image(_image_32f(scene["ref"], sec))
        assert node.rejected["no_pressure"] == 1
        text = node.last["last_rejection"]
        assert "2.000 s" in text and "clocks" not in text, text
        node._on_pressure(fluid(1))             # pressures come again, stamped behind the frames ...
        node._on_image(_image_32f(scene["ref"], 5))   # ... the frame stamped 3 s is dropped
        assert node.rejected["no_pressure"] == 2
        text = node.last["last_rejection"]
        assert "3.000 s" in text and "pressure_tolerance" in text, text
    finally:
        node.destroy_node()


def test_a_misspelt_start_up_key_is_named_with_the_closest_one_on_diagnostics(scene, rclpy_context):
    from rclpy.executors import SingleThreadedExecutor
    from .node_helpers import spin_until
    node = _bare_node(scene, "typo_membrane_node", pressure_scal=1.0, diagnostics_period=0.1)
    listener = Probe("typo_listener")
    reports = listener.listen("/diagnostics", DiagnosticArray)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    ex.add_node(listener)
    try:
        assert len(node.config_problems) == 1
        assert "'pressure_scal'" in node.config_problems[0] and "'pressure_scale'" in node.config_problems[0]

        def mine():
            return [st for m in reports for st in m.status if st.name == "/typo_membrane_node"]
        assert spin_until(ex, lambda: bool(mine()), 10.0)
        st = mine()[-1]
        assert st.level == DiagnosticStatus.WARN and "pressure_scal" in st.message
        assert {kv.key: kv.value for kv in st.values}["config_problems"] == node.config_problems[0]
    finally:
        ex.shutdown()
        listener.destroy_node()
        node.destroy_node()


def test_a_flat_or_loose_membrane_mesh_is_a_start_up_error(scene, tmp_path, rclpy_context):
    """A flat disc encloses no volume: no pre-tension follows from the pressure (the first
    reference used to raise out of the frame callback and end the node); a point in no triangle
    has no stiffness (a singular solve at the reference)."""
    import meshio
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    from ..sensor.membrane_scenes import disc_mesh
    flat = disc_mesh(0.04, rings=8, base_z=0.06)
    meshio.Mesh(flat.points, [("triangle", flat.triangles), ("vertex", flat.boundary[:, None])]).write(
        str(tmp_path / "flat.vtk"))
    dome = scene["dome"]
    loose = np.vstack([dome.points, [[0.0, 0.0, 0.07]]])
    meshio.Mesh(loose, [("triangle", dome.triangles), ("vertex", dome.boundary[:, None])]).write(
        str(tmp_path / "loose.vtk"))
    for name in ("flat.vtk", "loose.vtk"):
        with pytest.raises(ConfigError) as err:
            _bare_node(scene, "mesh_check_node", mesh=str(tmp_path / name))
        assert str(tmp_path / name) in str(err.value)
    assert f"[{len(dome.points)}]" in str(err.value)         # the loose vertex's index


@pytest.mark.parametrize("key, value", [
    ("force_topic", "bad topic"), ("depth_topic", "1abc"), ("colour_topic", "cam era/colour"),
    ("frame_id", ""), ("camera_translation", [math.nan, 0.0, 0.0]),
])
def test_bad_start_up_values_are_configuration_errors_naming_them(scene, rclpy_context, key, value):
    """A bad topic name used to escape as rclpy's InvalidTopicNameException (a traceback, not the
    one configuration-error line); an empty frame_id and a NaN translation used to start."""
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "start_check_node", **{key: value})
    assert err.value.parameter == key


def test_every_start_up_problem_is_named_in_the_one_error(scene, tmp_path, rclpy_context):
    """A missing mesh, an even window, a bad topic name, an empty frame_id and an ambient in hPa:
    all five in the one error (the node stopped at the first, so a user fixed one per start)."""
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "all_problems_node", mesh=str(tmp_path / "gone.vtk"), window=4,
                   force_topic="bad topic", frame_id="", ambient_pressure=1013.2)
    text = str(err.value)
    for name in ("mesh", "window", "force_topic", "frame_id", "ambient_pressure"):
        assert f"parameter '{name}'" in text, text
    assert text.startswith("5 problems") and "\n" not in text
    # values rclpy refuses (out of range, wrong type) are among them, and an attachment mesh that is
    # not there is named though the mesh is missing too; an unparsable mesh is named, not an exit
    (tmp_path / "garbage.vtk").write_text("not a mesh\n")
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "range_problems_node", mesh=str(tmp_path / "garbage.vtk"), window=52,
                   camera_translation=[0.0, 0.0], attachment_mesh=str(tmp_path / "gone.ply"), frame_id="  ")
    text = str(err.value)
    for name in ("window", "camera_translation", "mesh", "attachment_mesh", "frame_id"):
        assert f"parameter '{name}'" in text, text
    assert "52" in text and str(tmp_path / "gone.ply") in text
    # with the mesh readable, the mount check runs too: 100 deg puts free vertices behind the camera
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "mount_and_window_node", window=4, camera_rotation_deg=100.0)
    assert "'window' = 4" in str(err.value) and "behind the camera" in str(err.value)


def test_a_camera_mount_with_vertices_behind_the_camera_is_refused_at_start(scene, rclpy_context):
    """R = [[c, 0, -s], [0, 1, 0], [s, 0, c]] at 100 deg: z_cam = sin(100) x + cos(100) z, <= 0 for
    x <= z tan(10 deg): those free vertices are behind the camera."""
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    free = scene["dome"].points[scene["dome"].interior]
    behind = int((free[:, 0] <= free[:, 2] * math.tan(math.radians(10.0))).sum())
    assert 0 < behind < len(free)
    with pytest.raises(ConfigError, match=f": {behind} free membrane vertices lie behind the camera"):
        _bare_node(scene, "mount_check_node", camera_rotation_deg=100.0)


def test_whole_numbers_for_decimal_parameters_are_taken_as_doubles(scene, rclpy_context):
    """``altitude: 222`` or ``-p camera_translation:=[0,0,0]`` in a file is what a user writes; the
    node takes it as 222.0 / [0.0, 0.0, 0.0] (sensor_node's rule), and an integer stays refused
    where the parameter is not a double."""
    node = _bare_node(scene, "int_membrane_node", altitude=222, camera_translation=[0, 0, 0],
                      ambient_pressure=0)
    try:
        assert node.get_parameter("altitude").value == 222.0
        assert isinstance(node.get_parameter("altitude").value, float)
        assert list(node.get_parameter("camera_translation").value) == [0.0, 0.0, 0.0]
        # ambient 0 = the standard atmosphere at 222 m (ISO 2533, worked by hand: 98 683 Pa)
        assert abs(node.ambient_pa - 98683.0) < 5.0
    finally:
        node.destroy_node()
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    with pytest.raises(ConfigError):
        _bare_node(scene, "float_window_node", window=3.0)


# -- a pressure that stops, an ambient in the wrong unit, the log throttle ---------------------------------
def test_a_float32_pressure_that_stops_goes_stale_and_its_frames_go_nowhere(scene, rclpy_context):
    """pressure_timeout 0.3 s: a frame 0.4 s of receive time after the latest Float32 is rejected as
    stale_pressure and publishes nothing (it used to be estimated with the old pressure: here the
    40 Pa rise of the push would be read as no rise); a reference frame is not collected either.
    When the stream comes back, the push gives the hand-derived 1.5 N with the 40 Pa rise."""
    node = _bare_node(scene, "stale_membrane_node", pressure_timeout=0.3)
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        out = []
        node._publish = lambda header, res: out.append((header.stamp.sec, res))   # what would go out
        node._on_pressure(_hpa(P_REF))
        node._on_image(_image_32f(scene["ref"], 1))                 # the reference (one frame)
        assert [s for s, _ in out] == [1]
        time.sleep(0.4)                                             # the pressure stream stops
        node._on_image(_image_32f(scene["pushed"], 2))
        assert [s for s, _ in out] == [1] and node.rejected["stale_pressure"] == 1
        text = node.last["last_rejection"]
        ages = re.findall(r"(\d+\.\d+) s ago", text)                # how long ago the latest came
        assert len(ages) == 1 and float(ages[0]) >= 0.4, text
        assert node._on_reset(Trigger.Request(), Trigger.Response()).success
        node._on_image(_image_32f(scene["ref"], 3))                 # a reference frame: not collected
        assert node.rejected["stale_pressure"] == 2 and node.reference == [] and node.estimator.model is None
        node._on_pressure(_hpa(P_REF))                              # the stream is back
        node._on_image(_image_32f(scene["ref"], 4))
        node._on_pressure(_hpa(P_REF + DP))
        node._on_image(_image_32f(scene["pushed"], 5))
        assert [s for s, _ in out] == [1, 4, 5]
        res = out[-1][1]
        assert res.pressure_change == pytest.approx(DP, abs=0.01)   # float32 hPa: 1050.4 hPa - 1050 hPa
        assert res.total_contact_force == pytest.approx(-PUSH_N * scene["normal"], abs=0.05 * PUSH_N)
    finally:
        node.destroy_node()


def test_a_pressure_timeout_of_zero_never_goes_stale(scene, rclpy_context):
    node = _bare_node(scene, "never_stale_membrane_node", pressure_timeout=0.0)
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        out = []
        node._publish = lambda header, res: out.append(header.stamp.sec)
        node._on_pressure(_hpa(P_REF))
        time.sleep(0.6)                                  # beyond the default 0.5 s
        node._on_image(_image_32f(scene["ref"], 1))
        assert out == [1] and node.rejected["stale_pressure"] == 0
    finally:
        node.destroy_node()


@pytest.mark.parametrize("value, as_hpa", [
    (1013.2, "101320"), (950.0, "95000"),
    # kPa, and values that are no plausible pressure in Pa or hPa (x 100 = 10130, 15 MPa, 3 MPa)
    (101.3, None), (150000.0, None), (29999.0, None), (-101325.0, None),
])
def test_an_implausible_ambient_pressure_is_a_start_up_error_naming_it(scene, rclpy_context, value, as_hpa):
    """1013.2 is the bubble sensor's own hPa: taken as Pa it made the gauge pressure 100 times off;
    the error names the value and, when x 100 would be plausible, that pressure in Pa."""
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "ambient_check_node", ambient_pressure=value)
    text = str(err.value)
    assert f"parameter 'ambient_pressure' = {value:g}" in text, text
    assert ("hPa" in text) == (as_hpa is not None) and (as_hpa is None or as_hpa in text), text


@pytest.mark.parametrize("value", [30000.0, 110000.0])
def test_the_ends_of_the_plausible_ambient_range_are_taken(scene, rclpy_context, value):
    node = _bare_node(scene, "ambient_end_node", ambient_pressure=value)
    try:
        assert node.ambient_pa == value and node.ambient_source == "ambient_pressure"
    finally:
        node.destroy_node()


def test_the_rejection_log_is_throttled_per_reason(scene, rclpy_context, capfd):
    """Five frames of one wrong size in a row: one WARN line for them (the throttle is 5 s per
    reason), and a frame rejected for another reason still gets its own line at once."""
    node = _bare_node(scene, "throttle_membrane_node")
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        node._on_pressure(_hpa(P_REF))
        capfd.readouterr()
        for sec in range(1, 6):
            node._on_image(_image_32f(scene["ref"][:-1], sec))         # one row short
        node._on_image(_image_32f(np.full_like(scene["ref"], np.nan), 6))
        err = capfd.readouterr().err
        assert node.rejected["wrong_size"] == 5 and node.rejected["nan"] == 1
        short = [line for line in err.splitlines() if "frame rejected (wrong_size)" in line]
        assert len(short) == 1 and "frame of 200x159 px for a 200x160 camera" in short[0], err
        assert len([line for line in err.splitlines() if "frame rejected (nan)" in line]) == 1, err
    finally:
        node.destroy_node()
