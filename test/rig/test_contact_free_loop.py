"""The automatic tare and the pressure watch in the core: a rig stepped through simulated minutes.

The embedded bubble's pressure model on ten simulated minutes of a Punyo stream (10 Hz, 2 Pa noise,
stamps as data, :mod:`test.sensor.pressure_streams`): a 3 s press every minute that the simulator
sees too (pushed as a contact of ``300 Pa · A`` N, so the model predicts the same +300 Pa), the
bubble warming at 30 Pa/min.  Both runs start from a manual tare at 10 s.  The residual is judged
by its 1-second means over whole contact-free seconds: the sensor's own 2 Pa noise is not what a
tare removes.
"""
import numpy as np
import pytest

from test.rig.test_rig import A, _Layout, _push, _step
from test.sensor.pressure_streams import pressure_stream
from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.rig.calibration import AutoTareSettings, ContactFreeLoop, tare
from vsf_sensor_ros.rig.rig import Rig
from vsf_sensor_ros.rig.sensors import RigSensor
from vsf_sensor_ros.sensor import PunyoPressureSensor
from vsf_sensor_ros.sensor.errors import SettingError

SHARED = [(30.0 + 60.0 * i, 3.0, 300.0) for i in range(10)]
BOUNDS = AutoTareSettings(max_step=20.0, steady_std=6.0)
T0 = 1_000_000_000     # ns added to the stream's stamps (a stamp of 0 is no time and pairs with nothing)


def drive(stream, loop):
    """Step a rig through ``stream`` (manual tare at 10 s); ``(sensor, residuals (n,) Pa, loop reports)``."""
    world = embedded_world()
    model = PunyoPressureSensor("pressure", "punyo")
    model.attach(world.body_model("punyo"))
    rig = Rig(world)
    s = RigSensor("pressure", "PunyoPressureSensor", model, _Layout("punyo", ["pressure"], np.array([0])),
                  buffer_size=10, tolerance_ns=1_000_000)
    s.contact_free_loop = loop
    rig.add(s)
    residual = np.full(len(stream.t), np.nan)
    reports = []
    for i, stamp in enumerate(stream.stamp_ns + T0):
        _step(rig, _push(world, 300.0 * A if stream.sim_contact[i] else 0.0), int(stamp))
        r, _, _ = s.keep_pair(rig.pair_measured("pressure", int(stamp), np.array([stream.measured[i]])))
        if i == 99:
            assert tare(s, 10)[0]
        if i >= 100:
            residual[i] = r[0]
        if loop is not None:
            reports.append(loop.report(s))
    return s, residual, reports


def second_means(stream, residual):
    """Means of ``residual`` over each whole second free of contact (simulated and real) after the tare."""
    ok = (~stream.sim_contact & ~stream.real_only & np.isfinite(residual)).reshape(-1, 10).all(axis=1)
    return residual.reshape(-1, 10).mean(axis=1)[ok]


def test_auto_tare_keeps_a_warming_bubble_s_residual_small_and_without_it_it_grows():
    stream = pressure_stream(10, 30.0, shared_presses=SHARED)
    s, residual, reports = drive(stream, ContactFreeLoop(BOUNDS))
    means = second_means(stream, residual)
    assert np.abs(means).max() < 10.0
    # a try every min_interval (5 s) on a contact-free stretch: each step 30 Pa/min * 5 s = 2.5 Pa
    loop = s.contact_free_loop
    assert loop.refused == 0 and loop.applied > 90
    # the model's tare followed the drift: 300 Pa over ten minutes (the latest 2 s mean lags ~1 s)
    assert float(s.sensor.get_calibration()["tare"][0]) == pytest.approx(stream.zero[-1], abs=4.0)
    keys = dict(reports[-1][0])
    assert keys["auto_tare.applied"] == str(loop.applied) and keys["auto_tare.refused"] == "0"
    assert keys["auto_tare.offset"].startswith("pressure=106") and s.calibration_text.startswith("auto-tared")

    _, plain, _ = drive(stream, None)
    assert second_means(stream, plain)[-10:].min() > 50.0      # ~290 Pa by the end


def test_a_press_only_the_real_bubble_feels_is_refused_and_named():
    stream = pressure_stream(10, 30.0, shared_presses=SHARED, real_presses=[(300.0, 20.0, 500.0)])
    s, residual, reports = drive(stream, ContactFreeLoop(BOUNDS))
    loop = s.contact_free_loop
    assert loop.refused >= 1
    during = [(dict(k), p) for (k, p), t in zip(reports, stream.t) if 300.0 + 2.0 < t < 320.0]
    refused = [(k, p) for k, p in during if k["auto_tare.refused"] != "0"]
    keys, problems = refused[-1]
    assert "max_step=20" in keys["auto_tare.last_refused"] and "+5" in keys["auto_tare.last_refused"]
    assert any("refused" in p and "touched" in p for p in problems)       # a WARN, named
    # the press did not move the offset: held through it, the residual after it is at most the 10 Pa
    # the bubble drifted meanwhile (30 Pa/min * 20 s) plus the usual few Pa, and within 10 Pa again
    # once the next tare comes (a 2 s window after the press, then a try)
    means = second_means(stream, residual)
    seconds = np.flatnonzero((~stream.sim_contact & ~stream.real_only & np.isfinite(residual))
                             .reshape(-1, 10).all(axis=1))
    assert np.abs(means).max() < 20.0
    assert np.abs(means[(seconds < 300) | (seconds >= 330)]).max() < 10.0
    assert reports[-1][1] == [] and dict(reports[-1][0])["auto_tare.last_refused"] == "none"


def test_a_steady_fall_is_a_leak_warned_within_a_minute_naming_the_rate():
    stream = pressure_stream(4, -50.0, drift_from_s=120.0)
    loop = ContactFreeLoop(BOUNDS, watch={"leak_rate": 40.0})
    _, _, reports = drive(stream, loop)
    warned = [t for (k, p), t in zip(reports, stream.t) if any("leak" in x for x in p)]
    assert warned and warned[0] >= 120.0 and warned[0] - 120.0 <= 60.0
    keys, problems = dict(reports[-1][0]), reports[-1][1]
    rate = float(keys["pressure.trend_pa_per_min"])
    # the automatic tares (on here) do not step the trend: the fall itself, -50 Pa/min
    assert rate == pytest.approx(-50.0, abs=3.0)
    assert any(f"{-rate:.1f} Pa/min" in p and "leak_rate 40" in p for p in problems)
    assert loop.applied > 20


def test_bad_bounds_are_named():
    with pytest.raises(SettingError) as err:
        ContactFreeLoop(AutoTareSettings(max_step=0.0, steady_std=1.0))
    assert (err.value.setting, err.value.value, err.value.reason) == ("max_step", 0.0, "out_of_range")
    with pytest.raises(SettingError) as err:
        ContactFreeLoop(watch={"leak_rate": -1.0})
    assert (err.value.setting, err.value.value, err.value.reason) == ("leak_rate", -1.0, "out_of_range")
