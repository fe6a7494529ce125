"""The demo's tare: when to call it, and what it did, read from the saved calibration file (the node's
answer is only quoted, never parsed)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

import numpy as np

from vsf_sensor_ros.demo.config import DemoError, SensorInfo

TARE_STRETCH_S = 2.0       # simulated contact-free hold at the start (simulator trajectory.tare_s)
TARE_AT_S = 1.0            # tare at this simulated time: mid-way through the contact-free hold


@dataclass
class TareResult:
    """The ``tare`` call: answer, wall ns sent / answered, newest contacts stamp (s), :func:`tare_outcome`."""

    success: bool = False
    message: str = ""
    request_ns: Optional[int] = None
    response_ns: Optional[int] = None
    sim_time_s: Optional[float] = None
    per_sensor: Dict[str, Dict[str, Any]] = field(default_factory=dict)


def tare_due(sim_time_s: Optional[float], samples_per_sensor: Sequence[int], tare_samples: int,
             touched: bool) -> bool:
    """Whether to tare: contacts flow and either :data:`TARE_AT_S` is reached with ``tare_samples``
    predictions of every sensor, or the bubble ``touched``."""
    if sim_time_s is None:
        return False
    enough = sim_time_s >= TARE_AT_S and all(n >= tare_samples for n in samples_per_sensor)
    return enough or touched


def offsets_from_calibration(path: Path, sensors: Sequence[str],
                             kinds: Optional[Dict[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """sensor -> ``{"tare_samples", "tare_offset"}`` from the saved calibration: ``tare − tare_sim_avg`` (less
    the contact entry of ``wrench`` and ``load`` ``kinds``) as a float, a list up to 6, else ``{"entries",
    "mean", "max_abs"}``.  Raises DemoError: the file cannot be read or parsed."""
    import yaml
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DemoError(f"cannot read calibration file {path}: {exc}", "unreadable", path) from exc
    out: Dict[str, Dict[str, Any]] = {}
    for s in sensors:
        entry = (doc.get("sensors") or {}).get(s)
        if not isinstance(entry, dict):
            continue
        calib = entry.get("calibration") or {}
        tare = calib.get("tare")
        if tare is None:
            offset: Any = None
        else:
            arr = np.asarray(tare, dtype=np.float64).reshape(-1)
            if calib.get("tare_sim_avg") is not None:
                arr = arr - np.asarray(calib["tare_sim_avg"], dtype=np.float64).reshape(-1)
            if (kinds or {}).get(s) in ("wrench", "load"):
                arr = arr[1:]
            if arr.size == 1:
                offset = float(arr[0])
            elif arr.size <= 6:
                offset = [float(v) for v in arr]
            else:
                offset = {"entries": int(arr.size), "mean": float(arr.mean()),
                          "max_abs": float(np.abs(arr).max())}
        n = entry.get("samples")
        out[s] = {"tare_samples": None if n is None else int(n), "tare_offset": offset}
    return out


def tare_outcome(calibration_file: Path, sensors: Sequence[SensorInfo], answer: str = "",
                 saved: bool = True) -> Dict[str, Dict[str, Any]]:
    """sensor -> ``{"tare_status": "tared" | "failed: <why>", "tare_samples", "tare_offset"}`` from the file
    saved after the tare (only if ``saved``: an older file must not pass); ``answer`` quoted when not tared.
    Raises DemoError: the file cannot be read or parsed."""
    found: Dict[str, Dict[str, Any]] = {}
    if saved and Path(calibration_file).is_file():
        found = offsets_from_calibration(calibration_file, [s.name for s in sensors],
                                         {s.name: s.kind for s in sensors})
    out: Dict[str, Dict[str, Any]] = {}
    for s in sensors:
        entry = found.get(s.name)
        if entry is not None and entry["tare_samples"] is not None and entry["tare_offset"] is not None:
            out[s.name] = {"tare_status": "tared", **entry}
            continue
        why = "not in the saved calibration" if saved else "the calibration was not saved"
        prefix = f"{s.name}: "     # the node's answer line about the sensor (quoted only)
        said = next((line[len(prefix):] for line in answer.splitlines() if line.startswith(prefix)), "")
        out[s.name] = {"tare_status": f"failed: {why}" + (f" (node: {said})" if said else ""),
                       "tare_samples": None, "tare_offset": None}
    return out


def tare_succeeded(service_success: bool, per_sensor: Dict[str, Dict[str, Any]]) -> bool:
    """The service answered success and every sensor of ``per_sensor`` tared."""
    return service_success and bool(per_sensor) and all(
        e["tare_status"] == "tared" for e in per_sensor.values())
