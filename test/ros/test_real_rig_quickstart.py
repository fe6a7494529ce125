"""docs/real_rig_quickstart.md works as written, next to stand-ins for the Kinova, Punyo and F/T drivers.

* The two shipped configurations agree: ``config/wrench_contact_node_kinova.yaml`` (the contacts
  source) and ``config/kinova_punyo_real.yaml`` (``sensor_node``) share the body table, the
  world frame, the bubble's mount (the values of ``punyo2end_effector_transform.json``) and the
  driver's joint names; the contact point is the top of the bubble's mesh.
* Every command of the document's ``bash`` blocks is run or checked: the two node commands run
  exactly as written (``bash -c``, with ``VSF_ASSETS`` set to a copy of the robot files so the
  calibration file lands in a temporary directory); ``ros2 service call`` lines are made with
  rclpy's client (the CLI is what calls the same services); the ``ros2 launch`` / ``ros2 run``
  forms name a shipped launch file with declared arguments / a console script.
* Stand-ins publish what the document's table says: ``/joint_states`` with ``joint_1`` ..
  ``joint_7``, ``/punyo/pressure`` as header-less ``std_msgs/Float32`` hPa, and a wrench in
  ``EndEffector_Link`` on the topic the command remaps to ``wrench``.

Expected pressure (hand-derived): a wrench of 5 N along the bubble's -z (into it), rotated into
``EndEffector_Link`` by the mount, reads ``(R_mount^T f) . z = -5 N`` in the bubble frame, so the
prediction rises by ``5 N / A_base`` above the tare offset, ``A_base`` = the area of the mesh's
shadow on its base plane, computed here by rasterising the projected triangles (not the
library's polygon union).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import List

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import FluidPressure, JointState
from std_msgs.msg import Float32
from std_srvs.srv import Trigger

from vsf_sensor_ros.demo.processes import ManagedProcess, child_env

from .node_helpers import FIXTURES, ROOT, Probe

DOC = ROOT / "docs" / "real_rig_quickstart.md"
REAL = ROOT / "config" / "kinova_punyo_real.yaml"
WRENCH = ROOT / "config" / "wrench_contact_node_kinova.yaml"
DRIVER_JOINTS = [f"joint_{i}" for i in range(1, 8)]
BASELINE_HPA = 1013.25
PRESS_N = 5.0


def _sensor_params():
    return yaml.safe_load(REAL.read_text())["sensor_node"]["ros__parameters"]


def _wrench_params():
    return yaml.safe_load(WRENCH.read_text())["wrench_contact_node"]["ros__parameters"]


def _needs_fixtures():
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")


def _mount() -> np.ndarray:
    data = json.loads((FIXTURES / _sensor_params()["punyo"]["transform_file"]).read_text())
    return np.asarray(data[_sensor_params()["punyo"]["transform_key"]], dtype=float)


def _mesh_vertices_faces():
    import trimesh
    mesh = trimesh.load(str(FIXTURES / _sensor_params()["punyo"]["mesh"]), process=False)
    return np.asarray(mesh.vertices, float), np.asarray(mesh.faces, int)


def _shadow_area_by_raster(v: np.ndarray, f: np.ndarray, cell: float = 1e-4) -> float:
    """Area (m^2) of the union of the triangles projected onto z = 0, on a ``cell`` grid."""
    xy = v[:, :2]
    lo, hi = xy.min(axis=0) - cell, xy.max(axis=0) + cell
    nx, ny = (np.ceil((hi - lo) / cell)).astype(int)
    covered = np.zeros((nx, ny), dtype=bool)
    cx = lo[0] + (np.arange(nx) + 0.5) * cell
    cy = lo[1] + (np.arange(ny) + 0.5) * cell
    for a, b, c in xy[f]:
        i0, i1 = np.searchsorted(cx, min(a[0], b[0], c[0])), np.searchsorted(cx, max(a[0], b[0], c[0]))
        j0, j1 = np.searchsorted(cy, min(a[1], b[1], c[1])), np.searchsorted(cy, max(a[1], b[1], c[1]))
        if i1 <= i0 or j1 <= j0:
            continue
        X, Y = np.meshgrid(cx[i0:i1], cy[j0:j1], indexing="ij")

        def side(p, q):
            return (q[0] - p[0]) * (Y - p[1]) - (q[1] - p[1]) * (X - p[0])
        s1, s2, s3 = side(a, b), side(b, c), side(c, a)
        inside = ((s1 >= 0) & (s2 >= 0) & (s3 >= 0)) | ((s1 <= 0) & (s2 <= 0) & (s3 <= 0))
        covered[i0:i1, j0:j1] |= inside
    return float(covered.sum()) * cell * cell


# --------------------------------------------------------------------------- the two files agree
def test_the_contacts_source_and_the_sensor_node_share_the_body_table_mount_and_joint_names():
    s, w = _sensor_params(), _wrench_params()
    assert w["contact_body_names"] == s["contact_body_names"] == ["punyo", "object", "table"]
    assert w["world_frame"] == s["world_frame"]
    assert w["body"] == s["punyo_pressure"]["attachment"] == s["punyo_force"]["attachment"] == "punyo"
    assert w["other_body"] in s["bodies"] and w["other_body"] != w["body"]
    assert w["body_parent"] == s["punyo"]["parent_link"]
    assert w["joint_name_map"] == s["joint_name_map"]
    assert float(w["force_sign"]) in (1.0, -1.0) and float(w["min_force"]) >= 0.0


def test_the_contacts_source_mounts_the_bubble_where_the_sensor_node_does_and_touches_its_top():
    _needs_fixtures()
    w = _wrench_params()
    np.testing.assert_allclose(np.asarray(w["body_transform"], float).reshape(4, 4), _mount(), atol=1e-12)
    import trimesh
    v, f = _mesh_vertices_faces()
    p = np.asarray(w["contact_point"], float)
    # at the height of the mesh's top (along the base normal z), on its surface (within 1 mm)
    assert abs(p[2] - v[:, 2].max()) < 1e-3
    _, dist, _ = trimesh.proximity.closest_point(trimesh.Trimesh(v, f, process=False), p[None])
    assert dist[0] < 1e-3


# --------------------------------------------------------------------------- the document's commands
def _bash_lines() -> List[str]:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), flags=re.S)
    lines: List[str] = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                lines.append(line.strip())
    return lines


def _console_scripts() -> List[str]:
    text = (ROOT / "setup.py").read_text()
    return re.findall(r'"(\w+) = vsf_sensor_ros[\w.]+:\w+"', text)


def test_the_document_gives_only_commands_this_test_runs_or_checks():
    scripts = _console_scripts()
    for line in _bash_lines():
        first = shlex.split(line)[0]
        assert first in ("export", "ros2") or first in scripts, line
    inline = re.findall(r"`(ros2 (?:launch|run) [^`]+)`", DOC.read_text())
    assert inline, "the ROS 2 workspace forms are named"
    for cmd in inline:
        words = shlex.split(cmd)
        assert words[2] == "vsf_sensor_ros"
        if words[1] == "run":
            assert words[3] in scripts, cmd
        else:
            launch = (ROOT / "launch" / words[3]).read_text()
            for arg in words[4:]:
                name = arg.split(":=")[0]
                assert f'DeclareLaunchArgument("{name}"' in launch, (cmd, name)


def _assets_copy(tmp: Path) -> Path:
    """The robot files as links in a fresh directory (calibration files are written there)."""
    assets = tmp / "kinova_punyo"
    assets.mkdir()
    for p in FIXTURES.iterdir():
        if not p.name.endswith("calibration.yaml"):
            (assets / p.name).symlink_to(p.resolve())
    return assets


class _Drivers:
    """Stand-ins for the Kinova, Punyo and F/T drivers, publishing from one probe node."""

    def __init__(self, probe: Probe, wrench_topic: str, pressure_topic: str) -> None:
        self.probe = probe
        self.js = probe.publisher("/joint_states", JointState)
        self.wrench = probe.publisher(wrench_topic, WrenchStamped)
        self.pressure = probe.publisher(pressure_topic, Float32)
        self.q = [0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]   # a pose above the table

    def run(self, seconds: float, force_ee: np.ndarray, hpa: float) -> None:
        """Joint states and wrenches at 50 Hz, the pressure at 100 Hz, stamped on the probe's clock."""
        end = time.monotonic() + seconds
        k = 0
        while time.monotonic() < end:
            now = self.probe.get_clock().now().to_msg()
            if k % 2 == 0:
                w = WrenchStamped()
                w.header.stamp, w.header.frame_id = now, "EndEffector_Link"
                w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in force_ee)
                self.wrench.publish(w)
                j = JointState(name=DRIVER_JOINTS, position=self.q)
                j.header.stamp = now
                self.js.publish(j)
            self.pressure.publish(Float32(data=hpa))
            k += 1
            self.probe.spin_for(0.01)


