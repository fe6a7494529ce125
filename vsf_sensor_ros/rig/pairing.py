"""Pairing two stamped streams by nearest stamp (predictions and measurements; depth and colour), as
``message_filters``' ``ApproximateTimeSynchronizer`` for two inputs plus an adaptive tolerance and clock
diagnoses; stamps in ns, 0 never pairs (docs/interface.md).  No ROS."""
from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

from vsf_sensor_ros.sensor.errors import SettingError

P = TypeVar("P")
M = TypeVar("M")

# Differences between consecutive stamps kept to estimate a stream's period.
PERIOD_WINDOW = 16

# Offers in a row without a partner (both streams arriving) before a dropped partner is reported.
UNPAIRED_RUN = 20


def nearest_within(stamps: Sequence[int], stamp_ns: int, tolerance_ns: int) -> Optional[int]:
    """Index of the stamp in ascending ``stamps`` (ns) nearest ``stamp_ns`` within ``tolerance_ns``
    (>= 0), the earlier of two equally near; None when none is close enough."""
    i = bisect.bisect_left(stamps, stamp_ns)
    j = i - 1 if i == len(stamps) or (i and stamp_ns - stamps[i - 1] <= stamps[i] - stamp_ns) else i  # nearer
    return j if j >= 0 and abs(stamps[j] - stamp_ns) <= tolerance_ns else None


