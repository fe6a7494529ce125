"""Membrane force estimator on the real Punyo poke: time per frame, start-up, and the figures.

``python -m benchmarks.bench_membrane [--repeats 3] [--json out.json]``; also run by
``benchmarks.run`` inside its library section (``results["library"]["membrane"]``).

Reads the recording from ``$VSF_PUNYO_POKE`` or ``shared/fixtures/punyo_poke_ur5e`` beside the
clone (``data.json`` and ``camera/``); skips with the reason when neither holds it.

Reported (never asserted):

* start-up: estimator construction + ``set_reference`` on frames 0-4 (assembly,
  factorisation, compliance), seconds;
* per frame: ``estimate`` wall time over all 150 frames (each pass), median and p99, ms;
* the figures against the arm's force/torque reading (``compare_with_wrench``: bias
  frames 0-29, loaded frames |F - bias| > 0.5 N, lag up to 3 frames) and the force peak's
  distance from the deepest indentation over frames 78-101;
* the same figures with the colour frames (optical flow, tangential forces), OpenCV on one thread;
* separately, a one-gain calibration fitted on the loading frames (60-71) and scored on
  the unloading frames (101-110) only (out of sample);
* beside them, the reference estimator's figures on the same poke as measured on this
  project's benchmark machine (see ``docs/membrane_force.md``).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BESIDE_CLONE = ROOT / ".." / "shared" / "fixtures" / "punyo_poke_ur5e"

# The reference estimator (finite elements + SCS convex program) on the same poke, same rules.
REFERENCE = {"correlation": 0.99, "ratio_at_peak": 0.59, "rms_error_n": 1.37, "median_ms": 810.0}

# Deepest indentation at frame 84 (reference surface point on the deepest pixel's ray, mesh frame, m)
# and the same ray at the pressed depth (86.0 -> 80.4 mm).
DEEPEST_REF = np.array([0.0268, 0.0083, 0.0824])
DEEPEST_CAM_NOW = np.array([-0.0105, 0.0083, 0.0860]) * 80.4 / 86.0


def poke_dir() -> Optional[Path]:
    """The first of ``$VSF_PUNYO_POKE`` and the fixture beside the clone that holds the recording."""
    env = os.environ.get("VSF_PUNYO_POKE", "").strip()
    for d in ([Path(env).expanduser()] if env else []) + [BESIDE_CLONE]:
        if (d / "data.json").is_file() and (d / "camera" / "depth.npz").is_file():
            return d.resolve()
    return None


def load_poke(root: Path) -> Dict[str, Any]:
    """The recording: depth (N, 480, 640) m, pressure (N,) Pa absolute, wrench force (N, 3) N,
    and the camera, mesh and camera-from-mesh rotation to build the estimator with."""
    from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
    from vsf_sensor_ros.sensor.membrane_force_estimator import punyo_camera_rotation
    from vsf_sensor_ros.sensor.membrane_mesh import read_membrane_mesh

    cam_dir = root / "camera"
    info = json.loads((cam_dir / "camera.json").read_text())
    d = info["distortion_fit"]
    size = info["image_size"]
    camera = BrownConradyCamera(size["width"], size["height"], d["fx"], d["fy"], d["cx"], d["cy"],
                                (d["k1"], d["k2"], d["p1"], d["p2"], d["k3"]))
    rows = json.loads((root / "data.json").read_text())
    depth = np.load(cam_dir / "depth.npz")["depth"].astype(np.float64) * float(info["depth_unit_m"])
    return {"camera": camera, "mesh": read_membrane_mesh(cam_dir / "membrane_equalized.vtk"),
            "R_cam_mesh": punyo_camera_rotation(25.0), "depth": depth,
            "pressure": np.array([r[1] for r in rows]) * 100.0,
            "wrench": np.array([r[3] for r in rows])[:, :3],
            "reference_frames": list(info.get("reference_frames", [0, 1, 2, 3, 4])),
            "colour": (np.load(cam_dir / "rgb.npz")["rgb"] if (cam_dir / "rgb.npz").is_file() else None)}


def membrane_section(repeats: int = 3, flow: bool = True, poke: Optional[Dict[str, Any]] = None
                     ) -> Dict[str, Any]:
    """Run the estimator over the poke ``repeats`` times; the figures and timings as a dict.

    ``flow`` False leaves out the pass with the colour frames (``with_flow`` says skipped);
    ``poke`` is :func:`load_poke`'s result when the caller has read it already."""
    from vsf_sensor_ros.sensor.membrane_force_estimator import (MembraneForceEstimator, compare_with_wrench,
                                                                isa_pressure)
    root = poke_dir()
    if root is None:
        return {"skipped": f"Punyo poke recording not found ($VSF_PUNYO_POKE or {BESIDE_CLONE})"}
    poke = poke if poke is not None else load_poke(root)
    depth, pressure = poke["depth"], poke["pressure"]
    ref = poke["reference_frames"]
    t0 = time.perf_counter()
    est = MembraneForceEstimator(poke["mesh"], poke["camera"], poke["R_cam_mesh"],
                                 ambient_pressure=isa_pressure(222.0))
    est.set_reference([depth[i] for i in ref], pressure[ref])
    startup = time.perf_counter() - t0
    totals, times, distance_ref, distance_now = _run(est, poke, repeats, colour=False)
    cmp = compare_with_wrench(totals, poke["wrench"])
    # Out-of-sample gain: least squares on the loading frames, scored on the unloading frames.
    mag = np.linalg.norm(totals, axis=1)
    ft = np.linalg.norm(poke["wrench"] - cmp.bias, axis=1)
    frames = cmp.frames
    load = frames[(frames >= 60) & (frames <= 71)]
    unload = frames[(frames >= 101) & (frames <= 110)]
    gain = float(mag[load] @ ft[load + cmp.lag] / (mag[load] @ mag[load]))
    err = gain * mag[unload] - ft[unload + cmp.lag]
    raw = mag[unload] - ft[unload + cmp.lag]
    ms = 1e3 * np.asarray(times)
    return {
        "recording": str(root), "frames": int(len(depth)), "passes": int(max(1, int(repeats))),
        "startup_s": startup, "median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()), "lag": cmp.lag, "correlation": cmp.correlation,
        "ratio_at_peak": cmp.ratio_at_peak, "rms_error_n": cmp.rms_error, "loaded_frames": int(len(frames)),
        "peak_distance_mm": 1e3 * max(distance_ref), "peak_distance_pressed_mm": 1e3 * max(distance_now),
        "no_contact_max_n": float(mag[5:60].max()),
        "calibration": {"gain": gain, "fit_frames": [int(load.min()), int(load.max())],
                        "test_frames": [int(unload.min()), int(unload.max())],
                        "test_rms_n": float(np.sqrt(np.mean(err ** 2))),
                        "test_rms_uncalibrated_n": float(np.sqrt(np.mean(raw ** 2)))},
        "reference_estimator": REFERENCE,
        "ambient_pressure_pa": est.ambient_pressure, "gauge_pressure_pa": est.model.gauge_pressure,
        "mean_tension_n_per_m": est.model.mean_tension, "vertices_read": int(len(est.seen_vertices)),
        "with_flow": _flow_section(poke, repeats) if flow else {"skipped": "full run only"},
    }


