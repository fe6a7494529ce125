"""When an event-driven contacts source's silence is a contact-free step (gz-sim publishes only while
something touches; without a step the readings would stay in contact).  Pure, ns; docs/interface.md.
"""
from __future__ import annotations

from typing import Optional, Tuple

from vsf_sensor_ros.sensor.errors import SettingError


class ContactFreeSteps:
    """When to step with no contacts, every ``period_ns``; ``steps`` made and ``late`` contacts messages
    stamped before one (counted by the node).  SettingError: ``period_ns`` not positive."""

    def __init__(self, period_ns: int) -> None:
        if period_ns <= 0:
            raise SettingError(f"contact-free period must be > 0 ns, got {period_ns}", "period_ns", period_ns,
                               "not_positive")
        self.period_ns = int(period_ns)
        self.steps = 0
        self.late = 0
        self._newest: Optional[int] = None    # newest stamp of a step used (contacts or contact-free)
        self._real: Optional[int] = None      # stamp of the last contacts message used
        self._free: Optional[int] = None      # stamp of the last contact-free step
        self._source: Optional[Tuple[str, int]] = None   # (source kind, its stamp when last asked)
        self._start: Optional[int] = None     # the source's first stamp (since start or its restart)

    def due(self, stamp_ns: int, source: str = "joint_states") -> Optional[int]:
        """The stamp of a contact-free step to make now, or None; ``stamp_ns``: the newest joint-state
        stamp or the sim clock (``source`` says which; a change is not a restart); ``<= 0`` never steps."""
        if stamp_ns <= 0:
            return None
        if self._source is None or self._source[0] != source:
            self._start = stamp_ns if self._newest is None else None
        elif stamp_ns < self._source[1]:
            # the simulator restarted: a new run, its period counted from its first stamp
            self._newest = self._real = self._free = None
            self._start = stamp_ns
        self._source = (source, stamp_ns)
        ref = self._newest if self._newest is not None else self._start
        if ref is None or stamp_ns - ref < self.period_ns:
            return None
        return stamp_ns

    def is_late(self, stamp_ns: int) -> bool:
        """A contacts message stamped ``stamp_ns`` comes after a contact-free step stamped later,
        but not before the last contacts message: late, not a simulator reset."""
        return (self._free is not None and stamp_ns < self._free
                and (self._real is None or stamp_ns >= self._real))

    def used(self, stamp_ns: int, contact_free: bool, reset: bool = False) -> None:
        """The node used a step stamped ``stamp_ns``: a contacts message or (``contact_free``) a
        contact-free step; ``reset``: it treated the stamp going back as a simulator reset."""
        if reset:
            self._real = self._free = self._newest = None
        if contact_free:
            self._free = stamp_ns
            self.steps += 1
        else:
            self._real = stamp_ns
        self._newest = stamp_ns if self._newest is None else max(self._newest, stamp_ns)


__all__ = ["ContactFreeSteps"]
