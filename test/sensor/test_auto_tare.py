"""AutoTare: the tare follows the simulator's contact-free stretches; jumps while "free" are refused.

Ten simulated minutes of a bubble warming at 30 Pa/min (10 Hz, noise 2 Pa) with a 3 s press the
simulator sees too every minute; in a second run, also a 20 s, 500 Pa press at 300 s that only
the real bubble feels.  The residual is judged by its 1 s means: the sensor's own noise is not
what a tare removes.  Stamps are data: the whole stream runs in well under a second.
"""
import numpy as np
import pytest

from test.sensor.pressure_streams import DT_NS, pressure_stream
from vsf_sensor_ros.sensor.auto_tare import AutoTare
from vsf_sensor_ros.sensor.errors import InputError, SettingError

SHARED = [(30.0 + 60.0 * i, 3.0, 300.0) for i in range(10)]
MISMATCH = (300.0, 20.0, 500.0)


def run(tare, s):
    """Feed the stream; the events and the offset held at every sample, ``(n,)`` Pa (NaN before any)."""
    events, held = [], np.full(len(s.t), np.nan)
    for i in range(len(s.t)):
        e = tare.update(s.stamp_ns[i], s.predicted[i], s.measured[i], bool(s.sim_contact[i]))
        if e is not None:
            events.append(e)
        if tare.offset is not None:
            held[i] = tare.offset[0]
    return events, held


def second_means(s, residual):
    """Means of ``residual`` over each whole second that is contact-free (sim and real) and tared."""
    ok = ~s.sim_contact & ~s.real_only & np.isfinite(residual)
    ok = ok.reshape(-1, 10).all(axis=1)
    return residual.reshape(-1, 10).mean(axis=1)[ok]


def test_the_contact_free_residual_follows_a_warming_bubble_only_with_auto_tare():
    s = pressure_stream(10, 30.0, shared_presses=SHARED)
    tare = AutoTare(max_step=50.0, steady_std=6.0)
    events, held = run(tare, s)
    residual = s.measured - s.predicted - held
    assert np.abs(second_means(s, residual)).max() <= 10.0
    # the same stream with the first tare only: the drift (300 Pa over the ten minutes) stays
    first = events[0].offset[0]
    fixed = np.where(np.isfinite(held), first, np.nan)
    assert np.abs(second_means(s, s.measured - s.predicted - fixed)).max() > 50.0
    # every try is an event and counted, each reports the offset it leaves
    applied = [e for e in events if e.applied]
    assert tare.applied == len(applied) and tare.refused == len(events) - len(applied)
    assert all(e.offset[0] == pytest.approx(held[e.stamp_ns // DT_NS]) for e in events)


def test_a_press_the_simulator_does_not_see_is_refused_and_named():
    s = pressure_stream(10, 30.0, shared_presses=SHARED, real_presses=[MISMATCH])
    tare = AutoTare(max_step=50.0, steady_std=6.0)
    events, held = run(tare, s)
    start, dur, dp = MISMATCH
    during = [e for e in events if start * 1e9 <= e.stamp_ns < (start + dur) * 1e9]
    assert during and not any(e.applied for e in during)
    for e in during:
        i = e.stamp_ns // DT_NS
        # the press plus the drift since the offset was taken (the window's middle is 1 s back)
        assert e.step[0] == pytest.approx(dp + s.zero[i - 10] - held[i - 1], abs=3.0)
        assert "max_step=50" in e.reason and f"{e.step[0]:+.4g}" in e.reason
        assert e.offset[0] == held[e.stamp_ns // DT_NS - 1]     # the offset is kept
    assert all(abs(e.step[0]) <= 50.0 for e in events[1:] if e.applied)


def test_tries_are_at_least_min_interval_apart_and_need_a_full_contact_free_window():
    s = pressure_stream(1, 0.0, noise_pa=1.0, shared_presses=[(20.0, 5.0, 300.0)])
    tare = AutoTare(max_step=50.0, steady_std=6.0, window_s=2.0, min_interval_s=5.0)
    events, _ = run(tare, s)
    stamps = np.array([e.stamp_ns for e in events])
    assert stamps[0] == 2_000_000_000                   # samples 0 .. 2 s span the window
    assert np.diff(stamps).min() >= 5_000_000_000
    # the press 20-25 s empties the window: no try before 27 s (2 s after it)
    assert not ((stamps >= 20e9) & (stamps < 27e9)).any()
    # the first tare sets the zero, unbounded
    assert events[0].applied and events[0].step[0] == pytest.approx(events[0].offset[0])


def test_a_sensor_that_is_not_steady_is_not_tared():
    s = pressure_stream(1, 0.0, noise_pa=20.0)
    tare = AutoTare(max_step=50.0, steady_std=6.0)
    events, _ = run(tare, s)
    assert events == [] and tare.offset is None and tare.applied == 0


def test_vector_readings_offset_per_entry_from_a_starting_tare():
    tare = AutoTare(max_step=1.0, steady_std=0.1, window_s=1.0, min_samples=5, offset=[0.0, 0.0, 0.0])
    predicted = np.array([1.0, 2.0, 3.0])
    events = [tare.update(i * DT_NS, predicted, predicted + [0.5, -0.25, 0.0], False) for i in range(11)]
    e = [x for x in events if x is not None]
    assert len(e) == 1 and e[0].applied
    np.testing.assert_allclose(e[0].offset, [0.5, -0.25, 0.0])
    np.testing.assert_allclose(tare.offset, [0.5, -0.25, 0.0])


@pytest.mark.parametrize("kwargs", [{"max_step": 0.0}, {"steady_std": -1.0}, {"window_s": float("nan")},
                                    {"min_samples": 1}, {"min_interval_s": -1.0}])
def test_bad_parameters_are_named(kwargs):
    with pytest.raises(SettingError) as err:
        AutoTare(**{"max_step": 50.0, "steady_std": 6.0, **kwargs})
    (setting, value), = kwargs.items()
    assert (err.value.setting, err.value.reason) == (setting, "out_of_range")
    np.testing.assert_equal(err.value.value, value)


@pytest.mark.parametrize("sample, argument, value, reason, expected", [
    ((10, 0.0, 1.0, False), "stamp_ns", 10, "not_after", 10),
    ((20, [0.0, 0.0], [1.0, 1.0], False), "predicted", 2, "size", 1),          # 2 entries, offset has 1
    ((20, 0.0, float("nan"), False), "measured", [float("nan")], "not_finite", None)])
def test_bad_samples_are_refused_whole_and_named(sample, argument, value, reason, expected):
    tare = AutoTare(max_step=50.0, steady_std=6.0, offset=[0.0])
    tare.update(10, 0.0, 1.0, False)
    with pytest.raises(InputError) as err:
        tare.update(*sample)
    assert (err.value.argument, err.value.reason, err.value.expected) == (argument, reason, expected)
    np.testing.assert_equal(err.value.value, value)
    tare.update(20, 0.0, 1.0, False)       # the refused sample changed nothing: 20 is still new
