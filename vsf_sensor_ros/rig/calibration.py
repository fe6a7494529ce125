"""Tare, gain, automatic tare, pressure watch and the calibration file's format from the rig's paired
samples (no ROS; the node's services call these; docs/interface.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import yaml

from ..sensor import GainCalibrator
from ..sensor.auto_tare import AutoTare, TareEvent
from ..sensor.pressure_watch import PressureStatus, PressureWatch
from ..sensor.base_sensor import BaseSensor
from .sensors import PairedSample, RigSensor

HEADER = "# vsf_sensor_ros sensor_node calibration (SI units); loaded at start"
TARE_KEY = "tare"

MIN_SAMPLES = 10
"""Fewest contact samples a fit uses (the calibrator refuses below)."""

MAX_RELATIVE_ERROR = 0.2
"""Largest relative standard error of the fitted gain (the calibrator refuses above: ill-conditioned)."""


# -- tare --------------------------------------------------------------------------------
def select_samples(pairs: Sequence[PairedSample], n: int) -> Tuple[List[PairedSample], Optional[str]]:
    """``(last n samples of the latest contact-free run, oldest first, None)``, or ``([], reason)``."""
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
    """Tare ``sensor`` from contact-free ``samples`` (oldest first) with ``TareCalibrator``'s math:
    ``{'tare': mean measured, 'tare_sim_avg': mean raw prediction}`` (earlier tare cleared, ``'gain'`` kept;
    NaN entries take the raw prediction); the number used.  ValueError / RuntimeError: from the sensor
    (calibration restored)."""
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
    """Tare one sensor from the last ``n`` samples of its latest contact-free run; ``(success, answer)``."""
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
    offset = _record_tare(h, used, samples[-1].stamp_ns, "tared")
    if h.contact_free_loop is not None:   # a new zero: the automatic tare starts again from it
        h.contact_free_loop.restart()
    if offset is None:
        return False, f"{h.name}: cannot tare: the {h.kind} model kept no '{TARE_KEY}' entry"
    return True, f"{h.name}: tared with {used} of {n} samples (most recent contact-free run); offset {offset}"


def offset_text(h: RigSensor) -> Optional[str]:
    """The offset sensor ``h``'s tare adds, over its physical entries (the indicator entries of
    pad/load sensors carry none): ``tare − tare_sim_avg`` (``tare`` alone when no average), as
    ``pressure=101325 Pa`` or a summary for long vectors; None when it holds no tare."""
    cal = h.sensor.get_calibration()
    if TARE_KEY not in cal:
        return None
    eff = _array(cal[TARE_KEY]) - (_array(cal["tare_sim_avg"]) if "tare_sim_avg" in cal else 0.0)
    slots = [int(i) for i in h.layout.slots if i >= 0 and int(i) < eff.size]
    arr, unit = eff[slots], h.layout.codec.unit
    if arr.size <= 4:
        return ", ".join(f"{h.layout.names[i]}={v:.9g} {unit}" for i, v in zip(slots, arr))
    return f"{arr.size} entries, mean {arr.mean():.6g} {unit}, max |.| {np.abs(arr).max():.6g} {unit}"


def _record_tare(h: RigSensor, used: int, stamp_ns: int, how: str) -> Optional[str]:
    """Note a tare in ``h``'s texts; its :func:`offset_text` (None: the model kept no tare)."""
    offset = offset_text(h)
    if offset is None:
        return None
    h.calibration_text = f"{how} with {used} samples up to stamp {stamp_ns * 1e-9:.9f} s: {offset}"
    h.tare_samples_used = used
    return offset


# -- while the simulator sees no contact: automatic tare, pressure watch ------------------------
@dataclass(frozen=True)
class AutoTareSettings:
    """Bounds of a sensor's :class:`~vsf_sensor_ros.sensor.auto_tare.AutoTare`: ``max_step`` and
    ``steady_std`` (sensor's SI unit), ``window_s`` and ``min_interval_s`` (s), ``min_samples``."""

    max_step: float
    steady_std: float
    window_s: float = 2.0
    min_interval_s: float = 5.0
    min_samples: int = 10