def _run(est: Any, poke: Dict[str, Any], repeats: int, colour: bool):
    """Estimate every frame ``repeats`` times: totals (N, 3), times (s), peak distances (m) 78-101."""
    depth, pressure = poke["depth"], poke["pressure"]
    times: List[float] = []
    totals = np.zeros((len(depth), 3))
    distance_ref, distance_now = [], []
    deepest_now = poke["R_cam_mesh"].T @ DEEPEST_CAM_NOW
    for rep in range(max(1, int(repeats))):
        for i in range(len(depth)):
            c = poke["colour"][i] if colour else None
            t = time.perf_counter()
            r = est.estimate(depth[i], colour=c, pressure=pressure[i])
            times.append(time.perf_counter() - t)
            if rep == 0:
                totals[i] = r.total_contact_force
                if 78 <= i <= 101:
                    k = int(np.argmax(np.linalg.norm(r.contact_forces, axis=1)))
                    distance_ref.append(float(np.linalg.norm(poke["mesh"].points[k] - DEEPEST_REF)))
                    distance_now.append(float(np.linalg.norm(r.positions[k] - deepest_now)))
    return totals, times, distance_ref, distance_now


def _flow_section(poke: Dict[str, Any], repeats: int) -> Dict[str, Any]:
    """The same figures with the colour frames (optical flow, tangential forces); OpenCV on one thread."""
    import cv2
    from vsf_sensor_ros.sensor.membrane_force_estimator import (MembraneForceEstimator, compare_with_wrench,
                                                                isa_pressure)
    if poke["colour"] is None:
        return {"skipped": "no colour frames (camera/rgb.npz) in the recording"}
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)  # the per-frame target is for one core
    try:
        ref = poke["reference_frames"]
        t0 = time.perf_counter()
        est = MembraneForceEstimator(poke["mesh"], poke["camera"], poke["R_cam_mesh"],
                                     ambient_pressure=isa_pressure(222.0))
        est.set_reference([poke["depth"][i] for i in ref], poke["pressure"][ref],
                          colours=[poke["colour"][i] for i in ref])
        startup = time.perf_counter() - t0
        totals, times, distance_ref, _ = _run(est, poke, repeats, colour=True)
    finally:
        cv2.setNumThreads(threads)
    cmp = compare_with_wrench(totals, poke["wrench"])
    ms = 1e3 * np.asarray(times)
    return {"startup_s": startup, "median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
            "lag": cmp.lag, "correlation": cmp.correlation, "ratio_at_peak": cmp.ratio_at_peak,
            "rms_error_n": cmp.rms_error, "peak_distance_mm": 1e3 * max(distance_ref),
            "no_contact_max_n": float(np.linalg.norm(totals[5:60], axis=1).max())}