def _start(name: str, line: str, env: dict, tmp: Path) -> ManagedProcess:
    proc = ManagedProcess(name, ["bash", "-c", "exec " + line], env, tmp / f"{name}.log", cwd=ROOT)
    proc.start()
    return proc


def test_the_quick_start_as_written_tares_and_predicts_a_press_against_the_stand_in_drivers(
        tmp_path, rclpy_context):
    _needs_fixtures()
    lines = _bash_lines()
    exports = dict(re.match(r"export (\w+)=(\S+)", ln).groups() for ln in lines if ln.startswith("export "))
    assert set(exports) == {"VSF_ASSETS"}
    sensor_line = next(ln for ln in lines if ln.startswith("sensor_node "))
    wrench_line = next(ln for ln in lines if ln.startswith("wrench_contact_node "))
    services = [shlex.split(ln) for ln in lines if ln.startswith("ros2 service call ")]
    # and the one named in the text (re-zero the wrench bias)
    services += [shlex.split(c) for c in re.findall(r"`(ros2 service call [^`]+)`", DOC.read_text())]
    assets = _assets_copy(tmp_path)
    env = child_env({**os.environ, "VSF_ASSETS": str(assets),
                     "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    wrench_topic = dict(a.split(":=") for a in shlex.split(wrench_line)
                        if ":=" in a and not a.startswith("robot"))["wrench"]
    pressure_topic = _sensor_params()["punyo_pressure"]["measured_topic"]

    probe = Probe("quickstart_drivers")
    nodes = [_start("sensor_node", sensor_line, env, tmp_path),
             _start("wrench_contact_node", wrench_line, env, tmp_path)]
    try:
        predicted = probe.listen("/punyo_pressure/predicted", FluidPressure)
        measured = probe.listen("/punyo_pressure/measured_si", FluidPressure)
        drivers = _Drivers(probe, wrench_topic, pressure_topic)
        logs = lambda: "\n".join(p.output()[-2000:] for p in nodes)   # noqa: E731
        for topic, mtype in ((wrench_topic, WrenchStamped), ("/joint_states", JointState),
                             (pressure_topic, Float32)):
            assert probe.wait_for_subscriber(topic, mtype, timeout=90.0), logs()
        ready = "sensor_node ready: 2 sensors (punyo_pressure, punyo_force)"
        assert probe.spin_until(lambda: ready in nodes[0].output(), 60.0), logs()

        # unloaded: the wrench bias (first 10 wrenches), then the document's tare and save
        drivers.run(2.0, np.zeros(3), BASELINE_HPA)
        assert predicted and measured, logs()
        answers = {}
        for words in services:
            assert words[4] == "std_srvs/srv/Trigger", words
            answers[words[3]] = probe.call(Trigger, words[3], Trigger.Request())
        assert set(answers) == {"/tare", "/save_calibration", "/wrench_contact_node/tare"}
        assert answers["/wrench_contact_node/tare"].success, answers["/wrench_contact_node/tare"].message
        assert answers["/tare"].success, answers["/tare"].message
        assert "punyo_pressure: tared" in answers["/tare"].message
        assert answers["/save_calibration"].success, answers["/save_calibration"].message
        assert (assets / _sensor_params()["calibration_file"]).is_file()   # in VSF_ASSETS
        offset = BASELINE_HPA * 100.0
        drivers.run(0.5, np.zeros(3), BASELINE_HPA)          # predictions after the tare
        assert measured[-1].fluid_pressure == pytest.approx(offset, rel=1e-6)   # hPa x 100, as sent
        assert predicted[-1].fluid_pressure == pytest.approx(offset, abs=1e-3)  # no contact: the offset

        # press: 5 N into the bubble (its -z), expressed in EndEffector_Link through the mount
        force_ee = _mount()[:3, :3] @ np.array([0.0, 0.0, -PRESS_N])
        v, f = _mesh_vertices_faces()
        dp = PRESS_N / _shadow_area_by_raster(v, f)
        pressed_hpa = BASELINE_HPA + dp / 100.0
        n0 = len(predicted)
        drivers.run(1.0, force_ee, pressed_hpa)
        late = [m.fluid_pressure for m in predicted[n0:]][-10:]
        assert late, logs()
        assert np.median(late) - offset == pytest.approx(dp, rel=0.01)
        # the measured stream as the node understood it: the driver's hPa x 100, in Pa
        assert measured[-1].fluid_pressure == pytest.approx(pressed_hpa * 100.0, rel=1e-6)
    finally:
        for p in nodes:
            p.stop()
        probe.destroy_node()


def test_the_kinova_contacts_config_lists_every_parameter_of_the_node():
    from vsf_sensor_ros.contact_sources.wrench_contact_node import DEFAULTS
    assert set(_wrench_params()) == set(DEFAULTS)
