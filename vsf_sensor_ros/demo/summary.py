"""The demo's summary: ``summary.json``, the plots, and the one-screen table."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from vsf_sensor_ros.demo.config import DemoConfig, SensorInfo, press_body_indices
from vsf_sensor_ros.demo.session import SessionResult

DEFINITIONS = {
    # the run
    "world": "simulated world: embedded (the package's own arm) or kinova (Kinova Gen3 + Punyo assets)",
    "steps": "contacts messages (simulator steps) recorded",
    "sim_rate_hz": "simulator step rate requested (simulated Hz)",
    "achieved_rate_hz": "(steps - 1) / wall time between the first and last contacts message received",
    "duration_s": "simulated duration requested (s)",
    "sim_time_span_s": "last minus first contacts stamp recorded (simulated s)",
    "seed": "random seed of the simulator's measurement noise",
    "wall_time_s": "wall time of the whole session, start-up included (s)",
    "backend": "the physics engine that produced the contacts and the independent measured streams: "
               "klampt (contact_sim_node, Klampt/ODE) or mujoco (mujoco_contact_node)",
    "measured_source_mode": "the simulator's measured_source parameter: independent (each measured stream "
                            "from the most independent source the simulator has, per sensor below) or "
                            "model (every stream synthetic)",
    "measured_source": "per sensor: where the simulator's <sensor>/measured comes from: synthetic-model = "
                       "the package's own model on the simulator's contacts + offset + noise (agreement "
                       "holds by construction, up to the noise); klampt-native-contact-sensor = Klampt's own "
                       "C++ ContactSensor in the same ODE world + offset + noise; simulator-contact-forces = "
                       "the bubble-object contact force summed by the simulator + offset + noise; null = not "
                       "measured by the simulator",
    "tare": "the demo's one call of the node's global tare service",
    "tare.success": "the tare answered success and every sensor's tare is in the saved calibration file",
    "tare.message": "the node's answer, as sent (for the reader; nothing is parsed from it)",
    "tare.sim_time_s": "newest residual stamp (a measured-predicted pair) received before the tare "
                       "answer arrived: the newest sample the tare could average",
    "tare.call_ms": "wall time from sending the tare request to receiving its answer (ms)",
    "errors": "what went wrong in the session (empty when nothing did)",
    "definitions": "this table",
    # per sensor (sensors.<name>.<key>)
    "sensors": "one block per configured sensor, keys below",
    "type": "the sensor's model class",
    "published": "<sensor>/predicted messages recorded",
    "measured": "<sensor>/measured messages recorded",
    "matched_samples": "measured and predicted messages paired by equal header.stamp (the residual samples)",
    "latency_ms_p50": "median latency: wall receive time of <sensor>/predicted minus wall receive time of "
                      "the contacts message with the same header.stamp, both stamped by the middleware of "
                      "the demo's recorder process (ms)",
    "latency_ms_p99": "99th percentile of the same latency (ms)",
    "latency_ms_max": "largest latency (ms)",
    "latency_samples": "predictions whose contacts message was recorded (the latency samples)",
    "residual_rms_contact_free_before_tare": "RMS over all entries of measured - predicted (SI, measured x "
                                             "measured_scale), samples matched by header.stamp, over the "
                                             "contact-free steps (no contact on the bubble in the step nor "
                                             "in the steps just before and after it) whose prediction "
                                             "the node published (DDS send time) before the tare request "
                                             "was sent: the offset the tare is there to remove",
    "residual_rms_contact_free_after_tare": "the same RMS over the contact-free steps published after the "
                                            "tare answer arrived: compare with ..._contact_free_before_tare "
                                            "(same kind of steps) to see what the tare did",
    "residual_rms_in_contact_after_tare": "the same RMS over the steps in contact (the bubble touches "
                                          "something) published after the tare answer: how well the "
                                          "prediction follows the press, not a before/after of the tare",
    "tare_offset": "offset the tare added, tare - tare_sim_avg from the calibration file the node saved "
                   "after the tare (SI; list for vector sensors, entries/mean/max_abs for dense fields)",
    "tare_samples": "contact-free measured samples the node averaged for the tare (calibration file)",
    "tare_status": "tared when the saved calibration file holds the sensor's tare, else why not",
    # the pad against Klampt
    "pad_vs_klampt_native": "agreement of the package's Klampt-semantics ContactSensor (<pad>/predicted) "
                            "with Klampt's own C++ ContactSensor on the same contacts (<pad>/measured): "
                            "measured - predicted per force axis (N), samples matched by header.stamp and "
                            "published after the tare answer (the tare removes the simulated zero offset); "
                            "samples, mean, rms and max_abs over those samples (after_tare) and over the "
                            "ones whose contacts message has a bubble contact (in_contact); includes the "
                            "measured stream's noise; null without a pad measured by Klampt's sensor",
    "pad_vs_klampt_native.sensor": "the pad compared",
    "pad_vs_klampt_native.units": "unit of mean, rms and max_abs",
    "pad_vs_klampt_native.after_tare": "every matched sample published after the tare answer",
    "pad_vs_klampt_native.in_contact": "the after_tare samples whose step has a bubble contact",
    # the recording
    "bag": "the MCAP recording of the session",
    "bag.path": "the recording's file",
    "bag.topics": "messages written per topic",
    "bag.left_out": "messages received but not written per topic, and why",
    "bag.not_recorded": "topics the session could not record, and why",
    "vs_mujoco": "with --backend mujoco, per sensor MuJoCo measures itself (the pad from MuJoCo's force "
                 "sensor on the bubble: the contact force on the bubble in the pad frame; the load cell "
                 "from MuJoCo's touch sensor: the sum of the normal contact forces in a sphere of the "
                 "sensor's radius at the object's top face): measured - predicted per component (N, "
                 "predicted = the package's model on MuJoCo's contacts), samples matched by header.stamp "
                 "and published after the tare answer; mean, rms and max_abs over those samples "
                 "(after_tare) and over the ones with a bubble contact (in_contact); peak = the in-contact "
                 "sample of largest measured magnitude: measured and predicted there and "
                 "relative_difference = (|measured| - |predicted|) / |measured|; includes the measured "
                 "stream's offset left after the tare and its noise; the Punyo pressure and dense force "
                 "have no MuJoCo counterpart (synthetic); null with the klampt backend",
}


RUN_FILES = ("run.mcap", "metadata.yaml", "summary.json", "pressure.png", "force_field.png",
             "calibration.yaml")


def clear_outputs(out: Path, names: Sequence[str] = RUN_FILES) -> None:
    """Create ``out`` and remove an earlier run's ``names`` (its calibration.yaml would start the node
    tared); ValueError naming ``--out`` when ``out`` cannot be a directory."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out}: {exc.strerror}") from None
    for name in names:
        (out / name).unlink(missing_ok=True)


