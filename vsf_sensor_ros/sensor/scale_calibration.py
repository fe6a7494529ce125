"""The scale of a measured force against a reference (F/T) force: a least-squares factor on magnitudes,
fitted on a poke's loading, scored on its unloading; :class:`ForceScale` pairs live frames with wrenches."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Deque, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["ENTRY_KEY", "ENTRY_TYPE", "ForceScale", "ScaleFit", "ScaleFitRefused", "ScaleRecord",
           "ScaleScore", "fit_scale", "loading_unloading", "out_of_sample_scale", "record_from_entry"]

#: reference wrenches kept for pairing (2 s of a 1 kHz F/T sensor)
WRENCH_HISTORY = 2048
#: frames waiting for a wrench stamped after them before they are paired with what is there
MAX_PENDING = 256
#: paired frames kept since the last reset (oldest dropped): 20 min of a 30 Hz camera
MAX_PAIRS = 36000
#: the calibration file's entry of the membrane node's scale (its ``sensors`` mapping), and its type
ENTRY_KEY = "membrane_force"
ENTRY_TYPE = "MembraneForceScale"


class ScaleFitRefused(ValueError):
    """The data cannot support a scale fit (the message names the count or force and its limit):
    ``reason`` (``'too_few_frames'``, ``'too_little_force'``, ``'zero_measured'``, ``'no_unloading'``),
    ``setting`` whose ``limit`` was not met (or None), ``value`` the data gave."""

    def __init__(self, message: str, reason: str, setting: Optional[str], value: float,
                 limit: Optional[float]) -> None:
        super().__init__(message)
        self.reason, self.setting, self.value, self.limit = reason, setting, value, limit


@dataclass(frozen=True)
class ScaleFit:
    """A fitted force scale: ``scale`` ``s`` (calibrated = ``s`` × measured), its ``std_error``, ``frames``
    ``(n,)`` fitted on, ``rms_before`` / ``rms_after`` of ``|m| − |r|`` / ``s|m| − |r|`` over them (N).
    """

    scale: float
    std_error: float
    frames: np.ndarray
    rms_before: float
    rms_after: float


@dataclass(frozen=True)
class ScaleScore:
    """A scale fitted on the loading (``fit``) and scored on the unloading ``test_frames``: ``rms_before`` /
    ``rms_after`` (N) there, uncalibrated / with the loading's scale.
    """

    fit: ScaleFit
    test_frames: np.ndarray
    rms_before: float
    rms_after: float


def _norms(a: np.ndarray, name: str) -> np.ndarray:
    """``(N,)`` magnitudes of ``a`` (``(N, 3)`` or ``(N,)``); ValueError: another shape, non-finite."""
    a = np.asarray(a, dtype=np.float64)
    if not (a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 3)):
        raise ValueError(f"{name} must be (N, 3) or (N,), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has non-finite values")
    return np.abs(a) if a.ndim == 1 else np.linalg.norm(a, axis=1)


def _magnitudes(measured: np.ndarray, reference: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`_norms` of both; ValueError also for unequal lengths."""
    x, y = _norms(measured, "measured"), _norms(reference, "reference")
    if len(x) != len(y):
        raise ValueError(f"measured has {len(x)} frames, reference {len(y)}")
    return x, y


