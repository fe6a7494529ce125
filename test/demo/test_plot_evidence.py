"""Demo and replay figures as evidence: measured visible, units on the axes, nothing clipped,
styles that survive greyscale.

The figures are inspected as matplotlib objects (the PNG writers save these same figures):

* the measured curve is drawn before the prediction, below it (lower zorder), thicker;
* measured and predicted differ in dash AND marker (or marker fill), not only in colour;
* every y label names a quantity and a unit in brackets;
* a residual panel's y range holds every point it draws (a 50 Pa spike among 1 Pa noise too:
  a percentile zoom would cut it).
"""
import re

import numpy as np
import pytest

from vsf_sensor_ros.demo.plots import components_figure, pressure_figure

UNIT_LABEL = re.compile(r"^[^\[]*[A-Za-zΔ][^\[]* \[(Pa|N|s)\]$")


def _style(line):
    return (line.get_linestyle(), line.get_marker(), line.get_markerfacecolor() == "none"
            or line.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0)))


def _data_lines(ax):
    return [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]


def _pressure_case():
    rng = np.random.default_rng(1)
    t = np.arange(0.0, 4.0, 0.02)
    pred = 300.0 * ((t > 2.0) & (t < 3.0))
    meas = 101325.0 + pred + rng.normal(0.0, 1.0, t.size)
    pred = pred + 101325.0 * (t > 1.0)              # tared at 1 s
    meas[150] += 50.0                               # one spike after the tare (t = 3.0 s)
    return t, meas, pred


def test_pressure_figure_draws_measured_first_thicker_and_apart_in_greyscale():
    t, meas, pred = _pressure_case()
    fig = pressure_figure(t, meas, t, pred, tare_t=1.0, contact_span=(2.0, 3.0))
    ax_all, ax, ax_r = fig.axes
    for a in (ax_all, ax):
        m, p = _data_lines(a)[:2]
        assert m.get_label().startswith("measured") and p.get_label() == "predicted"
        assert m.get_zorder() < p.get_zorder() and m.get_linewidth() > p.get_linewidth()
        sm, sp = _style(m), _style(p)
        assert sm[0] != sp[0] and sm[1] != sp[1], (sm, sp)     # dash and marker both differ
    for a in fig.axes:
        assert UNIT_LABEL.match(a.get_ylabel()), a.get_ylabel()
    assert UNIT_LABEL.match(ax_r.get_xlabel()), ax_r.get_xlabel()


def test_pressure_residual_panel_holds_every_point_after_the_tare_spike_included():
    t, meas, pred = _pressure_case()
    fig = pressure_figure(t, meas, t, pred, tare_t=1.0, contact_span=(2.0, 3.0))
    ax_r = fig.axes[2]
    res = (meas - pred)[t > 1.0]
    lo, hi = ax_r.get_ylim()
    assert lo <= res.min() and res.max() <= hi          # the 50 Pa spike is inside
    zoom = fig.axes[1]
    late = np.concatenate([meas[t > 1.0], pred[t > 1.0]])
    lo, hi = zoom.get_ylim()
    assert lo <= late.min() and late.max() <= hi


def test_component_figure_measured_first_per_component_and_labels_name_the_quantity():
    t = np.arange(0.0, 2.0, 0.02)
    pred = np.stack([np.sin(t), np.cos(t), 0 * t], axis=1)
    meas = pred + 0.01
    meas[40, 2] = 3.0                                   # a spike in fz
    fig = components_figure(t, meas, t, pred, ["fx", "fy", "fz"], tare_t=0.2, unit="N")
    ax, ax_r = fig.axes[:2]
    lines = _data_lines(ax)
    for k, name in enumerate(["fx", "fy", "fz"]):
        m = next(ln for ln in lines if ln.get_label() == f"{name} measured")
        p = next(ln for ln in lines if ln.get_label() == f"{name} predicted")
        assert lines.index(m) < lines.index(p) and m.get_zorder() < p.get_zorder()
        assert m.get_linewidth() > p.get_linewidth()
        assert _style(m)[0] != _style(p)[0] and _style(m)[2] != _style(p)[2]   # dash and marker fill
    markers = {ln.get_marker() for ln in lines}
    assert len(markers) == 3                            # one marker per component, not only a colour
    assert ax.get_ylabel() == "force F [N]"
    assert ax_r.get_ylabel().startswith("residual") and ax_r.get_ylabel().endswith("[N]")
    lo, hi = ax_r.get_ylim()
    assert lo <= 0.01 and hi >= 3.0                     # every residual, the 3 N spike too


