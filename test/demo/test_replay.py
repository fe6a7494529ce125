"""Replay of the real UR5e Punyo poke: analysis helpers on hand cases, and the whole session on a cut.

The end-to-end case replays frames 30:130 of ``../shared/fixtures/punyo_poke_ur5e/data.json``
(about 3.3 s: 31 contact-free frames, the poke, the release) at double speed through the real
sensor node and wrench contact node, and asserts on ``summary.json``.
"""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.demo.replay_analysis import (Recording, ReplayError, estimate_lag, load_recording,
                                                 poke_onset, pressure_metrics)

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "data.json"


def synthetic(n=60, shift=2, onset=25):
    """Pressure steps up 400 Pa at ``onset``; the force follows ``shift`` frames later (4 N)."""
    t = np.arange(n) * 0.033
    p = np.full(n, 1.0e5)
    p[onset:onset + 20] += 400.0
    w = np.zeros((n, 6))
    w[onset + shift:onset + shift + 20, 1] = 4.0
    return Recording(t, p, np.zeros((n, 6)), w)


def test_lag_is_the_frame_shift_of_the_force():
    shift, lag = estimate_lag(synthetic(shift=2), bias_frames=10)
    assert shift == 2 and lag == pytest.approx(0.066)
    assert estimate_lag(synthetic(shift=0), bias_frames=10)[0] == 0


def test_onset_and_refusals():
    assert poke_onset(synthetic(onset=25)) == 25
    with pytest.raises(ReplayError) as info:
        poke_onset(synthetic(onset=8))
    assert (info.value.reason, info.value.value) == ("poke_too_early", 8)
    flat = synthetic()
    flat.pressure_pa[:] = 1.0e5
    with pytest.raises(ReplayError) as info:
        poke_onset(flat)
    assert info.value.reason == "no_poke"


def test_pressure_metrics_by_hand():
    meas = np.array([10.0, 100.0, 200.0, 300.0])          # the first is below 50 Pa: left out
    pred = np.array([0.0, 120.0, 240.0, 360.0])
    after_gain = np.array([0.0, 110.0, 190.0, 300.0])
    m = pressure_metrics(meas, pred, after_gain)
    assert m["frames_contact"] == 3
    assert m["correlation"] == pytest.approx(1.0)
    assert m["predicted_over_measured_dp"] == pytest.approx(1.2)
    rms_tare = math.sqrt((20 ** 2 + 40 ** 2 + 60 ** 2) / 3)
    assert m["residual_rms_contact_after_tare_pa"] == pytest.approx(rms_tare)
    assert m["residual_rms_contact_after_gain_in_sample_pa"] == pytest.approx(
        math.sqrt((10 ** 2 + 10 ** 2) / 3))
    with pytest.raises(ReplayError) as info:
        pressure_metrics(meas[:1], pred[:1], pred[:1])
    assert (info.value.reason, info.value.value) == ("too_few_contact_frames", 0)


def test_a_folder_or_a_file_that_is_not_json_is_named(tmp_path):
    (tmp_path / "data.json").write_text("not json")
    for path, reason in ((tmp_path, "is_folder"), (tmp_path / "data.json", "not_json"),
                         (tmp_path / "missing.json", "missing")):
        with pytest.raises(ReplayError) as info:
            load_recording(path)
        assert (info.value.reason, info.value.path) == (reason, path)


@pytest.mark.skipif(not RECORDING.is_file(), reason=f"real Punyo recording absent: {RECORDING.resolve()}")
@pytest.mark.parametrize("flag, value", [("--frames", "100:50"), ("--frames", "7:7"), ("--lag", "xyz"),
                                         ("--speed", "1e-09")])
def test_an_empty_frame_range_or_a_lag_that_is_no_number_exits_2_naming_it(tmp_path, capsys, flag, value):
    from vsf_sensor_ros.demo.replay import main
    assert main(["--recording", str(RECORDING), "--out", str(tmp_path), flag, value]) == 2
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and flag in error[0] and value in error[0]
    assert not any(tmp_path.iterdir())     # refused before anything ran


