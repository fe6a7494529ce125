"""Tare, gain and the calibration file's format: what the rig calibrates from its paired samples.

Tare
----
Every measured vector paired with the prediction of the same stamp is kept
(:class:`~.sensors.PairedSample`: the measured vector in SI and the step's ``SimState``).  A tare
(:func:`tare`) uses the **most recent run of consecutive contact-free pairs** (``not
sensor.in_contact(state)`` for the paired ``SimState``: nothing touches what the sensor senses --
its body, or its Klampt patch / Isaac radius, so a load sensor on a box resting on a table is
contact-free while nothing presses its top), its last ``N`` samples (``N`` = ``tare_samples``),
oldest first.  "Most recent" because a tare is asked for *now*: an operator lifts the gripper
off the object and tares, and readings from before a contact may belong to another temperature
or membrane inflation.  Fewer than ``N`` samples in that run are used as they are, and the
answer says how many.  The offset is :class:`~vsf_sensor_ros.sensor.TareCalibrator`'s: mean
measured minus mean raw prediction over the samples (:func:`tare_sensor`).

Gain
----
A tare removes a constant offset; a real sensor can also show a different *change* under load
than the model predicts (a Punyo bubble's membrane carries part of the load: the pressure rise
is smaller than ``F·n / A_base``).  :class:`~vsf_sensor_ros.sensor.GainCalibrator` fits that gain
by least squares through the origin, on top of the tare offset, from the paired samples with
contact (:meth:`~.sensors.RigSensor.keep_pair` keeps them in a second bounded buffer, so a long
contact-free stretch after a poke does not push them out).  :func:`calibrate_gain` uses every
buffered contact sample whose measured vector is complete, at least :data:`MIN_SAMPLES` of them
and a relative standard error of the gain of at most :data:`MAX_RELATIVE_ERROR`; on a refusal
nothing changes.

File format
-----------
YAML, SI units (:func:`file_text`, :func:`parse_file`)::

    # vsf_sensor_ros sensor_node calibration (SI units); loaded at start
    sensors:
      <s>: {type: <sensor type>, attachment: <body>, samples: <n used by the tare>,
            calibration: {tare: [...], tare_sim_avg: [...], gain: [...] (when fitted)}}

The first line, :data:`HEADER`, marks a file this package wrote; any file with that layout
loads (a hand-written one too).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import yaml

from ..sensor import GainCalibrator
from ..sensor.base_sensor import BaseSensor
from .sensors import PairedSample, RigSensor

HEADER = "# vsf_sensor_ros sensor_node calibration (SI units); loaded at start"
TARE_KEY = "tare"
GAIN_KEY = "gain"

MIN_SAMPLES = 10
"""Fewest contact samples a fit uses (the calibrator refuses below)."""

MAX_RELATIVE_ERROR = 0.2
"""Largest relative standard error of the fitted gain (the calibrator refuses above: ill-conditioned)."""


# -- tare --------------------------------------------------------------------------------
def select_samples(pairs: Sequence[PairedSample], n: int) -> Tuple[List[PairedSample], Optional[str]]:
    """The last ``n`` samples of the most recent contact-free run (oldest first).

    Returns:
        ``(samples, None)`` or ``([], reason)`` when there is nothing to use.
    """
    if not pairs:
        return [], "no measured sample paired with a prediction yet"
    end = len(pairs)
    while end > 0 and not pairs[end - 1].contact_free:
        end -= 1
    if end == 0:
        return [], f"all {len(pairs)} buffered samples have contact on what the sensor senses"
    start = end
    while start > 0 and pairs[start - 1].contact_free and end - start < n:
        start -= 1
    return list(pairs[start:end]), None


def tare_sensor(sensor: BaseSensor, samples: Sequence[PairedSample]) -> int:
    """Tare ``sensor`` from ``samples`` (contact-free pairs, oldest first); the number used.

    The math of :class:`~vsf_sensor_ros.sensor.TareCalibrator`, on the stored pairs directly:
    the calibration becomes ``{'tare': mean measured, 'tare_sim_avg': mean raw prediction}``
    (the sensor then predicts ``raw + tare - tare_sim_avg``).  The previous calibration is
    cleared first (its ``'gain'``, fitted by :func:`calibrate_gain`, kept: a tare moves the offset,
    not the gain), so the raw prediction of each stored ``SimState`` is the untared model and a
    second tare does not stack on the first.  Entries a measured message does not carry (NaN)
    take the sample's raw prediction, so the tare leaves them at zero offset.

    Raises:
        ValueError / RuntimeError: from the sensor (its calibration restored).
    """
    before = sensor.get_calibration()
    kept = {k: before[k] for k in ("gain",) if k in before}
    sensor.set_calibration(kept)
    try:
        raw = np.stack([sensor.predict(s.state).detach().cpu().numpy().astype(np.float64).reshape(-1)
                        for s in samples])
        measured = np.stack([np.asarray(s.measured, dtype=np.float64).reshape(-1) for s in samples])
        observed = np.where(np.isnan(measured), raw, measured)
        sensor.set_calibration({**kept, TARE_KEY: observed.mean(axis=0), "tare_sim_avg": raw.mean(axis=0)})
    except Exception:
        sensor.set_calibration(before)
        raise
    return len(samples)


def tare(h: RigSensor, n: int) -> Tuple[bool, str]:
    """Tare one sensor from its buffered pairs; ``(success, answer text)``.

    Uses the last ``n`` samples of the most recent contact-free run
    (:func:`select_samples`), :func:`tare_sensor`; on success the sensor's calibration, its
    ``calibration_text`` and ``tare_samples_used`` are updated.
    """
    if type(h.sensor).set_calibration is BaseSensor.set_calibration:
        # every shipped model has a tare offset; a model that keeps no calibration cannot be tared
        return False, f"{h.name}: cannot tare: the {h.kind} model has no tare offset"
    samples, why = select_samples(list(h.pairs), n)
    if why is not None:
        return False, f"{h.name}: cannot tare: {why}"
    try:
        used = tare_sensor(h.sensor, samples)
    except (ValueError, RuntimeError) as exc:
        return False, f"{h.name}: cannot tare: {exc}"
    cal = h.sensor.get_calibration()
    if TARE_KEY not in cal:
        return False, f"{h.name}: cannot tare: the {h.kind} model kept no '{TARE_KEY}' entry"
    unit = h.layout.codec.unit
    # report the physical entries (the indicator entries of pad/load sensors carry no offset)
    slots = [int(i) for i in h.layout.slots if i >= 0]
    eff = effective_offset(cal, TARE_KEY)
    offset = format_offset({TARE_KEY: eff[slots]}, TARE_KEY, unit, [h.layout.names[i] for i in slots])
    stamp_s = samples[-1].stamp_ns * 1e-9
    h.calibration_text = f"tared with {used} samples up to stamp {stamp_s:.9f} s: {offset}"
    h.tare_samples_used = used
    return True, f"{h.name}: tared with {used} of {n} samples (most recent contact-free run); offset {offset}"


# -- gain --------------------------------------------------------------------------------
def supports_gain(sensor: BaseSensor) -> bool:
    """True when ``GainCalibrator`` can fit this sensor (it applies a ``'gain'`` calibration entry)."""
    return GainCalibrator().compatible(sensor)


def calibrate_gain(h: RigSensor) -> Tuple[bool, str]:
    """Fit sensor ``h``'s gain from its buffered contact samples; ``(success, answer text)``.

    Success: ``"<s>: gain <k> from <n> contact samples (relative standard error <e>); RMS of
    measured - predicted change <before> -> <after> <unit>"``; the sensor's ``'gain'`` is set,
    its tare kept, ``stats.calibration`` updated.  Refusal: ``"<s>: cannot calibrate gain:
    <reason>"`` (too few contact samples, nothing excited, a non-positive gain, an ill-conditioned
    fit, a sensor type without a gain); the calibration is unchanged.
    """
    if not supports_gain(h.sensor):
        return False, f"{h.name}: cannot calibrate gain: the {h.kind} model has no gain"
    samples = [s for s in getattr(h, "contact_pairs", ()) if np.isfinite(s.measured).all()]
    calibrator = GainCalibrator(min_samples=MIN_SAMPLES, max_relative_error=MAX_RELATIVE_ERROR)
    try:
        used = calibrator.fit(h.sensor, [s.state for s in samples], [s.measured for s in samples])
    except ValueError as exc:
        return False, f"{h.name}: cannot calibrate gain: {exc}"
    fit = calibrator.last_fit
    gain = fit.gain[fit.fitted]
    rel = fit.relative_std_error[fit.fitted]
    shared = np.allclose(gain, gain[0])
    k = f"{float(gain[0]):.9g}" if shared else f"{gain.size} entries, mean {gain.mean():.6g}"
    unit = h.layout.codec.unit
    tare_text = str(h.calibration_text).split("; gain ")[0]     # a new gain replaces the last one
    gain_text = f"gain {k} from {used} contact samples"
    uncalibrated = tare_text in ("", "uncalibrated") or tare_text.startswith("gain ")
    h.calibration_text = gain_text if uncalibrated else f"{tare_text}; {gain_text}"
    return True, (f"{h.name}: gain {k} from {used} contact samples (relative standard error "
                  f"{float(np.nanmax(rel)):.3g}); RMS of measured - predicted change "
                  f"{fit.rms_before:.6g} -> {fit.rms_after:.6g} {unit}")


# -- the file -----------------------------------------------------------------------------------
def parse_file(text: str) -> Dict[str, Dict[str, Any]]:
    """The ``sensors`` entries of a calibration file's text (``{}`` when it has none).

    Raises:
        ValueError: bad YAML, ``sensors`` not a mapping, an entry (or its ``calibration``) not a
            mapping; the message names the entry.
    """
    try:
        data = yaml.safe_load(text) or {}
        entries = data.get("sensors", {})
    except (yaml.YAMLError, AttributeError) as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(entries, dict):
        raise ValueError("'sensors' must be a mapping")
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise ValueError(f"entry {name!r} must be a mapping, not {entry!r}")
        if not isinstance(entry.get("calibration", {}), dict):
            raise ValueError(f"entry {name!r}: 'calibration' must be a mapping, not {entry['calibration']!r}")
    return entries


def file_text(entries: Mapping[str, Dict[str, Any]]) -> str:
    """The file's text for ``{sensor name: entry}`` (:func:`calibration_entry`): :data:`HEADER`, then YAML."""
    return HEADER + "\n" + yaml.safe_dump({"sensors": dict(entries)}, sort_keys=True)


