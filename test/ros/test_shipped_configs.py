"""The shipped parameter files as the launch files hand them to the real node process.

* config/kinova_punyo.yaml starts without warning about its body table (every name of
  ``contact_body_names`` is a body of the world; ``table`` is the simulator's static table).
* A parameter file re-keyed ``/**`` by the launch files (``launch_support.write_node_parameters``)
  configures the node inside a namespace, where a file keyed by the plain node name would not apply.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml
from sensor_msgs.msg import FluidPressure, PointCloud2

from vsf_sensor_ros.rig import launch_support as ls
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2

from .node_helpers import FIXTURES, ROOT, NodeProcess, Probe, send_until

READY = "sensor_node ready"


def _wait_ready(proc: NodeProcess, timeout: float = 90.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.alive() and READY not in proc.output():
        time.sleep(0.2)
    return proc.output()


def test_kinova_config_table_is_the_simulators_static_table():
    params = yaml.safe_load((ROOT / "config" / "kinova_punyo.yaml").read_text())
    params = params["sensor_node"]["ros__parameters"]
    assert set(params["contact_body_names"]) <= set(params["bodies"])
    table = params["table"]
    assert table["parent_link"] == "world" and table["pose_topic"] == ""
    from vsf_sensor_ros.contact_sources.sim_world import SceneAssets   # the simulator's table, both worlds
    centre = SceneAssets.__dataclass_fields__["table_center"].default
    size = SceneAssets.__dataclass_fields__["table_size"].default
    T = np.asarray(table["transform"], dtype=float).reshape(4, 4)
    np.testing.assert_allclose(T[:3, :3], np.eye(3))
    np.testing.assert_allclose(T[:3, 3], centre)
    mesh = trimesh.load(str(ROOT / "vsf_sensor_ros" / "data" / "table.ply"), process=False)
    np.testing.assert_allclose(mesh.bounds[1] - mesh.bounds[0], size, atol=1e-6)
    np.testing.assert_allclose(mesh.bounds.mean(axis=0), 0.0, atol=1e-6)   # centred on its frame


def test_kinova_config_starts_without_body_table_warning(tmp_path, rclpy_context):
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    proc = NodeProcess(ROOT / "config" / "kinova_punyo.yaml", tmp_path / "node.log").start()
    try:
        out = _wait_ready(proc)
        assert READY in out, out[-3000:]
    finally:
        code = proc.stop()
    out = proc.output()
    assert code == 0, out[-3000:]
    assert "contact bodies ['punyo', 'object', 'table']" in out and "WARN" not in out, out[-3000:]


def test_rekeyed_parameter_file_configures_the_node_in_a_namespace(tmp_path, rclpy_context):
    params = ls.load_node_parameters(str(ROOT / "config" / "sensor_node.yaml"))
    rekeyed = ls.write_node_parameters(params, str(tmp_path))
    proc = NodeProcess(rekeyed, tmp_path / "node.log", extra_args=["-r", "__ns:=/robot1"]).start()
    probe = Probe("ns_probe")
    try:
        got = probe.listen("/robot1/punyo_pressure/predicted", FluidPressure)
        assert probe.wait_for_subscriber("/robot1/contacts", PointCloud2, timeout=60.0), proc.output()[-3000:]
        msg = contacts_to_pointcloud2({}, params["contact_body_names"], stamp=2.5, frame_id="world")
        assert send_until(probe, "/robot1/contacts", msg, lambda: len(got) > 0), proc.output()[-3000:]
        # no contact: no pressure change; frame = the sensor's attachment from the file
        assert got[0].fluid_pressure == 0.0
        assert got[0].header.frame_id == params["punyo_pressure"]["attachment"] == "punyo"
        assert (got[0].header.stamp.sec, got[0].header.stamp.nanosec) == (2, 500_000_000)
        assert f"{len(params['sensors'])} sensors" in proc.output()
    finally:
        probe.destroy_node()
        code = proc.stop()
    assert code == 0 and "Traceback" not in proc.output()


def test_real_config_names_only_files_that_resolve_in_the_assets(tmp_path):
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    params = ls.load_node_parameters(str(ROOT / "config" / "kinova_punyo_real.yaml"))
    assets = ls.effective_assets_dir(str(FIXTURES), params, environ={})
    assert ls.robot_description_file(params, assets) == (FIXTURES / "kinova_gen3.urdf").resolve()
    for body in params["bodies"]:
        for key in ("mesh", "transform_file"):
            value = params[body].get(key, "")
            if value and "://" not in value:
                assert (Path(assets) / value).is_file(), f"{body}.{key} = {value}"
    # the calibration file is written by save_calibration: its directory must exist
    assert (Path(assets) / params["calibration_file"]).parent.is_dir()
    assert params["punyo_pressure"]["measured_scale"] == 100   # hPa -> Pa


def test_real_config_starts_as_the_real_punyo_launch_file_hands_it_over(tmp_path, rclpy_context):
    # real_punyo.launch.py's default: kinova_punyo_real.yaml, assets_dir made absolute, the
    # parameter file re-keyed; the node must start on it (Float32 pressure on the driver's topic,
    # joint_name_map) without a warning
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    from std_msgs.msg import Float32
    params = ls.load_node_parameters(str(ROOT / "config" / "kinova_punyo_real.yaml"))
    assets = ls.effective_assets_dir(str(FIXTURES), params, environ={})
    params["assets_dir"] = assets
    params["robot_description_path"] = str(ls.robot_description_file(params, assets))
    params["calibration_file"] = str(tmp_path / "calibration.yaml")   # the fixtures stay untouched
    proc = NodeProcess(ls.write_node_parameters(params, str(tmp_path)), tmp_path / "node.log").start()
    probe = Probe("real_config_probe")
    try:
        assert probe.wait_for_subscriber("/punyo/pressure", Float32, timeout=90.0), proc.output()[-3000:]
        out = _wait_ready(proc)
        assert READY in out, out[-3000:]
    finally:
        probe.destroy_node()
        code = proc.stop()
    out = proc.output()
    assert code == 0 and "Traceback" not in out and "WARN" not in out, out[-3000:]
