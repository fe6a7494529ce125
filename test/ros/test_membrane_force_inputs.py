"""membrane_force_node tells its user what it subscribes, what it still waits for, when it is ready,
what is published on its inputs in another type, and which mesh file it could not find.

Nodes run in-process on a private domain (real rclpy + DDS); a publisher of the wrong type lives in a
second rclpy Context (DDS refuses two types on one topic in one participant), so the node learns of
it only from the ROS graph, as it would of another process.  Log lines are read from the process's
stderr (rclpy's console output).  Expected texts are written out by hand from the topic names, types
and values the tests choose; the reference pressure 105000 Pa is 1050 hPa x pressure_scale 100
(exact in float32).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import trimesh
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Float32, Float64

from vsf_sensor_ros.demo.processes import child_env

from ..sensor.membrane_scenes import camera, disc_mesh, render_depth
from .node_helpers import spin_until

P_REF = 105000.0            # Pa absolute: 1050 hPa
P0 = 4000.0                 # gauge, Pa


@pytest.fixture(scope="module")
def dome_files(tmp_path_factory):
    """The test dome (as test_membrane_force_node's) as a VTK membrane mesh and, turned 90 deg about
    z, as the attachment PLY; and a contact-free reference depth image of it."""
    import meshio
    d = tmp_path_factory.mktemp("dome_inputs")
    dome = disc_mesh(0.04, rings=8, cap_radius=0.05, base_z=0.06)
    meshio.Mesh(dome.points, [("triangle", dome.triangles), ("vertex", dome.boundary[:, None])]).write(
        str(d / "dome.vtk"))
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])     # 90 deg about z
    trimesh.Trimesh(dome.points @ turn.T, dome.triangles, process=False).export(str(d / "dome_attached.ply"))
    cam = camera()
    ref = render_depth(cam, dome.points, dome.triangles).astype(np.float32)
    return dict(dir=d, cam=cam, ref=ref)


def _camera_info(cam) -> CameraInfo:
    return CameraInfo(width=cam.width, height=cam.height, distortion_model="plumb_bob", d=[0.0] * 5,
                      k=[cam.fx, 0.0, cam.cx, 0.0, cam.fy, cam.cy, 0.0, 0.0, 1.0])


def _image(depth: np.ndarray, sec: int) -> Image:
    msg = Image(height=depth.shape[0], width=depth.shape[1], encoding="32FC1", step=4 * depth.shape[1],
                data=depth.astype(np.float32).tobytes())
    msg.header.stamp = Time(sec=sec)
    return msg


def _node(files, name, context=None, namespace=None, **extra):
    from rclpy.parameter import Parameter
    from vsf_sensor_ros.ros.membrane_force_node import MembraneForceNode
    values = dict(mesh=str(files["dir"] / "dome.vtk"), camera_rotation_deg=0.0, ambient_pressure=P_REF - P0,
                  window=3, reference_frames=1, diagnostics_period=0.1)
    values.update(extra)
    kwargs = {k: v for k, v in (("context", context), ("namespace", namespace)) if v is not None}
    return MembraneForceNode(name, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()],
                             **kwargs)


class _Reports:
    """The node's own /diagnostics statuses, as a listener in the same context receives them."""

    def __init__(self, ctx, executor, node):
        from rclpy.node import Node
        self.listener = Node(f"{node.get_name()}_listener", context=ctx)
        self.fqn = node.get_fully_qualified_name()
        self.statuses = []
        self.listener.create_subscription(DiagnosticArray, "/diagnostics", lambda m: self.statuses.extend(
            s for s in m.status if s.name == self.fqn), 50)
        self.executor = executor
        executor.add_node(node)
        executor.add_node(self.listener)

    def next(self, timeout: float = 10.0):
        """The next status after now."""
        start = len(self.statuses)
        assert spin_until(self.executor, lambda: len(self.statuses) > start, timeout), "no diagnostics"
        return self.statuses[-1]

    def until(self, cond, timeout: float = 10.0):
        """The first status from now on for which ``cond(status)`` holds (the last one seen when none)."""
        start = len(self.statuses)
        spin_until(self.executor, lambda: any(cond(s) for s in self.statuses[start:]), timeout)
        hits = [s for s in self.statuses[start:] if cond(s)]
        return hits[0] if hits else (self.statuses[-1] if self.statuses else None)


def _values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


def test_diagnostics_name_each_missing_input_with_its_topic_and_type(dome_files, private_ros):
    ctx, executor, _ = private_ros
    node = _node(dome_files, "waiting_membrane_node", context=ctx)
    reports = _Reports(ctx, executor, node)
    try:
        st = reports.next()
        assert st.level == DiagnosticStatus.WARN
        # nothing came yet: all three, each with the type it needs and its resolved topic
        assert st.message.startswith("waiting for sensor_msgs/msg/CameraInfo on /camera/depth/camera_info, "
                                     "sensor_msgs/msg/Image on /camera/depth/image_rect_raw and "
                                     "std_msgs/msg/Float32 on /punyo/pressure"), st.message
        assert _values(st)["inputs"] == ("sensor_msgs/msg/CameraInfo on /camera/depth/camera_info, "
                                         "sensor_msgs/msg/Image on /camera/depth/image_rect_raw, "
                                         "std_msgs/msg/Float32 on /punyo/pressure")
        bad = _camera_info(dome_files["cam"])
        bad.k = [0.0] + list(bad.k[1:])                                   # fx = 0: unusable
        node._on_camera_info(bad)
        st = reports.next()
        assert st.message.startswith("waiting for a usable sensor_msgs/msg/CameraInfo on "
                                     "/camera/depth/camera_info (1 received, the last rejected as "
                                     "bad_camera_info), sensor_msgs/msg/Image"), st.message
        node._on_camera_info(_camera_info(dome_files["cam"]))
        st = reports.next()
        assert st.message.startswith("waiting for sensor_msgs/msg/Image on /camera/depth/image_rect_raw and "
                                     "std_msgs/msg/Float32 on /punyo/pressure"), st.message
        node._on_pressure(Float32(data=P_REF))          # Pa on a hPa topic: x 100 is implausible, not used
        st = reports.next()
        assert ("a usable std_msgs/msg/Float32 on /punyo/pressure (1 rejected, the last as "
                "implausible_pressure)") in st.message, st.message
        node._on_pressure(Float32(data=P_REF / 100.0))
        st = reports.next()
        assert st.message.startswith("waiting for sensor_msgs/msg/Image on /camera/depth/image_rect_raw"), \
            st.message
        assert "pressure" not in st.message
        node._on_image(_image(dome_files["ref"], 1))    # the reference (1 frame), estimated at once
        st = reports.until(lambda s: "waiting" not in s.message)
        assert "waiting" not in st.message, st.message
        assert node.estimator.model is not None
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_points_input_and_another_pressure_type_are_named_in_the_nodes_namespace(dome_files, private_ros):
    ctx, executor, _ = private_ros
    node = _node(dome_files, "points_membrane_node", context=ctx, namespace="/rig", input="points",
                 pressure_type="std_msgs/msg/Float64", camera_info_topic="/cam/info")
    reports = _Reports(ctx, executor, node)
    try:
        st = reports.next()
        assert st.message.startswith("waiting for sensor_msgs/msg/CameraInfo on /cam/info, "
                                     "sensor_msgs/msg/PointCloud2 on /rig/camera/depth/color/points and "
                                     "std_msgs/msg/Float64 on /rig/punyo/pressure"), st.message
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_inputs_at_start_a_ready_line_and_one_warning_after_a_few_seconds(dome_files, private_ros, capfd):
    from vsf_sensor_ros.ros.membrane_force_inputs import WAIT_WARN_S
    ctx, executor, _ = private_ros
    node = _node(dome_files, "ready_membrane_node", context=ctx, frame_id="membrane",
                 force_topic="/mforce/measured", colour_topic="camera/color/image_raw")
    reports = _Reports(ctx, executor, node)
    try:
        err = capfd.readouterr().err
        start = [line for line in err.splitlines() if "subscribes" in line]
        assert len(start) == 1 and "[INFO]" in start[0], err
        assert start[0].endswith(
            "subscribes sensor_msgs/msg/CameraInfo on /camera/depth/camera_info, "
            "sensor_msgs/msg/Image on /camera/depth/image_rect_raw, sensor_msgs/msg/Image on "
            "/camera/color/image_raw (colour, optional), std_msgs/msg/Float32 on /punyo/pressure"), start[0]
        # diagnostics name the missing inputs at once, the log only after WAIT_WARN_S, and only once
        t0 = time.monotonic()
        spin_until(executor, lambda: False, max(WAIT_WARN_S - 2.0, 0.5))
        assert "waiting for" not in capfd.readouterr().err
        spin_until(executor, lambda: False, WAIT_WARN_S + 1.5 - (time.monotonic() - t0))
        lines = [line for line in capfd.readouterr().err.splitlines() if "waiting for" in line]
        assert len(lines) == 1 and "[WARN]" in lines[0], lines
        assert ("waiting for sensor_msgs/msg/CameraInfo on /camera/depth/camera_info, "
                "sensor_msgs/msg/Image on /camera/depth/image_rect_raw and std_msgs/msg/Float32 on "
                "/punyo/pressure") in lines[0], lines
        assert len(reports.statuses) >= 10                          # many periods, one line
        # the inputs arrive (the colour is optional: it is not waited for); the reference is set
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"], 1))
        spin_until(executor, lambda: False, 0.5)         # the colour timeout (0.2 s) passes
        err = capfd.readouterr().err
        ready = [line for line in err.splitlines() if "ready:" in line]
        assert len(ready) == 1 and "[INFO]" in ready[0], err
        assert ready[0].endswith(
            "ready: reference set from 1 frames without colour (1 of 1 frames had none), 105000 Pa, "
            f"start-up {node.estimator.startup_s * 1e3:.0f} ms; ambient 101000 Pa (ambient_pressure), "
            "gauge 4000 Pa; publishing the dense force on "
            "/mforce/measured (sensor_msgs/msg/PointCloud2), the surface on /membrane_surface "
            "(sensor_msgs/msg/PointCloud2) and the total force on /membrane_total_force "
            "(geometry_msgs/msg/WrenchStamped), frame_id 'membrane'"), ready[0]
        assert "waiting for" not in err
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_a_publisher_of_the_wrong_type_is_named_on_diagnostics_and_logged_once(
        dome_files, private_ros, capfd):
    import rclpy
    from rclpy.node import Node
    ctx, executor, domain = private_ros
    node = _node(dome_files, "typed_membrane_node", context=ctx, diagnostics_period=0.1)
    reports = _Reports(ctx, executor, node)
    other = rclpy.Context()
    rclpy.init(context=other, domain_id=domain)
    third = rclpy.Context()
    rclpy.init(context=third, domain_id=domain)
    cam = Node("camera", context=other)                 # a compressed stream on the raw depth topic
    pressure = Node("punyo_driver", context=third)      # Float64 where pressure_type is Float32
    try:
        cam.create_publisher(CompressedImage, "/camera/depth/image_rect_raw", 10)
        pressure.create_publisher(Float64, "/punyo/pressure", 10)
        depth_text = ("/camera/depth/image_rect_raw carries sensor_msgs/msg/CompressedImage (from /camera), "
                      "not sensor_msgs/msg/Image")
        pressure_text = ("/punyo/pressure carries std_msgs/msg/Float64 (from /punyo_driver), not "
                         "std_msgs/msg/Float32")
        st = reports.until(lambda s: depth_text in s.message and pressure_text in s.message, 20.0)
        assert depth_text in st.message and pressure_text in st.message, st.message
        assert st.level == DiagnosticStatus.WARN
        # the pressure's sentence names the setting that would read it
        assert _values(st)["wrong_types"] == (f"{depth_text}; {pressure_text} "
                                              "(set pressure_type: std_msgs/msg/Float64)")
        spin_until(executor, lambda: False, 3.0)      # many more periods, the problems unchanged
        err = capfd.readouterr().err
        warned = [line for line in err.splitlines() if "carries" in line]
        assert len(warned) == 2 and all("[WARN]" in line for line in warned), warned
        assert any(depth_text in line for line in warned) and any(pressure_text in line for line in warned)
        # a publisher of another type gone: the problem leaves diagnostics
        cam.destroy_node()
        st = reports.until(lambda s: depth_text not in s.message, 20.0)
        assert depth_text not in st.message and pressure_text in st.message, st.message
    finally:
        for n in (pressure, cam):
            try:
                n.destroy_node()
            except Exception:   # noqa: BLE001 -- destroyed above already
                pass
        for c in (other, third):
            rclpy.try_shutdown(context=c)
        reports.listener.destroy_node()
        node.destroy_node()


# -- mesh files ---------------------------------------------------------------------------------
def test_a_missing_mesh_file_names_the_parameter_and_the_resolved_path(dome_files, tmp_path, monkeypatch,
                                                                       rclpy_context):
    from vsf_sensor_ros.ros.parameter_table import ConfigError
    monkeypatch.delenv("VSF_ASSETS", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        _node(dome_files, "missing_mesh_node", mesh="meshes/nope.vtk")
    assert str(err.value) == (f"parameter 'mesh' = 'meshes/nope.vtk': no such file: {tmp_path}/meshes/"
                              f"nope.vtk (resolved from 'meshes/nope.vtk' against the working directory "
                              f"{tmp_path})")
    monkeypatch.setenv("VSF_ASSETS", str(tmp_path / "assets"))
    with pytest.raises(ConfigError) as err:
        _node(dome_files, "missing_attachment_node", attachment_mesh="punyo.ply")
    assert str(err.value) == (f"parameter 'attachment_mesh' = 'punyo.ply': no such file: {tmp_path}/"
                              f"assets/punyo.ply (resolved from 'punyo.ply' against $VSF_ASSETS = "
                              f"{tmp_path}/assets)")
    with pytest.raises(ConfigError) as err:
        _node(dome_files, "absolute_mesh_node", mesh=str(tmp_path / "gone.vtk"))
    assert str(err.value) == f"parameter 'mesh' = '{tmp_path}/gone.vtk': no such file: {tmp_path}/gone.vtk"
    with pytest.raises(ConfigError) as err:
        _node(dome_files, "directory_mesh_node", mesh=str(tmp_path))
    assert str(err.value) == f"parameter 'mesh' = '{tmp_path}': not a regular file: {tmp_path}"


def test_relative_mesh_paths_resolve_against_vsf_assets_else_the_working_directory(
        dome_files, tmp_path, monkeypatch, rclpy_context):
    """The attachment PLY is the dome turned 90 deg about z: the fitted output frame proves that file
    (not another) was read."""
    monkeypatch.chdir(tmp_path)                                   # holds no mesh
    monkeypatch.setenv("VSF_ASSETS", str(dome_files["dir"]))
    node = _node(dome_files, "assets_mesh_node", mesh="dome.vtk", attachment_mesh="dome_attached.ply")
    try:
        assert node.out_frame.angle_deg == pytest.approx(90.0, abs=1e-6)
        assert len(node.mesh.points) == len(disc_mesh(0.04, rings=8).points)
    finally:
        node.destroy_node()
    monkeypatch.setenv("VSF_ASSETS", "")                          # empty: the working directory
    monkeypatch.chdir(dome_files["dir"])
    node = _node(dome_files, "cwd_mesh_node", mesh="dome.vtk", attachment_mesh="./dome_attached.ply")
    try:
        assert node.out_frame.angle_deg == pytest.approx(90.0, abs=1e-6)
    finally:
        node.destroy_node()


def test_the_executable_ends_with_one_configuration_error_line_for_a_missing_mesh(tmp_path):
    env = child_env()
    env.pop("VSF_ASSETS", None)
    out = subprocess.run([sys.executable, "-m", "vsf_sensor_ros.ros.membrane_force_node", "--ros-args",
                          "-p", "mesh:=nope.vtk"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "Traceback" not in text, text
    assert re.search(r"configuration error.*parameter 'mesh' = 'nope.vtk': no such file: " + re.escape(
        f"{os.path.realpath(tmp_path)}/nope.vtk (resolved from 'nope.vtk' against the working directory"),
        text), text


def test_a_pressure_of_another_type_is_answered_with_the_settings_that_read_it():
    from vsf_sensor_ros.ros.membrane_force_inputs import pressure_type_hints
    assert pressure_type_hints("std_msgs/msg/Float32", 100.0) == {
        "std_msgs/msg/Float64": "set pressure_type: std_msgs/msg/Float64",
        "sensor_msgs/msg/FluidPressure": "set pressure_type: sensor_msgs/msg/FluidPressure and "
                                         "pressure_scale: 1.0 (its unit is Pa)"}
    assert pressure_type_hints("sensor_msgs/msg/FluidPressure", 1.0) == {
        "std_msgs/msg/Float32": "set pressure_type: std_msgs/msg/Float32",
        "std_msgs/msg/Float64": "set pressure_type: std_msgs/msg/Float64"}


def test_the_replay_gives_the_nodes_absolute_mesh_paths(monkeypatch):
    """A relative recording path (as ``make demo-real`` gives) must not become relative mesh paths:
    with ``$VSF_ASSETS`` set, the nodes would look for them there."""
    from pathlib import Path
    from vsf_sensor_ros.demo.replay_camera import load_camera
    root = Path(__file__).resolve().parents[2]
    data = root / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "data.json"
    if not (data.parent / "camera" / "depth.npz").is_file():
        pytest.skip(f"the poke recording is not at {data.parent}")
    monkeypatch.chdir(root)
    cam = load_camera(Path(os.path.relpath(data, root)), frames=(0, 2))
    assert cam.mesh.is_absolute() and cam.attachment_mesh.is_absolute()
    assert cam.mesh.is_file() and cam.attachment_mesh.is_file()


# -- what the status says about the pressures, the rejections and the colour -------------------------------
def _fluid(pa: float, sec: int):
    from sensor_msgs.msg import FluidPressure
    m = FluidPressure(fluid_pressure=pa)
    m.header.stamp = Time(sec=sec)
    return m


@pytest.mark.parametrize("ptype, what", [
    ("std_msgs/msg/Float32", "frames are not estimated"),
    ("sensor_msgs/msg/FluidPressure", "frames wait for their pressure and are not estimated"),
])
def test_a_pressure_that_stopped_is_named_on_diagnostics(dome_files, private_ros, ptype, what):
    """The pressure comes once, then stops: /diagnostics is WARN naming its type, topic and age, with
    the ambient (given: 101000 Pa) and the gauge of the reference (105000 - 101000 = 4000 Pa)."""
    ctx, executor, _ = private_ros
    fluid = ptype.startswith("sensor_msgs")
    node = _node(dome_files, "stopped_membrane_node", context=ctx, pressure_timeout=0.3, pressure_type=ptype,
                 pressure_scale=1.0 if fluid else 100.0, qos_depth=2)
    reports = _Reports(ctx, executor, node)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(_fluid(P_REF, 1) if fluid else Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"], 1))                   # the reference
        assert node.estimator.model is not None
        pattern = rf"{ptype} on /punyo/pressure stopped (\d+\.\d) s ago: {what}"
        st = reports.until(lambda s: re.fullmatch(pattern, s.message) is not None, 5.0)
        assert re.fullmatch(pattern, st.message), st.message
        assert st.level == DiagnosticStatus.WARN and float(re.fullmatch(pattern, st.message)[1]) >= 0.3
        v = _values(st)
        assert (v["ambient_pa"], v["ambient_source"], v["gauge_pa"]) == ("101000", "ambient_pressure", "4000")
        assert float(v["pressure_age_s"]) >= 0.3          # past 0.3 s, printed to 0.01 s
        for sec in (2, 3, 4):              # frames on: none estimated (stamped: they wait, then are dropped)
            node._on_image(_image(dome_files["ref"], sec))
        if fluid:
            assert node.rejected["no_pressure"] == 1
            assert re.search(r"latest pressure stamped 1\.000 s, received \d+\.\d s ago; no usable "
                             r"pressure came while it waited\)$", node.last["last_rejection"]), \
                node.last["last_rejection"]
        else:
            assert node.rejected["stale_pressure"] == 3
        node._on_pressure(_fluid(P_REF, 5) if fluid else Float32(data=P_REF / 100.0))   # it comes back
        node._on_image(_image(dome_files["ref"], 5))
        st = reports.until(lambda s: s.message.startswith("estimating"), 5.0)
        assert st.message.startswith("estimating") and st.level == DiagnosticStatus.OK, st.message
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_status_says_why_no_frame_is_estimated(dome_files, private_ros):
    ctx, executor, _ = private_ros
    node = _node(dome_files, "rejecting_membrane_node", context=ctx)
    reports = _Reports(ctx, executor, node)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"], 1))                   # the reference
        reports.next()
        node._on_pressure(Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"][:-1], 2))              # one row short
        want = ("no frame estimated in the last period: 1 frame(s) rejected, the latest as wrong_size: "
                "frame must be a (160, 200) depth image or a (160, 200, 3) organised cloud, got shape "
                "(159, 200)")
        st = reports.until(lambda s: s.message == want, 5.0)
        assert st.message == want and st.level == DiagnosticStatus.WARN
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_a_reference_below_the_ambient_says_why_its_frames_are_not_collected(dome_files, private_ros):
    """ambient 106000 Pa: the first frame at 107000 Pa is collected, the next at 105000 Pa is not
    (no gauge pressure), and the status says so instead of only counting."""
    ctx, executor, _ = private_ros
    node = _node(dome_files, "below_ambient_membrane_node", context=ctx, ambient_pressure=106000.0,
                 reference_frames=2)
    reports = _Reports(ctx, executor, node)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(Float32(data=1070.0))
        node._on_image(_image(dome_files["ref"], 1))
        node._on_pressure(Float32(data=1050.0))
        node._on_image(_image(dome_files["ref"], 2))
        assert node.rejected["bad_pressure"] == 1 and len(node.reference) == 1
        want = ("reference: collecting 1 of 2 frames; frames are not collected: the latest was rejected as "
                "bad_pressure: reference pressure 105000.0 Pa is not above the ambient 106000.0 Pa "
                "(ambient_pressure)")
        st = reports.until(lambda s: s.message.startswith(want), 5.0)
        assert st.message.startswith(want) and st.level == DiagnosticStatus.WARN, st.message
        assert _values(st)["gauge_pa"] == "none"
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_status_names_the_colour_topic_nothing_arrives_on(dome_files, private_ros):
    ctx, executor, _ = private_ros
    node = _node(dome_files, "colourless_membrane_node", context=ctx, colour_topic="camera/color/image_raw")
    reports = _Reports(ctx, executor, node)
    want = ("from depth alone: the reference has no colour: nothing arrives on sensor_msgs/msg/Image on "
            "/camera/color/image_raw (colour_topic); colour_topic: '' turns colour off (on the command line: "
            "-p \"colour_topic:=''\"), or reset_reference once colour comes")
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        st = None
        for sec in range(1, 20):        # frames keep coming; each goes on without colour after 0.2 s
            node._on_pressure(Float32(data=P_REF / 100.0))
            node._on_image(_image(dome_files["ref"], sec))
            st = reports.until(lambda s: want in s.message, 0.3)
            if st is not None and want in st.message:
                break
        assert st is not None and want in st.message and st.message.startswith("estimating at"), st
        assert st.level == DiagnosticStatus.WARN
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_status_counts_the_rejected_colour_images_of_a_colourless_reference(dome_files, private_ros):
    """Colour comes, but at half the depth image's size: each is rejected, the reference has none,
    and the status says how many of how many and why."""
    ctx, executor, _ = private_ros
    node = _node(dome_files, "small_colour_membrane_node", context=ctx, colour_topic="camera/color/image_raw")
    reports = _Reports(ctx, executor, node)
    small = np.zeros((80, 100, 3), dtype=np.uint8)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        st, want = None, ""
        for sec in range(1, 20):
            msg = Image(height=80, width=100, encoding="rgb8", step=300, data=small.tobytes())
            msg.header.stamp = Time(sec=sec)
            node._on_colour(msg)
            node._on_pressure(Float32(data=P_REF / 100.0))
            node._on_image(_image(dome_files["ref"], sec))
            want = (f"the reference has no colour: {sec} of {sec} colour images on /camera/color/image_raw "
                    "rejected, the latest as colour_wrong_size; reset_reference with colour coming gives it "
                    "colour")
            st = reports.until(lambda s: s.message.endswith(want), 0.3)
            if st is not None and st.message.endswith(want):
                break
        assert st is not None and st.message.endswith(want), (st, want)
        assert st.level == DiagnosticStatus.WARN and node.rejected["colour_wrong_size"] >= 1
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_ready_line_names_the_standard_atmosphere_and_sea_level_is_warned(dome_files, private_ros, capfd):
    """ambient 0 at 222 m: ISO 2533 by hand, 101325 (1 - 0.0065 x 222 / 288.15)^5.25588 = 98686.3 Pa,
    gauge 105000 - 98686.3 = 6313.7 Pa; at 0 m (both unset) one WARN says sea level is assumed."""
    ctx, executor, _ = private_ros
    node = _node(dome_files, "isa_membrane_node", context=ctx, ambient_pressure=0.0, altitude=222.0)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"], 1))
        err = capfd.readouterr().err
        ready = [line for line in err.splitlines() if "ready:" in line]
        assert len(ready) == 1, err
        # ISA at 222 m (worked by hand: 98 686 Pa); gauge = 105 000 - 98 686 = 6314 Pa
        assert "ambient 98686 Pa" in ready[0] and "gauge 6314 Pa" in ready[0], ready[0]
        assert "sea level" not in err
    finally:
        node.destroy_node()
    node = _node(dome_files, "sea_level_membrane_node", context=ctx, ambient_pressure=0.0)
    try:
        warned = [line for line in capfd.readouterr().err.splitlines() if "sea level" in line]
        assert len(warned) == 1 and "[WARN]" in warned[0], warned
        assert node.ambient_pa == 101325.0 and node.ambient_source == "standard atmosphere at 0 m"
    finally:
        node.destroy_node()


def test_pressures_that_come_but_are_rejected_are_named_not_stopped(dome_files, private_ros):
    """After the reference the pressure keeps coming, but in Pa where hPa is expected (105000 x 100 Pa:
    implausible): the status names the rejection, not a stopped stream."""
    ctx, executor, _ = private_ros
    node = _node(dome_files, "rejected_pressure_node", context=ctx, pressure_timeout=0.3)
    reports = _Reports(ctx, executor, node)
    try:
        node._on_camera_info(_camera_info(dome_files["cam"]))
        node._on_pressure(Float32(data=P_REF / 100.0))
        node._on_image(_image(dome_files["ref"], 1))                   # the reference
        assert node.estimator.model is not None
        pattern = (r"no usable std_msgs/msg/Float32 on /punyo/pressure for (\d+\.\d) s \(the latest was "
                   r"rejected as implausible_pressure: .*\): frames are not estimated")
        end = time.monotonic() + 5.0
        st = None
        while time.monotonic() < end:
            node._on_pressure(Float32(data=P_REF))                    # Pa sent as hPa: 100x too large
            st = reports.until(lambda s: re.fullmatch(pattern, s.message) is not None, 0.2)
            if st is not None and re.fullmatch(pattern, st.message):
                break
        assert st is not None and re.fullmatch(pattern, st.message), st and st.message
        assert "pressure_scale" in st.message and st.level == DiagnosticStatus.WARN
        node._on_pressure(Float32(data=P_REF / 100.0))                # usable again: a plain stop next
        pattern = r"std_msgs/msg/Float32 on /punyo/pressure stopped (\d+\.\d) s ago: frames are not estimated"
        st = reports.until(lambda s: re.fullmatch(pattern, s.message) is not None, 5.0)
        assert re.fullmatch(pattern, st.message), st.message
    finally:
        reports.listener.destroy_node()
        node.destroy_node()


def test_the_stopped_sentence_says_what_happens_to_the_frames():
    from vsf_sensor_ros.rig.membrane_inputs import Input, stopped_text
    p = Input("/punyo/pressure", "std_msgs/msg/Float32")
    head = "std_msgs/msg/Float32 on /punyo/pressure"
    assert stopped_text(p, 2.34, False) == f"{head} stopped 2.3 s ago: frames are not estimated"
    assert stopped_text(p, 2.34, False, collecting=True) == (
        f"{head} stopped 2.3 s ago: frames are not collected for the reference")
    f = Input("/punyo/pressure", "sensor_msgs/msg/FluidPressure")
    assert stopped_text(f, 1.0, True, collecting=True) == (
        "sensor_msgs/msg/FluidPressure on /punyo/pressure stopped 1.0 s ago: frames wait for their "
        "pressure and are not collected for the reference")
    assert stopped_text(p, 0.5, False, "implausible_pressure: too large") == (
        f"no usable {head} for 0.5 s (the latest was rejected as implausible_pressure: too large): "
        "frames are not estimated")
