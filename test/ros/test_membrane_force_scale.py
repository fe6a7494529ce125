"""membrane_force_node's force scale against a reference wrench, over real DDS.

Scene: the dome of :mod:`test.ros.test_membrane_force_node`, pushed at one vertex by a fraction
``a`` of the 1.5 N push (and of its 40 Pa rise): the clamped response is linear, so each level is
rendered from ``a`` times the solved displacement.  The reference wrench of each frame is sent
after the node publishes the frame's total force ``F``: in the F/T frame (``R_FT`` turns it into
the membrane frame), with a bias ``B`` (also sent with the contact-free reference frames), and
of magnitude ``k |F| + e`` with ``k = 1.25`` and a known small ``e`` per frame.  Expected, by
hand: least squares through the origin on ``(|F|, k|F| + e)`` over the frames above the
threshold, its standard error, and the loading / unloading split at the peak; a second method
(``numpy.linalg.lstsq``) gives the same scale and the residual the standard error is made of.
"""
from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import Image, PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.demo.processes import ManagedProcess, child_env, module_command
from vsf_sensor_ros.rig.calibration_file import foreign_reason
from vsf_sensor_ros.ros.parameter_table import ConfigError

from ..sensor.membrane_scenes import render_depth
from .node_helpers import ROOT, Probe, deliver_counted, write_params
from . import test_membrane_force_node as base
from .test_membrane_force_node import DP, P_REF, _at, _bare_node, _camera_info, _forces, _hpa, _image_32f

scene = base.scene   # the dome, its camera and its push (a module fixture)

NODE = "membrane_force_node"
K = 1.25
R_FT = Rotation.from_euler("xyz", [20.0, -35.0, 110.0], degrees=True)   # F/T frame -> membrane frame
BIAS = np.array([0.4, -0.3, 2.0])                                       # N, in the F/T frame
LEVELS = [0.3, 0.5, 0.7, 0.85, 1.0, 0.9, 0.75, 0.55, 0.35]             # a poke: loading, then unloading
NOISE = 0.02 * np.array([1.0, -1.0, 0.5, -0.5, 1.0, -1.0, 0.5, 1.0, -1.0])   # e, N
THRESHOLD, MIN_FRAMES, MIN_FORCE = 0.2, 4, 1.0


@pytest.fixture(scope="module")
def pokes(scene):
    """Depth images of the push at each of :data:`LEVELS` (float32 as the 32FC1 images carry them)."""
    dome, model, v = scene["dome"], scene["est"].model, scene["vertex"]
    load = DP * model.g0
    load[v] -= 1.5 * model.normals[v]
    dof = (3 * dome.interior[:, None] + np.arange(3)).ravel()
    u = np.zeros(3 * len(dome.points))
    u[dof] = np.linalg.solve(model.K[dof][:, dof].toarray(), load.reshape(-1)[dof])
    return {a: render_depth(scene["cam"], dome.points + a * u.reshape(-1, 3), dome.triangles)
            .astype(np.float32).astype(np.float64) for a in sorted(set(LEVELS))}


def _params(scene) -> dict:
    return {"mesh": str(scene["vtk"]), "attachment_mesh": str(scene["ply"]), "frame_id": "membrane",
            "camera_rotation_deg": 0.0, "ambient_pressure": P_REF - 4000.0, "window": 3,
            "reference_frames": 2, "depth_topic": "camera/depth", "camera_info_topic": "camera/info",
            "pressure_topic": "bubble/pressure",
            "pressure_timeout": 0.0, "force_topic": "/mforce/measured", "input_reliability": "reliable",
            "pressure_reliability": "reliable", "diagnostics_period": 0.2,
            "reference_wrench_topic": "/ft/wrench", "reference_rotation": [float(v) for v in R_FT.as_quat()],
            "reference_tolerance": 0.01, "reference_reliability": "reliable", "scale_threshold": THRESHOLD,
            "scale_min_frames": MIN_FRAMES, "scale_min_force": MIN_FORCE,
            "calibration_file": str(scene["dir"] / "scale" / "membrane_scale.yaml"),
            "calibration_create_dirs": True}


