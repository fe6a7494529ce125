"""Contacts from a wrist force/torque reading: the contact source of a real rig without a simulator.

Each wrench becomes one contact at a configured point of a configured body, carrying the force the body
receives in the world frame (sign, frame, bias, lag, deadband, zero stamps: docs/real_data.md). No rclpy
here.
"""
from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from vsf_sensor_ros.sensor import ContactState
from vsf_sensor_ros.sensor.errors import SettingError

__all__ = ["BiasTare", "ForceBuffer", "WrenchContactConfig", "WrenchContactSource"]

Pair = Tuple[str, str]


class BiasTare:
    """Bias of a force channel (N, sensor frame): the mean of ``num_samples`` contact-free readings, from the
    first ones (``on_start``) or the latest on :meth:`tare`; None until set.
    """

    def __init__(self, num_samples: int = 10, on_start: bool = True) -> None:
        """Raises ValueError for ``num_samples < 1``."""
        if isinstance(num_samples, bool) or int(num_samples) != num_samples or num_samples < 1:
            raise ValueError(f"bias num_samples must be an integer >= 1, got {num_samples!r}")
        self.num_samples = int(num_samples)
        self.on_start = bool(on_start)
        self.bias: Optional[np.ndarray] = None
        self.used = 0
        self._recent: Deque[np.ndarray] = deque(maxlen=self.num_samples)
        self._first: List[np.ndarray] = []

    def feed(self, force: Sequence[float]) -> None:
        """Record one raw ``(3,)`` reading (N)."""
        f = np.asarray(force, dtype=np.float64).reshape(3)
        self._recent.append(f)
        if self.on_start and self.bias is None:
            self._first.append(f)
            if len(self._first) >= self.num_samples:
                self.bias = np.mean(self._first, axis=0)
                self.used = len(self._first)

    def tare(self) -> Tuple[bool, str]:
        """Bias from the most recent readings; ``(success, message)`` as a Trigger answer."""
        if not self._recent:
            return False, "no wrench received yet"
        self.bias = np.mean(list(self._recent), axis=0)
        self.used = len(self._recent)
        return True, (f"bias from {self.used} of {self.num_samples} samples: "
                      f"({', '.join(f'{v:.4f}' for v in self.bias)}) N")


class ForceBuffer:
    """Time-ordered raw force readings ``(stamp s, (3,) N, frame)``, linearly interpolated."""

    def __init__(self, maxlen: int = 2000) -> None:
        self._rows: List[Tuple[float, np.ndarray, str]] = []
        self.maxlen = int(maxlen)

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, stamp: float, force: Sequence[float], frame: str) -> None:
        """Insert a reading (kept sorted by stamp; the oldest go beyond ``maxlen``)."""
        bisect.insort_right(self._rows, (float(stamp), np.asarray(force, dtype=np.float64).reshape(3), frame),
                            key=lambda row: row[0])
        if len(self._rows) > self.maxlen:
            del self._rows[0]

    def at(self, t: float) -> Optional[Tuple[np.ndarray, str]]:
        """Force at ``t`` (linear between the neighbouring readings; the oldest before the first), with the
        frame of the later reading; None when ``t`` is after the newest reading."""
        if not self._rows or t > self._rows[-1][0]:
            return None
        i = bisect.bisect_left(self._rows, t, key=lambda row: row[0])
        if i == 0:
            return self._rows[0][1].copy(), self._rows[0][2]
        (t0, f0, _), (t1, f1, frame) = self._rows[i - 1], self._rows[i]
        w = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
        return (1.0 - w) * f0 + w * f1, frame


@dataclass
class WrenchContactConfig:
    """Settings of a :class:`WrenchContactSource` (the node's parameter names; docs/real_data.md):
    ``body`` / ``other_body`` (body1 / body2), ``body_parent`` and ``body_transform`` ``(4, 4)``,
    ``contact_point`` (m, body frame), ``wrench_frame`` (empty: the message's), ``force_sign`` ±1,
    ``time_shift`` (s), ``bias_samples``, ``bias_on_start``, ``min_force`` (N), ``max_pending``.
    """

    body: str
    other_body: str
    body_parent: str = ""
    body_transform: np.ndarray = field(default_factory=lambda: np.eye(4))
    contact_point: np.ndarray = field(default_factory=lambda: np.zeros(3))
    wrench_frame: str = ""
    force_sign: float = 1.0
    time_shift: float = 0.0
    bias_samples: int = 10
    bias_on_start: bool = True
    min_force: float = 0.0
    max_pending: int = 1000

    def __post_init__(self) -> None:
        if self.force_sign not in (1.0, -1.0):
            raise ValueError(f"force_sign must be +1 or -1, got {self.force_sign!r}")
        if not (math.isfinite(self.time_shift) and self.time_shift >= 0.0):
            raise ValueError(f"time_shift must be finite and >= 0 s, got {self.time_shift!r}")
        if not (math.isfinite(self.min_force) and self.min_force >= 0.0):
            raise ValueError(f"min_force must be finite and >= 0 N, got {self.min_force!r}")
        self.body_transform = np.asarray(self.body_transform, dtype=np.float64).reshape(4, 4)
        self.contact_point = np.asarray(self.contact_point, dtype=np.float64).reshape(3)


