"""``membrane_force_node``'s force scale against a reference wrench: pairing, fit, file entry (pure).

The dense force the node estimates is right in shape, but its size rests on a membrane model whose
stiffness a new rig does not know.  With a reference wrench (the arm's F/T sensor) the node fits
one factor ``s`` (:func:`~vsf_sensor_ros.sensor.scale_calibration.fit_scale`: least squares
through the origin on the force magnitudes) so that ``s |m| ~ |r|``.

Pairing: each estimated frame (its total contact force ``m``, N, in ``frame_id``) takes the
reference wrench stamped nearest to it within ``tolerance`` (ns).  A frame waits until a wrench
stamped at least ``tolerance`` after it has come (no nearer one can come after that, wrenches
arriving in stamp order), or until :data:`MAX_PENDING` frames wait, or until a fit; a frame with
no wrench within the tolerance is counted as unpaired.  Frames stamped 0 are not paired.

Bias: the contact-free frames the node collects as its membrane reference (after start and each
``reset_reference``) are paired the same way; the mean of their wrenches is the reference's bias
(an F/T sensor's offset and the weight it carries), subtracted from every paired wrench.  No
wrench paired with them: no bias is removed, and the fit's answer says so.

A reset (the node's ``reset_reference``) forgets the pairs and the bias: a fit uses the frames
since the last reset.  The fitted scale survives it (it belongs to the membrane, not to a tare).
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple

import numpy as np

from ..rig.pairing import nearest_within
from ..sensor.scale_calibration import ScaleFitRefused, fit_scale, out_of_sample_scale

__all__ = ["ENTRY_KEY", "ENTRY_TYPE", "MAX_PAIRS", "MAX_PENDING", "WRENCH_HISTORY", "ForceScale",
           "ScaleRecord", "record_from_entry"]

#: reference wrenches kept for pairing (2 s of a 1 kHz F/T sensor)
WRENCH_HISTORY = 2048
#: frames waiting for a wrench stamped after them before they are paired with what is there
MAX_PENDING = 256
#: paired frames kept since the last reset (oldest dropped): 20 min of a 30 Hz camera
MAX_PAIRS = 36000
#: the calibration file's entry of the node's scale (its ``sensors`` mapping), and its type
ENTRY_KEY = "membrane_force"
ENTRY_TYPE = "MembraneForceScale"


class ScaleRecord:
    """A force scale in force: ``1`` (none fitted), fitted live, or loaded from the file.

    Attributes:
        scale: calibrated force = ``scale`` × estimated force (dimensionless, > 0).
        std_error: its standard error (None: not fitted).
        frames: frames it was fitted on (0: none).
        fitted_at: ISO 8601 UTC time of the fit (``"never"``: none).
        source: ``"none"``, ``"fit"`` or ``"file <path>"``.
    """

    def __init__(self, scale: float = 1.0, std_error: Optional[float] = None, frames: int = 0,
                 fitted_at: str = "never", source: str = "none") -> None:
        self.scale, self.std_error, self.frames = float(scale), std_error, int(frames)
        self.fitted_at, self.source = fitted_at, source

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
    """The :class:`ScaleRecord` of a calibration file entry (:meth:`ScaleRecord.entry`).

    Raises:
        ValueError: another ``type``, or a ``scale`` that is not a finite number > 0, a
            ``scale_std_error`` that is not a finite number >= 0 (named with the value).
    """
    if entry.get("type") not in (None, ENTRY_TYPE):
        raise ValueError(f"entry {ENTRY_KEY!r} is of type {entry.get('type')!r}, not {ENTRY_TYPE!r}")
    cal = entry.get("calibration", {})
    s, se = cal.get("scale"), cal.get("scale_std_error")
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0.0:
        raise ValueError(f"entry {ENTRY_KEY!r}: scale {s!r} is not a finite number > 0")
    if se is not None and (isinstance(se, bool) or not isinstance(se, (int, float))
                           or not math.isfinite(se) or se < 0.0):
        raise ValueError(f"entry {ENTRY_KEY!r}: scale_std_error {se!r} is not a finite number >= 0")
    frames = entry.get("samples", 0)
    return ScaleRecord(float(s), None if se is None else float(se),
                       frames if isinstance(frames, int) else 0, str(cal.get("fitted_at", "unknown")), source)


class ForceScale:
    """Estimated frames paired with reference wrenches since the last reset, and the fit (module text).

    Args:
        rotation: ``(3, 3)`` float64 ``R``: a wrench's force ``f`` is ``R f`` in ``frame_id``.
        tolerance_ns: largest stamp difference of a pair, ns (>= 0).
        threshold: a frame is loaded when ``|reference| > threshold``, N.
        min_frames: fewest loaded frames a fit uses (>= 2).
        min_force: the largest ``|reference|`` must reach this, N.
    """

    def __init__(self, rotation: np.ndarray, tolerance_ns: int, threshold: float, min_frames: int,
                 min_force: float) -> None:
        self.rotation = np.asarray(rotation, dtype=np.float64)
        self.tolerance_ns = int(tolerance_ns)
        self.threshold, self.min_frames, self.min_force = float(threshold), int(min_frames), float(min_force)
        self.wrench_stamps: Deque[int] = deque(maxlen=WRENCH_HISTORY)
        self.wrench_forces: Deque[np.ndarray] = deque(maxlen=WRENCH_HISTORY)
        self.received = 0
        self.latest: Optional[np.ndarray] = None   # the latest wrench's force in frame_id, bias removed
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
            ref = self._nearest(stamp)
            if ref is None:
                self.unpaired += 1
            elif total is None:
                self.bias_samples.append(ref)
            else:
                self.measured.append(total)
                self.reference.append(ref)

    def _nearest(self, stamp: int) -> Optional[np.ndarray]:
        i = nearest_within(self.wrench_stamps, stamp, self.tolerance_ns)
        return None if i is None else self.wrench_forces[i]

    def fit(self) -> Tuple[Any, Any, str]:
        """Fit the scale on every paired frame since the reset, and score it out of sample.

        Returns:
            ``(fit, score, note)``: the :class:`~vsf_sensor_ros.sensor.scale_calibration.ScaleFit`
            of all loaded frames; the :class:`~vsf_sensor_ros.sensor.scale_calibration.ScaleScore`
            (fitted on the loading, up to the reference's peak, scored on the unloading after
            it; a loading of 2 frames is enough to score), or None when it cannot be had, with
            ``note`` saying why (else ``""``).

        Raises:
            ScaleFitRefused: too few loaded frames, too small a peak, or a measured force of 0
                over them; the message names the count or force and the parameter it misses.
        """
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
