"""The recorded real Punyo poke, pure (no ROS): ``data.json``, poke onset, F/T lag, pressure metrics."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np

from vsf_sensor_ros.demo.config import DemoError

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


def nearest_frame(t: np.ndarray, s: float, tol: float = 0.002) -> Optional[int]:
    """Index of the frame time in ``t`` (s) nearest ``s`` (s), None when farther than ``tol`` s."""
    k = int(np.argmin(np.abs(t - s)))
    return k if abs(t[k] - s) <= tol else None


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
            row = [float(t), float(p)] + [float(v) for v in q] + [float(v) for v in w]
        except (TypeError, ValueError) as exc:
            raise ReplayError(f"frame {i} is not [t, hPa, 6 joints, 6 wrench]: {exc}", "bad_frame", path,
                              i) from None
        if len(row) != 14 or not all(map(math.isfinite, row)):
            raise ReplayError(f"frame {i} has {len(row) - 2} joint+wrench values or non-finite ones",
                              "bad_frame", path, i)
        rows.append(row)
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
    mag = np.linalg.norm(rec.wrench[:, :3] - rec.wrench[:bias_frames, :3].mean(axis=0), axis=1)
    best, best_r = 0, -np.inf
    for s in range(0, max_frames + 1):
        r = float(np.corrcoef(dp[:len(dp) - s], mag[s:])[0, 1])
        if r > best_r:
            best, best_r = s, r
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