class WrenchContactSource:
    """Joint states + wrenches in, one contacts dict per joint state out.

    ``world``: a :class:`vsf_sensor_ros.world.World` or alike.  Counters: ``dropped_pending``,
    ``rejected_wrenches`` (reason in ``last_error``), ``zero_stamps`` (``{'wrench', 'joint_states'}``).
    """

    def __init__(self, world, config: WrenchContactConfig) -> None:
        """Raises SettingError (``setting`` ``'body_parent'`` or ``'wrench_frame'``, ``value`` the name,
        ``reason`` ``'unknown_body'``, ``expected`` the world's bodies) for a body not in the world."""
        self.world, self.cfg = world, config
        self.parent = config.body_parent or config.body
        frame = [("wrench_frame", config.wrench_frame)] if config.wrench_frame else []
        for setting, name in [("body_parent", self.parent)] + frame:
            if name not in world.body_names:
                raise SettingError(f"{setting} {name!r} is not a body of the world; known: "
                                   f"{', '.join(world.body_names)}", setting, name, "unknown_body",
                                   list(world.body_names))
        self.bias = BiasTare(config.bias_samples, config.bias_on_start)
        self.forces = ForceBuffer()
        self._pending: Deque[Tuple[float, List[str], List[float]]] = deque()
        self.dropped_pending = self.rejected_wrenches = 0
        self.zero_stamps: Dict[str, int] = {"wrench": 0, "joint_states": 0}
        self.last_error = ""

    def on_wrench(self, stamp: float, frame_id: str, force: Sequence[float]
                  ) -> List[Tuple[float, Dict[Pair, ContactState]]]:
        """Take one reading; return the contacts now ready ``[(stamp, {pair: ContactState})]``.  A reading in
        an unknown frame, non-finite or stamped 0 is rejected and counted.
        """
        frame = self.cfg.wrench_frame or frame_id
        f = np.asarray(force, dtype=np.float64).reshape(3)
        if frame not in self.world.body_names:
            return self._reject(f"wrench frame_id {frame_id!r} is not a body of the world (set "
                                "wrench_frame to override)")
        if not np.all(np.isfinite(f)) or not math.isfinite(stamp):
            return self._reject(f"wrench at {stamp!r} has non-finite values {f.tolist()}")
        if stamp == 0.0:
            self.zero_stamps["wrench"] += 1
            return self._reject("wrench stamped 0 (header.stamp never set by its driver): no time to "
                                "pair it with a joint state")
        self.bias.feed(f)
        self.forces.add(stamp, f, frame)
        return self._drain()

    def on_joint_state(self, stamp: float, names: Sequence[str], positions: Sequence[float]
                       ) -> List[Tuple[float, Dict[Pair, ContactState]]]:
        """Queue one joint state; return the contacts now ready.  One stamped 0 is rejected and counted."""
        if stamp == 0.0:
            self.zero_stamps["joint_states"] += 1
            self.last_error = ("joint state stamped 0 (header.stamp never set by its driver): no time "
                               "to pair it with a wrench")
            return []
        self._pending.append((float(stamp), list(names), list(positions)))
        while len(self._pending) > self.cfg.max_pending:
            self._pending.popleft()
            self.dropped_pending += 1
        return self._drain()

    def _reject(self, why: str) -> List[Tuple[float, Dict[Pair, ContactState]]]:
        self.rejected_wrenches += 1
        self.last_error = why
        return []

    def _drain(self) -> List[Tuple[float, Dict[Pair, ContactState]]]:
        out = []
        while self._pending:
            t, names, q = self._pending[0]
            sample = self.forces.at(t + self.cfg.time_shift)
            if sample is None:
                break
            self._pending.popleft()
            out.append((t, self.contacts_at(names, q, *sample)))
        return out

    def contacts_at(self, names: Sequence[str], positions: Sequence[float], force: np.ndarray,
                    frame: str) -> Dict[Pair, ContactState]:
        """The contacts dict for one joint state and one raw ``(3,)`` force (N, in ``frame``): one float64
        contact at ``T_world_body · contact_point`` (m) carrying ``f_world = R_world_frame · (force_sign ·
        (force − bias))`` (N); empty before a bias exists or when ``|f_world| <= min_force``."""
        if self.bias.bias is None:
            return {}
        if names:
            self.world.set_joint_positions(names, positions)
        T = self.world.body_transform(self.parent) @ self.cfg.body_transform
        f_world = self.world.body_transform(frame)[:3, :3] @ (self.cfg.force_sign * (force - self.bias.bias))
        if float(np.linalg.norm(f_world)) <= self.cfg.min_force:       # a zero force is no contact
            return {}
        p = T[:3, :3] @ self.cfg.contact_point + T[:3, 3]
        contact = ContactState(torch.from_numpy(p.reshape(1, 3)), torch.from_numpy(f_world.reshape(1, 3)))
        return {(self.cfg.body, self.cfg.other_body): contact}
