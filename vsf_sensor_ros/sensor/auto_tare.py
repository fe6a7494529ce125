"""A tare that follows a wandering zero: re-tare over steady windows the simulator calls contact-free,
refusing a jump it cannot explain (docs/real_data.md, the sim-to-real loop); stamps are integer ns.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Deque, Optional, Tuple

import numpy as np

from .errors import InputError, SettingError

__all__ = ["AutoTare", "TareEvent"]


@dataclass(frozen=True)
class TareEvent:
    """One automatic tare tried: ``offset`` ``(#meas,)`` held after it, ``step`` (proposed − previous, or
    proposed at first), ``reason`` of a refusal (``''`` when applied), ``samples`` averaged."""

    stamp_ns: int
    applied: bool
    offset: np.ndarray
    step: np.ndarray
    reason: str = ""
    samples: int = 0


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    """``value`` as a float; SettingError (``name``, ``'out_of_range'``) unless finite and > 0 (or >= 0)."""
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise SettingError(f"{name} must be finite and {'>=' if allow_zero else '>'} 0, got {value!r}",
                           name, value, "out_of_range")
    return v


class AutoTare:
    """The offset of one sensor, re-tared while the simulator predicts no contact (docs/real_data.md).

    ``max_step`` (> 0) bounds any entry's change, ``steady_std`` (> 0) the residual's spread in the window
    (sensor units); ``window_s`` (> 0), ``min_interval_s`` (>= 0), ``min_samples`` (>= 2); ``offset``: the
    starting ``(#meas,)`` offset, or None (the first tare is unbounded).  Attributes ``offset``,
    ``applied``, ``refused``.  SettingError (``setting`` the parameter, ``reason`` ``'out_of_range'``).
    """

    def __init__(self, max_step: float, steady_std: float, window_s: float = 2.0,
                 min_interval_s: float = 5.0, min_samples: int = 10,
                 offset: Optional[np.ndarray] = None) -> None:
        self.max_step = _positive("max_step", max_step)
        self.steady_std = _positive("steady_std", steady_std)
        self.window_ns = int(_positive("window_s", window_s) * 1e9)
        self.min_interval_ns = int(_positive("min_interval_s", min_interval_s, allow_zero=True) * 1e9)
        if isinstance(min_samples, bool) or int(min_samples) != min_samples or min_samples < 2:
            raise SettingError(f"min_samples must be an integer >= 2, got {min_samples!r}", "min_samples",
                               min_samples, "out_of_range")
        self.min_samples = int(min_samples)
        self.offset = None if offset is None else np.array(offset, dtype=np.float64).reshape(-1)
        if self.offset is not None and not np.isfinite(self.offset).all():
            raise SettingError(f"offset must be finite, got {offset!r}", "offset", offset, "out_of_range")
        self.applied = self.refused = 0
        self._window: Deque[Tuple[int, np.ndarray]] = deque()
        self._last_stamp: Optional[int] = None
        self._last_try: Optional[int] = None

    def update(self, stamp_ns: int, predicted: np.ndarray, measured: np.ndarray,
               sim_in_contact: bool) -> Optional[TareEvent]:
        """Feed one paired sample (raw ``predicted``, ``measured`` ``(#meas,)``, sensor units); the
        :class:`TareEvent` tried on it, or None.  InputError (nothing changes): ``'stamp_ns'``
        ``'not_after'`` (``expected`` the previous), ``'predicted'`` / ``'measured'`` ``'size'`` or
        ``'not_finite'``."""
        stamp = int(stamp_ns)
        if self._last_stamp is not None and stamp <= self._last_stamp:
            raise InputError(f"stamp_ns {stamp} is not after the previous {self._last_stamp}",
                             "stamp_ns", stamp, "not_after", self._last_stamp)
        p = np.asarray(predicted, dtype=np.float64).reshape(-1)
        m = np.asarray(measured, dtype=np.float64).reshape(-1)
        size = p.size if self.offset is None else self.offset.size
        for name, v in (("predicted", p), ("measured", m)):
            if v.size != size:
                raise InputError(f"predicted has {p.size} entries and measured {m.size}; expected {size}",
                                 name, v.size, "size", size)
        for name, v in (("predicted", p), ("measured", m)):
            if not np.isfinite(v).all():
                raise InputError(f"non-finite sample at stamp_ns {stamp}", name, v.tolist(), "not_finite")
        self._last_stamp = stamp
        if sim_in_contact:
            self._window.clear()
            return None
        self._window.append((stamp, m - p))
        while stamp - self._window[0][0] > self.window_ns:
            self._window.popleft()
        if (len(self._window) < self.min_samples or stamp - self._window[0][0] < self.window_ns
                or (self._last_try is not None and stamp - self._last_try < self.min_interval_ns)):
            return None
        r = np.stack([v for _, v in self._window])
        if r.std(axis=0).max() > self.steady_std:
            return None
        self._last_try = stamp
        proposed = r.mean(axis=0)
        step = proposed if self.offset is None else proposed - self.offset
        worst = int(np.argmax(np.abs(step)))
        if self.offset is not None and abs(step[worst]) > self.max_step:
            self.refused += 1
            return TareEvent(stamp, False, self.offset.copy(), step,
                             f"a tare would move entry {worst} by {step[worst]:+.4g} > "
                             f"max_step={self.max_step:g} "
                             "while the simulator predicts no contact: the real sensor is touched or the "
                             "simulator is misaligned", len(r))
        self.offset = proposed
        self.applied += 1
        return TareEvent(stamp, True, proposed.copy(), step, "", len(r))
