"""Keep the per-message path in the CPU caches while no message arrives.

A node whose core is shared with other processes loses its code and data
from the caches within ~20 ms of idleness; the next message then costs
10-20x a warm one in every stage (Python, torch, numpy, rclpy).  Running the
same work on the last input once every ``period`` while idle cuts that: on
a heavily shared 2-core host, 5 ms kept the library calls at 4-5x of warm
(instead of 13-18x; ``benchmarks/cold_message.py``), and work run right
before the message at 1.2-2x.  Its price is that work once per ``period`` of
idleness, nothing while messages arrive faster than ``period``.  The
alternative without CPU cost is a core of the node's own (``taskset``,
cpusets), which keeps other processes from evicting its caches.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from rclpy.node import Node


class KeepWarm:
    """A timer that reruns ``work`` when no real message arrived for ``period`` seconds.

    Call :meth:`touch` from the real message callback; ``work`` must not
    publish or change state the node exposes (e.g. decode -> predict ->
    encode of the last contacts message, results discarded).

    Attributes:
        runs: how many times ``work`` ran (for diagnostics).
        errors: how many times it raised (the exception is swallowed: a
            warm-up must never take the node down).
    """

    def __init__(self, node: Node, work: Callable[[], None], period: float = 0.005) -> None:
        """Create the timer on ``node``.

        Args:
            node: the node whose executor runs the timer.
            work: the warm-up call (no arguments, result ignored).
            period: idle time (s, > 0) after which, and interval at which, ``work`` runs.

        Raises:
            ValueError: ``period`` not positive.
        """
        if not period > 0:
            raise ValueError(f"keep-warm period must be > 0 s, got {period}")
        self.period = float(period)
        self.work: Optional[Callable[[], None]] = work
        self.runs = 0
        self.errors = 0
        self._last = time.monotonic()
        self.timer = node.create_timer(self.period, self._tick)

    def touch(self) -> None:
        """A real message was processed now: no warm-up until ``period`` of idleness."""
        self._last = time.monotonic()

    def _tick(self) -> None:
        if self.work is None or time.monotonic() - self._last < self.period:
            return
        try:
            self.work()
            self.runs += 1
        except Exception:  # noqa: BLE001 - a warm-up failure must never stop the node
            self.errors += 1
        self._last = time.monotonic()
