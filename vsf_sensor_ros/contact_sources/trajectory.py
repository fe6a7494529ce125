"""Press-and-release joint trajectory for the contact simulator, from Klampt IK.

The bubble's tip moves on a vertical line over the object through the phases tare, approach, press, hold,
release, retreat, rest (cosine profiles; docs/demo.md, the simulator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
from klampt.model import ik

from vsf_sensor_ros.sensor.errors import SettingError

IK_DT = 0.02
"""Longest time step (s) between two IK solutions of a moving phase."""
PHASES = ("tare", "approach", "press", "hold", "release", "retreat", "rest")
"""Phase names, in order."""


@dataclass
class PressProfile:
    """Timing (s) and depths (m) of a press: ``tare_s`` (>= 1), the phase durations (> 0), ``clearance``
    (> 0, above the top face), ``press_depth`` (>= 0, below it).
    """

    tare_s: float = 2.0
    approach_s: float = 1.5
    press_s: float = 1.0
    hold_s: float = 2.0
    release_s: float = 1.0
    retreat_s: float = 1.5
    clearance: float = 0.05
    press_depth: float = 0.01

    def validate(self) -> None:
        """Raise ``SettingError`` naming the first bad value (``setting`` the field, ``reason``
        ``'out_of_range'``)."""
        for label, v in vars(self).items():
            # tare_s >= 1 s: a contact-free stretch to tare on
            rule = {"tare_s": (">= 1", v >= 1.0), "press_depth": (">= 0", v >= 0.0)}
            least, ok = rule.get(label, ("> 0", v > 0.0))
            if not (np.isfinite(v) and ok):
                raise SettingError(f"{label} must be {least}, got {v}", label, v, "out_of_range")

    def boundaries(self) -> np.ndarray:
        """``(7,)`` start times of the phases in :data:`PHASES` order (s)."""
        d = [self.tare_s, self.approach_s, self.press_s, self.hold_s, self.release_s, self.retreat_s]
        return np.concatenate([[0.0], np.cumsum(d)])

    def phase(self, t: float) -> str:
        """Name of the phase at time ``t`` (s)."""
        i = int(np.searchsorted(self.boundaries(), t, side="right")) - 1
        return PHASES[max(0, min(i, len(PHASES) - 1))]

    def height(self, t: np.ndarray) -> np.ndarray:
        """Commanded tip height above the object's top face at times ``t`` (m), vectorised."""
        t = np.asarray(t, dtype=np.float64)
        b = self.boundaries()
        levels = [self.clearance, self.clearance, 0.0, -self.press_depth, -self.press_depth, 0.0,
                  self.clearance]
        # phase k runs from levels[k] to levels[k + 1] over [b[k], b[k + 1]]
        k = np.clip(np.searchsorted(b, t, side="right") - 1, 0, len(b) - 2)
        s = np.clip((t - b[k]) / (b[k + 1] - b[k]), 0.0, 1.0)
        s = 0.5 - 0.5 * np.cos(np.pi * s)
        lv = np.asarray(levels)
        h = lv[k] + s * (lv[k + 1] - lv[k])
        return np.where(t >= b[-1], self.clearance, h)


def bubble_tip(vertices: np.ndarray, normal_local: Sequence[float]) -> np.ndarray:
    """The vertex furthest along ``normal_local`` (bubble frame, m): the first point to touch."""
    v = np.asarray(vertices, dtype=np.float64)
    n = np.asarray(normal_local, dtype=np.float64)
    return v[int(np.argmax(v @ n))].copy()


class PressTrajectory:
    """Joint-space press trajectory by Klampt IK from ``seed_config`` every :data:`IK_DT` s: the tip
    ``tip_local`` of ``link`` (m; outward normal ``normal_local``) moves on a vertical line over ``target_xy``
    relative to the top face ``top_z`` (m, world) as ``profile`` says; ``robot`` is left at the start.
    ValueError: invalid profile; RuntimeError: IK fails (names the target)."""

    def __init__(self, robot, link, tip_local: Sequence[float], normal_local: Sequence[float],
                 target_xy: Tuple[float, float], top_z: float, profile: PressProfile,
                 seed_config: Sequence[float]) -> None:
        profile.validate()
        self.profile = profile
        tip = np.asarray(tip_local, dtype=np.float64)
        n = np.asarray(normal_local, dtype=np.float64)
        n = n / np.linalg.norm(n)
        # and a point 5 cm inside the bubble along -n: aligns n with -z
        local = [tip.tolist(), (tip - 0.05 * n).tolist()]
        x, y = float(target_xy[0]), float(target_xy[1])

        b = profile.boundaries()
        # sample times: phase boundaries plus every IK_DT inside moving phases
        ts: List[float] = [0.0]
        for k in range(1, len(b) - 1):
            n_seg = max(1, int(np.ceil((b[k + 1] - b[k]) / IK_DT)))
            ts += np.linspace(b[k], b[k + 1], n_seg + 1).tolist()
        self.times = np.unique(np.round(np.asarray(ts), 9))
        heights = profile.height(self.times)
        robot.setConfig(list(seed_config))
        qs = []
        for k, h in enumerate(heights):
            if k == 0 or h != heights[k - 1]:   # a hold keeps the previous solution
                z = float(top_z) + float(h)
                solver = ik.solver(ik.objective(link, local=local, world=[[x, y, z], [x, y, z + 0.05]]))
                solver.setMaxIters(200)
                solver.setTolerance(1e-6)
                if not solver.solve():
                    err = float(np.linalg.norm(solver.getResidual()))
                    raise RuntimeError(f"IK failed for bubble tip target ({x:.3f}, {y:.3f}, {z:.4f}) m "
                                       f"with the membrane facing down (residual {err:.2e})")
            qs.append(robot.getConfig())
        self.configs = np.asarray(qs, dtype=np.float64)
        robot.setConfig(self.configs[0].tolist())

    def command(self, t: float) -> Tuple[np.ndarray, np.ndarray]:
        """Commanded ``(q, dq)`` (full Klampt configuration, rad and rad/s) at time ``t`` (s)."""
        ts, qs = self.times, self.configs
        if t <= ts[0] or t >= ts[-1]:   # at rest before the first and after the last sample
            return qs[0 if t <= ts[0] else -1].copy(), np.zeros(qs.shape[1])
        i = int(np.searchsorted(ts, t, side="right")) - 1
        dt, step = ts[i + 1] - ts[i], qs[i + 1] - qs[i]
        return qs[i] + (t - ts[i]) / dt * step, step / dt