def _start(scene, probe=None):
    d = scene["dir"]
    params = write_params(d / "scale_node.yaml", _params(scene), node_name=NODE)
    proc = ManagedProcess(NODE, module_command("vsf_sensor_ros.ros.membrane_force_node",
                                               ["--params-file", str(params)]),
                          child_env(), d / f"scale_node_{id(params)}.log", cwd=ROOT)
    proc.start()
    probe = probe or Probe("scale_probe", target=NODE)
    for topic, kind in (("/mforce/measured", PointCloud2), ("/mforce/measured/uncalibrated", PointCloud2),
                        ("/membrane_total_force", WrenchStamped), ("/diagnostics", DiagnosticArray)):
        probe.listen(topic, kind)
    assert probe.wait_for_subscriber("/camera/depth", Image, timeout=90.0), proc.output()[-3000:]
    assert probe.wait_for_subscriber("/ft/wrench", WrenchStamped, timeout=30.0), proc.output()[-3000:]
    deliver_counted(probe, "/camera/info", _camera_info(scene["cam"]), f"/{NODE}", "camera_info_received")
    deliver_counted(probe, "/bubble/pressure", _hpa(P_REF), f"/{NODE}", "pressures_received")
    return probe, proc


@pytest.fixture(scope="module")
def node(scene, rclpy_context):
    probe, proc = _start(scene)
    state = {"probe": probe, "proc": proc}
    try:
        yield state
    finally:
        probe.destroy_node()
        code, out = state["proc"].stop(), state["proc"].output()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


def _status(probe) -> dict:
    msgs = probe.received["/diagnostics"]
    start = len(msgs)
    assert probe.spin_until(lambda: any(s.name == f"/{NODE}" for m in msgs[start:] for s in m.status), 5.0)
    return next({kv.key: kv.value for kv in s.values} for m in reversed(msgs[start:]) for s in m.status
                if s.name == f"/{NODE}")


def _wrench(force_ft: np.ndarray, sec: int, nanosec: int = 2_000_000) -> WrenchStamped:
    w = WrenchStamped()
    w.header.stamp, w.header.frame_id = Time(sec=sec, nanosec=nanosec), "ft_sensor"
    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in force_ft)
    return w


def _reference(probe, scene, secs) -> None:
    """reset_reference, then contact-free frames at P_REF, each with the bias on the F/T sensor."""
    probe.send("/bubble/pressure", _hpa(P_REF))
    probe.spin_for(0.3)
    assert probe.call(Trigger, f"/{NODE}/reset_reference", Trigger.Request()).success
    for sec in secs:
        probe.send("/camera/depth", _image_32f(scene["ref"], sec))
        probe.send("/ft/wrench", _wrench(BIAS, sec))
        probe.spin_for(0.2)
    _at(probe, "/membrane_total_force", secs[-1])     # the frame completing the reference is estimated


def _poke(probe, pokes, levels, first_sec, magnitude):
    """Each level's frame, then its reference wrench of ``magnitude(i, |F|)`` N along ``F``; the
    uncalibrated totals ``F`` (frame_id) and the dense forces, calibrated and not."""
    totals = []
    for i, a in enumerate(levels):
        sec = first_sec + i
        probe.send("/bubble/pressure", _hpa(P_REF + a * DP))
        probe.spin_for(0.3)
        probe.send("/camera/depth", _image_32f(pokes[a], sec))
        w = _at(probe, "/membrane_total_force", sec).wrench.force
        f = np.array([w.x, w.y, w.z])
        totals.append(f)
        ref = f * magnitude(i, np.linalg.norm(f)) / np.linalg.norm(f)   # in the membrane frame
        probe.send("/ft/wrench", _wrench(R_FT.inv().apply(ref) + BIAS, sec))
    probe.spin_for(0.3)
    return np.array(totals)


def _number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return float(m.group(1))


