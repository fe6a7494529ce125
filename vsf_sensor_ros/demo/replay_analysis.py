"""The poke replay's recording and analysis: data.json, poke onset, F/T lag, the summary, its definitions and
the pressure plot."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from vsf_sensor_ros.demo.config import DemoError

if TYPE_CHECKING:  # no import cycle at run time
    from vsf_sensor_ros.demo.session import SessionResult

PRESSURE_SENSOR = "punyo_pressure"
PRESSURE_TOPIC = "punyo/pressure"
CONTACT_BODIES = ["punyo", "world"]
CONTACT_DP_PA = 50.0          # frames whose measured Δp exceeds this count as "contact" in the summary
ONSET_DP_PA = 50.0            # first frame above this marks the poke (tare and bias happen before)
TARE_SAMPLES = 10
MAX_LAG_FRAMES = 6
HPA_TO_PA = 100.0


class ReplayError(DemoError):
    """The replay could not run: a ``reason`` word (``'missing'``, ``'bad_frame'``, ``'no_poke'``,
    ``'child_exited'``, ``'timeout'``, ``'tare_failed'`` ...), the recording ``path`` at fault and the
    offending ``value`` (a frame index or count, a topic, an exit code), each None when none."""


@dataclass
class Recording:
    """Frames of a recorded poke: ``t`` (n,) s, ``pressure_pa`` (n,), ``q`` (n, 6) rad,
    ``wrench`` (n, 6) N / N·m (base frame)."""

    t: np.ndarray
    pressure_pa: np.ndarray
    q: np.ndarray
    wrench: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def force_change(self, bias_frames: int = 30) -> np.ndarray:
        """``(n,)`` |F − bias| N, the bias being the mean force of the first ``bias_frames`` frames."""
        return np.linalg.norm(self.wrench[:, :3] - self.wrench[:bias_frames, :3].mean(axis=0), axis=1)


def nearest_frame(t: np.ndarray, s: float, tol: float = 0.002) -> Optional[int]:
    """Index of the frame time in ``t`` (s) nearest ``s`` (s), None when farther than ``tol`` s."""
    k = int(np.argmin(np.abs(t - s)))
    return k if abs(t[k] - s) <= tol else None


def frames_of(rec: Recording, stamps_ns: Sequence[int]) -> List[Optional[int]]:
    """:func:`nearest_frame` of each header stamp (int ns) in ``rec``."""
    return [nearest_frame(rec.t, s * 1e-9) for s in stamps_ns]


def load_recording(path: Path, frames: Optional[Tuple[int, int]] = None) -> Recording:
    """Read ``data.json`` (optionally frames ``a:b``).  Raises ReplayError: missing file (or a folder),
    not JSON, wrong layout (names the frame) or too few frames."""
    path = Path(path)
    if path.is_dir():
        raise ReplayError(f"recording {str(path)!r} is a folder: give its data.json", "is_folder", path)
    if not path.is_file():
        raise ReplayError(f"recording {str(path)!r} does not exist (the recording's data.json: "
                          "make demo-real RECORDING=/path/to/data.json, or --recording)", "missing", path)
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReplayError(f"recording {str(path)!r} is not valid JSON: {exc}", "not_json", path) from None
    if frames is not None:
        data = data[frames[0]:frames[1]]
    rows = []
    for i, f in enumerate(data):
        try:
            t, p, q, w = f
            rows.append([float(t), float(p), *map(float, q), *map(float, w)])
        except (TypeError, ValueError) as exc:
            raise ReplayError(f"frame {i} is not [t, hPa, 6 joints, 6 wrench]: {exc}", "bad_frame", path,
                              i) from None
        if len(rows[-1]) != 14 or not all(map(math.isfinite, rows[-1])):
            raise ReplayError(f"frame {i} has {len(rows[-1]) - 2} joint+wrench values or non-finite ones",
                              "bad_frame", path, i)
    if len(rows) < 2 * TARE_SAMPLES:
        raise ReplayError(f"recording has {len(rows)} frames; at least {2 * TARE_SAMPLES} are needed",
                          "too_few_frames", path, len(rows))
    a = np.asarray(rows)
    a = a[np.argsort(a[:, 0], kind="stable")]
    return Recording(a[:, 0], a[:, 1] * HPA_TO_PA, a[:, 2:8], a[:, 8:14])


def poke_onset(rec: Recording) -> int:
    """First frame whose pressure exceeds the median of the first 5 by ``ONSET_DP_PA``.  Raises
    ReplayError: no such frame, or fewer than ``TARE_SAMPLES + 4`` frames before it."""
    dp = rec.pressure_pa - np.median(rec.pressure_pa[:5])
    above = np.flatnonzero(dp > ONSET_DP_PA)
    if above.size == 0:
        raise ReplayError(f"the pressure never rises {ONSET_DP_PA:g} Pa above its start: no poke", "no_poke")
    k = int(above[0])
    if k < TARE_SAMPLES + 4:
        raise ReplayError(f"the poke starts at frame {k}: fewer than {TARE_SAMPLES + 4} contact-free frames "
                          "before it for the tare", "poke_too_early", value=k)
    return k


def estimate_lag(rec: Recording, bias_frames: int, max_frames: int = MAX_LAG_FRAMES) -> Tuple[int, float]:
    """F/T lag behind the pressure: the frame shift ``s`` maximising the correlation of Δp[k] with
    ``|F − bias|[k + s]``; returns ``(s, s × median frame step)``."""
    dp = rec.pressure_pa - rec.pressure_pa[:bias_frames].mean()
    mag = rec.force_change(bias_frames)
    r = [np.corrcoef(dp[:len(dp) - s], mag[s:])[0, 1] for s in range(max_frames + 1)]
    best = int(np.argmax(np.nan_to_num(r, nan=-np.inf)))
    return best, best * float(np.median(np.diff(rec.t)))


def pressure_metrics(meas_dp: np.ndarray, pred_dp: np.ndarray, gain_dp: np.ndarray,
                     threshold: float = CONTACT_DP_PA) -> Dict[str, Any]:
    """Summary numbers over the frames with ``meas_dp > threshold`` (Pa; keys defined in
    ``replay_analysis.DEFINITIONS``), ``gain_dp`` being the prediction after the in-sample gain.  Raises
    ReplayError: fewer than 3 such frames."""
    sel = meas_dp > threshold
    n = int(sel.sum())
    if n < 3:
        raise ReplayError(f"only {n} frames with measured dp > {threshold:g} Pa",
                          "too_few_contact_frames", value=n)
    m, p, g = meas_dp[sel], pred_dp[sel], gain_dp[sel]
    return {
        "frames_contact": n,
        "correlation": float(np.corrcoef(p, m)[0, 1]),
        "predicted_over_measured_dp": float((p @ m) / (m @ m)),
        "residual_rms_contact_after_tare_pa": float(np.sqrt(np.mean((m - p) ** 2))),
        "residual_rms_contact_after_gain_in_sample_pa": float(np.sqrt(np.mean((m - g) ** 2))),
    }


def analyse(session: SessionResult, offset_pa: Optional[float], tare_frame: int,
            rec: Recording) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The summary (keys: :data:`DEFINITIONS`) and per-frame series of a replay tared (``offset_pa``) before
    ``tare_frame``.  Raises ReplayError: a topic missing, no tare offset, too few contact frames."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    from vsf_sensor_ros.demo.ur5e import PUNYO_BODY, UR5E_JOINTS, ur5e_world
    from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
    from vsf_sensor_ros.sensor import GainCalibrator, PunyoPressureSensor, SimState

    def log(topic: str) -> Any:
        if topic not in session.logs or not len(session.logs[topic]):
            raise ReplayError(f"nothing recorded on {topic}", "nothing_recorded", value=topic)
        return session.logs[topic]

    if offset_pa is None:
        raise ReplayError(f"the pressure tare failed: {session.tare.message}", "tare_failed")
    frame_of = {int(round(rec.t[k] * 1e9)): k for k in range(len(rec))}
    # warm-up joint states (stamped before the recording, no Float32 with them) are left out
    js = [k for k in map(frame_of.get, log("/joint_states").stamps_ns()) if k is not None]
    hpa = [m.data for m in log(f"/{PRESSURE_TOPIC}").decode()]
    if len(hpa) != len(js):
        raise ReplayError(f"{len(hpa)} Float32 pressures but {len(js)} joint states of recorded frames",
                          "count_mismatch", value=(len(hpa), len(js)))
    meas = np.full(len(rec), np.nan)
    meas[js] = np.array(hpa, dtype=np.float64) * HPA_TO_PA                   # float32 hPa -> Pa
    pred = np.full(len(rec), np.nan)
    predicted = log(f"/{PRESSURE_SENSOR}/predicted")
    for k, m in zip(frames_of(rec, predicted.stamps_ns()), predicted.decode()):
        if k is not None:
            pred[k] = m.fluid_pressure
    # the wrench node's own clouds when a relay added the membrane's row to /contacts (replay_camera)
    contacts = log("/wrench_contacts" if "/wrench_contacts" in session.logs else "/contacts")
    clouds = {k: pointcloud2_to_contacts(deserialize_message(d, PointCloud2), CONTACT_BODIES).contacts
              for k, d in zip(frames_of(rec, contacts.stamps_ns()), contacts.data) if k is not None}
    off = float(offset_pa)
    usable = np.isfinite(meas) & np.isfinite(pred)
    idx = np.array([k for k in range(tare_frame, len(rec)) if usable[k] and k in clouds], dtype=int)

    # The library on the same recorded states: the pressure model, then its gain calibration.
    world = ur5e_world()

    def tared() -> Any:
        sensor = PunyoPressureSensor(PRESSURE_SENSOR, PUNYO_BODY)
        sensor.attach(world.body_model(PUNYO_BODY))
        sensor.set_calibration({"tare": [off]})
        return sensor
    sensor, states = tared(), []
    for k in idx:
        world.set_joint_positions(UR5E_JOINTS, rec.q[k])
        states.append(SimState(world.body_transforms(), {}, clouds[k]))
    lib = np.array([float(sensor.predict(s)[0]) for s in states])
    calibrator = GainCalibrator(min_samples=10)
    used = calibrator.fit(sensor, states, [meas[k] for k in idx])
    after_gain = np.array([float(sensor.predict(s)[0]) for s in states])

    meas_dp, pred_dp, gain_dp = meas[idx] - off, pred[idx] - off, after_gain - off
    metrics = pressure_metrics(meas_dp, pred_dp, gain_dp)
    k_gain = float(calibrator.last_fit.gain[0])
    oos, oos_series = out_of_sample_gain(tared(), states, meas[idx], off, pred_dp)
    summary = {
        "recording": {"frames": len(rec), "duration_s": float(rec.t[-1] - rec.t[0])},
        "tare": {"frame": tare_frame, "success": session.tare.success, "offset_pa": off,
                 "answer": session.tare.message},
        "published": {t.strip("/"): len(session.logs[t]) for t in sorted(session.logs)},
        "pressure": {
            **metrics,
            "lag_s": None,                                     # filled by main()
            "frames_compared": int(idx.size),
            "gain_fit_in_sample": {"sensor_gain": k_gain, "contact_samples": used,
                                   "relative_std_error": float(calibrator.last_fit.relative_std_error[0])},
            "base_area_m2": float(sensor.base_area),
            "effective_base_area_in_sample_m2": float(sensor.base_area) / k_gain,
            "gain_fit_out_of_sample": oos,
            "library_vs_node_max_abs_pa": float(np.max(np.abs(lib - pred[idx]))),
            "peak_measured_dp_pa": float(np.max(meas_dp)),
            "peak_predicted_dp_pa": float(np.max(pred_dp)),
        },
        "definitions": DEFINITIONS,
        "wall_s": session.wall_s,
    }
    series = {"t": rec.t[idx] - rec.t[0], "meas": meas[idx], "pred": pred[idx], "gain": after_gain,
              "offset": np.full(idx.size, off), "tare_t": np.array([rec.t[tare_frame] - rec.t[0]]),
              **oos_series}
    return summary, series


def out_of_sample_gain(sensor: Any, states: Sequence[Any], meas: np.ndarray, offset: float,
                       pred_dp: np.ndarray, threshold: float = CONTACT_DP_PA
                       ) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The gain (``GainCalibrator`` on the tared ``sensor``) fitted on the loading (up to the measured peak),
    tested on the unloading (measured dp > ``threshold`` Pa); ``states``, ``meas`` Pa, ``pred_dp`` Pa ``(N,)``
    in time order.  ``(entry, {"oos_gain": (N,) Pa, "oos_test": (N,) bool})``; ``{"skipped": why}, {}``."""
    from vsf_sensor_ros.sensor import GainCalibrator
    meas_dp = np.asarray(meas, float) - offset
    peak = int(np.argmax(meas_dp))
    test = (np.arange(len(meas_dp)) > peak) & (meas_dp > threshold)
    if not test.any():
        return {"skipped": "no unloading frame above the contact threshold"}, {}
    calibrator = GainCalibrator(min_samples=10)
    try:
        used = calibrator.fit(sensor, list(states[:peak + 1]), [float(v) for v in meas[:peak + 1]])
    except ValueError as exc:
        return {"skipped": f"loading fit refused: {exc}"}, {}
    predicted = np.array([float(sensor.predict(s)[0]) for s in states])
    m, g, p = meas_dp[test], predicted[test] - offset, np.asarray(pred_dp, float)[test]
    entry = {"fit_on": "loading: frames up to the measured peak", "tested_on": "unloading: frames after the "
             f"peak with measured dp > {threshold:g} Pa", "sensor_gain": float(calibrator.last_fit.gain[0]),
             "fit_contact_samples": used, "test_frames": int(test.sum()),
             "residual_rms_unloading_after_tare_pa": float(np.sqrt(np.mean((m - p) ** 2))),
             "residual_rms_unloading_after_gain_pa": float(np.sqrt(np.mean((m - g) ** 2)))}
    return entry, {"oos_gain": predicted, "oos_test": test}