def fit_scale(measured: np.ndarray, reference: np.ndarray, threshold: float = 0.5,
              min_frames: int = 10, min_force: float = 2.0,
              frames: Optional[np.ndarray] = None) -> ScaleFit:
    """Least-squares scale of ``|measured|`` onto ``|reference|`` (``(N, 3)`` or ``(N,)``, N, frame by frame)
    over ``frames`` (default all) with ``|reference| > threshold``: at least ``min_frames``, peak >=
    ``min_force``.  ValueError: bad shapes, lengths, values, ``frames`` or ``min_frames``; ScaleFitRefused."""
    if isinstance(min_frames, bool) or int(min_frames) != min_frames or min_frames < 2:
        raise ValueError(f"min_frames must be an integer >= 2 (a standard error needs two), "
                         f"got {min_frames!r}")
    x, y = _magnitudes(measured, reference)
    cand = np.arange(len(x)) if frames is None else np.asarray(frames, dtype=np.int64).ravel()
    if cand.size and (cand.min() < 0 or cand.max() >= len(x)):
        raise ValueError(f"frames must lie in 0..{len(x) - 1}, got {cand.min()}..{cand.max()}")
    sel = cand[y[cand] > threshold]
    if sel.size < min_frames:
        raise ScaleFitRefused(f"{sel.size} frames with |reference| > threshold={threshold:g} N; "
                              f"min_frames={min_frames} are needed", "too_few_frames", "min_frames", sel.size,
                              min_frames)
    peak = float(y[sel].max())
    if peak < min_force:
        raise ScaleFitRefused(f"largest |reference| {peak:.3g} N over the {sel.size} loaded frames is below "
                              f"min_force={min_force:g} N", "too_little_force", "min_force", peak, min_force)
    xs, ys = x[sel], y[sel]
    sxx = float(xs @ xs)
    if sxx == 0.0:
        raise ScaleFitRefused(f"the measured force is 0 on all {sel.size} loaded frames: no scale fits",
                              "zero_measured", None, sel.size, None)
    s = float(xs @ ys) / sxx
    r = ys - s * xs
    se = float(np.sqrt((r @ r) / (sel.size - 1) / sxx))
    return ScaleFit(s, se, sel, float(np.sqrt(np.mean((xs - ys) ** 2))), float(np.sqrt(np.mean(r ** 2))))


def loading_unloading(reference: np.ndarray, threshold: float = 0.5) -> Tuple[np.ndarray, np.ndarray]:
    """``(loading, unloading)`` int index arrays: the loaded frames (``|reference| > threshold``) up to the
    peak of ``|reference|``, and those after it; ValueError: bad shape, no frame, non-finite values."""
    y = _norms(reference, "reference")
    if not len(y):
        raise ValueError("reference has no frame")
    loaded = np.flatnonzero(y > threshold)
    peak = int(np.argmax(y))
    return loaded[loaded <= peak], loaded[loaded > peak]


def out_of_sample_scale(measured: np.ndarray, reference: np.ndarray, threshold: float = 0.5,
                        min_frames: int = 10, min_force: float = 2.0) -> ScaleScore:
    """:func:`fit_scale` on the loading, scored on the unloading; raises as :func:`fit_scale`, or
    ScaleFitRefused for no loaded frame after the peak."""
    loading, unloading = loading_unloading(reference, threshold)
    fit = fit_scale(measured, reference, threshold, min_frames, min_force, frames=loading)
    if not unloading.size:
        raise ScaleFitRefused(f"no frame with |reference| > threshold={threshold:g} N after the peak: "
                              "nothing to score out of sample", "no_unloading", "threshold", 0, threshold)
    x, y = _magnitudes(measured, reference)
    xt, yt = x[unloading], y[unloading]
    return ScaleScore(fit, unloading, float(np.sqrt(np.mean((xt - yt) ** 2))),
                      float(np.sqrt(np.mean((fit.scale * xt - yt) ** 2))))


@dataclass(frozen=True)
class ScaleRecord:
    """The force scale in force: ``scale`` (calibrated = ``scale`` × estimated, > 0), ``std_error`` (None:
    not fitted), ``frames`` fitted on, ``fitted_at`` (ISO 8601 UTC or ``"never"``), ``source`` (``"none"``,
    ``"fit"`` or ``"file <path>"``)."""

    scale: float = 1.0
    std_error: Optional[float] = None
    frames: int = 0
    fitted_at: str = "never"
    source: str = "none"

    def entry(self, frame_id: str) -> Dict[str, Any]:
        """The calibration file's entry (``sensors: {membrane_force: ...}``), plain YAML values."""
        return {"type": ENTRY_TYPE, "attachment": frame_id, "samples": self.frames,
                "calibration": {"scale": self.scale, "scale_std_error": self.std_error,
                                "fitted_at": self.fitted_at}}

    def values(self) -> Dict[str, str]:
        """The ``/diagnostics`` keys of the scale."""
        return {"force_scale": f"{self.scale:.6g}",
                "force_scale_std_error": "none" if self.std_error is None else f"{self.std_error:.3g}",
                "force_scale_frames": str(self.frames), "force_scale_fitted_at": self.fitted_at,
                "force_scale_source": self.source}