def test_a_refused_fit_names_the_count_or_the_force_and_changes_nothing(node, scene, pokes):
    probe = node["probe"]
    _reference(probe, scene, (1, 2))
    before = _status(probe)
    answer = probe.call(Trigger, f"/{NODE}/calibrate_scale", Trigger.Request())
    assert not answer.success
    assert "0 frames with |reference| > threshold=0.2 N" in answer.message and "scale_min_frames=4" in \
        answer.message, answer.message
    # enough frames above the threshold, but the largest reference force stays below min_force
    totals = _poke(probe, pokes, [0.3] * 5, 3, lambda i, x: K * x)
    peak = K * np.linalg.norm(totals, axis=1).max()
    assert THRESHOLD < K * np.linalg.norm(totals, axis=1).min() and peak < MIN_FORCE
    answer = probe.call(Trigger, f"/{NODE}/calibrate_scale", Trigger.Request())
    assert not answer.success
    assert f"largest |reference| {peak:.3g} N" in answer.message \
        and "scale_min_force=1 N" in answer.message, answer.message
    after = _status(probe)
    assert after["force_scale"] == before["force_scale"] == "1" and after["force_scale_source"] == "none"
    assert int(after["scale_fits_refused"]) == int(before.get("scale_fits_refused", 0)) + 2
    assert not (scene["dir"] / "scale").exists()        # nothing written


def test_the_fitted_scale_is_k_within_its_standard_error_persisted_and_applied(node, scene, pokes):
    probe = node["probe"]
    _reference(probe, scene, (10, 11))
    totals = _poke(probe, pokes, LEVELS, 12, lambda i, x: K * x + NOISE[i])
    answer = probe.call(Trigger, f"/{NODE}/calibrate_scale", Trigger.Request())
    assert answer.success, answer.message

    # by hand: x = |F|, y = k x + e over the frames above the threshold (all of them here)
    x = np.linalg.norm(totals, axis=1)
    y = K * x + NOISE
    assert (y > THRESHOLD).all()
    s = float(x @ y / (x @ x))
    (s2,), (ssr,), *_ = np.linalg.lstsq(x[:, None], y, rcond=None)       # the second method
    se = float(np.sqrt(ssr / (len(x) - 1) / (x @ x)))
    assert s2 == pytest.approx(s, rel=1e-12)
    assert abs(s - K) < 3.0 * se and se < 0.02
    got_s = _number(r"scale (\S+) \+-", answer.message)
    got_se = _number(r"\+- (\S+) \(standard error\)", answer.message)
    assert got_s == pytest.approx(s, rel=1e-5) and got_se == pytest.approx(se, rel=1e-2)
    assert f"from {len(x)} frames" in answer.message
    # out of sample: fitted on the loading (up to the peak of |r|), scored on the unloading after it
    peak = int(np.argmax(y))
    load, unload = np.arange(peak + 1), np.arange(peak + 1, len(y))
    s_load = float(x[load] @ y[load] / (x[load] @ x[load]))
    rms_before = float(np.sqrt(np.mean((x[unload] - y[unload]) ** 2)))
    rms_after = float(np.sqrt(np.mean((s_load * x[unload] - y[unload]) ** 2)))
    assert _number(r"out of sample: scale (\S+) fitted", answer.message) == pytest.approx(s_load, rel=1e-5)
    assert f"on {len(load)} loading frames" in answer.message \
        and f"on {len(unload)} unloading" in answer.message, answer.message
    m = re.search(r"unloading frames (\S+) -> (\S+) N", answer.message)
    assert float(m.group(1)) == pytest.approx(rms_before, rel=1e-3)
    assert float(m.group(2)) == pytest.approx(rms_after, rel=1e-3, abs=1e-4)
    assert rms_after < 0.2 * rms_before
    # the bias the F/T sensor showed on the contact-free frames, in the membrane frame
    bias = [float(v) for v in re.search(r"reference bias \[([^\]]+)\]", answer.message).group(1).split(",")]
    assert bias == pytest.approx(R_FT.apply(BIAS), abs=1e-3)

    # persisted in the package's calibration file format
    path = scene["dir"] / "scale" / "membrane_scale.yaml"
    assert str(path) in answer.message and foreign_reason(path, path.stat().st_size) is None
    entry = yaml.safe_load(path.read_text())["sensors"]["membrane_force"]
    assert entry["calibration"]["scale"] == pytest.approx(s, rel=1e-9) and entry["samples"] == len(x)
    assert entry["calibration"]["scale_std_error"] == pytest.approx(se, rel=1e-6)
    assert entry["attachment"] == "membrane"

    status = _status(probe)
    assert float(status["force_scale"]) == pytest.approx(s, rel=1e-5)
    assert status["force_scale_source"] == "fit"
    assert float(status["force_scale_std_error"]) == pytest.approx(se, rel=1e-2)
    assert status["force_scale_frames"] == str(len(x))
    assert datetime.fromisoformat(status["force_scale_fitted_at"]).tzinfo is not None
    assert status["force_scale_fitted_at"] == entry["calibration"]["fitted_at"]
    # the latest reference wrench, turned into the membrane frame and its bias removed: F times its factor
    latest = [float(v) for v in status["reference_force"].split()]
    assert latest == pytest.approx(totals[-1] * y[-1] / x[-1], rel=1e-3, abs=1e-3)
    # the second reference frame is estimated too (no force, the bias on the F/T): paired, not loaded
    assert status["scale_frames_paired"] == str(len(x) + 1) and status["scale_frames_unpaired"] == "0"
    assert status["reference_bias_frames"] == "2"

    # from now on force_topic and total_force_topic carry s times the estimate; .../uncalibrated the estimate
    _check_scaled(probe, pokes, 40, s)


