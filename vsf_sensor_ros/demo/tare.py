"""The demo's tare: when to call it, and what it did, read from the saved calibration file.

The node's ``Trigger`` answer is only quoted, never parsed (docs/demo.md, options).
"""
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
    """Outcome of the ``tare`` call.

    Attributes:
        success, message: the ``std_srvs/Trigger`` response.
        request_ns, response_ns: wall clock (``time.time_ns``) when sent / answered.
        sim_time_s: latest ``contacts`` stamp (s) received when the request was sent.
        per_sensor: sensor -> :func:`tare_outcome` entry (status, samples, offset), read
            from the calibration file the node saved after the tare.
    """

    success: bool = False
    message: str = ""
    request_ns: Optional[int] = None
    response_ns: Optional[int] = None
    sim_time_s: Optional[float] = None
    per_sensor: Dict[str, Dict[str, Any]] = field(default_factory=dict)


def tare_due(sim_time_s: Optional[float], samples_per_sensor: Sequence[int], tare_samples: int,
             touched: bool) -> bool:
    """Whether to call the tare now.

    Args:
        sim_time_s: newest ``contacts`` stamp received (s), ``None`` before the first.
        samples_per_sensor: predictions recorded so far, per sensor.
        tare_samples: samples the node's tare averages (its ``tare_samples``).
        touched: the bubble has touched something.

    Returns:
        True once contacts flow and either the simulated time has reached
        :data:`TARE_AT_S` with ``tare_samples`` predictions of every sensor,
        or the bubble touched (a later tare would find no contact-free run).
    """
    if sim_time_s is None:
        return False
    enough = sim_time_s >= TARE_AT_S and all(n >= tare_samples for n in samples_per_sensor)
    return enough or touched


def offsets_from_calibration(path: Path, sensors: Sequence[str],
                             kinds: Optional[Dict[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """Per-sensor tare offset and sample count from the node's ``save_calibration`` YAML.

    File layout (``sensor_node``): ``sensors: {<s>: {samples: n, calibration: {tare: [...],
    tare_sim_avg: [...]}}}``.  The offset is what the model adds, ``tare − tare_sim_avg``
    (``tare`` when there is no average); for the kinds ``wrench`` and ``load`` (``kinds``:
    sensor -> kind) the leading contact indicator entry, which carries no offset, is left
    out.  An offset of one entry is returned as a float, up to 6 entries as a list, more
    (dense force fields) as ``{"entries", "mean", "max_abs"}`` (the full vector stays in the file).

    Returns:
        sensor -> ``{"tare_samples", "tare_offset"}`` for the sensors found in the file.

    Raises:
        DemoError: the file cannot be read or parsed.
    """
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


def _answer_line(answer: str, sensor: str) -> str:
    """The node's answer line about ``sensor`` (for the reader only; nothing is parsed from it)."""
    prefix = f"{sensor}: "
    return next((line[len(prefix):] for line in answer.splitlines() if line.startswith(prefix)), "")


def tare_outcome(calibration_file: Path, sensors: Sequence[SensorInfo], answer: str = "",
                 saved: bool = True) -> Dict[str, Dict[str, Any]]:
    """Per-sensor outcome of the tare, from the calibration file the node saved after it.

    Args:
        calibration_file: the node's ``calibration_file`` (written by ``save_calibration``).
        sensors: the demo's sensors.
        answer: the node's ``tare`` answer, quoted in the status of a sensor that is not tared.
        saved: ``save_calibration`` succeeded (when not, nothing is read: an
            older file must not pass for this tare).

    Returns:
        sensor -> ``{"tare_status": "tared" | "failed: <why>", "tare_samples": int | None,
        "tare_offset": ...}`` (offset as :func:`offsets_from_calibration`), for every sensor.

    Raises:
        DemoError: the file exists but cannot be read or parsed.
    """
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
        said = _answer_line(answer, s.name)
        out[s.name] = {"tare_status": f"failed: {why}" + (f" (node: {said})" if said else ""),
                       "tare_samples": None, "tare_offset": None}
    return out


def tare_succeeded(service_success: bool, per_sensor: Dict[str, Dict[str, Any]]) -> bool:
    """Whether the demo's tare is done: the node answered ``success`` and every sensor tared.

    The node's global ``tare`` answers ``success`` only when every sensor
    tared; every shipped model has a tare offset and every demo sensor is
    contact-free during the hold (the load sensor's radius leaves out the
    table under the box), so any failed or missing sensor fails the demo.

    Args:
        service_success: the ``tare`` service's ``success``.
        per_sensor: :func:`tare_outcome`.
    """
    return service_success and bool(per_sensor) and all(
        e["tare_status"] == "tared" for e in per_sensor.values())