def format_rows(m: Dict[str, Any]) -> List[str]:
    """Table lines for the membrane estimator, beside the reference estimator's figures."""
    if m.get("skipped"):
        return [f"  membrane force estimator: skipped ({m['skipped']})"]
    ref = m["reference_estimator"]
    c = m["calibration"]
    return [
        f"  membrane force estimator, real poke ({m['frames']} frames x {m['passes']}, "
        f"{m['vertices_read']} vertices read, p0 {m['gauge_pressure_pa']:.0f} Pa):",
        f"    per frame median {m['median_ms']:.2f} ms, p99 {m['p99_ms']:.2f} ms (reference estimator "
        f"{ref['median_ms']:.0f} ms); start-up {m['startup_s']:.2f} s",
        f"    correlation {m['correlation']:.3f} (ref {ref['correlation']}), ratio at peak "
        f"{m['ratio_at_peak']:.2f} (ref {ref['ratio_at_peak']}), RMS {m['rms_error_n']:.2f} N "
        f"(ref {ref['rms_error_n']}), lag {m['lag']} frame(s)",
        f"    force peak {m['peak_distance_mm']:.1f} mm from the deepest indentation (reference shape; "
        f"{m['peak_distance_pressed_mm']:.1f} mm pressed); no-contact max {m['no_contact_max_n']:.2f} N",
        f"    calibrated (gain {c['gain']:.2f} fitted on frames {c['fit_frames'][0]}-{c['fit_frames'][1]}): "
        f"RMS {c['test_rms_n']:.2f} N on frames {c['test_frames'][0]}-{c['test_frames'][1]} "
        f"(uncalibrated {c['test_rms_uncalibrated_n']:.2f} N)",
    ] + _flow_rows(m.get("with_flow", {}))


def _flow_rows(f: Dict[str, Any]) -> List[str]:
    """Table lines of the run with the colour frames (optical flow and tangential forces)."""
    if not f:
        return []
    if f.get("skipped"):
        return [f"    with colour (optical flow): skipped ({f['skipped']})"]
    return [f"    with colour (optical flow, tangential forces): per frame median {f['median_ms']:.2f} ms, "
            f"p99 {f['p99_ms']:.2f} ms, start-up {f['startup_s']:.2f} s; correlation {f['correlation']:.3f}, "
            f"ratio at peak {f['ratio_at_peak']:.2f}, RMS {f['rms_error_n']:.2f} N, lag {f['lag']}, "
            f"peak {f['peak_distance_mm']:.1f} mm, no-contact max {f['no_contact_max_n']:.2f} N"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="passes over the 150 frames (default 3)")
    ap.add_argument("--json", default="", help="also write the results here")
    args = ap.parse_args()
    res = membrane_section(args.repeats)
    print("\n".join(format_rows(res)))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
