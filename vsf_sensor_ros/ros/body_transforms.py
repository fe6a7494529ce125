"""Body transforms for a contacts message: the configuration of its own simulator step.

The node applies every joint state and free-body pose to its ``World`` as it
arrives.  A contacts message normally uses the resulting (cached) transforms.
When the executor has already served the joint state of a *later* step (both
waited in the queues), the newest stamped configuration not later than the
contacts stamp is used instead, so each step pairs with its own joint state.
Unstamped joint states (stamp 0) are not remembered: the latest wins.

Only the bodies a step can use are computed (:meth:`BodyTransforms.need`:
the sensors' bodies and the contact bodies); None = every body.
"""
from __future__ import annotations

import bisect
from collections import deque
from typing import Any, Deque, Dict, Iterable, Optional, Tuple

import numpy as np
import torch

# Stamped joint states kept to pair each contacts message with its own step's configuration.
JOINT_HISTORY = 200


class BodyTransforms:
    """Cached body transforms of ``world`` plus a short history of stamped joint configurations.

    Args:
        world: the node's ``World``.
        dtype, device: of the returned ``(4, 4)`` transforms.
        history: stamped configurations kept.
    """

    def __init__(self, world: Any, dtype: torch.dtype, device: torch.device,
                 history: int = JOINT_HISTORY) -> None:
        self._world, self._dtype, self._device = world, dtype, device
        self._cache: Optional[Dict[str, torch.Tensor]] = None
        # (stamp_ns, the world's whole configuration: mimic joints as set, nothing re-derived)
        self._history: Deque[Tuple[int, np.ndarray]] = deque(maxlen=history)
        self._names: Optional[Tuple[str, ...]] = None

    def need(self, names: Optional[Iterable[str]]) -> None:
        """Compute only these bodies from now on (unknown names are left out); None = every body."""
        if names is None:
            new = None
        else:
            known = set(self._world.body_names)
            new = tuple(n for n in dict.fromkeys(names) if n in known)
        if new != self._names:
            self._names = new
            self._cache = None

    def invalidate(self) -> None:
        """The world changed (a joint state or a pose was applied)."""
        self._cache = None

    def remember(self, stamp_ns: int) -> None:
        """Keep the world's current configuration under ``stamp_ns`` (ignored when ``<= 0``).

        A stamp earlier than the newest kept one (simulator reset) forgets the
        history: older stamps belong to the old run.
        """
        if stamp_ns <= 0:
            return
        if self._history and stamp_ns < self._history[-1][0]:
            self._history.clear()
        self._history.append((stamp_ns, self._world.configuration()))

    def at(self, stamp_ns: int) -> Dict[str, torch.Tensor]:
        """Body name -> ``(4, 4)`` body -> world transform for contacts stamped ``stamp_ns``."""
        hist, world = self._history, self._world
        if hist and hist[-1][0] > stamp_ns:
            i = bisect.bisect_right([h[0] for h in hist], stamp_ns) - 1
            if i >= 0:
                latest = hist[-1][1]
                world.set_configuration(hist[i][1])
                try:
                    return world.body_transforms(self._dtype, self._device, self._names)
                finally:
                    world.set_configuration(latest)
        if self._cache is None:
            self._cache = world.body_transforms(self._dtype, self._device, self._names)
        return self._cache


__all__ = ["BodyTransforms", "JOINT_HISTORY"]
