"""The replay's scale calibration pairs estimate frame k with F/T frame k + lag, as the comparison does.

A poke built by hand: the F/T force (bias 0.2 N on x) rises to 5 N and falls back; the estimate
sees it one frame earlier (lag 1) at 1/1.4 of its size.  The fit is 1.4 exactly, its frames are
estimate frames (the F/T's loaded frames less one), and a poke too short is refused.
"""
import numpy as np
import pytest

from vsf_sensor_ros.demo.replay_camera import calibrate_scale
from vsf_sensor_ros.demo.replay_analysis import Recording
from vsf_sensor_ros.sensor.membrane_force_estimator import compare_with_wrench
from vsf_sensor_ros.sensor.scale_calibration import ScaleFitRefused

BIAS = np.array([0.2, 0.0, 0.0])


def _poke(load):
    n = len(load)
    wrench = np.zeros((n, 6))
    wrench[:, :3] = BIAS + np.outer(load, [0.0, 0.6, -0.8])
    total = np.zeros((n, 3))
    total[:-1] = np.outer(load[1:], [0.0, 0.0, 1.0]) / 1.4       # a frame ahead, another frame
    return Recording(np.arange(n) * 0.033, np.full(n, 1e5), np.zeros((n, 6)), wrench), total


def test_the_scale_is_fitted_on_the_loading_in_estimate_frames():
    load = np.concatenate([np.zeros(40), np.linspace(0.0, 5.0, 20), np.linspace(4.8, 0.0, 20), np.zeros(20)])
    rec, total = _poke(load)
    cmp = compare_with_wrench(total, rec.wrench[:, :3])
    assert cmp.lag == 1
    score = calibrate_scale(total, rec, cmp)
    assert score.fit.scale == pytest.approx(1.4, rel=1e-9) and score.rms_after == pytest.approx(0.0, abs=1e-9)
    loaded = np.flatnonzero(load > 0.5)
    assert score.fit.frames.tolist() == (loaded[loaded <= 59] - 1).tolist()
    assert score.test_frames.tolist() == (loaded[loaded > 59] - 1).tolist()


def test_a_poke_cut_before_its_peak_is_refused():
    load = np.concatenate([np.zeros(40), np.linspace(0.0, 5.0, 20)])
    rec, total = _poke(load)
    with pytest.raises(ScaleFitRefused) as exc:
        calibrate_scale(total, rec, compare_with_wrench(total, rec.wrench[:, :3]))
    assert exc.value.reason == "no_unloading"
