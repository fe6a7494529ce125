"""One sensor of the rig (model, layout from the caller, pairing buffers): predict, check together (a bad
step is rejected whole), residual, paired samples.  No ROS."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Optional, Sequence, Tuple

import numpy as np
import torch

from ..sensor.base_sensor import BaseSensor, SimState, SparseJacobian
from .contacts import jacobian_message_columns
from .pairing import StampPairer

# A buffered prediction: (values (#meas,) float64, its SimState, contact-free, contacts stamp ns).
Prediction = Tuple[np.ndarray, SimState, bool, int]

F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class PairedSample:
    """A measured message paired with its prediction: contacts ``stamp_ns``, ``measured`` ``(#meas,)``
    float64 SI (NaN = not carried), the ``state`` predicted from, ``contact_free`` (nothing touches what
    the sensor senses)."""

    stamp_ns: int
    measured: np.ndarray
    state: SimState
    contact_free: bool


@dataclass
class SensorResult:
    """One sensor's step: ``handle``, ``values`` ``(#meas,)`` float64, ``jacobian`` (or None) and its
    message-row ``jacobian_cols``, ``n_on_body`` (contacts on its body), ``touched`` (not contact-free),
    ``bounded`` (values and Jacobian values finite and within their fields: nothing to check)."""

    handle: Any
    values: np.ndarray
    jacobian: Any
    jacobian_cols: Optional[np.ndarray]
    n_on_body: int
    touched: bool
    bounded: bool = False


class StepRejected(Exception):
    """A contacts message rejected whole: ``reason`` (a counted rejection reason) and ``detail``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class RigSensor:
    """What the rig keeps for one sensor: ``name``, ``kind``, the attached ``sensor``, its message ``layout``,
    a pairer (``buffer_size``, ``tolerance_ns`` None = adaptive; ``headerless``: pairs by receive time),
    paired samples, ``calibration_text``, ``unit_warning``, ``contact_free_loop`` (set by the caller)."""

    def __init__(self, name: str, kind: str, sensor: BaseSensor, layout: Any, buffer_size: int,
                 tolerance_ns: Optional[int], headerless: bool = False) -> None:
        self.name, self.kind, self.sensor, self.layout = name, kind, sensor, layout
        self.pairer: StampPairer[Prediction, np.ndarray] = StampPairer(buffer_size, tolerance_ns)
        # paired samples kept for tares, and those with contact for a gain fit (most recent last)
        room = max(4 * int(buffer_size), 100)
        self.pairs: Deque[PairedSample] = deque(maxlen=room)
        self.contact_pairs: Deque[PairedSample] = deque(maxlen=room)
        # measured messages decoded and accepted (rejected ones are counted by the caller)
        self.measured_accepted = self.measured_stamp_jumps = 0
        self.calibration_text = "uncalibrated"
        self.tared_on_start = self.plausibility_warned = False
        self.tare_samples_used: Optional[int] = None
        self.last_values: Optional[np.ndarray] = None
        self.headerless = headerless
        # the sentence while the latest measured value looks like the wrong unit (live), else None
        self.unit_warning: Optional[str] = None
        self.contact_free_loop: Any = None

    def predict(self, state: SimState, decoded: Any, want_jacobian: bool) -> SensorResult:
        """The prediction for ``state`` (a ``SimState`` of ``ContactState``: taken as is) and, with
        ``want_jacobian``, its Jacobian over ``decoded``'s message rows (columns ``3·r + k``; implied pairs
        and flipped rows negated).  ValueError, IndexError, RuntimeError: from the model (``model_error``)."""
        # our models' numpy face (not a subclass's or an instance's override): no torch -> numpy round trips
        face = type(self.sensor).__dict__.get("_numpy_outputs")
        out = face(self.sensor, state, want_jacobian) if face and vars(self.sensor).keys().isdisjoint(
            ("predict", "predict_with_jacobian", "sparse_force_jacobian")) else None
        ours = out is not None
        if not ours:                                     # any other model or state: its torch methods
            if want_jacobian and hasattr(self.sensor, "predict_with_jacobian"):
                pred, jac = self.sensor.predict_with_jacobian(state)   # one contact mapping for both
            else:
                pred = self.sensor.predict(state)
                jac = self.sensor.sparse_force_jacobian(state) if want_jacobian else None
            out = (pred.numpy(force=True).astype(np.float64), None if jac is None else (   # force: .cpu() too
                jac.rows.cpu().numpy(), jac.cols.cpu().numpy(), jac.values.numpy(force=True), jac.shape,
                jac.pairs, jac.offsets), None)
        values, parts, n_on_body = out
        values, body, jac, cols = values.astype(np.float64, copy=False), self.layout.frame_id, None, None
        # one cheap pass: bounded sums of squares prove every entry finite (and < F32_MAX / 2 where float32)
        bounded = bool(np.vdot(values, values) <= (2.8e76 if self.layout.codec.float32_values else 1e300))
        if parts is not None:
            rows, lib_cols, jv, shape, pairs, offsets = parts
            cols = jacobian_message_columns(lib_cols, pairs, offsets, decoded.rows, ours)
            sign = _row_signs(pairs, offsets, decoded)
            jv = jv if sign is None else jv * sign.astype(jv.dtype)[lib_cols // 3]
            bounded = bounded and bool(np.vdot(jv, jv) <= 1e300)
            jac = SparseJacobian(torch.from_numpy(rows), torch.from_numpy(lib_cols), torch.from_numpy(jv),
                                 shape, pairs, offsets)
        if not ours or body != self.sensor.attachModelName:   # (else the model's own count)
            n_on_body = sum(len(c) for (b1, _), c in decoded.contacts.items() if b1 == body)
        # contact-free for a tare: nothing touches what it senses; the default in_contact is n_on_body > 0
        default = (getattr(self.sensor.in_contact, "__func__", None) is BaseSensor.in_contact
                   and self.sensor.attachModelName == body and body in state.body_transforms)
        touched = n_on_body > 0 and (default or self.sensor.in_contact(state))
        return SensorResult(self, values, jac, cols, n_on_body, touched, bounded)

    def residual(self, measured: np.ndarray, predicted: np.ndarray) -> Optional[np.ndarray]:
        """``measured - predicted`` (entries the message does not carry, NaN, read 0), or None when it
        does not fit its message (non-finite, or beyond float32 for a kind with float32 fields)."""
        residual = np.where(np.isnan(measured), 0.0, measured - predicted)
        limit = F32_MAX if self.layout.codec.float32_values else np.inf
        return residual if np.isfinite(residual).all() and (np.abs(residual) <= limit).all() else None

    def keep_pair(self, pair: Any) -> Tuple[Optional[np.ndarray], np.ndarray, int]:
        """Keep a measured vector paired with its prediction (for tares; with contact, a gain fit) and feed
        :attr:`contact_free_loop`; ``(residual or None, measured (#meas,) SI, contacts stamp ns)``."""
        (predicted, state, contact_free, stamp_ns), measured = pair.prediction, pair.measurement
        self.pairs.append(PairedSample(stamp_ns, measured, state, contact_free))
        if not contact_free:   # contact samples for a gain fit (oldest drop out)
            self.contact_pairs.append(self.pairs[-1])
        residual = self.residual(measured, predicted)   # against the prediction as published
        if self.contact_free_loop is not None:
            self.contact_free_loop.feed(self, stamp_ns, predicted, measured, contact_free)
        return residual, measured, stamp_ns

    def clear_measured(self) -> None:
        """Forget the buffered measured samples (unmatched, tare, gain): their unit or type changed."""
        self._clear_measured()
        self.plausibility_warned = False
        self.unit_warning = None

    def measured_went_back(self, stamp_ns: int) -> bool:
        """True when a measured stamp went back (source restarted): measured buffers cleared, counted."""
        if not self.pairer.measurement_went_back(stamp_ns):
            return False
        self.measured_stamp_jumps += 1
        self._clear_measured()
        return True

    def _clear_measured(self) -> None:
        self.pairer.clear_measurements()
        self.pairs.clear()
        self.contact_pairs.clear()
        if self.contact_free_loop is not None:     # the automatic tare and pressure watch start afresh
            self.contact_free_loop.restart()

    def clear_buffers(self) -> None:
        """Forget everything paired (after a stamp jump or a new ``measured_delay``)."""
        self.pairer.clear()
        self._clear_measured()


def _row_signs(pairs: Sequence[Any], offsets: Sequence[int], decoded: Any) -> Optional[np.ndarray]:
    """``(#contacts,)``: -1 on implied pairs and ``decoded.flipped_rows``, else 1; None when all are 1."""
    implied = getattr(decoded, "implied", frozenset())
    flipped = getattr(decoded, "flipped_rows", None)
    if not implied and flipped is None:
        return None
    sign = np.ones(int(offsets[-1]))
    for p, pair in enumerate(map(tuple, pairs)):
        s = -1.0 if pair in implied else 1.0
        sign[int(offsets[p]):int(offsets[p + 1])] = \
            s if flipped is None else np.where(flipped[decoded.rows[pair]], -s, s)
    return None if (sign > 0).all() else sign


def check_predictions(results: Sequence[SensorResult]) -> Optional[Tuple[str, str]]:
    """``(reason, detail)`` when a step's predictions cannot be published, else None:
    ``non_finite_prediction`` (a value or Jacobian value) or ``out_of_range`` (beyond float32 fields)."""
    if all(r.bounded for r in results):     # (RigSensor.predict's cheap proof)
        return None
    for r in results:
        h, values, bad = r.handle, r.values, np.flatnonzero(~np.isfinite(r.values))
        if len(bad):
            return "non_finite_prediction", f"{h.name}: {h.layout.names[bad[0]]} = {values[bad[0]]}"
        if r.jacobian is not None and not np.isfinite(r.jacobian.values.numpy(force=True)).all():
            return "non_finite_prediction", f"{h.name}: non-finite Jacobian value"
    for r in results:
        h, values = r.handle, r.values
        if h.layout.codec.float32_values and np.abs(values).max(initial=0.0) > F32_MAX:
            i = int(np.argmax(np.abs(values)))
            return "out_of_range", (f"{h.name}: {h.layout.names[i]} = {values[i]:.6g} N exceeds the float32 "
                                    f"range (+-{F32_MAX:.6g}) of its message's fields")
    return None