def calibration_entry(h: RigSensor, attachment: str) -> Optional[Dict[str, Any]]:
    """The file entry of one sensor attached to ``attachment``, or None when it holds no calibration."""
    cal = h.sensor.get_calibration()
    if not cal:
        return None
    return {"type": h.kind, "attachment": attachment,
            "samples": h.tare_samples_used, "calibration": calibration_to_yaml(cal)}


def apply_entry(h: RigSensor, entry: Dict[str, Any]) -> Optional[str]:
    """Load one file entry into a sensor; a warning text when the entry is for another type (ignored).

    Raises:
        ValueError: naming the sensor when the model rejects the entry.
    """
    if entry.get("type") not in (None, h.kind):
        return f"calibration of {h.name!r} is for type {entry.get('type')!r}, not {h.kind!r}; ignored"
    try:
        h.sensor.set_calibration(calibration_from_yaml(entry.get("calibration", {})))
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"entry {h.name!r}: {exc}") from None
    h.calibration_text = f"loaded from file ({entry.get('samples', '?')} samples)"
    return None


def restored_text(h: RigSensor) -> str:
    """One sensor's restored calibration for the start-up log: ``name (offset pressure=101325 Pa,
    gain 0.8)``; only what the calibration holds (an offset over the physical entries, a gain)."""
    cal = h.sensor.get_calibration()
    parts = []
    eff = effective_offset(cal, TARE_KEY)
    if eff is not None:
        slots = [int(i) for i in h.layout.slots if i >= 0 and int(i) < eff.size]
        parts.append("offset " + format_offset({TARE_KEY: eff[slots]}, TARE_KEY,
                                               h.layout.codec.unit,
                                               [h.layout.names[i] for i in slots]))
    if "gain" in cal:
        g = cal["gain"]
        gain = np.asarray(g.detach().cpu().numpy() if hasattr(g, "detach") else g,
                          dtype=np.float64).reshape(-1)
        parts.append("gain " + ", ".join(f"{g:.6g}" for g in gain))
    return f"{h.name} ({'; '.join(parts) or 'no offset or gain'})"