@pytest.mark.skipif(not RECORDING.is_file(), reason=f"real Punyo recording absent: {RECORDING.resolve()}")
def test_colour_without_the_camera_and_an_out_under_a_file_exit_2_naming_them(tmp_path, capsys):
    from vsf_sensor_ros.demo.replay import main
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for argv, named in ((["--out", str(tmp_path / "o"), "--camera", "off", "--camera-colour"],
                         "--camera-colour"),
                        (["--out", str(blocker / "o"), "--camera", "off"], str(blocker / "o"))):
        assert main(["--recording", str(RECORDING), *argv]) == 2
        error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert len(error) == 1 and named in error[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]     # nothing written


@pytest.mark.skipif(not RECORDING.is_file(), reason=f"real Punyo recording absent: {RECORDING.resolve()}")
def test_load_recording_cut_converts_hpa():
    rec = load_recording(RECORDING, (30, 130))
    assert len(rec) == 100
    first = json.loads(RECORDING.read_text())[30]
    assert rec.pressure_pa[0] == pytest.approx(first[1] * 100.0)
    assert rec.q[0].tolist() == pytest.approx(first[2]) and rec.wrench[0].tolist() == pytest.approx(first[3])


@pytest.mark.skipif(not RECORDING.is_file(), reason=f"real Punyo recording absent: {RECORDING.resolve()}")
def test_replay_of_a_cut_correlates_and_the_gain_helps(tmp_path):
    cmd = [sys.executable, "-m", "vsf_sensor_ros.demo.replay", "--recording", str(RECORDING), "--out",
           str(tmp_path), "--frames", "30:130", "--speed", "1", "--camera", "off"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"replay failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    p = summary["pressure"]
    assert p["correlation"] >= 0.95
    assert p["residual_rms_contact_after_gain_in_sample_pa"] < p["residual_rms_contact_after_tare_pa"]
    assert p["predicted_over_measured_dp"] > 1.0            # the seed model over-predicts the real bubble
    assert p["frames_contact"] >= 20
    assert summary["tare"]["success"]
    # the node's prediction and the library's on the rebuilt states agree
    assert p["library_vs_node_max_abs_pa"] < 1e-3
    assert summary["published"]["punyo/pressure"] == 100
    assert summary["published"]["punyo_force/predicted"] > 80
    assert (tmp_path / "run.mcap").is_file() and (tmp_path / "pressure_real.png").is_file()
    from test.demo.test_summary_definitions import undefined_keys
    assert undefined_keys(summary, summary["definitions"]) == []
    assert p["lag_fitted_in_sample"] is True                # --lag auto: estimated on this recording
    # the node's live residuals compare frame k's prediction with frame k's pressure
    # (punyo_pressure.measured_delay): measured = residual + predicted of the same stamp must be
    # the recorded pressure of the frame of that stamp (float32 hPa x 100, as the driver sends it)
    # (a Float32 is stamped on arrival: on a loaded host a message's arrival can slip past half a
    # frame and pair with the neighbour's prediction; a measured_delay off by a frame misaligns most)
    aligned, total = _aligned_residuals(tmp_path, load_recording(RECORDING, (30, 130)))
    assert total >= 60 and aligned >= 0.8 * total, (aligned, total)


def _aligned_residuals(out, rec):
    """(residuals whose measured value is their own frame's pressure, residuals) read from the bag
    with rosbags (independent of rclpy); a stamp's frame is the recorded time within 2 ms."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_KILTED)
    msgs = {"/punyo_pressure/predicted": [], "/punyo_pressure/residual": []}
    with Reader(out) as reader:
        conns = [c for c in reader.connections if c.topic in msgs]
        for conn, _, raw in reader.messages(connections=conns):
            msgs[conn.topic].append(store.deserialize_cdr(raw, conn.msgtype))

    def frame(m):
        s = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
        k = int(np.argmin(np.abs(rec.t - s)))
        return k if abs(rec.t[k] - s) <= 0.002 else None
    sent_pa = np.float32(rec.pressure_pa / 100.0).astype(np.float64) * 100.0
    predicted = {frame(m): m.fluid_pressure for m in msgs["/punyo_pressure/predicted"]}
    aligned = total = 0
    for m in msgs["/punyo_pressure/residual"]:
        k = frame(m)
        if k is None or k not in predicted:
            continue
        total += 1
        aligned += abs(m.fluid_pressure + predicted[k] - sent_pa[k]) < 1e-3
    return aligned, total


CAMERA = RECORDING.parent / "camera" / "depth.npz"


@pytest.mark.skipif(not CAMERA.is_file(), reason=f"camera frames of the poke absent: {CAMERA.resolve()}")
def test_replay_with_the_camera_measures_the_dense_force(tmp_path):
    """The camera frames through membrane_force_node: measured, predicted and residual dense force.

    The whole poke, as ``make demo-real`` runs it (half speed; a cut leaves too few contact-free
    frames before the poke for the tare on a loaded host).  The node's forces are the library
    estimator's on the same frames (same reference frames 0-4, same pressures); the figures against
    the F/T are those of the estimator's own regression test (correlation >= 0.98; the ratio is
    0.69, below the issue's 0.8 target)."""
    cmd = [sys.executable, "-m", "vsf_sensor_ros.demo.replay", "--recording", str(RECORDING), "--out",
           str(tmp_path), "--speed", "0.5"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"replay failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    m = summary["membrane_force"]
    assert m["frames_measured_by_node"] >= 140          # 150 frames, the first 4 build the reference
    assert m["frames_node_equals_library"] >= 0.9 * m["frames_measured_by_node"]
    assert m["frames_with_residual"] >= 50     # paired by stamp in sensor_node: 96-142 on a loaded host
    assert m["correlation"] >= 0.98 and 0.6 <= m["ratio_at_peak"] <= 1.2
    assert m["peak_distance_held_max_mm"] < 3.0
    z = np.load(tmp_path / "membrane_force.npz")
    assert z["force"].shape == (150, 390, 3) and z["estimate_ms"].shape == (150,)
    assert z["boundary"].tolist() == list(range(64))
    # the boundary rows carry no contact force; the contact vertex is one the camera reads
    assert np.abs(z["force"][:, z["boundary"]]).max() == 0.0 and int(z["contact_vertex"]) >= 64
    assert (tmp_path / "membrane_force.png").is_file()
    # the scale fitted on the loading only; scored by hand on the loaded frames after it, from the npz
    c = m["scale_calibration"]
    fit = z["calibration_fit_frames"]
    assert fit.size == c["fit_frames"] and fit.max() == c["last_fit_frame"] == m["peak_frame"]
    np.testing.assert_allclose(z["force_calibrated"], c["scale"] * z["force"], rtol=1e-12)
    rec = load_recording(RECORDING)
    ft = np.linalg.norm(rec.wrench[:, :3] - rec.wrench[:30, :3].mean(axis=0), axis=1)
    lag = m["lag_frames"]
    k = np.arange(fit.max() + 1, min(150, 150 - lag))
    k = k[ft[k + lag] > 0.5]

    def err(f):
        return np.sqrt(np.mean((np.linalg.norm(f[k].sum(axis=1), axis=1) - ft[k + lag]) ** 2))
    assert c["test_frames"] == k.size
    assert err(z["force"]) == pytest.approx(c["rms_error_unloading_uncalibrated_n"], rel=1e-9)
    assert err(z["force_calibrated"]) == pytest.approx(c["rms_error_unloading_calibrated_n"], rel=1e-9)
    assert err(z["force_calibrated"]) <= 0.4 < err(z["force"])
    from test.demo.test_summary_definitions import undefined_keys
    assert undefined_keys(summary, summary["definitions"]) == []