def test_replay_figure_marks_in_sample_fits_and_shows_every_point():
    from vsf_sensor_ros.demo.replay_analysis import replay_figure
    t = np.arange(0.0, 3.0, 0.05)
    off = 101000.0
    meas_dp = np.clip(400 * np.sin(np.pi * t / 3.0), 0, None)
    pred_dp = 1.25 * meas_dp
    gain_dp = 1.0 * meas_dp + 5.0
    test = t > 1.5
    series = {"t": t, "meas": off + meas_dp, "pred": off + pred_dp, "gain": off + gain_dp,
              "offset": np.full(t.size, off), "oos_gain": off + 0.98 * meas_dp, "oos_test": test}
    summary = {"pressure": {"correlation": 0.99, "residual_rms_contact_after_tare_pa": 80.0,
                            "residual_rms_contact_after_gain_in_sample_pa": 5.0,
                            "predicted_over_measured_dp": 1.25, "frames_contact": 50, "lag_s": 0.066,
                            "lag_fitted_in_sample": True,
                            "gain_fit_in_sample": {"sensor_gain": 0.8},
                            "gain_fit_out_of_sample": {"sensor_gain": 0.79, "test_frames": int(test.sum()),
                                                       "residual_rms_unloading_after_tare_pa": 70.0,
                                                       "residual_rms_unloading_after_gain_pa": 6.0}}}
    fig = replay_figure(series, summary)
    ax, sc, ax_r, ax_o = fig.axes
    texts = " ".join([fig._suptitle.get_text()] + [a.get_title() for a in fig.axes] +
                     [t.get_text() for a in fig.axes if a.get_legend() for t in a.get_legend().get_texts()])
    assert "fitted in-sample" in texts and "in-sample gain" in texts and "out of sample" in texts
    lines = _data_lines(ax)
    assert lines[0].get_label().startswith("measured")
    assert all(lines[0].get_zorder() < ln.get_zorder() and lines[0].get_linewidth() > ln.get_linewidth()
               for ln in lines[1:])
    assert len({(_style(ln)[0], ln.get_marker()) for ln in lines}) == len(lines)
    for a in fig.axes:
        assert UNIT_LABEL.match(a.get_ylabel()), a.get_ylabel()
        assert UNIT_LABEL.match(a.get_xlabel()), a.get_xlabel()
    # the scatter and the residuals hold every point
    for a, values in ((sc, [pred_dp[meas_dp > 50], gain_dp[meas_dp > 50]]),
                      (ax_r, [meas_dp - pred_dp, meas_dp - gain_dp])):
        lo, hi = a.get_ylim()
        v = np.concatenate(values)
        assert lo <= v.min() and v.max() <= hi


@pytest.mark.parametrize("unit, quantity", [("Pa", "pressure p [Pa]"), ("N", "force F [N]")])
def test_component_axis_quantity_follows_the_unit(unit, quantity):
    t = np.arange(5) * 0.1
    fig = components_figure(None, None, t, np.zeros((5, 1)), ["x"], unit=unit)
    assert fig.axes[0].get_ylabel() == quantity


def test_predictions_in_flight_during_the_tare_call_stay_out_of_the_zoom_and_are_counted():
    t, meas, pred = _pressure_case()
    # the two predictions stamped right after the tare call are still untared (computed in flight)
    after = np.flatnonzero(t >= 1.0)[:2]
    pred[after] = 0.0
    fig = pressure_figure(t, meas, t, pred, tare_t=1.0, contact_span=(2.0, 3.0))
    zoom, ax_r = fig.axes[1], fig.axes[2]
    tared = t > t[after[-1]]
    lo, hi = zoom.get_ylim()
    assert lo > 1e5 - 100                              # zoomed on the tared stretch: 0 Pa is out
    assert lo <= min(meas[tared].min(), pred[tared].min()) and hi >= max(meas[tared].max(), pred[tared].max())
    assert any("2 prediction(s) published while the tare call was in flight" in x.get_text()
               for x in zoom.texts)
    lo, hi = ax_r.get_ylim()
    res = (meas - pred)[tared]
    assert lo <= res.min() and res.max() <= hi and hi < 1000.0
