"""Depth frames matched with the colour image of the same instant, by stamp (bookkeeping, no ROS).

A RealSense driver publishes both with one stamp per frame on two topics arriving in either
order; frames go back in the order they came, each with its colour or the reason it goes on
without.  The rule: docs/membrane_force.md (colour and depth).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, List, Optional, Tuple

import numpy as np

__all__ = ["ColourPairing"]


class ColourPairing:
    """Pairs depth frames with colour images by stamp.

    Args:
        tolerance_s: a frame takes the colour image stamped nearest to it within this many seconds
            (0 = the same stamp only); >= 0.
        max_waiting: at most this many frames wait; one more settles the oldest.
        history: colour images kept (the newest).

    Attributes:
        colours: ``(stamp ns, image or None)`` of the colour images kept; None marks one that was
            rejected (its frame then goes on without waiting).
        pending: ``(stamp ns, item, received s)`` of the waiting frames, oldest first.
    """

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
        """The colour image of a frame stamped ``stamp_ns``: ``(settled, image, depth-only reason)``.

        The image is None with reason ``no_colour`` (none within the tolerance) or
        ``colour_rejected`` (the nearest one was rejected); ``final``: the frame waits no longer.
        """
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
        """Remove and return the frames whose colour is settled, in arrival order, as
        ``(item, image or None, depth-only reason or '')``; a frame received at or before monotonic
        ``expired`` waits no longer.  A frame that must still wait holds back the later ones."""
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