def series_for(session: SessionResult, s: SensorInfo) -> Tuple[Any, Any]:
    """``(predicted, measured)`` :class:`~vsf_sensor_ros.demo.analysis.Series` of a sensor (None: empty)."""
    from vsf_sensor_ros.demo.analysis import Series
    pred, meas = (session.logs.get(f"/{s.name}/{k}") for k in ("predicted", "measured"))
    return (Series.from_log(pred, s.kind) if pred else None,
            Series.from_log(meas, s.kind, measured=True, scale=s.measured_scale) if meas else None)


def tare_sim_time(response_ns: Optional[int], residuals: Sequence[Any]) -> Optional[float]:
    """Where the tare took effect: the newest residual stamp (s; a residual per pair the tare averages)
    received before its answer at ``response_ns``; None without either."""
    if response_ns is None:
        return None
    stamps = [np.array(r.stamps_ns(), dtype=np.int64)[np.array(r.recv_ns) < response_ns]
              for r in residuals if r is not None and len(r)]
    stamps = [s for s in stamps if s.size]
    return round(float(max(s.max() for s in stamps)) * 1e-9, 9) if stamps else None


def bubble_contact_stamps(cfg: DemoConfig, contacts: Any) -> np.ndarray:
    """Stamps (int64 ns) of the ``contacts`` in which the bubble touches something."""
    from vsf_sensor_ros.demo.analysis import touches
    if contacts is None or not len(contacts):
        return np.zeros(0, dtype=np.int64)
    bodies = press_body_indices(cfg)
    pressed = np.array([touches(d, bodies) for d in contacts.data], dtype=bool)
    return np.array(contacts.stamps_ns(), dtype=np.int64)[pressed]


def adjacent_stamps(stamps_ns: np.ndarray, contact_ns: np.ndarray) -> np.ndarray:
    """Stamps (int64 ns) of the steps ``(K,)`` right before and after one in ``contact_ns``."""
    order = np.unique(np.asarray(stamps_ns, dtype=np.int64))
    hit = np.flatnonzero(np.isin(order, np.asarray(contact_ns, dtype=np.int64)))
    idx = np.concatenate([hit - 1, hit + 1])
    return order[idx[(idx >= 0) & (idx < order.size)]]


