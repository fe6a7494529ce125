"""PressureWatch: the contact-free residual's trend in Pa/min; a WARN on a leak or a low gauge pressure.

Streams of simulated minutes (10 Hz, noise 2 Pa) with stamps as data.
"""
import numpy as np
import pytest

from test.sensor.pressure_streams import BASE, DT_NS, pressure_stream
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.sensor.pressure_watch import OK, WARN, PressureWatch


def run(watch, s):
    return [watch.update(s.stamp_ns[i], s.predicted[i], s.measured[i], bool(s.sim_contact[i]))
            for i in range(len(s.t))]


def test_a_steady_fall_is_a_leak_warned_within_a_minute_naming_the_rate():
    s = pressure_stream(4, -50.0, drift_from_s=120.0)          # flat for 2 min, then -50 Pa/min
    out = run(PressureWatch(leak_rate=40.0), s)
    warned = [st for st in out if st.level == WARN]
    assert all(st.stamp_ns >= 120e9 for st in warned)          # none while it is flat
    assert warned[0].stamp_ns - 120e9 <= 60e9
    last = out[-1]
    assert last.rate_pa_per_min == pytest.approx(-50.0, abs=2.0)
    assert f"{-last.rate_pa_per_min:.1f} Pa/min" in last.message and "leak_rate 40" in last.message


def test_a_warming_bubble_with_presses_is_a_rising_trend_and_no_warning():
    presses = [(30.0 + 60.0 * i, 3.0, 300.0) for i in range(10)]
    s = pressure_stream(10, 30.0, shared_presses=presses)
    out = run(PressureWatch(), s)
    assert all(st.level == OK and st.message == "" for st in out)
    rates = np.array([st.rate_pa_per_min for st in out if st.rate_pa_per_min is not None])
    # the presses (sim contact) left out; a 20 s window of 2 Pa noise scatters the slope by 1.5 Pa/min
    assert np.abs(rates - 30.0).max() < 5.0 and abs(rates.mean() - 30.0) < 0.5


def test_the_rate_is_the_least_squares_slope_of_the_contact_free_window():
    s = pressure_stream(1, 20.0, shared_presses=[(40.0, 5.0, 300.0)], seed=3)
    watch = PressureWatch(window_s=30.0, min_span_s=20.0)
    out = run(watch, s)
    assert all(st.rate_pa_per_min is None for st in out[:200])  # 0 .. 19.9 s: less than min_span_s
    i = len(s.t) - 1
    keep = (s.t > s.t[i] - 30.0 - 1e-9) & ~s.sim_contact
    slope = np.polyfit(s.t[keep], (s.measured - s.predicted)[keep], 1)[0]
    assert out[i].rate_pa_per_min == pytest.approx(60.0 * slope, rel=1e-9)


def test_a_gauge_pressure_below_the_model_s_is_a_warning_naming_it():
    watch = PressureWatch(ambient_pa=101325.0, min_gauge_pa=4000.0)
    low = watch.update(0, 0.0, 105000.0, False)
    assert low.level == WARN and low.gauge_pa == pytest.approx(3675.0)
    assert "3675 Pa" in low.message and "min_gauge_pa 4000" in low.message
    assert watch.update(DT_NS, 0.0, BASE, False).level == OK


@pytest.mark.parametrize("kwargs, reason", [({"leak_rate": 0.0}, "out_of_range"),
                                            ({"window_s": -1.0}, "out_of_range"),
                                            ({"min_span_s": 40.0}, "exceeds_window"),   # window_s 30
                                            ({"min_gauge_pa": float("inf")}, "out_of_range")])
def test_bad_parameters_are_named(kwargs, reason):
    with pytest.raises(SettingError) as err:
        PressureWatch(**kwargs)
    (setting, value), = kwargs.items()
    assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, reason)


@pytest.mark.parametrize("sample, argument, value, reason", [
    ((5, 0.0, BASE, False), "stamp_ns", 5, "not_after"),
    ((6, float("nan"), BASE, False), "predicted", float("nan"), "not_finite")])
def test_bad_samples_are_refused_and_named(sample, argument, value, reason):
    watch = PressureWatch()
    watch.update(5, 0.0, BASE, False)
    with pytest.raises(InputError) as err:
        watch.update(*sample)
    assert (err.value.argument, err.value.reason) == (argument, reason)
    np.testing.assert_equal(err.value.value, value)
