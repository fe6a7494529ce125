"""The replay's analysis: the summary and per-frame series from what a session recorded
(:func:`analyse`, with the library's pressure model and gain calibration on the rebuilt states),
the summary's :data:`DEFINITIONS` and the pressure plot (:func:`plot`)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import numpy as np

from vsf_sensor_ros.demo.replay_recording import (CONTACT_BODIES, CONTACT_DP_PA, HPA_TO_PA, PRESSURE_SENSOR,
                                                  PRESSURE_TOPIC, Recording, ReplayError, pressure_metrics)

if TYPE_CHECKING:  # the session type only, for annotations (no import cycle at run time)
    from vsf_sensor_ros.demo.replay import Session


def analyse(session: Session, rec: Recording, out: Path) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """Summary dict and the per-frame series (see the docstring of :mod:`vsf_sensor_ros.demo.replay`).

    Raises:
        ReplayError: a topic missing, the tare offset unknown, or too few contact frames.
    """
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2

    from vsf_sensor_ros.demo.ur5e import PUNYO_BODY, UR5E_JOINTS, ur5e_world
    from vsf_sensor_ros.ros.messages.contacts import pointcloud2_to_contacts
    from vsf_sensor_ros.sensor import GainCalibrator, PunyoPressureSensor, SimState

    def log(topic: str) -> Any:
        if topic not in session.logs or not len(session.logs[topic]):
            raise ReplayError(f"nothing recorded on {topic}")
        return session.logs[topic]

    if session.tare_offset_pa is None:
        raise ReplayError(f"the pressure tare failed: {session.tare_message}")
    frame_of = {int(round(rec.t[k] * 1e9)): k for k in range(len(rec))}
    # warm-up joint states (stamped before the recording, no Float32 with them) are left out
    js = [m for m in log("/joint_states").decode()
          if m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec in frame_of]
    hpa = [m.data for m in log(f"/{PRESSURE_TOPIC}").decode()]
    if len(hpa) != len(js):
        raise ReplayError(f"{len(hpa)} Float32 pressures but {len(js)} joint states of recorded frames")
    meas = np.full(len(rec), np.nan)
    for m, p in zip(js, hpa):
        k = frame_of.get(m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec)
        if k is not None:
            meas[k] = float(p) * HPA_TO_PA                     # float32 hPa -> Pa
    pred = np.full(len(rec), np.nan)
    for m in log(f"/{PRESSURE_SENSOR}/predicted").decode():
        k = _nearest_frame(rec.t, m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)
        if k is not None:
            pred[k] = m.fluid_pressure
    clouds = {}
    for data in log("/contacts").data:
        c = pointcloud2_to_contacts(deserialize_message(data, PointCloud2), CONTACT_BODIES)
        k = _nearest_frame(rec.t, c.stamp_ns * 1e-9)
        if k is not None:
            clouds[k] = c.contacts
    off = float(session.tare_offset_pa)
    after = np.arange(len(rec)) >= session.tare_frame
    usable = after & np.isfinite(meas) & np.isfinite(pred) & np.array([k in clouds for k in range(len(rec))])
    idx = np.flatnonzero(usable)

    # The library on the same recorded states: the pressure model, then its gain calibration.
    world = ur5e_world()
    sensor = PunyoPressureSensor(PRESSURE_SENSOR, PUNYO_BODY)
    sensor.attach(world.body_model(PUNYO_BODY))
    sensor.set_calibration({"tare": [off]})
    states = []
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
    summary = {
        "recording": {"frames": len(rec), "duration_s": float(rec.t[-1] - rec.t[0])},
        "tare": {"frame": session.tare_frame, "success": session.tare_success, "offset_pa": off,
                 "answer": session.tare_message},
        "published": {t.strip("/"): len(session.logs[t]) for t in sorted(session.logs)},
        "pressure": {
            **metrics,
            "lag_s": None,                                     # filled by main()
            "frames_compared": int(idx.size),
            "gain_calibrator": {"gain": k_gain, "contact_samples": used,
                                "relative_std_error": float(calibrator.last_fit.relative_std_error[0])},
            "base_area_m2": float(sensor.base_area),
            "effective_base_area_m2": float(sensor.base_area) / k_gain,
            "library_vs_node_max_abs_pa": float(np.max(np.abs(lib - pred[idx]))),
            "peak_measured_dp_pa": float(np.max(meas_dp)),
            "peak_predicted_dp_pa": float(np.max(pred_dp)),
        },
        "definitions": DEFINITIONS,
        "wall_s": session.wall_s,
    }
    series = {"t": rec.t[idx] - rec.t[0], "meas": meas[idx], "pred": pred[idx], "gain": after_gain,
              "offset": np.full(idx.size, off), "tare_t": np.array([rec.t[session.tare_frame] - rec.t[0]])}
    return summary, series


def _nearest_frame(t: np.ndarray, s: float, tol: float = 0.002) -> Optional[int]:
    k = int(np.argmin(np.abs(t - s)))
    return k if abs(t[k] - s) <= tol else None


DEFINITIONS = {
    "dp": "pressure minus the node's tare offset (Pa): measured from the recorded std_msgs/Float32 hPa "
          "x 100, "
          "predicted from the recorded punyo_pressure/predicted; frames from the tare on",
    "contact frames": f"frames whose measured dp exceeds {CONTACT_DP_PA:g} Pa",
    "correlation": "Pearson r of predicted dp and measured dp over the contact frames",
    "gain": "least-squares predicted dp / measured dp over the contact frames (sum p*m / sum m^2); "
            "> 1 = the model predicts more than the bubble shows",
    "residual_rms_contact_after_tare_pa": "RMS of measured - predicted over the contact frames, tare only",
    "residual_rms_contact_after_gain_pa": "the same after GainCalibrator (fitted in-sample on every frame "
                                          "with "
                                          "a contact in the recorded contacts stream)",
    "gain_calibrator.gain": "the gain the pressure sensor applies to its contact term (measured ~ gain x "
                            "model); effective base area = base area / gain",
    "lag_s": "time shift applied to the wrench (F/T lag behind pressure and joints)",
    "library_vs_node_max_abs_pa": "largest difference between the node's prediction and the library's on "
                                  "the states rebuilt from the recorded contacts and joint states",
}


def plot(series: Dict[str, np.ndarray], summary: Dict[str, Any], path: Path) -> Path:
    """Pressure over time (measured, predicted after tare, after gain) and a Δp scatter."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.6), layout="constrained")
    ax, sc = fig.subplots(1, 2, width_ratios=[1.7, 1])
    t, off = series["t"], series["offset"]
    ax.plot(t, series["meas"] / 100.0, "k-", lw=1.6, label="measured (real Punyo, Float32 hPa)")
    ax.plot(t, series["pred"] / 100.0, "C3--", lw=1.3, label="predicted, tare only (seed model)")
    ax.plot(t, series["gain"] / 100.0, "C0-", lw=1.0, label="predicted, tare + gain calibration")
    ax.set_xlabel("recording time (s)")
    ax.set_ylabel("bubble pressure (hPa)")
    p = summary["pressure"]
    ax.set_title(f"Real UR5e poke: r = {p['correlation']:.3f}, "
                 f"RMS {p['residual_rms_contact_after_tare_pa']:.0f} "
                 f"-> {p['residual_rms_contact_after_gain_pa']:.0f} Pa after gain (dp > 50 Pa)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    m, pr, g = series["meas"] - off, series["pred"] - off, series["gain"] - off
    sc.plot(m, pr, "C3.", ms=5, label="tare only")
    sc.plot(m, g, "C0.", ms=5, label="after gain")
    hi = float(max(np.max(m), np.max(pr), 1.0)) * 1.05
    sc.plot([0, hi], [0, hi], "k-", lw=0.8, label="predicted = measured")
    sc.plot([0, hi], [0, hi * p["gain"]], "C3:", lw=0.8, label=f"LS fit, gain {p['gain']:.2f}")
    sc.axvline(CONTACT_DP_PA, color="0.6", lw=0.8, ls="--")
    sc.set_xlabel("measured dp (Pa)")
    sc.set_ylabel("predicted dp (Pa)")
    sc.legend(loc="upper left", fontsize=8)
    sc.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    return path