def pad_vs_klampt_native(cfg: DemoConfig, series: Dict[str, Tuple[Any, Any]],
                         tare_response_ns: Optional[int], contact_stamp_ns: np.ndarray
                         ) -> Optional[Dict[str, Any]]:
    """``pad_vs_klampt_native`` (:data:`DEFINITIONS`) of the first pad Klampt measures; None without."""
    from vsf_sensor_ros.demo.analysis import agreement_numbers
    from vsf_sensor_ros.contact_sources.sim_sensors import SOURCE_KLAMPT_NATIVE
    for s in cfg.sensors:
        pred, meas = series.get(s.name, (None, None))
        if s.codec.pad_reading and s.measured_source == SOURCE_KLAMPT_NATIVE and pred is not None \
                and meas is not None:
            return {"sensor": s.name, "units": "N",
                    **agreement_numbers(pred, meas, tare_response_ns, contact_stamp_ns, list(s.codec.axes))}
    return None


def vs_mujoco(cfg: DemoConfig, series: Dict[str, Tuple[Any, Any]], tare_response_ns: Optional[int],
              contact_stamp_ns: np.ndarray) -> Optional[Dict[str, Any]]:
    """``vs_mujoco`` (:data:`DEFINITIONS`) per sensor MuJoCo measures; None without one."""
    from vsf_sensor_ros.demo.analysis import agreement_numbers, first_index_by_stamp
    from vsf_sensor_ros.contact_sources.sim_sensors import SOURCE_MUJOCO_FORCE, SOURCE_MUJOCO_TOUCH
    out: Dict[str, Any] = {}
    for s in cfg.sensors:
        pred, meas = series.get(s.name, (None, None))
        mujoco = s.measured_source in (SOURCE_MUJOCO_FORCE, SOURCE_MUJOCO_TOUCH)
        if not mujoco or pred is None or meas is None:
            continue
        names = list(s.codec.axes)   # the pad's three axes or the load cell's one
        entry: Dict[str, Any] = {"measured_source": s.measured_source, "units": "N",
                                 **agreement_numbers(pred, meas, tare_response_ns, contact_stamp_ns, names),
                                 "peak": None}
        first = first_index_by_stamp(meas.stamp_ns)
        touching = set(np.asarray(contact_stamp_ns, dtype=np.int64).tolist())
        late = [(np.asarray(meas.values[first[st]], float), np.asarray(pred.values[i], float), st)
                for i, st in enumerate(pred.stamp_ns.tolist()) if st in first and st in touching
                and (tare_response_ns is None or pred.event_ns[i] > tare_response_ns)]
        best = max((c for c in late if c[0].shape == c[1].shape), key=lambda c: np.linalg.norm(c[0]),
                   default=None)
        if best is not None and np.linalg.norm(best[0]) > 0.0:
            m, p, st = best
            entry["peak"] = {"sim_time_s": st * 1e-9, "measured": dict(zip(names, m.tolist())),
                             "predicted": dict(zip(names, p.tolist())),
                             "relative_difference": float((np.linalg.norm(m) - np.linalg.norm(p))
                                                          / np.linalg.norm(m))}
        out[s.name] = entry
    return out or None