def record_from_entry(entry: Dict[str, Any], source: str) -> ScaleRecord:
    """The :class:`ScaleRecord` of a calibration file entry (:meth:`ScaleRecord.entry`); ValueError naming
    the value: another ``type``, ``scale`` not finite > 0, ``scale_std_error`` not finite >= 0."""
    def number(v: Any) -> bool:
        return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)

    if entry.get("type") not in (None, ENTRY_TYPE):
        raise ValueError(f"entry {ENTRY_KEY!r} is of type {entry.get('type')!r}, not {ENTRY_TYPE!r}")
    cal = entry.get("calibration", {})
    s, se = cal.get("scale"), cal.get("scale_std_error")
    if not number(s) or s <= 0.0:
        raise ValueError(f"entry {ENTRY_KEY!r}: scale {s!r} is not a finite number > 0")
    if se is not None and (not number(se) or se < 0.0):
        raise ValueError(f"entry {ENTRY_KEY!r}: scale_std_error {se!r} is not a finite number >= 0")
    frames = entry.get("samples", 0)
    return ScaleRecord(float(s), None if se is None else float(se),
                       frames if isinstance(frames, int) else 0, str(cal.get("fitted_at", "unknown")), source)


class ForceScale:
    """Estimated frames paired with reference wrenches since the last reset, and the fit.  A frame (total
    force, N; stamp 0 = not paired) takes the wrench stamped nearest within ``tolerance_ns`` once a later
    one came (or :data:`MAX_PENDING` wait, or a fit is asked); reference frames' mean wrench is the bias.
    ``rotation`` ``(3, 3)`` takes a wrench force into ``frame_id``; the rest as :func:`fit_scale`."""

    def __init__(self, rotation: np.ndarray, tolerance_ns: int, threshold: float, min_frames: int,
                 min_force: float) -> None:
        self.rotation = np.asarray(rotation, dtype=np.float64)
        self.tolerance_ns = int(tolerance_ns)
        self.threshold, self.min_frames, self.min_force = float(threshold), int(min_frames), float(min_force)
        self.wrench_stamps: Deque[int] = deque(maxlen=WRENCH_HISTORY)
        self.wrench_forces: Deque[np.ndarray] = deque(maxlen=WRENCH_HISTORY)
        self.received = self.fits = self.refused = 0
        self.latest: Optional[np.ndarray] = None
        self.reset()

    def reset(self) -> None:
        """Forget the pairs, the bias and the waiting frames (the wrench history stays)."""
        self.pending: Deque[Tuple[int, Optional[np.ndarray]]] = deque()
        self.bias_samples: List[np.ndarray] = []
        self.measured: Deque[np.ndarray] = deque(maxlen=MAX_PAIRS)
        self.reference: Deque[np.ndarray] = deque(maxlen=MAX_PAIRS)
        self.unpaired = 0

    @property
    def bias(self) -> np.ndarray:
        """``(3,)`` mean wrench force (frame_id) over the reference frames, N; zeros without one."""
        return np.mean(self.bias_samples, axis=0) if self.bias_samples else np.zeros(3)

    def add_wrench(self, stamp_ns: int, force: np.ndarray) -> None:
        """One reference wrench's force (its own frame, N) stamped ``stamp_ns``; a stamp older
        than the newest kept is dropped (they must come in stamp order)."""
        if self.wrench_stamps and stamp_ns < self.wrench_stamps[-1]:
            return
        f = self.rotation @ np.asarray(force, dtype=np.float64)
        self.wrench_stamps.append(int(stamp_ns))
        self.wrench_forces.append(f)
        self.received += 1
        self.latest = f - self.bias
        self._settle()

    def add_frame(self, stamp_ns: int, total: Optional[np.ndarray]) -> None:
        """One frame stamped ``stamp_ns``: an estimated one with its uncalibrated total contact force
        ``total`` (``(3,)`` N, frame_id), or a reference (contact-free) frame when ``total`` is None."""
        if stamp_ns == 0:
            return
        self.pending.append((int(stamp_ns), None if total is None else np.asarray(total, dtype=np.float64)))
        self._settle()

    def _settle(self, final: bool = False) -> None:
        """Pair the waiting frames no later wrench can be nearer to (all of them when ``final``)."""
        newest = self.wrench_stamps[-1] if self.wrench_stamps else None
        while self.pending:
            stamp, total = self.pending[0]
            if not (final or len(self.pending) > MAX_PENDING
                    or (newest is not None and newest >= stamp + self.tolerance_ns)):
                return
            self.pending.popleft()
            gaps = np.abs(np.asarray(self.wrench_stamps, dtype=np.int64) - stamp)
            i = int(gaps.argmin()) if gaps.size else -1   # of two as near, the earlier
            if i < 0 or gaps[i] > self.tolerance_ns:
                self.unpaired += 1
            elif total is None:
                self.bias_samples.append(self.wrench_forces[i])
            else:
                self.measured.append(total)
                self.reference.append(self.wrench_forces[i])

    def fit(self) -> Tuple[ScaleFit, Optional[ScaleScore], str]:
        """``(fit, score, note)``: the :class:`ScaleFit` of every paired loaded frame since the reset, and
        its :class:`ScaleScore` (loading fit, 2 frames enough) or None with ``note`` saying why.
        ScaleFitRefused as :func:`fit_scale`, the message adding the pair counts and the parameters."""
        self._settle(final=True)
        m = np.asarray(self.measured, dtype=np.float64).reshape(-1, 3)
        r = np.asarray(self.reference, dtype=np.float64).reshape(-1, 3) - self.bias
        names = (f"scale_threshold={self.threshold:g} N", f"scale_min_frames={self.min_frames}",
                 f"scale_min_force={self.min_force:g} N")
        try:
            fit = fit_scale(m, r, self.threshold, self.min_frames, self.min_force)
        except ScaleFitRefused as exc:
            raise ScaleFitRefused(f"{exc} (of {len(m)} frames paired with the reference since the "
                                  f"last reset, {self.unpaired} unpaired; parameters {', '.join(names)})",
                                  exc.reason, exc.setting, exc.value, exc.limit) from None
        try:
            return fit, out_of_sample_scale(m, r, self.threshold, 2, self.min_force), ""
        except ScaleFitRefused as exc:
            return fit, None, str(exc)

    def calibrate(self) -> Tuple[ScaleRecord, str]:
        """:meth:`fit` as the record to take (fitted now) and the answer's text; raises as :meth:`fit`."""
        fit, score, note = self.fit()
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        oos = (f"out of sample: scale {score.fit.scale:.6g} fitted on {len(score.fit.frames)} loading "
               f"frames, RMS on {len(score.test_frames)} unloading frames {score.rms_before:.4g} -> "
               f"{score.rms_after:.4g} N" if score is not None else f"no out-of-sample score: {note}")
        no_bias = "" if self.bias_samples else "; no reference wrench paired with the reference frames: " \
                                               "no bias removed"
        return ScaleRecord(fit.scale, fit.std_error, len(fit.frames), now, "fit"), (
            f"scale {fit.scale:.6g} +- {fit.std_error:.3g} (standard error) from {len(fit.frames)} frames "
            f"with |reference| > {self.threshold:g} N; RMS of s|m| - |r| {fit.rms_before:.4g} -> "
            f"{fit.rms_after:.4g} N; {oos}; reference bias [{', '.join(f'{v:.4g}' for v in self.bias)}] "
            f"N{no_bias}")

    def values(self, topic: str) -> Dict[str, Any]:
        """The ``/diagnostics`` keys of the pairing (``topic``: the reference wrench topic)."""
        return {"reference_wrench_topic": topic, "reference_wrenches_received": self.received,
                "reference_force": ("none" if self.latest is None else
                                    " ".join(f"{v:.4g}" for v in self.latest)),
                "scale_frames_paired": len(self.measured), "scale_frames_unpaired": self.unpaired,
                "reference_bias_frames": len(self.bias_samples), "scale_fits": self.fits,
                "scale_fits_refused": self.refused}
