"""The membrane force node's inputs without ROS: pressures paired with depth frames, the check of a
reference frame, and the sentences that name each input the same way in the log and on ``/diagnostics``
(its type as the graph spells it and its resolved topic); the messages: docs/membrane_force.md.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..sensor.membrane_force_estimator import FrameRejected

__all__ = ["Input", "Pressures", "check_reference_frame", "inputs_text", "join_names", "missing_inputs",
           "stamp_partners", "stopped_text", "waiting_text"]


@dataclass(frozen=True)
class Input:
    """One subscription: resolved ``topic``, ``type_name`` as the graph spells it, a ``note`` for
    the inputs line (``colour, optional``), and ``hints``: a type published there instead -> the
    setting that would read it (``set pressure_type: std_msgs/msg/Float64``)."""

    topic: str
    type_name: str
    note: str = ""
    hints: Dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def text(self) -> str:
        """``sensor_msgs/msg/CameraInfo on /camera/depth/camera_info``."""
        return f"{self.type_name} on {self.topic}"


def join_names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def inputs_text(inputs: Sequence[Input]) -> str:
    """Every input, ``TYPE on TOPIC`` (with its note in parentheses), comma-separated."""
    return ", ".join(i.text() + (f" ({i.note})" if i.note else "") for i in inputs)


def missing_inputs(inputs: Mapping[str, Input], stats: Mapping[str, int], last: Mapping[str, str],
                   camera_ready: bool, pressure_known: bool) -> List[Tuple[Input, str]]:
    """``(input, sentence)`` of each of ``inputs`` (``camera_info``, ``frames``, ``pressure``) the
    node still waits for, in the order needed; ``stats`` / ``last``: the node's counters and last
    rejection reasons; ``camera_ready``: an estimator was built; ``pressure_known``: one came."""
    # (input, missing, how many came unusable, what became of them, the last one's rejection key)
    rows = (("camera_info", not camera_ready, stats["camera_info_received"], "received, the last rejected",
             "CameraInfo_rejection"), ("frames", not stats["frames_received"], 0, "", ""),
            ("pressure", not pressure_known, stats["pressure_rejected"], "rejected, the last",
             "pressure_rejection"))
    return [(inputs[k], f"a usable {inputs[k].text()} ({n} {said} as {last.get(key) or 'unusable'})" if n
             else inputs[k].text()) for k, missing, n, said, key in rows if missing]


def waiting_text(missing: Sequence[Tuple[Input, str]]) -> str:
    """``waiting for A on /a, B on /b and C on /c`` for :func:`missing_inputs`' answer ('' for none)."""
    return "waiting for " + join_names([text for _, text in missing]) if missing else ""


def stamp_partners(stamped: bool, colour: bool) -> Dict[str, str]:
    """The inputs paired by stamp (``frames``, ``colour``, ``pressure``) -> what each pairs with,
    for a stamped pressure type (``FluidPressure``) and/or a ``colour_topic``; e.g. ``{'frames':
    'pressure and colour image', 'colour': 'depth frame', 'pressure': 'depth frame'}``."""
    partners = (["pressure"] if stamped else []) + (["colour image"] if colour else [])
    out = {"frames": join_names(partners)} if partners else {}
    return {**out, **{k: "depth frame" for k, on in (("colour", colour), ("pressure", stamped)) if on}}


def stopped_text(pressure: Input, age_s: float, stamped: bool, rejection: str = "",
                 collecting: bool = False) -> str:
    """The pressure stream stopped ``age_s`` s ago (or all rejected since: ``rejection``, the latest's
    ``reason: text``), for a ``stamped`` type or not, while a reference is ``collecting`` or not."""
    done = "collected for the reference" if collecting else "estimated"
    what = f"frames wait for their pressure and are not {done}" if stamped else f"frames are not {done}"
    if rejection:
        return (f"no usable {pressure.text()} for {age_s:.1f} s (the latest was rejected as {rejection}): "
                f"{what}")
    return f"{pressure.text()} stopped {age_s:.1f} s ago: {what}"