def build_summary(cfg: DemoConfig, session: SessionResult, series: Dict[str, Tuple[Any, Any]],
                  bag: Dict[str, Any]) -> Dict[str, Any]:
    """``summary.json`` content (see :data:`DEFINITIONS`)."""
    from vsf_sensor_ros.demo.analysis import sensor_numbers
    contacts = session.logs.get("/contacts")
    c_stamp = np.array(contacts.stamps_ns() if contacts else [], dtype=np.int64)
    c_recv = np.array(contacts.recv_ns if contacts else [], dtype=np.int64)
    steps = int(c_stamp.size)
    residuals = [session.logs.get(f"/{s.name}/residual") for s in cfg.sensors]
    tare_t = tare_sim_time(session.tare.response_ns, residuals)
    if tare_t is not None:
        session.tare.sim_time_s = tare_t
    span_s = (c_recv[-1] - c_recv[0]) * 1e-9 if steps > 1 else 0.0
    touching = bubble_contact_stamps(cfg, contacts)
    near = adjacent_stamps(c_stamp, touching)
    sensors: Dict[str, Any] = {}
    for s in cfg.sensors:
        pred, meas = series[s.name]
        if pred is None:
            numbers: Dict[str, Any] = {"published": 0, **{k: None for k in (
                "latency_ms_p50", "latency_ms_p99", "residual_rms_contact_free_before_tare",
                "residual_rms_contact_free_after_tare", "residual_rms_in_contact_after_tare")}}
        else:
            numbers = sensor_numbers(pred, meas, c_stamp, c_recv, session.tare.request_ns,
                                     session.tare.response_ns, touching, near)
        numbers = {"type": s.type_name, "measured_source": s.measured_source, **numbers,
                   "measured": 0 if meas is None else len(meas.values), **session.tare.per_sensor.get(
                       s.name, {"tare_offset": None, "tare_samples": None})}
        sensors[s.name] = numbers
    return {
        "world": cfg.world,
        "backend": cfg.backend,
        "steps": steps,
        "sim_rate_hz": cfg.rate_hz,
        "achieved_rate_hz": (steps - 1) / span_s if span_s > 0 else None,
        "duration_s": cfg.duration_s,
        "sim_time_span_s": float((c_stamp[-1] - c_stamp[0]) * 1e-9) if steps > 1 else 0.0,
        "seed": cfg.seed,
        "wall_time_s": round(session.wall_s, 3),
        "tare": {"success": session.tare.success, "message": session.tare.message,
                 "sim_time_s": session.tare.sim_time_s,
                 "call_ms": None if session.tare.response_ns is None or session.tare.request_ns is None
                 else (session.tare.response_ns - session.tare.request_ns) / 1e6},
        "measured_source_mode": cfg.measured_source,
        "sensors": sensors,
        "pad_vs_klampt_native": pad_vs_klampt_native(cfg, series, session.tare.response_ns, touching),
        "vs_mujoco": vs_mujoco(cfg, series, session.tare.response_ns, touching),
        "bag": {"path": str(bag.get("path", "")), "topics": bag.get("counts", {}),
                "left_out": bag.get("left_out", {}), "not_recorded": session.skipped},
        "errors": list(session.errors),
        "definitions": DEFINITIONS,
    }


def make_plots(cfg: DemoConfig, session: SessionResult, series: Dict[str, Tuple[Any, Any]]) -> List[Path]:
    """Write ``pressure.png``, ``force_field.png`` and one ``<sensor>.png`` per other sensor."""
    from vsf_sensor_ros.demo.analysis import cloud_fields
    from vsf_sensor_ros.demo.plots import components_figure, plot_force_field, pressure_figure
    from vsf_sensor_ros.contact_sources.sim_sensors import SOURCE_SYNTHETIC
    contacts = session.logs.get("/contacts")
    if contacts is None or not len(contacts):
        return []
    c_stamp = np.array(contacts.stamps_ns(), dtype=np.int64)
    t_origin = int(c_stamp[0])
    in_contact = bubble_contact_stamps(cfg, contacts)
    span = tuple((in_contact[[0, -1]] - t_origin) * 1e-9) if in_contact.size else None
    tare_t = None if session.tare.sim_time_s is None else session.tare.sim_time_s - t_origin * 1e-9

    def t(series_: Any) -> np.ndarray:
        return (series_.stamp_ns - t_origin) * 1e-9

    written: List[Path] = []
    done = set()      # one pressure.png, one force_field.png: the first such sensor's
    for s in cfg.sensors:
        pred, meas = series[s.name]
        if pred is None:
            continue
        source = measured_label(s.measured_source)
        codec = s.codec
        figure = "force_field" if codec.per_vertex else "pressure" if codec.membrane_reading else None
        if figure == "pressure" and figure not in done:
            pm = np.array([v[0] for v in meas.values]) if meas is not None else np.zeros(0)
            fig = pressure_figure(t(meas) if meas is not None else np.zeros(0), pm, t(pred),
                                  np.array([v[0] for v in pred.values]), tare_t, span,
                                  title=f"{s.name}: predicted vs measured ({cfg.world} world)\n"
                                        f"measured = {source}", measured_label=f"measured ({source})")
            written.append(cfg.out / "pressure.png")
            fig.savefig(written[-1])
        elif figure == "force_field" and figure not in done:
            k = int(np.argmax([np.abs(v).sum() for v in pred.values]))
            msg = session.logs[f"/{s.name}/predicted"].decode([k])[0]
            f_pred = pred.values[k].reshape(-1, 3)
            j = [] if meas is None else np.flatnonzero(meas.stamp_ns == pred.stamp_ns[k])
            f_meas = meas.values[j[0]].reshape(-1, 3) if len(j) and meas.values[j[0]].size == f_pred.size \
                else None
            written.append(plot_force_field(
                cloud_fields(msg, ("x", "y", "z")), f_pred, cfg.out / "force_field.png", f_meas,
                frame=msg.header.frame_id, measured_label=f"measured ({source})",
                title=f"{s.name} at peak contact, sim t={(pred.stamp_ns[k] - t_origin) * 1e-9:.2f} s"))
        else:
            def stack(x: Any) -> Optional[np.ndarray]:
                # a second dense sensor: its total force per axis
                v = None if x is None else np.stack(x.values)
                return v if v is None or codec.axes is not None else v.reshape(len(v), -1, 3).sum(axis=1)
            labels = ["Σfx", "Σfy", "Σfz"] if codec.axes is None else list(codec.axes)
            fig = components_figure(None if meas is None else t(meas), stack(meas), t(pred), stack(pred),
                                    labels, tare_t, span,
                                    title=f"{s.name} ({s.type_name}); measured = {source}", unit=codec.unit,
                                    measured_label="measured (synthetic)"
                                    if s.measured_source == SOURCE_SYNTHETIC else "measured")
            written.append(cfg.out / f"{s.name}.png")
            fig.savefig(written[-1])
        done.add(figure)
    return written


