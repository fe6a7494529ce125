"""membrane_force_node with the bubble's colour camera, on the real poke's frames, over real DDS.

The recording's depth and colour share one pixel grid (as a RealSense stream with the depth
aligned to the colour), so each depth frame is published with its colour image.  Expectations,
each from a second path (the library estimator called directly on the same arrays, in this
process), never from the node's own output:

* reference frames 0-4 with colour, then the loaded frame 84 with its colour stamped 3 ms after
  the depth (within ``colour_tolerance``): the published forces equal the library's colour
  (sliding) estimate, and differ from its depth-only one (so the colour was really used);
* a colour image of the wrong size, or in an encoding the node does not read, is rejected and
  counted by reason; its depth frame is estimated from depth alone (= the library's depth-only
  estimate) and counted;
* a depth frame with no colour at all is estimated from depth alone after ``colour_timeout``,
  counted, and ``/diagnostics`` says so;
* the pairing rules (nearest within the tolerance, none within it) on the node's callbacks in
  this process;
* ``config/membrane_force_node.yaml`` lists every parameter and starts the node with no unknown
  key; a misspelt key is reported (the check can fail).

Skipped, with the reason, when the recording is not beside the repository.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Float32

from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command
from vsf_sensor_ros.ros.messages.camera import InputRejected, colour_from_image

from .node_helpers import ROOT, Probe, deliver_counted, write_params

POKE = ROOT / ".." / "shared" / "fixtures" / "punyo_poke_ur5e"
CAM = POKE / "camera"
PLY = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo" / "punyo_mesh_complete.ply"
REF = [0, 1, 2, 3, 4]          # the recording's contact-free reference frames (its README)
LOADED = 84                    # deepest indentation held (frames 78-101)
ALTITUDE = 222.0               # the recording site: ISA ambient pressure
NODE = "membrane_colour_node"
TOL = 0.01                     # s, colour_tolerance
# s, colour_timeout: over DDS a generous one (a 0.9 MB image whose fragments overflow a socket
# buffer is repaired only at the writer's next heartbeat, seconds late); on the callbacks a short one
DDS_TIMEOUT = 5.0
TIMEOUT = 0.3


def _need_recording():
    missing = [p.name for p in (CAM / "depth.npz", CAM / "rgb.npz", CAM / "camera.json",
                                CAM / "membrane_equalized.vtk", POKE / "data.json") if not p.is_file()]
    if missing:
        pytest.skip(f"the real poke's camera frames are not at {CAM} (missing {', '.join(missing)})")


def test_colour_images_decode_to_rgb_or_grey_and_bad_ones_are_named():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    padded = b"".join(row.tobytes() + b"\xff\xff\xff" for row in rgb)      # step 12 for 9 bytes a row
    out = colour_from_image(Image(height=2, width=3, encoding="rgb8", step=12, data=padded))
    assert out.dtype == np.uint8 and out.shape == (2, 3, 3) and (out == rgb).all()
    bgr = colour_from_image(Image(height=2, width=3, encoding="bgr8", step=9, data=rgb[..., ::-1].tobytes()))
    assert (bgr == rgb).all() and bgr.flags.c_contiguous                 # back in RGB order
    grey = np.array([[0, 10, 20], [30, 40, 250]], dtype=np.uint8)
    assert (colour_from_image(Image(height=2, width=3, encoding="mono8", step=3, data=grey.tobytes()))
            == grey).all()
    msg = Image(height=2, width=3, encoding="rgb8", step=9, data=rgb.tobytes())
    out = colour_from_image(msg)
    msg.data = bytes(18)                                                  # the copy does not follow
    assert (out == rgb).all()
    for enc in ("rgba8", "16UC1", "bayer_rggb8"):
        with pytest.raises(InputRejected) as e:
            colour_from_image(Image(height=2, width=3, encoding=enc, step=12, data=bytes(24)))
        assert e.value.reason == "bad_encoding"
    with pytest.raises(InputRejected) as e:
        colour_from_image(Image(height=2, width=3, encoding="rgb8", step=9, data=bytes(17)))
    assert e.value.reason == "wrong_size"


# -- the recording ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def poke():
    """Frames 0-4 and 84 (depth in m as the node decodes it, colour, pressure as the node gets it) and
    the library estimator on them, with and without colour."""
    _need_recording()
    from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
    from vsf_sensor_ros.sensor.membrane_force_estimator import (MembraneForceEstimator, isa_pressure,
                                                                punyo_camera_rotation)
    from vsf_sensor_ros.sensor.membrane_mesh import read_membrane_mesh
    info = json.loads((CAM / "camera.json").read_text())
    f = info["distortion_fit"]
    k = [f["fx"], 0.0, f["cx"], 0.0, f["fy"], f["cy"], 0.0, 0.0, 1.0]
    d = [f["k1"], f["k2"], f["p1"], f["p2"], f["k3"]]
    frames = REF + [LOADED]
    raw = np.load(CAM / "depth.npz")["depth"][frames]
    rgb = np.load(CAM / "rgb.npz")["rgb"][frames]
    hpa = np.array([row[1] for row in json.loads((POKE / "data.json").read_text())])[frames]
    unit = float(info["depth_unit_m"])
    data = {i: dict(raw=raw[j], depth=raw[j].astype(np.float64) * unit, rgb=rgb[j],
                    hpa=float(hpa[j]), pa=float(np.float32(hpa[j])) * 100.0) for j, i in enumerate(frames)}
    mesh = read_membrane_mesh(CAM / "membrane_equalized.vtk")
    camera = BrownConradyCamera.from_camera_info(640, 480, k, d)
    est = MembraneForceEstimator(mesh, camera, punyo_camera_rotation(25.0),
                                 ambient_pressure=isa_pressure(ALTITUDE))
    est.set_reference([data[i]["depth"] for i in REF], [data[i]["pa"] for i in REF],
                      colours=[data[i]["rgb"] for i in REF])
    x = data[LOADED]
    with_colour = est.estimate(x["depth"], colour=x["rgb"], pressure=x["pa"]).contact_forces
    depth_only = est.estimate(x["depth"], pressure=x["pa"]).contact_forces
    # the frame of the colour reference but no sliding read: the first reference colour image
    no_slide = est.estimate(x["depth"], colour=data[0]["rgb"], pressure=x["pa"]).contact_forces
    # the colour path changes the field: otherwise these tests could not tell it was used
    assert np.abs(with_colour - depth_only).max() > 0.02
    assert np.abs(with_colour - no_slide).max() > 0.02
    return dict(data=data, k=k, d=d, unit=unit, n=len(mesh.points), boundary=np.asarray(mesh.boundary),
                with_colour=with_colour, depth_only=depth_only, no_slide=no_slide)


def _depth(poke, i: int, sec: int, nanosec: int = 0) -> Image:
    d = np.ascontiguousarray(poke["data"][i]["raw"], dtype="<u2")
    msg = Image(height=480, width=640, encoding="16UC1", is_bigendian=0, step=1280, data=d.tobytes())
    msg.header.stamp, msg.header.frame_id = Time(sec=sec, nanosec=nanosec), "camera_depth_optical_frame"
    return msg


def _colour(img: np.ndarray, sec: int, nanosec: int = 0, encoding: str = "rgb8") -> Image:
    img = np.ascontiguousarray(img)
    ch = 1 if img.ndim == 2 else img.shape[2]
    msg = Image(height=img.shape[0], width=img.shape[1], encoding=encoding, is_bigendian=0,
                step=ch * img.shape[1], data=img.tobytes())
    msg.header.stamp, msg.header.frame_id = Time(sec=sec, nanosec=nanosec), "camera_color_optical_frame"
    return msg


def _camera_info(poke) -> CameraInfo:
    return CameraInfo(width=640, height=480, distortion_model="plumb_bob", d=list(poke["d"]),
                      k=list(poke["k"]))


def _forces(msg: PointCloud2, n: int) -> np.ndarray:
    from vsf_sensor_ros.ros.kinds import sensor_layout
    from vsf_sensor_ros.ros.messages.readings import decode_measured
    names = [f"p{i}_{a}" for i in range(n) for a in "xyz"]
    layout = sensor_layout("PunyoDenseForceSensor", "membrane", names, None, np.zeros((n, 3)))
    return decode_measured(layout, msg, 1.0).reshape(n, 3)    # sensor_node's own measured decoder


def _params(poke_dir, **extra):
    return {"mesh": str(CAM / "membrane_equalized.vtk"), "frame_id": "membrane", "camera_rotation_deg": 25.0,
            "ambient_pressure": 0.0, "altitude": ALTITUDE, "depth_topic": "cam/depth",
            "camera_info_topic": "cam/info", "colour_topic": "cam/colour", "depth_unit": poke_dir["unit"],
            "colour_tolerance": TOL, "colour_timeout": DDS_TIMEOUT, "pressure_topic": "bubble/pressure",
            "reference_frames": len(REF), "force_topic": "/mforce", "surface_topic": "msurface",
            "total_force_topic": "mtotal", "input_reliability": "reliable",
            "pressure_reliability": "reliable",
            # a pressure is sent when it changes, not as a 100 Hz stream: held, it must not go stale
            "pressure_timeout": 0.0,
            "diagnostics_period": 0.2, **extra}


@pytest.fixture(scope="module")
def node(poke, tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("membrane_colour")
    params = write_params(d / "membrane.yaml", _params(poke), node_name=NODE)
    cmd = module_command("vsf_sensor_ros.ros.membrane_force_node",
                         ["--params-file", str(params), "-r", f"__node:={NODE}"])
    proc = ManagedProcess(NODE, cmd, child_env(), d / "membrane.log", cwd=ROOT)
    proc.start()
    probe = Probe("membrane_colour_probe", target=NODE)
    try:
        probe.listen("/mforce", PointCloud2)
        probe.listen("/diagnostics", DiagnosticArray)
        for topic in ("/cam/depth", "/cam/colour"):
            assert probe.wait_for_subscriber(topic, Image, timeout=90.0), proc.output()[-3000:]
        assert probe.wait_for_subscriber("/mforce", PointCloud2, timeout=30.0)
        # confirmed by the node's counters (a lost first message would leave it waiting)
        deliver_counted(probe, "/cam/info", _camera_info(poke), f"/{NODE}", "camera_info_received")
        deliver_counted(probe, "/bubble/pressure", Float32(data=poke["data"][0]["hpa"]), f"/{NODE}",
                        "pressures_received")
        for j, i in enumerate(REF):           # the reference: depth and colour stamped alike
            # counted before the frame: a pressure arriving after its frame would pair the frame wrongly
            deliver_counted(probe, "/bubble/pressure", Float32(data=poke["data"][i]["hpa"]), f"/{NODE}",
                            "pressures_received")
            probe.send("/cam/colour", _colour(poke["data"][i]["rgb"], j + 1))
            probe.send("/cam/depth", _depth(poke, i, j + 1))
            probe.spin_for(0.3)
        _at(probe, len(REF))                  # the frame completing the reference is estimated too
        yield probe, proc
    finally:
        probe.destroy_node()
        code = proc.stop()
        out = proc.output()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


def _at(probe: Probe, sec: int, timeout: float = 20.0) -> PointCloud2:
    got = lambda: [m for m in probe.received["/mforce"] if m.header.stamp.sec == sec]  # noqa: E731
    assert probe.spin_until(lambda: bool(got()), timeout), f"nothing on /mforce stamped {sec}"
    return got()[-1]


def _statuses(probe: Probe, start: int = 0):
    return [s for m in probe.received["/diagnostics"][start:] for s in m.status if s.name == f"/{NODE}"]


def _status(probe: Probe) -> dict:
    start = len(probe.received["/diagnostics"])
    assert probe.spin_until(lambda: bool(_statuses(probe, start)), 5.0), "no diagnostics from the node"
    return {kv.key: kv.value for kv in _statuses(probe, start)[-1].values}


def _loaded(probe: Probe, poke) -> None:
    """The pressure of frame 84, then (the caller) its depth and colour."""
    deliver_counted(probe, "/bubble/pressure", Float32(data=poke["data"][LOADED]["hpa"]), f"/{NODE}",
                    "pressures_received")


def test_depth_and_colour_give_the_librarys_colour_estimate(node, poke):
    probe, _ = node
    status = _status(probe)
    assert status["reference"].startswith(f"set from {len(REF)} frames with colour"), str(status)
    assert status["reference_colour"] == "yes"
    _loaded(probe, poke)
    probe.send("/cam/depth", _depth(poke, LOADED, 10))                     # the depth first: it waits
    probe.spin_for(0.05)
    probe.send("/cam/colour", _colour(poke["data"][LOADED]["rgb"], 10, 3_000_000))   # 3 ms later
    msg = _at(probe, 10)
    assert msg.header.frame_id == "membrane" and msg.width * msg.height == poke["n"]
    got = _forces(msg, poke["n"])
    assert np.abs(got - poke["with_colour"]).max() < 1e-5                 # float32 on the wire
    assert np.abs(got - poke["depth_only"]).max() > 0.02
    assert np.abs(got[poke["boundary"]]).max() == 0.0
    after = _status(probe)
    assert int(after["frames_with_colour"]) >= 2 and after["frames_depth_only"] == "0", after


def test_bad_colour_images_are_rejected_and_their_frames_go_depth_only(node, poke):
    probe, _ = node
    before = _status(probe)
    _loaded(probe, poke)
    small = np.ascontiguousarray(poke["data"][LOADED]["rgb"][::2, ::2])       # 320 x 240
    probe.send("/cam/colour", _colour(small, 20))
    probe.send("/cam/depth", _depth(poke, LOADED, 20))
    rgba = np.concatenate([poke["data"][LOADED]["rgb"], np.full((480, 640, 1), 255, np.uint8)], axis=2)
    probe.send("/cam/colour", _colour(rgba, 21, encoding="rgba8"))
    probe.send("/cam/depth", _depth(poke, LOADED, 21))
    for sec in (20, 21):
        got = _forces(_at(probe, sec), poke["n"])
        assert np.abs(got - poke["depth_only"]).max() < 1e-5, sec          # the library from depth alone
    probe.spin_for(0.5)
    after = _status(probe)
    for key in ("rejected.colour_wrong_size", "rejected.colour_bad_encoding"):
        assert int(after.get(key, 0)) == int(before.get(key, 0)) + 1, (key, after)
    assert int(after["depth_only.colour_rejected"]) == int(before.get("depth_only.colour_rejected", 0)) + 2


def test_a_frame_whose_colour_never_comes_is_estimated_from_depth_and_counted(node, poke):
    probe, _ = node
    before = _status(probe)
    start = len(probe.received["/diagnostics"])
    _loaded(probe, poke)
    probe.send("/cam/depth", _depth(poke, LOADED, 30))
    msg = _at(probe, 30, timeout=DDS_TIMEOUT + 20.0)
    assert np.abs(_forces(msg, poke["n"]) - poke["depth_only"]).max() < 1e-5
    probe.spin_for(0.6)
    after = _status(probe)
    assert int(after["depth_only.no_colour"]) == int(before.get("depth_only.no_colour", 0)) + 1, after
    assert int(after["frames_depth_only"]) == int(before["frames_depth_only"]) + 1
    warned = [s for s in _statuses(probe, start) if s.level == DiagnosticStatus.WARN
              and "from depth alone" in s.message]
    assert warned, [s.message for s in _statuses(probe, start)]
    # colour again: the next frame is estimated with it, and the status is OK again
    _loaded(probe, poke)
    probe.send("/cam/colour", _colour(poke["data"][LOADED]["rgb"], 31))
    probe.send("/cam/depth", _depth(poke, LOADED, 31))
    assert np.abs(_forces(_at(probe, 31), poke["n"]) - poke["with_colour"]).max() < 1e-5


# -- pairing rules, on the node's callbacks in this process --------------------------------------

def test_the_nearest_colour_within_the_tolerance_pairs_and_none_beyond_it(poke, rclpy_context):
    from rclpy.parameter import Parameter

    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    overrides = [Parameter(k, value=v) for k, v in _params(poke, colour_timeout=TIMEOUT).items()]
    node = MembraneForceNode("colour_pairing_node", parameter_overrides=overrides)
    try:
        out = []
        node._publish = lambda header, res: out.append((header.stamp.sec, res))   # what would go out
        node._on_camera_info(_camera_info(poke))
        for j, i in enumerate(REF):
            node._on_pressure(Float32(data=poke["data"][i]["hpa"]))
            node._on_colour(_colour(poke["data"][i]["rgb"], j + 1))
            node._on_image(_depth(poke, i, j + 1))
        assert [s for s, _ in out] == [len(REF)] and node.reference_colour
        node._on_pressure(Float32(data=poke["data"][LOADED]["hpa"]))
        rgb84, rgb0 = poke["data"][LOADED]["rgb"], poke["data"][0]["rgb"]
        # two colour images within the tolerance: the nearer one (frame 84's, 2 ms off) is taken
        node._on_colour(_colour(rgb0, 9, 992_000_000))                       # 8 ms before
        node._on_image(_depth(poke, LOADED, 10))
        assert len(out) == 1 and len(node.pairing.pending) == 1                 # a nearer one may come
        node._on_colour(_colour(rgb84, 10, 2_000_000))                        # 2 ms after
        assert [s for s, _ in out] == [len(REF), 10]
        assert np.abs(out[-1][1].contact_forces - poke["with_colour"]).max() < 1e-9
        # only one within the tolerance, before the frame, and a later one beyond it: that one
        node._on_colour(_colour(rgb0, 19, 995_000_000))                       # 5 ms before
        node._on_colour(_colour(rgb84, 20, 50_000_000))                       # 50 ms after: too far
        node._on_image(_depth(poke, LOADED, 20))
        assert out[-1][0] == 20 and np.abs(out[-1][1].contact_forces - poke["no_slide"]).max() < 1e-9
        # none within the tolerance (12 ms before, 15 ms after): depth alone, at once
        node._on_colour(_colour(rgb84, 29, 988_000_000))
        node._on_colour(_colour(rgb84, 30, 15_000_000))
        node._on_image(_depth(poke, LOADED, 30))
        assert out[-1][0] == 30 and np.abs(out[-1][1].contact_forces - poke["depth_only"]).max() < 1e-9
        assert node.depth_only == {"no_colour": 1}
        # exact stamp: at once, even with nothing later
        node._on_colour(_colour(rgb84, 40))
        node._on_image(_depth(poke, LOADED, 40))
        assert out[-1][0] == 40 and np.abs(out[-1][1].contact_forces - poke["with_colour"]).max() < 1e-9
        # waiting frames keep their order: 50 waits (no colour yet), 51 comes with its colour
        node._on_image(_depth(poke, LOADED, 50))
        node._on_image(_depth(poke, LOADED, 51))
        assert out[-1][0] == 40 and len(node.pairing.pending) == 2
        node._on_colour(_colour(rgb84, 51))               # settles 50 (none near, a later one came)
        assert [s for s, _ in out[-2:]] == [50, 51] and node.depth_only["no_colour"] == 2
        # nothing more comes: the timer lets the frame go after colour_timeout
        node._on_image(_depth(poke, LOADED, 60))
        node._colour_expired()
        assert out[-1][0] == 51                            # not yet expired
        import time
        time.sleep(TIMEOUT + 0.05)
        node._colour_expired()
        assert out[-1][0] == 60 and node.depth_only["no_colour"] == 3
        assert np.abs(out[-1][1].contact_forces - poke["depth_only"]).max() < 1e-9
    finally:
        node.destroy_node()


def test_a_reference_frame_without_colour_makes_a_depth_only_reference(poke, rclpy_context):
    from rclpy.parameter import Parameter

    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    overrides = [Parameter(k, value=v) for k, v in _params(poke).items()]
    node = MembraneForceNode("colour_reference_node", parameter_overrides=overrides)
    try:
        out = []
        node._publish = lambda header, res: out.append((header.stamp.sec, res))
        node._on_camera_info(_camera_info(poke))
        for j, i in enumerate(REF):
            node._on_pressure(Float32(data=poke["data"][i]["hpa"]))
            if j != 2:                                     # frame 2 has no colour
                node._on_colour(_colour(poke["data"][i]["rgb"], j + 1))
            node._on_image(_depth(poke, i, j + 1))
        assert [s for s, _ in out] == [len(REF)] and not node.reference_colour
        assert "without colour (1 of 5 frames had none)" in node.last["reference"]
        node._on_pressure(Float32(data=poke["data"][LOADED]["hpa"]))
        node._on_colour(_colour(poke["data"][LOADED]["rgb"], 10))
        node._on_image(_depth(poke, LOADED, 10))
        # the library's depth-only reference on the same frames gives the same field
        from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
        from vsf_sensor_ros.sensor.membrane_force_estimator import (MembraneForceEstimator, isa_pressure,
                                                                    punyo_camera_rotation)
        from vsf_sensor_ros.sensor.membrane_mesh import read_membrane_mesh
        est = MembraneForceEstimator(read_membrane_mesh(CAM / "membrane_equalized.vtk"),
                                     BrownConradyCamera.from_camera_info(640, 480, poke["k"], poke["d"]),
                                     punyo_camera_rotation(25.0), ambient_pressure=isa_pressure(ALTITUDE))
        data = poke["data"]
        est.set_reference([data[i]["depth"] for i in REF], [data[i]["pa"] for i in REF])
        lib = est.estimate(data[LOADED]["depth"], pressure=data[LOADED]["pa"]).contact_forces
        assert np.abs(out[-1][1].contact_forces - lib).max() < 1e-9
        assert node.stats["frames_with_colour"] == 0
    finally:
        node.destroy_node()


# -- the shipped parameters file ------------------------------------------------------------------

CONFIG = ROOT / "config" / "membrane_force_node.yaml"


def test_the_shipped_parameters_file_lists_every_parameter_with_its_type():
    from vsf_sensor_ros.ros.membrane_force_config import SPECS
    params = yaml.safe_load(CONFIG.read_text())["membrane_force_node"]["ros__parameters"]
    defaults = {s.key: s.default for s in SPECS}
    assert set(params) == set(defaults)
    for name, value in params.items():
        default = defaults[name]
        assert type(value) is type(default), (name, value, default)     # rclpy refuses 0 for a double
    text = CONFIG.read_text().splitlines()
    for name in params:                                                  # each with its comment
        line = next(t for t in text if t.strip().startswith(f"{name}:"))
        assert "#" in line, line
    # the camera topics the replay of the real poke publishes
    from vsf_sensor_ros.demo.replay_camera import COLOUR_TOPIC, DEPTH_TOPIC, INFO_TOPIC
    assert (params["depth_topic"], params["camera_info_topic"], params["colour_topic"]) == (
        DEPTH_TOPIC, INFO_TOPIC, COLOUR_TOPIC)


def test_the_node_starts_with_the_shipped_parameters_file_and_reports_no_unknown_key(tmp_path, rclpy_context):
    if not ((CAM / "membrane_equalized.vtk").is_file() and PLY.is_file()):
        pytest.skip(f"the membrane meshes are not at {CAM} and {PLY.parent}")
    cmd = module_command("vsf_sensor_ros.ros.membrane_force_node",
                         ["--params-file", str(CONFIG), "-p", f"mesh:={CAM / 'membrane_equalized.vtk'}",
                          "-p", f"attachment_mesh:={PLY}"])
    proc = ManagedProcess("membrane_force_node", cmd, child_env(), tmp_path / "node.log", cwd=ROOT)
    proc.start()
    probe = Probe("membrane_config_probe", target="membrane_force_node")
    try:
        msgs = probe.listen("/diagnostics", DiagnosticArray)
        mine = lambda: [s for m in msgs for s in m.status if s.name == "/membrane_force_node"]  # noqa: E731
        assert probe.spin_until(lambda: bool(mine()), 90.0), proc.output()[-3000:]
        values = {kv.key: kv.value for kv in mine()[-1].values}
        assert values["config_problems"] == "none", values
        assert values["colour_topic"] == "punyo/camera/color/image_raw"
        assert probe.wait_for_subscriber("/punyo/camera/color/image_raw", Image, timeout=10.0)
    finally:
        probe.destroy_node()
        code = proc.stop()
    out = proc.output()
    assert code == 0, out[-3000:]
    assert "unknown parameter" not in out and "has no entry" not in out, out[-3000:]


def test_a_misspelt_key_or_a_file_for_another_node_is_reported(tmp_path, rclpy_context):
    from rclpy.parameter import Parameter

    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    _need_recording()
    other = write_params(tmp_path / "other.yaml", {"window": 9}, node_name="membrane_forse_node")
    overrides = [Parameter("mesh", value=str(CAM / "membrane_equalized.vtk")),
                 Parameter("colour_tolerence", value=0.01)]
    argv = ["membrane_force_node", "--ros-args", "--params-file", str(other)]
    node = MembraneForceNode("colour_config_node", command_line=argv, parameter_overrides=overrides)
    try:
        problems = node.config_problems
        assert any("'colour_tolerence'" in p and "'colour_tolerance'" in p for p in problems), problems
        assert any(str(other) in p and "membrane_forse_node" in p for p in problems), problems
    finally:
        node.destroy_node()
