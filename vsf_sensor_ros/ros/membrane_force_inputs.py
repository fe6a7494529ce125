"""``membrane_force_node``'s inputs on the ROS graph: wrong types, the waits it logs, its status
(the sentences are :mod:`vsf_sensor_ros.rig.membrane_inputs`'; docs/membrane_force.md)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
from rclpy.node import Node

from ..rig.membrane_inputs import Input, inputs_text, missing_inputs, stopped_text, waiting_text
from .messages.camera import PRESSURE_TYPES
from .topic_types import WrongTypeWatch


#: s after start from which a still-missing input is logged (once) at WARN; /diagnostics names it at once
WAIT_WARN_S = 5.0


def pressure_type_hints(ptype: str, scale: float) -> Dict[str, str]:
    """:attr:`Input.hints` of the pressure (``ptype`` normalised, ``scale``: ``pressure_scale``):
    each other ``pressure_type`` -> the setting that reads it (a ``FluidPressure`` is in Pa)."""
    pa = " and pressure_scale: 1.0 (its unit is Pa)" if scale != 1.0 else ""
    return {t: f"set pressure_type: {t}" + (pa if t == "sensor_msgs/msg/FluidPressure" else "")
            for t in PRESSURE_TYPES if t != ptype}


class InputWatch:
    """What to log of the node's ``inputs`` (monotonic ``started``: the node's start, s), once per
    diagnostics period: the inputs still missing and those published in another type."""

    def __init__(self, node: Node, inputs: Sequence[Input], started: float) -> None:
        self.inputs = list(inputs)
        self.started = started
        self._waited: Set[str] = set()                       # topics whose wait was logged
        self._wrong_type = WrongTypeWatch(node, node.get_logger())

    def waiting_log(self, now: float, missing: Sequence[Tuple[Input, str]]) -> Optional[str]:
        """The WARN line to log now: the missing inputs not yet logged, from :data:`WAIT_WARN_S` s
        after start; None when there is nothing new to say."""
        new = [(i, text) for i, text in missing if i.topic not in self._waited]
        if now - self.started < WAIT_WARN_S or not new:
            return None
        self._waited.update(i.topic for i, _ in new)
        return f"{waiting_text(new)} ({now - self.started:.0f} s since start)"

    def wrong_types(self) -> List[str]:
        """A sentence per input published in another type (logged once), with the setting that reads it."""
        said = [(i, self._wrong_type(i)) for i in self.inputs]   # every input asked: it logs once
        hints = [(text, "; ".join(h for t, h in i.hints.items() if t in text)) for i, text in said if text]
        return [text + (f" ({hint})" if hint else "") for text, hint in hints]


def report(n: Any, now: float) -> Tuple[bool, str, Dict[str, Any]]:
    """``(ok, message, values)`` of node ``n``'s ``/diagnostics`` status at monotonic ``now`` (the
    keys: docs/membrane_force.md), the period's counts restarted; the input warnings logged."""
    st, last, prev = n.stats, n.last, n._period
    dt = max(now - prev["start"], 1e-9)
    ms = np.asarray(n.period_ms)
    n.period_ms = []
    counts = {"estimated": st["frames_estimated"], "rejected": st["frame_rejected"],
              "depth_only": sum(n.depth_only.values()), "zero": sum(n.zero_stamps.values())}
    new = {k: v - prev.get(k, 0) for k, v in counts.items()}   # in the last period
    n._period = dict(counts, start=now)
    age, gauge = n.pressures.age(now), n._gauge()
    values = {
        **{k: st[k] for k in ("frames_received", "frames_estimated", "pressures_received",
                              "camera_info_received")},
        "rate_hz": f"{new['estimated'] / dt:.2f}",
        "estimate_ms_median": f"{np.median(ms):.2f}" if ms.size else "nan",
        "estimate_ms_max": f"{ms.max():.2f}" if ms.size else "nan",
        "rejected_total": sum(n.rejected.values()),
        **{f"rejected.{k}": v for k, v in sorted(n.rejected.items())},
        **{f"zero_stamps.{t}": c for t, c in n.zero_stamps.items()},
        "reference": last["reference"], "reference_resets": st["reference_resets"],
        "pressure_pa": "none" if age is None else f"{n.pressures.latest:.1f}",
        "pressure_age_s": "none" if age is None else f"{age:.2f}",
        "ambient_pa": f"{n.ambient_pa:.0f}", "ambient_source": n.ambient_source,
        "gauge_pa": "none" if gauge is None else f"{gauge:.0f}",
        "vertices_measured": last.get("vertices_measured", "0"),
        "last_rejection": last.get("last_rejection", "none"), "frame_id": n.p["frame_id"],
        "config_problems": "; ".join(n.config_problems) or "none",
        "inputs": inputs_text(list(n.inputs.values())), **n.record.values()}
    if n.scale is not None:
        values.update(n.scale.values(n.p["reference_wrench_topic"]))
    if n.colour:
        values.update({
            "colour_topic": n.p["colour_topic"], "colour_received": st["colour_received"],
            "frames_with_colour": st["frames_with_colour"], "frames_depth_only": counts["depth_only"],
            **{f"depth_only.{k}": v for k, v in sorted(n.depth_only.items())},
            "frames_waiting_for_colour": len(n.pairing.pending),
            "reference_colour": "yes" if n.reference_colour else "no",
            "vertices_flow": last.get("vertices_flow", "0"),
            "last_depth_only": last.get("depth_only", "none")})
    missing = missing_inputs(n.inputs, st, last, n.estimator is not None, age is not None)
    wrong = n.watch.wrong_types()
    values["wrong_types"] = "; ".join(wrong) or "none"
    waiting = n.watch.waiting_log(now, missing)
    if waiting:
        n.get_logger().warning(waiting)
    stopped, est = n.pressures.stopped(now), n.estimator
    collecting = est is not None and est.model is None
    ok, hz, why = False, new["estimated"] / dt, last.get("frame_rejection")
    if missing:
        message = waiting_text(missing)
    elif stopped is not None:
        message = stopped_text(n.inputs["pressure"], stopped, n.stamped,
                               last.get("pressure_rejection_text", ""), collecting=collecting)
    elif collecting:
        message = f"reference: {last['reference']}" + (
            f"; frames are not collected: the latest was rejected as {why}" if why else "")
    elif new["estimated"] == 0:
        message = "no frame estimated in the last period" + (
            f": {new['rejected']} frame(s) rejected, the latest as {why}" if new["rejected"] and why else "")
    elif n.colour and not n.reference_colour:
        message = f"estimating at {hz:.1f} Hz from depth alone: the reference has no colour: {n._no_colour()}"
    elif new["depth_only"]:
        message = (f"estimating at {hz:.1f} Hz; {new['depth_only']} frame(s) of the last period from depth "
                   "alone (colour missing or rejected)")
    else:
        ok, message = True, f"estimating at {hz:.1f} Hz"
    warnings = []   # each makes the status WARN
    if new["zero"] > 0:   # messages stamped 0 came in the last period
        warnings.append("stamped 0, rejected (no time to pair by): " + ", ".join(
            f"{t} ({c})" for t, c in n.zero_stamps.items() if c))
    warnings += wrong   # why an input never arrives: rclpy does not say
    if n.config_problems:
        count = len(n.config_problems)
        warnings.append(f"{count} configuration problem{'s' * (count > 1)}: " + "; ".join(n.config_problems))
    return ok and not warnings, "; ".join([message] + warnings), values