# -- calibration dicts as YAML values ------------------------------------------------------------
def _array(val: Any) -> np.ndarray:
    if hasattr(val, "detach"):
        val = val.detach().cpu().numpy()
    return np.asarray(val, dtype=np.float64).reshape(-1)


def effective_offset(calibration: Dict[str, Any], key: str) -> Optional[np.ndarray]:
    """What the tare adds to the raw model: ``tare − tare_sim_avg`` (``tare`` alone when no average)."""
    if key not in calibration:
        return None
    off = _array(calibration[key])
    if "tare_sim_avg" in calibration:
        off = off - _array(calibration["tare_sim_avg"])
    return off


def format_offset(calibration: Dict[str, Any], key: str, unit: str, names: Sequence[str]) -> str:
    """Human text of the effective offset: ``pressure=101325 Pa`` or a summary for long vectors."""
    arr = effective_offset(calibration, key)
    if arr is None:
        return f"(no '{key}' in calibration)"
    if arr.size <= 4:
        labels = list(names) if len(names) == arr.size else [f"[{i}]" for i in range(arr.size)]
        return ", ".join(f"{k}={v:.9g} {unit}" for k, v in zip(labels, arr))
    return f"{arr.size} entries, mean {arr.mean():.6g} {unit}, max |.| {np.abs(arr).max():.6g} {unit}"


def calibration_to_yaml(calibration: Dict[str, Any]) -> Dict[str, Any]:
    """Calibration dict -> plain lists/floats for YAML."""
    out: Dict[str, Any] = {}
    for k, v in calibration.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        if isinstance(v, np.ndarray):
            out[k] = [float(x) for x in v.reshape(-1)]
        elif isinstance(v, (np.floating, np.integer)):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def calibration_from_yaml(entry: Dict[str, Any]) -> Dict[str, Any]:
    """YAML lists -> float64 numpy arrays (scalars stay scalars)."""
    return {k: (np.asarray(v, dtype=np.float64) if isinstance(v, list) else v) for k, v in entry.items()}


__all__ = ["GAIN_KEY", "HEADER", "MAX_RELATIVE_ERROR", "MIN_SAMPLES", "TARE_KEY", "apply_entry",
           "calibrate_gain", "calibration_entry", "calibration_from_yaml", "calibration_to_yaml",
           "effective_offset", "file_text", "format_offset", "parse_file", "restored_text",
           "select_samples", "supports_gain", "tare", "tare_sensor"]