def _check_scaled(probe, pokes, sec, s):
    probe.send("/bubble/pressure", _hpa(P_REF + DP))
    probe.spin_for(0.3)
    probe.send("/camera/depth", _image_32f(pokes[1.0], sec))
    raw = _at(probe, "/mforce/measured/uncalibrated", sec)
    n = raw.width * raw.height
    uncal, cal = _forces(raw, n), _forces(_at(probe, "/mforce/measured", sec), n)
    assert np.abs(cal - s * uncal).max() < 1e-6 and np.abs(uncal).max() > 0.1
    w = _at(probe, "/membrane_total_force", sec).wrench.force
    assert [w.x, w.y, w.z] == pytest.approx(s * uncal.sum(axis=0), abs=1e-5)


def test_a_restart_loads_the_scale_from_the_file(node, scene, pokes):
    """After the fit above: a new process reads the file and applies the same scale."""
    path = scene["dir"] / "scale" / "membrane_scale.yaml"
    s = yaml.safe_load(path.read_text())["sensors"]["membrane_force"]["calibration"]["scale"]
    assert node["proc"].stop() == 0
    probe, node["proc"] = _start(scene, node["probe"])
    status = _status(probe)
    assert status["force_scale_source"] == f"file {path}" and float(status["force_scale"]) == pytest.approx(s)
    assert status["force_scale_frames"] == str(len(LEVELS))
    _reference(probe, scene, (50, 51))
    _check_scaled(probe, pokes, 52, s)


# -- in process: no reference topic, start-up errors --------------------------------------------------
def test_without_a_reference_topic_the_fit_is_refused_naming_the_parameter(scene, rclpy_context):
    node = _bare_node(scene, "no_reference_scale_node")
    try:
        answer = node._on_calibrate(Trigger.Request(), Trigger.Response())
        assert not answer.success and "reference_wrench_topic" in answer.message
        assert node.record.scale == 1.0
    finally:
        node.destroy_node()


def test_a_bad_rotation_or_scale_file_is_a_start_up_error_naming_it(scene, rclpy_context, tmp_path):
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "zero_rotation_node", reference_rotation=[0.0, 0.0, 0.0, 0.0])
    assert "parameter 'reference_rotation'" in str(err.value)
    bad = tmp_path / "bad.yaml"
    bad.write_text("sensors:\n  membrane_force: {type: MembraneForceScale, calibration: {scale: -2.0}}\n")
    with pytest.raises(ConfigError) as err:
        _bare_node(scene, "bad_scale_file_node", calibration_file=str(bad))
    assert "parameter 'calibration_file'" in str(err.value) and "-2.0" in str(err.value)