DEFINITIONS = {
    "recording": "the recorded poke",
    "tare": "the pressure tare called during the replay",
    "pressure": "the pressure analysis (keys below)",
    "bag": "the MCAP recording of the replay's topics",
    "gain_fit_in_sample": "GainCalibrator on every compared frame, scored on the same frames (keys below)",
    "recording.frames": "frames of the recording replayed",
    "recording.duration_s": "last minus first frame time (s)",
    "tare.frame": "frame at which the wrench bias and the pressure tare were called (three before the poke)",
    "tare.success": "the pressure tare's answer",
    "tare.offset_pa": "the pressure tare's offset (Pa): the contact-free measured mean",
    "tare.answer": "the node's answer text, as sent",
    "published": "messages recorded per topic",
    "dp": "pressure minus the node's tare offset (Pa): measured from the recorded std_msgs/Float32 hPa "
          "x 100, predicted from the recorded punyo_pressure/predicted; frames from the tare on",
    "frames_compared": "frames from the tare on with a measured pressure, a prediction and a recorded "
                       "contacts message: the frames every number below is computed on",
    "frames_contact": f"contact frames: frames whose measured dp exceeds {CONTACT_DP_PA:g} Pa",
    "correlation": "Pearson r of predicted dp and measured dp over the contact frames",
    "predicted_over_measured_dp": "least-squares slope of predicted dp against measured dp over the contact "
                                  "frames (sum p*m / sum m^2), tare only: > 1 = the model predicts more than "
                                  "the bubble shows (the inverse sense of gain_fit_*.sensor_gain)",
    "residual_rms_contact_after_tare_pa": "RMS of measured - predicted over the contact frames, tare only "
                                          "(no parameter fitted on these frames)",
    "residual_rms_contact_after_gain_in_sample_pa": "the same after GainCalibrator, fitted IN-SAMPLE: on "
                                                    "every compared frame with a contact in the recorded "
                                                    "contacts stream, the frames it is then scored on",
    "gain_fit_in_sample.sensor_gain": "the gain the pressure sensor applies to its contact term (measured ~ "
                                      "gain x model), fitted in-sample as above",
    "gain_fit_in_sample.contact_samples": "contact states the in-sample fit used",
    "gain_fit_in_sample.relative_std_error": "standard error of the in-sample gain / the gain",
    "base_area_m2": "the model's A_base: area of the bubble mesh's shadow on its base plane",
    "effective_base_area_in_sample_m2": "base_area_m2 / gain_fit_in_sample.sensor_gain",
    "gain_fit_out_of_sample": "the gain fitted on the loading (frames up to the measured peak) and scored on "
                              "the unloading (frames after the peak, contact frames only), which the fit "
                              "never saw: sensor_gain, fit_contact_samples, test_frames, "
                              "residual_rms_unloading_after_tare_pa (tare only, same frames) and "
                              "residual_rms_unloading_after_gain_pa; the lag is still the one estimated on "
                              "the whole recording; skipped (with why) when a side has too few frames",
    "lag_s": "time shift applied to the wrench (F/T lag behind pressure and joints), s",
    "lag_fitted_in_sample": "true: lag_s was estimated on this same recording (--lag auto), by maximising "
                            "the correlation of dp with the wrench magnitude; false: given with --lag",
    "library_vs_node_max_abs_pa": "largest difference between the node's prediction and the library's on "
                                  "the states rebuilt from the recorded contacts and joint states",
    "peak_measured_dp_pa": "largest measured dp over the compared frames",
    "peak_predicted_dp_pa": "largest predicted dp (tare only) over the compared frames",
    "bag.path": "the MCAP recording of the replay",
    "bag.topics": "topics in it",
    "wall_s": "wall time of the replay session (s)",
    "definitions": "this table",
}


