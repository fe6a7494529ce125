"""The force scale against a reference: least squares through the origin, refusals, out of sample.

A synthetic poke: the reference rises 0 -> 6 N over 20 frames (the loading, its peak the last) and
falls back over 20 (the unloading); the measured force reads 1/s of it (s = 1.4, what the camera's
estimate is short of on the real poke).
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from vsf_sensor_ros.sensor.scale_calibration import (ScaleFitRefused, fit_scale, loading_unloading,
                                                     out_of_sample_scale)

S = 1.4
REF = np.concatenate([np.linspace(0.0, 6.0, 20), np.linspace(5.7, 0.0, 20)])   # peak at frame 19


def test_noise_free_data_give_the_scale_exactly_and_zero_error():
    fit = fit_scale(REF / S, REF)
    assert fit.scale == pytest.approx(S, rel=1e-12) and fit.std_error == pytest.approx(0.0, abs=1e-12)
    assert fit.frames.tolist() == np.flatnonzero(REF > 0.5).tolist()
    assert fit.rms_before == pytest.approx(np.sqrt(np.mean(((1 / S - 1) * REF[fit.frames]) ** 2)))
    assert fit.rms_after == pytest.approx(0.0, abs=1e-12)


def test_the_standard_error_is_the_least_squares_one_and_the_spread_of_the_estimate():
    rng = np.random.default_rng(1)
    x = np.linspace(0.6, 5.0, 60)                   # measured magnitudes, N
    sigma = 0.2                                     # reference noise, N
    y = S * x + rng.normal(0.0, sigma, x.size)
    fit = fit_scale(x, y)
    # second method: numpy's least squares on the one-column design, its covariance s^2 (X^T X)^-1
    coef, res, _, _ = np.linalg.lstsq(x[:, None], y, rcond=None)
    assert fit.scale == pytest.approx(coef[0], rel=1e-12)
    assert fit.std_error == pytest.approx(np.sqrt(res[0] / (x.size - 1) / (x @ x)), rel=1e-9)
    # over many noise draws the estimate scatters by sigma / sqrt(sum x^2), which se estimates
    draws = np.array([fit_scale(x, S * x + rng.normal(0.0, sigma, x.size)).scale for _ in range(2000)])
    analytic = sigma / np.sqrt(x @ x)
    assert draws.mean() == pytest.approx(S, abs=3 * analytic / np.sqrt(2000))
    assert draws.std() == pytest.approx(analytic, rel=0.06)
    assert fit.std_error == pytest.approx(analytic, rel=0.3)


def test_magnitudes_are_fitted_so_the_frames_may_differ_by_a_rotation():
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(40, 3)) * 3.0
    measured = Rotation.from_rotvec([0.3, -1.0, 2.0]).apply(ref) / S
    assert fit_scale(measured, ref).scale == pytest.approx(S, rel=1e-12)


def test_too_few_loaded_frames_is_refused_naming_the_count_and_min_frames():
    with pytest.raises(ScaleFitRefused) as exc:
        fit_scale(REF / S, REF, threshold=5.0)
    n = int((REF > 5.0).sum())
    assert n < 10 and (exc.value.reason, exc.value.setting, exc.value.value, exc.value.limit) == (
        "too_few_frames", "min_frames", n, 10)


def test_too_little_force_is_refused_naming_the_force_and_min_force():
    small = REF / 4.0                               # peak 1.5 N
    with pytest.raises(ScaleFitRefused) as exc:
        fit_scale(small / S, small, threshold=0.1)
    e = exc.value
    assert (e.reason, e.setting, e.limit) == ("too_little_force", "min_force", 2.0)
    assert e.value == pytest.approx(1.5, rel=1e-12)


def test_a_measured_force_that_stays_zero_is_refused():
    with pytest.raises(ScaleFitRefused) as exc:
        fit_scale(np.zeros_like(REF), REF)
    assert (exc.value.reason, exc.value.value) == ("zero_measured", int((REF > 0.5).sum()))


@pytest.mark.parametrize("measured,reference,kwargs,named", [
    (np.zeros((40, 2)), REF, {}, "(40, 2)"), (REF[:39], REF, {}, "39"),
    (np.full(40, np.nan), REF, {}, "measured"),
    (REF, REF, {"min_frames": 1}, "min_frames"), (REF, REF, {"frames": [40]}, "got 40")])
def test_bad_input_is_a_value_error_naming_it(measured, reference, kwargs, named):
    with pytest.raises(ValueError) as exc:
        fit_scale(measured, reference, **kwargs)
    assert named in str(exc.value)


def test_loading_is_up_to_the_peak_and_unloading_after_it_loaded_frames_only():
    loading, unloading = loading_unloading(REF, threshold=0.5)
    loaded = np.flatnonzero(REF > 0.5)
    assert loading.tolist() == loaded[loaded <= 19].tolist()
    assert unloading.tolist() == loaded[loaded > 19].tolist()


def test_out_of_sample_fits_the_loading_only_and_scores_the_unloading():
    # hysteresis: the unloading reads 1/1.2 of the reference, the loading 1/1.4
    measured = np.where(np.arange(REF.size) <= 19, REF / S, REF / 1.2)
    score = out_of_sample_scale(measured, REF)
    assert score.fit.scale == pytest.approx(S, rel=1e-12)           # the unloading never entered
    t = np.flatnonzero((REF > 0.5) & (np.arange(REF.size) > 19))
    assert score.test_frames.tolist() == t.tolist()
    y = REF[t]
    assert score.rms_before == pytest.approx(np.sqrt(np.mean((y / 1.2 - y) ** 2)), rel=1e-12)
    assert score.rms_after == pytest.approx(np.sqrt(np.mean((S * y / 1.2 - y) ** 2)), rel=1e-12)


def test_no_loaded_frame_after_the_peak_is_refused():
    rising = np.linspace(0.0, 6.0, 20)
    with pytest.raises(ScaleFitRefused) as exc:
        out_of_sample_scale(rising / S, rising)
    assert (exc.value.reason, exc.value.setting, exc.value.limit) == ("no_unloading", "threshold", 0.5)