class Pressures:
    """The bubble pressures received, the one a frame is estimated with, the frames waiting for one.

    A bare number (``Float32`` / ``Float64``) goes with every frame while at most ``timeout_s``
    (receive time; 0 = never stale) old; a stamped one (``FluidPressure``) pairs with the frame
    stamped within ``tolerance_s``, the frame waiting (:meth:`wait`) until it comes.  ``latest``
    (Pa absolute), ``received_at`` (monotonic s), ``by_stamp`` ``(ns, Pa)``, ``pending`` frames.
    """

    def __init__(self, pressure: Input, stamped: bool, tolerance_s: float, timeout_s: float,
                 history: int = 500) -> None:
        self.input, self.stamped = pressure, stamped
        self.tolerance_ns, self.timeout_s = int(tolerance_s * 1e9), float(timeout_s)
        self.latest: Optional[float] = None
        self.received_at: Optional[float] = None
        self.by_stamp: Deque[Tuple[int, float]] = deque(maxlen=history)
        self.pending: List[Tuple[Any, int, float]] = []

    def add(self, pa: float, stamp_ns: int, now: float) -> None:
        """A usable pressure (Pa absolute) stamped ``stamp_ns`` (unused unstamped), received ``now``."""
        self.latest, self.received_at = pa, now
        if self.stamped:
            self.by_stamp.append((stamp_ns, pa))

    def age(self, now: float) -> Optional[float]:
        """s of receive time since the latest usable pressure; None before the first."""
        return None if self.received_at is None else now - self.received_at

    def stopped(self, now: float) -> Optional[float]:
        """The latest pressure's age (s) when older than ``timeout_s`` (not 0), else None."""
        age = self.age(now)
        return age if self.timeout_s and age is not None and age > self.timeout_s else None

    def for_frame(self, stamp_ns: int, now: float) -> Optional[float]:
        """The pressure (Pa) for the frame stamped ``stamp_ns``; None = not come yet (it waits).

        Raises:
            FrameRejected: ``no_pressure`` (none yet; stamped: none near while later ones came),
                ``stale_pressure`` (unstamped, older than ``timeout_s``).
        """
        if not self.stamped:
            if self.latest is None:
                raise FrameRejected("no bubble pressure received yet", "no_pressure")
            age = self.stopped(now)
            if age is not None:   # the stream stopped: its last value is no pressure of now
                raise FrameRejected(f"the latest {self.input.text()} came {age:.1f} s ago (pressure_timeout "
                                    f"{self.timeout_s:g} s): the frame is dropped", "stale_pressure")
            return self.latest
        tol = self.tolerance_ns
        if self.by_stamp:
            best = min(self.by_stamp, key=lambda sp: abs(sp[0] - stamp_ns))
            if abs(best[0] - stamp_ns) <= tol:
                return best[1]
            if max(sp[0] for sp in self.by_stamp) > stamp_ns + tol:
                raise FrameRejected(f"no pressure stamped within {tol * 1e-9:g} s of the frame stamped "
                                    f"{stamp_ns * 1e-9:.3f} s (nearest pressure stamp "
                                    f"{best[0] * 1e-9:.3f} s)", "no_pressure")
        return None

    def wait(self, item: Any, stamp_ns: int, received: float, now: float, max_waiting: int) -> None:
        """Keep a frame (``item``, received at monotonic ``received``) until its pressure comes;
        FrameRejected ``no_pressure``, the oldest dropped, when more than ``max_waiting`` wait."""
        self.pending.append((item, stamp_ns, received))
        if len(self.pending) <= max_waiting:
            return
        _, dropped, since = self.pending.pop(0)
        # none came while it waited: the stream stopped (whatever pressure_timeout says);
        # pressures came, none stamped near it: the stamps are on other clocks
        why = ("pressures came while it waited, none stamped near it: the two clocks must agree within "
               "pressure_tolerance" if self.received_at is not None and self.received_at >= since else
               "no usable pressure came while it waited")
        latest = (f"latest pressure stamped {self.by_stamp[-1][0] * 1e-9:.3f} s, received "
                  f"{self.age(now) or 0.0:.1f} s ago" if self.by_stamp else
                  f"no pressure on {self.input.topic} yet")
        raise FrameRejected(f"frame stamped {dropped * 1e-9:.3f} s waited too long for its pressure "
                            f"({latest}; {why})", "no_pressure")


def check_reference_frame(depth: np.ndarray, pressure: float, shape: Tuple[int, int], p: Dict[str, Any],
                          ambient_pa: float, ambient_source: str) -> None:
    """Refuse a frame the reference must not take: ``depth`` ``(H, W)`` m (0, NaN, +-Inf = no
    reading), its ``pressure`` (Pa absolute), the camera's ``shape`` ``(H, W)``, the node's
    parameters ``p``, the ambient pressure in use (Pa) and its source.

    Raises:
        FrameRejected: ``wrong_size``; ``nan`` (no finite depth); ``depth_out_of_range`` (all at or
            beyond ``max_depth``: a unit mistake); ``bad_pressure`` (not above the ambient).
    """
    if depth.shape != tuple(shape):
        raise FrameRejected(f"frame of {depth.shape[1]}x{depth.shape[0]} px for a "
                            f"{shape[1]}x{shape[0]} camera", "wrong_size")
    if not np.isfinite(depth).any():
        raise FrameRejected("frame holds no finite depth (every pixel NaN or +-Inf: no reading)", "nan")
    with np.errstate(invalid="ignore"):
        readings = depth[np.isfinite(depth) & (depth > 0.0)]
    far = float(p["max_depth"])
    if readings.size and not (readings < far).any():
        raise FrameRejected(
            f"every depth reading is at or beyond max_depth {far:g} m (median "
            f"{float(np.median(readings)):.4g} m): check depth_unit "
            f"({float(p['depth_unit']):g} m per 16UC1 unit) or the unit of a 32FC1 image (m)",
            "depth_out_of_range")
    if not pressure > ambient_pa:
        raise FrameRejected(f"reference pressure {pressure:.1f} Pa is not above the ambient "
                            f"{ambient_pa:.1f} Pa ({ambient_source}): check ambient_pressure / altitude "
                            "and that the bubble is inflated", "bad_pressure")
