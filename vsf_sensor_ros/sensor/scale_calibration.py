"""The scale of a measured force against a reference force (an F/T wrench), judged out of sample.

One factor on the force magnitudes (least squares through the origin, with its standard error), fitted on a
poke's loading and scored on its unloading (docs/membrane_force.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

__all__ = ["ScaleFit", "ScaleFitRefused", "ScaleScore", "fit_scale", "loading_unloading",
           "out_of_sample_scale"]


class ScaleFitRefused(ValueError):
    """The data cannot support a scale fit; the message names the count or force and its threshold.

    Attributes:
        reason: ``'too_few_frames'``, ``'too_little_force'``, ``'zero_measured'`` or ``'no_unloading'``.
        setting: the argument whose limit was not met (``'min_frames'``, ``'min_force'``, ``'threshold'``) or
            None.  value: what the data gave (frames, or peak force N).  limit: that argument's value.
    """

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
    """``(N,)`` magnitudes of ``a`` (``(N, 3)`` or ``(N,)``); ValueError for another shape or non-finite
    values.
    """
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
    """Least-squares scale of ``|measured|`` onto ``|reference|`` over the loaded frames.

    ``measured``, ``reference``: ``(N, 3)`` or ``(N,)`` forces per frame (N), paired frame by frame (bias and
    lag removed).  Loaded: ``|reference| > threshold`` (N), among ``frames`` (default all); at least
    ``min_frames`` of them, peaking at ``min_force`` (N) or more.

    Raises:
        ValueError: bad shapes or lengths, non-finite values, ``frames`` out of range, ``min_frames`` < 2.
        ScaleFitRefused: too few loaded frames, too little force, or a measured force zero throughout.
    """
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
    peak of ``|reference|``, and those after it.

    Raises:
        ValueError: bad shape, no frame or non-finite values.
    """
    y = _norms(reference, "reference")
    if not len(y):
        raise ValueError("reference has no frame")
    loaded = np.flatnonzero(y > threshold)
    peak = int(np.argmax(y))
    return loaded[loaded <= peak], loaded[loaded > peak]


def out_of_sample_scale(measured: np.ndarray, reference: np.ndarray, threshold: float = 0.5,
                        min_frames: int = 10, min_force: float = 2.0) -> ScaleScore:
    """:func:`fit_scale` on the loading, scored on the unloading (arguments as :func:`fit_scale`).

    Raises:
        ValueError, ScaleFitRefused: as :func:`fit_scale`, or no loaded frame after the peak.
    """
    loading, unloading = loading_unloading(reference, threshold)
    fit = fit_scale(measured, reference, threshold, min_frames, min_force, frames=loading)
    if not unloading.size:
        raise ScaleFitRefused(f"no frame with |reference| > threshold={threshold:g} N after the peak: "
                              "nothing to score out of sample", "no_unloading", "threshold", 0, threshold)
    x, y = _magnitudes(measured, reference)
    xt, yt = x[unloading], y[unloading]
    return ScaleScore(fit, unloading, float(np.sqrt(np.mean((xt - yt) ** 2))),
                      float(np.sqrt(np.mean((fit.scale * xt - yt) ** 2))))
