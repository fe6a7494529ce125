"""Leak watch of the Punyo bubble: the trend of its contact-free ``measured - predicted`` pressure, warning
on a steady loss or a gauge pressure below the model's (docs/real_data.md)."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Deque, Optional, Tuple

import numpy as np

from .errors import InputError, SettingError

__all__ = ["OK", "WARN", "PressureStatus", "PressureWatch"]

OK, WARN = 0, 1     # diagnostic_msgs/DiagnosticStatus levels


@dataclass(frozen=True)
class PressureStatus:
    """The watch after one sample: ``stamp_ns``, ``level`` (:data:`OK` / :data:`WARN`),
    ``rate_pa_per_min`` (None until ``min_span_s`` is spanned), ``gauge_pa`` (measured − ambient, Pa),
    ``message`` (names the rate or gauge and the threshold; ``''`` when OK).
    """

    stamp_ns: int
    level: int
    rate_pa_per_min: Optional[float]
    gauge_pa: float
    message: str = ""


class PressureWatch:
    """Trend of the contact-free pressure residual; WARN on a leak or a low gauge pressure.

    ``leak_rate`` (Pa/min, > 0), ``window_s`` (s), ``min_span_s`` (s, <= window_s), ``ambient_pa`` (Pa),
    ``min_gauge_pa`` (Pa or None: no check).  SettingError (``setting`` the parameter): ``'out_of_range'``,
    or ``'exceeds_window'`` for ``min_span_s`` over ``window_s`` (``expected``).
    """

    def __init__(self, leak_rate: float = 50.0, window_s: float = 30.0, min_span_s: float = 20.0,
                 ambient_pa: float = 101325.0, min_gauge_pa: Optional[float] = None) -> None:
        for name, v in (("leak_rate", leak_rate), ("window_s", window_s), ("min_span_s", min_span_s)):
            if not (math.isfinite(float(v)) and float(v) > 0):
                raise SettingError(f"{name} must be finite and > 0, got {v!r}", name, v, "out_of_range")
        if min_span_s > window_s:
            raise SettingError(f"min_span_s={min_span_s!r} must not exceed window_s={window_s!r}",
                               "min_span_s", min_span_s, "exceeds_window", window_s)
        for name, v in (("ambient_pa", ambient_pa), ("min_gauge_pa", min_gauge_pa)):
            if v is not None and not math.isfinite(float(v)):
                raise SettingError(f"{name} must be finite, got {v!r}", name, v, "out_of_range")
        self.leak_rate = float(leak_rate)
        self.window_ns = int(window_s * 1e9)
        self.min_span_ns = int(min_span_s * 1e9)
        self.ambient_pa = float(ambient_pa)
        self.min_gauge_pa = None if min_gauge_pa is None else float(min_gauge_pa)
        self._window: Deque[Tuple[int, float]] = deque()
        self._last_stamp: Optional[int] = None

    def update(self, stamp_ns: int, predicted: float, measured: float,
               sim_in_contact: bool) -> PressureStatus:
        """Feed one paired sample (absolute Pa; one in contact is left out of the trend); the status after
        it.  InputError (nothing changes): ``'stamp_ns'`` ``'not_after'`` (``expected`` the previous), or
        ``'predicted'`` / ``'measured'`` ``'not_finite'``."""
        stamp = int(stamp_ns)
        if self._last_stamp is not None and stamp <= self._last_stamp:
            raise InputError(f"stamp_ns {stamp} is not after the previous {self._last_stamp}",
                             "stamp_ns", stamp, "not_after", self._last_stamp)
        p, m = float(predicted), float(measured)
        if not (math.isfinite(p) and math.isfinite(m)):
            raise InputError(f"non-finite pressure at stamp_ns {stamp}: predicted {p}, measured {m}",
                             "measured" if math.isfinite(p) else "predicted", m if math.isfinite(p) else p,
                             "not_finite")
        self._last_stamp = stamp
        if not sim_in_contact:
            self._window.append((stamp, m - p))
        while self._window and stamp - self._window[0][0] > self.window_ns:
            self._window.popleft()
        rate = self._rate()
        gauge = m - self.ambient_pa
        problems = []
        if rate is not None and rate < -self.leak_rate:
            problems.append(f"leak: the contact-free pressure falls {-rate:.1f} Pa/min "
                            f"(leak_rate {self.leak_rate:g} Pa/min)")
        if self.min_gauge_pa is not None and gauge < self.min_gauge_pa:
            problems.append(f"gauge pressure {gauge:.0f} Pa below min_gauge_pa {self.min_gauge_pa:g} Pa")
        return PressureStatus(stamp, WARN if problems else OK, rate, gauge, "; ".join(problems))

    def _rate(self) -> Optional[float]:
        """Least-squares slope of the window's residuals, Pa/min; None while it spans < min_span_s."""
        if len(self._window) < 3 or self._window[-1][0] - self._window[0][0] < self.min_span_ns:
            return None
        t = np.array([s for s, _ in self._window], dtype=np.float64) * 1e-9
        r = np.array([v for _, v in self._window])
        t -= t.mean()
        return float(60.0 * (t @ (r - r.mean())) / (t @ t))