def measured_label(source: Optional[str]) -> str:
    """Plot text for a measured-source label (:data:`~.contact_sources.sim_sensors.SOURCE_TEXT`)."""
    from vsf_sensor_ros.contact_sources.sim_sensors import SOURCE_TEXT
    return SOURCE_TEXT.get(source, "not from the simulator") if source else "not from the simulator"


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    if isinstance(v, list):
        return f"[{len(v)} values]"
    if isinstance(v, dict) and "entries" in v:
        return f"[{v['entries']} values]"
    return str(v)


def summary_table(summary: Dict[str, Any]) -> str:
    """A one-screen text table of ``summary.json``."""
    head = (f"world {summary['world']}: {summary['steps']} steps at {summary['sim_rate_hz']:g} Hz "
            f"(achieved {_fmt(summary['achieved_rate_hz'])} Hz), {summary['duration_s']:g} s simulated, "
            f"{summary['wall_time_s']:.1f} s wall; tare "
            f"{'ok' if summary['tare']['success'] else 'FAILED'} "
            f"at sim t={_fmt(summary['tare']['sim_time_s'])} s")
    # residual RMS columns: contact-free before / after the tare (same kind of steps), then in contact
    cols = ["sensor", "measured source", "predicted/steps", "lat p50 ms", "lat p99 ms",
            "rms free pre-tare", "rms free post-tare", "rms contact post-tare", "tare offset", "n tare"]
    rows = [cols]
    for name, s in summary["sensors"].items():
        rows.append([name, _fmt(s.get("measured_source")), f"{s['published']}/{summary['steps']}",
                     _fmt(s["latency_ms_p50"]), _fmt(s["latency_ms_p99"]),
                     _fmt(s["residual_rms_contact_free_before_tare"]),
                     _fmt(s["residual_rms_contact_free_after_tare"]),
                     _fmt(s["residual_rms_in_contact_after_tare"]),
                     _fmt(s["tare_offset"]), _fmt(s["tare_samples"])])
    widths = [max(len(r[k]) for r in rows) for k in range(len(cols))]
    lines = [head, ""]
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                               for k, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))

    def blocks(agree: Dict[str, Any], short: bool) -> None:
        for part in ("after_tare", "in_contact"):
            b = agree[part]
            axes = ", ".join(f"{k[-1] if short else k} {_fmt(b['mean'][k])}/{_fmt(b['rms'][k])}/"
                             f"{_fmt(b['max_abs'][k])}" for k in b["rms"])
            lines.append(f"  {part.replace('_', ' ')} ({b['samples']} samples) mean/rms/max|.|: {axes}")
    agree = summary.get("pad_vs_klampt_native")
    if agree:
        lines += ["", f"{agree['sensor']} (package ContactSensor) vs Klampt's C++ ContactSensor, "
                      f"measured - predicted after the tare [{agree['units']}]:"]
        blocks(agree, True)
    for name, agree in (summary.get("vs_mujoco") or {}).items():
        lines += ["", f"{name} (package model) vs MuJoCo ({agree['measured_source']}), measured - predicted "
                      f"after the tare [{agree['units']}]:"]
        blocks(agree, False)
        peak = agree.get("peak")
        if peak:
            lines.append(f"  peak at sim t={peak['sim_time_s']:.2f} s: measured "
                         + ", ".join(f"{k} {_fmt(v)}" for k, v in peak["measured"].items()) + "; predicted "
                         + ", ".join(f"{k} {_fmt(v)}" for k, v in peak["predicted"].items())
                         + f"; (|m| - |p|)/|m| = {_fmt(peak['relative_difference'])}")
    notes = [f"  {name}: {s['tare_status']}" for name, s in summary["sensors"].items()
             if s.get("tare_status", "tared") != "tared"]
    if notes:
        lines += ["", "not tared:"] + notes
    return "\n".join(lines)