class ContactFreeLoop:
    """The automatic tare (``auto_tare`` bounds) and pressure watch (``watch``: PressureWatch arguments, on
    entry ``watch_entry``) of one sensor, fed every pair by ``RigSensor.keep_pair``.  The tare sees the
    prediction under the calibration it started from (offset zero when the sensor had a tare, else unset:
    the first is unbounded); an applied step is added to the model's ``'tare'``.  Attributes: ``applied``,
    ``refused``, ``last_refusal``, ``status``.  ValueError: a bound or watch argument out of range (named).
    """

    def __init__(self, auto_tare: Optional[AutoTareSettings] = None,
                 watch: Optional[Mapping[str, Any]] = None, watch_entry: int = 0) -> None:
        self.settings = auto_tare
        if auto_tare is not None:
            self._new_tare(None)   # the bounds checked now
        self._tare: Optional[AutoTare] = None
        self._watch_args = None if watch is None else dict(watch)
        self.watch = None if watch is None else PressureWatch(**watch)
        self.watch_entry = int(watch_entry)
        self.applied = self.refused = 0
        self.last_refusal = ""
        self.status: Optional[PressureStatus] = None
        self._last_stamp: Optional[int] = None

    def _new_tare(self, offset: Optional[np.ndarray]) -> AutoTare:
        s = self.settings
        return AutoTare(s.max_step, s.steady_std, s.window_s, s.min_interval_s, s.min_samples, offset)

    def restart(self) -> None:
        """Forget the windows (the next pair starts afresh from the sensor's calibration then)."""
        self._tare = None
        self._last_stamp = None
        if self.watch is not None:
            self.watch = PressureWatch(**self._watch_args)

    def feed(self, h: RigSensor, stamp_ns: int, predicted: np.ndarray, measured: np.ndarray,
             contact_free: bool) -> Optional[TareEvent]:
        """One pair of ``h``: ``predicted`` ``(#meas,)`` float64 (calibrated), ``measured`` in SI (NaN = not
        carried).  The automatic tare's event, or None (also for a stale or non-finite pair, skipped)."""
        if self._last_stamp is not None and stamp_ns <= self._last_stamp:
            return None
        if self.settings is not None and self._tare is None:
            self._tare = self._new_tare(np.zeros(predicted.size) if TARE_KEY in h.sensor.get_calibration()
                                        else None)
        added = 0.0 if self._tare is None or self._tare.offset is None else self._tare.offset
        p = predicted - added                      # the prediction under the calibration started from
        m = np.where(np.isnan(measured), p, measured)   # an entry not carried: no offset
        if not (np.isfinite(p).all() and np.isfinite(m).all()):
            return None
        self._last_stamp = stamp_ns
        event = None if self._tare is None else self._tare.update(stamp_ns, p, m, not contact_free)
        if event is not None:
            self._apply(h, event)
        if self.watch is not None:
            self.status = self.watch.update(stamp_ns, p[self.watch_entry], m[self.watch_entry],
                                            not contact_free)
        return event

    def _apply(self, h: RigSensor, event: TareEvent) -> None:
        """Count ``event``; an applied one moves the model's tare by its step."""
        if not event.applied:
            self.refused += 1
            self.last_refusal = f"at stamp {event.stamp_ns * 1e-9:.3f} s: {event.reason}"
            return
        before = h.sensor.get_calibration()
        tare = _array(before[TARE_KEY]) if TARE_KEY in before else np.zeros(event.step.size)
        try:
            h.sensor.set_calibration({**before, TARE_KEY: tare + event.step})
        except (ValueError, RuntimeError) as exc:   # the model refused it: nothing changed
            h.sensor.set_calibration(before)
            self._tare = None
            self.refused += 1
            self.last_refusal = f"at stamp {event.stamp_ns * 1e-9:.3f} s: the model refused it: {exc}"
            return
        self.applied += 1
        self.last_refusal = ""
        _record_tare(h, event.samples, event.stamp_ns, "auto-tared")

    def report(self, h: RigSensor) -> Tuple[List[Tuple[str, str]], List[str]]:
        """``([(key, value)], [warning])``: ``auto_tare.*`` / ``pressure.*`` diagnostics and warnings."""
        keys: List[Tuple[str, str]] = []
        problems: List[str] = []
        if self.settings is not None:
            keys += [("auto_tare.applied", str(self.applied)), ("auto_tare.refused", str(self.refused)),
                     ("auto_tare.offset", offset_text(h) or "none"),
                     ("auto_tare.last_refused", self.last_refusal or "none")]
            if self.last_refusal:
                problems.append(f"automatic tare refused {self.last_refusal}")
        if self.watch is not None:
            st = self.status
            rate = None if st is None else st.rate_pa_per_min
            keys += [("pressure.trend_pa_per_min", "none" if rate is None else f"{rate:.1f}"),
                     ("pressure.gauge_pa", "none" if st is None or self.watch.min_gauge_pa is None
                      else f"{st.gauge_pa:.0f}")]
            if st is not None and st.message:
                problems.append(st.message)
        return keys, problems