class PeriodEstimate:
    """The period of a stream: median of the last :data:`PERIOD_WINDOW` positive stamp steps (ns)."""

    def __init__(self) -> None:
        self._last: Optional[int] = None
        self._steps: Deque[int] = deque(maxlen=PERIOD_WINDOW)
        self._sorted: List[int] = []      # the same steps kept sorted: the median without a sort per offer

    def observe(self, stamp_ns: int) -> None:
        """Note one stamp; a step back (a restart) is not a period and starts afresh."""
        if self._last is not None:
            step = stamp_ns - self._last
            if step > 0:
                if len(self._steps) < PERIOD_WINDOW or self._steps[0] != step:   # steady: _sorted as is
                    if len(self._steps) == PERIOD_WINDOW:
                        self._sorted.remove(self._steps[0])
                    bisect.insort(self._sorted, step)
                self._steps.append(step)
            elif step < 0:
                self.clear()
        self._last = stamp_ns

    @property
    def period_ns(self) -> Optional[int]:
        """The median step (ns), or None before two increasing stamps were seen."""
        s = self._sorted
        return s[len(s) // 2] if s else None

    def clear(self) -> None:
        """Forget everything observed."""
        self._last = None
        self._steps.clear()
        self._sorted.clear()


@dataclass(frozen=True)
class Pair(Generic[P, M]):
    """A ``prediction`` and a ``measurement`` matched by stamp: ``stamp_ns`` the prediction's (the pair's
    outputs carry it), ``measured_stamp_ns`` the measurement's."""

    stamp_ns: int
    measured_stamp_ns: int
    prediction: P
    measurement: M


class _Queue(Generic[P]):
    """Items sorted by stamp, at most ``capacity`` (oldest stamp dropped first); ``last`` the latest offered
    stamp, ``fresh`` offered since the other stream's last offer, ``dropped_gap`` the gap (measured minus
    contacts stamp, ns) of the latest unpaired offer whose partner was dropped."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.stamps: List[int] = []
        self.items: List[P] = []
        self.period = PeriodEstimate()
        self.last: Optional[int] = None
        self.fresh = False
        self.dropped_gap: Optional[int] = None

    def insert(self, stamp_ns: int, item: P) -> None:
        i = bisect.bisect_right(self.stamps, stamp_ns)
        self.stamps.insert(i, stamp_ns)
        self.items.insert(i, item)
        if len(self.stamps) > self.capacity:
            del self.stamps[0], self.items[0]

    def clear(self) -> None:
        """Drop the items, the period and ``fresh`` (``last`` is kept)."""
        self.stamps.clear()
        self.items.clear()
        self.period.clear()
        self.fresh = False


class StampPairer(Generic[P, M]):
    """Pairs predictions with measurements of (nearly) the same stamp: at most ``capacity`` unmatched per
    queue, ``tolerance_ns`` fixed or None (adaptive: half the longer period).  ``zero_stamps``: offers
    refused for stamp 0.  SettingError (``'out_of_range'``): ``capacity < 1``, a negative tolerance."""

    def __init__(self, capacity: int, tolerance_ns: Optional[int]) -> None:
        if capacity < 1:
            raise SettingError(f"pairing capacity must be >= 1, got {capacity}", "capacity", capacity,
                               "out_of_range", 1)
        self._pred: _Queue[P] = _Queue(capacity)
        self._meas: _Queue[M] = _Queue(capacity)
        self.tolerance_ns = tolerance_ns
        # the clock diagnosis (offset_hint): the latest unpaired gap (measured - contacts stamp, ns) and the
        # run of unpaired offers
        self._unpaired_gap: Optional[int] = None
        self._unpaired_run = 0
        self.zero_stamps: Dict[str, int] = {"predicted": 0, "measured": 0}

    @property
    def tolerance_ns(self) -> Optional[int]:
        """The fixed tolerance (ns), or None for the adaptive rule."""
        return self._tolerance

    @tolerance_ns.setter
    def tolerance_ns(self, value: Optional[int]) -> None:
        if value is not None and value < 0:
            raise SettingError(f"pairing tolerance must be >= 0 ns, got {value}", "tolerance_ns", value,
                               "out_of_range", 0)
        self._tolerance = value

    def effective_tolerance_ns(self) -> int:
        """The tolerance in use now: the fixed one, else half the longer observed period (0 if unknown)."""
        if self._tolerance is not None:
            return self._tolerance
        a, b = self._pred.period.period_ns, self._meas.period.period_ns
        return max(a, b) // 2 if a is not None and b is not None else 0

    def add_prediction(self, stamp_ns: int, item: P) -> Optional[Pair[P, M]]:
        """Offer a prediction; the pair it completes, else None (queued, or counted as a zero stamp)."""
        return self._offer(stamp_ns, item, measured=False)

    def add_measurement(self, stamp_ns: int, item: M) -> Optional[Pair[P, M]]:
        """Offer a measurement; the pair it completes, else None (queued, or counted as a zero stamp).
        Call :meth:`measurement_went_back` first to detect a restarted source."""
        return self._offer(stamp_ns, item, measured=True)

    def _offer(self, stamp_ns: int, item: Any, measured: bool) -> Optional[Pair[P, M]]:
        mine, other = (self._meas, self._pred) if measured else (self._pred, self._meas)
        if stamp_ns == 0:
            self.zero_stamps["measured" if measured else "predicted"] += 1
            return None
        mine.period.observe(stamp_ns)
        # both streams arriving together: only then is an unpaired offer a clock diagnosis
        interleaved, other.fresh, mine.fresh, mine.last = other.fresh, False, True, stamp_ns
        tolerance = self.effective_tolerance_ns()
        j = nearest_within(other.stamps, stamp_ns, tolerance)
        if j is not None:
            other_stamp, other_item = other.stamps.pop(j), other.items.pop(j)
            self._paired()
            if measured:
                return Pair(other_stamp, stamp_ns, other_item, item)
            return Pair(stamp_ns, other_stamp, item, other_item)
        if interleaved and other.last is not None:
            self._unpaired_gap = stamp_ns - other.last if measured else other.last - stamp_ns
            self._unpaired_run += 1
            # the other queue is full and this stamp older than all of it: its partner was dropped
            dropped = len(other.stamps) == other.capacity and stamp_ns < other.stamps[0] - tolerance
            mine.dropped_gap = self._unpaired_gap if dropped else None
        mine.insert(stamp_ns, item)
        return None

    def _paired(self) -> None:
        self._unpaired_gap = None
        self._unpaired_run = 0
        self._pred.dropped_gap = self._meas.dropped_gap = None

    def measurement_went_back(self, stamp_ns: int) -> bool:
        """True when ``stamp_ns`` (not 0) is earlier than the previous measurement's (a restart)."""
        last = self._meas.last
        return stamp_ns != 0 and last is not None and stamp_ns < last

    def clear_measurements(self) -> None:
        """Drop the unmatched measurements and the clock diagnosis (the last measured stamp is kept)."""
        self._meas.clear()
        self._paired()

    def clear(self) -> None:
        """Drop everything but the ``zero_stamps`` counts."""
        self._pred.clear()
        self._meas.clear()
        self._pred.last = self._meas.last = None
        self._paired()

    def offset_hint(self) -> Optional[str]:
        """A sentence when both streams arrive but nothing pairs, else None: a gap over 1 s and 100
        tolerances, ``different clocks?``; after :data:`UNPAIRED_RUN` offers whose partner was dropped,
        ``raise alignment_buffer_size`` (docs/interface.md, ``pairing``)."""
        gap = self._unpaired_gap
        if gap is None:
            return None
        side = "ahead of" if gap > 0 else "behind"
        if abs(gap) > max(1_000_000_000, 100 * self.effective_tolerance_ns()):
            return f"measured stamps are {abs(gap) * 1e-9:.2g} s {side} contacts stamps: different clocks?"
        if self._unpaired_run < UNPAIRED_RUN:
            return None
        if self._meas.dropped_gap is not None:
            gap, kept = abs(self._meas.dropped_gap), self._pred.stamps
            where = f"behind contacts stamps, older than the {len(kept)} predictions kept"
        elif self._pred.dropped_gap is not None:
            gap, kept = self._pred.dropped_gap, self._meas.stamps
            where = f"ahead of contacts stamps, newer than the {len(kept)} measurements kept can wait for"
        else:
            return None
        span = (kept[-1] - kept[0]) * 1e-9 if len(kept) > 1 else 0.0
        return (f"measured stamps are {gap * 1e-9:.2g} s {where} ({span:.2g} s of them): raise "
                "alignment_buffer_size")


# -- depth frames and colour images ------------------------------------------------
class ColourPairing:
    """Pairs depth frames with colour images by stamp (either order); frames leave in arrival order with
    their colour or why not (docs/membrane_force.md).  ``tolerance_s`` (0 = same stamp); at most
    ``max_waiting`` frames wait; ``history`` colour images kept (``colours``: ``(stamp, image or None)``)."""

    def __init__(self, tolerance_s: float, max_waiting: int, history: int) -> None:
        self.tolerance_ns = int(round(float(tolerance_s) * 1e9))
        self.max_waiting = int(max_waiting)
        self.colours: Deque[Tuple[int, Optional[np.ndarray]]] = deque(maxlen=int(history))
        self.pending: List[Tuple[int, Any, float]] = []

    def add_colour(self, stamp_ns: int, image: Optional[np.ndarray]) -> None:
        """Keep a colour image (``None``: one that was rejected) stamped ``stamp_ns``."""
        self.colours.append((int(stamp_ns), image))

    def add_frame(self, stamp_ns: int, item: Any, received_s: float) -> None:
        """A depth frame stamped ``stamp_ns`` (``item``: whatever the caller needs back), received at
        monotonic ``received_s``."""
        self.pending.append((int(stamp_ns), item, float(received_s)))

    def colour_for(self, stamp_ns: int, final: bool) -> Tuple[bool, Optional[np.ndarray], str]:
        """``(settled, image, depth-only reason)`` of a frame: reason ``no_colour`` (none within the
        tolerance) or ``colour_rejected``; ``final``: it waits no longer."""
        tol = self.tolerance_ns
        near = [(abs(s - stamp_ns), img) for s, img in self.colours if abs(s - stamp_ns) <= tol]
        if near:
            gap, image = min(near, key=lambda c: c[0])
            if gap == 0 or final or any(s >= stamp_ns for s, _ in self.colours):
                return True, image, "" if image is not None else "colour_rejected"
            return False, None, ""
        if final or any(s > stamp_ns + tol for s, _ in self.colours):
            return True, None, "no_colour"
        return False, None, ""

    def settled(self, expired: float = float("-inf")) -> List[Tuple[Any, Optional[np.ndarray], str]]:
        """Remove and return the settled frames in arrival order as ``(item, image or None, reason)``; one
        received at or before monotonic ``expired`` waits no longer; one still waiting holds back the rest."""
        out = []
        while self.pending:
            stamp_ns, item, received = self.pending[0]
            final = received <= expired or len(self.pending) > self.max_waiting
            done, image, reason = self.colour_for(stamp_ns, final)
            if not done:
                break
            self.pending.pop(0)
            out.append((item, image, reason))
        return out