# curves told apart by dash and marker; the measured first, thickest and black
MEASURED_STYLE = dict(color="black", linestyle="-", linewidth=2.6, marker="o", markersize=4, zorder=2)
TARE_ONLY_STYLE = dict(color="tab:red", linestyle="--", linewidth=1.2, marker="s", markersize=3.5,
                       markerfacecolor="none", zorder=3)
GAIN_IN_SAMPLE_STYLE = dict(color="tab:blue", linestyle="-.", linewidth=1.2, marker="^", markersize=3.5,
                            markerfacecolor="none", zorder=4)
GAIN_OUT_OF_SAMPLE_STYLE = dict(color="tab:green", linestyle=":", linewidth=1.6, marker="x", markersize=4,
                                zorder=4)


def _span(*arrays: np.ndarray) -> Tuple[float, float]:
    """``(lo, hi)`` over every finite value of ``arrays``."""
    v = np.concatenate([np.asarray(a, float).ravel() for a in arrays])
    v = v[np.isfinite(v)]
    return (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)


def finish_axes(ax: Any, ylabel: str, title: str, legend: Optional[str],
                xlabel: str = "recording time t [s]") -> None:
    """Label ``ax``, title it (10 pt), legend at ``legend`` (None: no legend), grid."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if legend is not None:
        ax.legend(loc=legend, fontsize=8)
    ax.grid(alpha=0.3)


def replay_figure(series: Dict[str, np.ndarray], summary: Dict[str, Any]) -> Any:
    """The real poke's figure from :func:`analyse`'s ``series`` and ``summary``: Δp over time, predicted
    against measured, residual over time, out of sample; every axis autoscaled to all its points."""
    from matplotlib.figure import Figure

    p = summary["pressure"]
    t, off = series["t"], series["offset"]
    m, pr, g = series["meas"] - off, series["pred"] - off, series["gain"] - off
    every = max(1, len(t) // 60)
    fig = Figure(figsize=(13, 8.4), layout="constrained")
    (ax, sc), (ax_r, ax_o) = fig.subplots(2, 2, width_ratios=[1.6, 1])
    lag = p.get("lag_s")
    lag_text = "" if lag is None else (f"; wrench lag {lag * 1000:.0f} ms" +
                                       (" fitted in-sample" if p.get("lag_fitted_in_sample") else " given"))
    fig.suptitle("Real UR5e poke (recorded Punyo pressure) replayed through sensor_node\n"
                 f"tare from the contact-free frames before the poke{lag_text}")

    ax.plot(t, m, markevery=every, label="measured (real Punyo, Float32 hPa x 100)", **MEASURED_STYLE)
    ax.plot(t, pr, markevery=every, label="predicted, tare only (seed model)", **TARE_ONLY_STYLE)
    k_in = p["gain_fit_in_sample"]["sensor_gain"]
    ax.plot(t, g, markevery=every, label=f"predicted, tare + gain {k_in:.2f} fitted in-sample",
            **GAIN_IN_SAMPLE_STYLE)
    ax.axhline(CONTACT_DP_PA, color="0.5", lw=0.8, ls=(0, (1, 3)), zorder=1,
               label=f"contact threshold {CONTACT_DP_PA:g} Pa")
    finish_axes(ax, "pressure change Δp = p − tare offset [Pa]", f"Δp over time: r = {p['correlation']:.3f}; "
                f"RMS over contact frames {p['residual_rms_contact_after_tare_pa']:.0f} Pa tare only, "
                f"{p['residual_rms_contact_after_gain_in_sample_pa']:.0f} Pa with the in-sample gain",
                "upper right")

    contact = m > CONTACT_DP_PA
    hollow = dict(linestyle="none", markersize=4, markerfacecolor="none")
    sc.plot(m[contact], pr[contact], marker="s", color="tab:red", label="tare only", **hollow)
    sc.plot(m[contact], g[contact], marker="^", color="tab:blue", label="tare + gain (in-sample)", **hollow)
    lo, hi = _span(m[contact], pr[contact], g[contact])
    sc.plot([lo, hi], [lo, hi], color="black", lw=1.0, ls="-", label="predicted = measured")
    slope = p["predicted_over_measured_dp"]
    sc.plot([lo, hi], [lo * slope, hi * slope], color="tab:red", lw=0.9, ls=":",
            label=f"least-squares slope {slope:.2f} (tare only)")
    finish_axes(sc, "predicted pressure change Δp [Pa]", f"contact frames (measured Δp > {CONTACT_DP_PA:g} "
                f"Pa): {p['frames_contact']}", "upper left", "measured pressure change Δp [Pa]")

    ax_r.axhline(0.0, color="0.5", lw=0.8, zorder=1)
    ax_r.plot(t, m - pr, markevery=every, label="tare only", **{**TARE_ONLY_STYLE, "zorder": 2})
    ax_r.plot(t, m - g, markevery=every, label="tare + gain (in-sample)", **GAIN_IN_SAMPLE_STYLE)
    finish_axes(ax_r, "residual, measured − predicted Δp [Pa]",
                "residual over time (every frame, autoscaled)", "upper right")

    o = p.get("gain_fit_out_of_sample") or {}
    if "oos_gain" in series and "skipped" not in o:
        test = series["oos_test"]
        ax_o.plot(t[test], m[test], label="measured", **{**MEASURED_STYLE, "markevery": None})
        ax_o.plot(t[test], pr[test], label="predicted, tare only", **TARE_ONLY_STYLE)
        ax_o.plot(t[test], (series["oos_gain"] - off)[test], **GAIN_OUT_OF_SAMPLE_STYLE,
                  label=f"predicted, gain {o['sensor_gain']:.2f} fitted on the loading")
        finish_axes(ax_o, "pressure change Δp [Pa]", "out of sample: gain fitted on the loading only,\n"
                    f"scored on the unloading ({o['test_frames']} frames)\nRMS "
                    f"{o['residual_rms_unloading_after_tare_pa']:.0f} Pa tare only, "
                    f"{o['residual_rms_unloading_after_gain_pa']:.0f} Pa with that gain", "lower left")
    else:
        ax_o.text(0.5, 0.5, f"out-of-sample fit skipped: {o.get('skipped', 'not computed')}",
                  ha="center", va="center", transform=ax_o.transAxes, fontsize=9, wrap=True)
        finish_axes(ax_o, "pressure change Δp [Pa]", "out of sample", None)
    return fig


def print_report(summary: Dict[str, Any], lag: float, lag_fitted: bool, out: Path) -> None:
    """Print the replay's headline figures from ``summary`` (wrench ``lag`` s) and the files in ``out``."""
    p, m = summary["pressure"], summary.get("membrane_force")
    o = p["gain_fit_out_of_sample"]
    print(f"\npressure over {p['frames_contact']} frames with measured dp > {CONTACT_DP_PA:g} Pa: r "
          f"{p['correlation']:.4f}, predicted/measured dp {p['predicted_over_measured_dp']:.3f}; RMS "
          f"{p['residual_rms_contact_after_tare_pa']:.1f} Pa tare only, "
          f"{p['residual_rms_contact_after_gain_in_sample_pa']:.1f} Pa with the gain "
          f"{p['gain_fit_in_sample']['sensor_gain']:.3f} fitted in-sample; out of sample "
          + (f"skipped: {o['skipped']}" if "skipped" in o else
             f"{o['residual_rms_unloading_after_gain_pa']:.1f} Pa on the unloading")
          + f"; lag {lag * 1000:.0f} ms" + (" (fitted in-sample)" if lag_fitted else ""))
    if m is not None:
        c = m["scale_calibration"]
        print(f"dense force from the camera ({m['frames_measured_by_node']} frames) against the F/T: r "
              f"{m['correlation']:.3f}, ratio at the peak {m['ratio_at_peak']:.2f}, "
              f"RMS {m['rms_error_n']:.2f} N; "
              + (f"scale skipped: {c['skipped']}" if "skipped" in c else f"scale {c['scale']:.3f}")
              + f"; {m['estimate_ms_median']:.1f} ms a frame; node vs library "
              f"{m['node_vs_library_max_abs_n']:.2g} N at most")
    extra = "membrane_force.npz, membrane_force.png, membrane_force_node.yaml, " if m is not None else ""
    print(f"files in {out}/: run.mcap + metadata.yaml, summary.json, pressure_real.png, {extra}"
          "calibration.yaml, ur5e.urdf, sensor_node.yaml, logs/")