# -- gain --------------------------------------------------------------------------------
def calibrate_gain(h: RigSensor) -> Tuple[bool, str]:
    """Fit ``h``'s ``'gain'`` (tare kept) from its contact samples; ``(success, answer)``; a refusal changes
    nothing."""
    if not GainCalibrator().compatible(h.sensor):   # the model applies no 'gain' entry
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
    """The ``sensors`` entries of a calibration file's text (``{}``: none); ValueError: bad YAML, or
    ``sensors``, an entry or its ``calibration`` not a mapping (named)."""
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
    """Load one file entry into a sensor; a warning text when it is for another type (ignored).
    ValueError naming the sensor when the model rejects it."""
    if entry.get("type") not in (None, h.kind):
        return f"calibration of {h.name!r} is for type {entry.get('type')!r}, not {h.kind!r}; ignored"
    try:
        # YAML lists -> float64 arrays (scalars stay scalars)
        h.sensor.set_calibration({k: (np.asarray(v, dtype=np.float64) if isinstance(v, list) else v)
                                  for k, v in entry.get("calibration", {}).items()})
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"entry {h.name!r}: {exc}") from None
    h.calibration_text = f"loaded from file ({entry.get('samples', '?')} samples)"
    return None


def restored_text(h: RigSensor) -> str:
    """A restored calibration for the start-up log: ``name (offset pressure=101325 Pa; gain 0.8)``."""
    cal = h.sensor.get_calibration()
    offset = offset_text(h)
    parts = [] if offset is None else [f"offset {offset}"]
    if "gain" in cal:
        parts.append("gain " + ", ".join(f"{g:.6g}" for g in _array(cal["gain"])))
    return f"{h.name} ({'; '.join(parts) or 'no offset or gain'})"


# -- calibration dicts as YAML values ------------------------------------------------------------
def _array(val: Any) -> np.ndarray:
    if hasattr(val, "detach"):
        val = val.detach().cpu().numpy()
    return np.asarray(val, dtype=np.float64).reshape(-1)


def calibration_to_yaml(calibration: Dict[str, Any]) -> Dict[str, Any]:
    """Calibration dict -> plain lists/floats for YAML."""
    def plain(v: Any) -> Any:
        if hasattr(v, "detach") or isinstance(v, np.ndarray):
            return _array(v).tolist()
        return v.item() if isinstance(v, (np.floating, np.integer)) else v

    return {k: plain(v) for k, v in calibration.items()}
