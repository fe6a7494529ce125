"""A Punyo pressure stream over simulated minutes, stamps as data (10 Hz), for the tare and the watch.

The bubble reads ``BASE + rate·t + noise`` Pa while nothing touches it.  Presses the simulator
sees too add the same Δp to the prediction and the reading; a press only the real bubble feels
adds to the reading alone (the simulator says "free").
"""
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

BASE = 106_000.0       # Pa, the bubble's absolute contact-free pressure at t = 0
DT_NS = 100_000_000    # 10 Hz


@dataclass
class Stream:
    """``stamp_ns`` (n,) int; ``t`` (n,) s; ``predicted``, ``measured`` (n,) Pa; ``sim_contact`` (n,) bool;
    ``real_only`` (n,) bool (a press the simulator does not see); ``zero`` (n,) Pa, the true
    contact-free reading without noise."""

    stamp_ns: np.ndarray
    t: np.ndarray
    predicted: np.ndarray
    measured: np.ndarray
    sim_contact: np.ndarray
    real_only: np.ndarray
    zero: np.ndarray


def pressure_stream(minutes: float, rate_pa_per_min: float, noise_pa: float = 2.0,
                    shared_presses: List[Tuple[float, float, float]] = (),
                    real_presses: List[Tuple[float, float, float]] = (),
                    drift_from_s: float = 0.0, seed: int = 0) -> Stream:
    """Presses are ``(start s, duration s, Δp Pa)``, flat-topped; the drift starts at ``drift_from_s``."""
    n = int(round(minutes * 60 * 1e9 / DT_NS))
    stamp = np.arange(n, dtype=np.int64) * DT_NS
    t = stamp * 1e-9
    zero = BASE + rate_pa_per_min / 60.0 * np.clip(t - drift_from_s, 0.0, None)
    rng = np.random.default_rng(seed)
    measured = zero + rng.normal(0.0, noise_pa, n)
    predicted = np.zeros(n)
    sim_contact = np.zeros(n, dtype=bool)
    real_only = np.zeros(n, dtype=bool)
    for start, dur, dp in shared_presses:
        on = (t >= start) & (t < start + dur)
        predicted[on] += dp
        measured[on] += dp
        sim_contact |= on
    for start, dur, dp in real_presses:
        on = (t >= start) & (t < start + dur)
        measured[on] += dp
        real_only |= on
    return Stream(stamp, t, predicted, measured, sim_contact, real_only, zero)
