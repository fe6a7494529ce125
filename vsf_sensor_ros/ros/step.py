"""One contacts message through every sensor model: predict, check, decide contact -- nothing published.

The node publishes a step only when :func:`check_predictions` finds nothing
wrong with *any* sensor's result, so a bad message is rejected whole.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ..sensor.base_sensor import SimState
from .messages import readings as enc

F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class SensorResult:
    """One sensor's outcome for one step.

    Attributes:
        handle: the sensor's :class:`~vsf_sensor_ros.ros.sensor_handle.SensorHandle`.
        values: ``(#meas,)`` float64 prediction.
        jacobian: the ``SparseJacobian`` or None (not wanted); its values are with
            respect to the message's rows (entries of an implied pair negated).
        jacobian_cols: its columns renumbered to contacts-message rows, or None.
        n_on_body: contacts with the sensor's body as body1 (implied pairs included).
        touched: something touches what the sensor senses (not contact-free for a tare).
    """

    handle: Any
    values: np.ndarray
    jacobian: Any
    jacobian_cols: Optional[np.ndarray]
    n_on_body: int
    touched: bool


class StepRejected(Exception):
    """A contacts message rejected whole: ``reason`` (a counted rejection reason) and ``detail``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def predict_sensor(h: Any, state: SimState, decoded: Any, want_jacobian: bool) -> SensorResult:
    """Predict one sensor (and its Jacobian when wanted) for ``state``.

    Args:
        h: the sensor's handle (``sensor``, ``layout``).
        state: the step's ``SimState``.
        decoded: the decoded contacts message (``contacts``, ``rows``, ``implied``),
            completed by :func:`~vsf_sensor_ros.ros.messages.contacts.with_implied_pairs`.
        want_jacobian: compute the sparse force Jacobian too.

    The published Jacobian's columns are ``3·r + k`` with ``r`` the message row.
    A contact of an implied pair ``(b, a)`` carries ``-f`` of its row ``r`` of
    ``(a, b)``, so ``d reading / d f_r = -d reading / d f_implied``: its
    entries are negated here.

    Raises:
        ValueError, IndexError, RuntimeError: from the model (the node counts
            them as ``model_error``).
    """
    if want_jacobian and hasattr(h.sensor, "predict_with_jacobian"):
        pred, jac = h.sensor.predict_with_jacobian(state)   # one contact mapping for both
    else:
        pred = h.sensor.predict(state)
        jac = h.sensor.sparse_force_jacobian(state) if want_jacobian else None
    values = pred.detach().cpu().numpy().astype(np.float64)
    cols = None
    if jac is not None:
        cols = enc.jacobian_message_columns(jac.cols.cpu().numpy(), jac.pairs, jac.offsets, decoded.rows)
        jac = _signed_to_rows(jac, getattr(decoded, "implied", frozenset()))
    body = h.layout.frame_id
    n_on_body = sum(len(c) for (b1, _), c in decoded.contacts.items() if b1 == body)
    # contact-free for a tare: nothing touches what the sensor senses (its patch/radius)
    touched = n_on_body > 0 and h.sensor.in_contact(state)
    return SensorResult(h, values, jac, cols, n_on_body, touched)


def _signed_to_rows(jac: Any, implied: Any) -> Any:
    """``jac`` with the entries of contacts of ``implied`` pairs negated (a new object), or ``jac``."""
    flip = [p for p, pair in enumerate(jac.pairs) if tuple(pair) in implied]
    if not flip:
        return jac
    n = int(jac.offsets[-1])
    sign = torch.ones(n, dtype=jac.values.dtype, device=jac.values.device)
    for p in flip:
        sign[int(jac.offsets[p]):int(jac.offsets[p + 1])] = -1.0
    return dataclasses.replace(jac, values=jac.values * sign[jac.cols // 3])


def check_elements(decoded: Any, dense_vertex_counts: Mapping[str, int]) -> Optional[str]:
    """Element indices on bodies carrying a dense-force sensor must index its vertices; why not, or None."""
    for (b1, b2), c in decoded.contacts.items():
        for body, elems in ((b1, c.elems1), (b2, c.elems2)):
            nv = dense_vertex_counts.get(body)
            if nv is None or elems is None or elems.numel() == 0:
                continue
            e = elems.numpy() if elems.device.type == "cpu" else elems.cpu().numpy()   # numpy: cheaper
            lo, hi = int(e.min()), int(e.max())
            if lo < -1 or hi >= nv:
                return f"element index {hi if hi >= nv else lo} on {body!r} outside -1..{nv - 1}"
    return None


def check_predictions(results: Sequence[SensorResult]) -> Optional[Tuple[str, str]]:
    """``(reason, detail)`` when a message's predictions cannot be published, else None.

    Finite input can still overflow a model (a huge force over a small area):
    any non-finite predicted value or Jacobian value gives
    ``non_finite_prediction``; a dense-force value beyond the float32 range
    of its ``PointCloud2`` fields gives ``out_of_range``.  Either rejects the
    whole message for every sensor.
    """
    for r in results:
        h, values = r.handle, r.values
        if not np.isfinite(values).all():
            i = int(np.flatnonzero(~np.isfinite(values))[0])
            return "non_finite_prediction", f"{h.name}: {h.layout.names[i]} = {values[i]}"
        # numpy on the tensor buffer (no copy): a fraction of the torch check per call
        if r.jacobian is not None and not np.isfinite(r.jacobian.values.detach().cpu().numpy()).all():
            return "non_finite_prediction", f"{h.name}: non-finite Jacobian value"
    for r in results:
        h, values = r.handle, r.values
        if h.layout.kind == "dense_force" and values.size and float(np.abs(values).max()) > F32_MAX:
            i = int(np.argmax(np.abs(values)))
            return "out_of_range", (f"{h.name}: {h.layout.names[i]} = {values[i]:.6g} N exceeds the float32 "
                                    f"range (+-{F32_MAX:.6g}) of the dense force cloud")
    return None


def residual_or_none(layout: enc.SensorLayout, measured: np.ndarray,
                     predicted: np.ndarray) -> Optional[np.ndarray]:
    """``measured - predicted`` (entries the message does not carry, NaN, read 0), or None when it
    does not fit its message (non-finite, or beyond float32 for a dense force cloud)."""
    residual = np.where(np.isnan(measured), 0.0, measured - predicted)
    limit = F32_MAX if layout.kind == "dense_force" else np.inf   # float32 cloud fields
    if not (np.isfinite(residual).all() and (np.abs(residual) <= limit).all()):
        return None
    return residual


def reading_in_contact(layout: enc.SensorLayout, values: np.ndarray, n_contacts: int) -> bool:
    """The contact state a sensor reports: its flag entry, a positive load, or any contact on its body."""
    if layout.flag is not None:
        return bool(values[layout.flag] > 0.5)
    if layout.kind == "load":
        return bool(values[layout.slots[0]] > 0)
    return n_contacts > 0


__all__ = ["F32_MAX", "SensorResult", "StepRejected", "check_elements", "check_predictions", "predict_sensor",
           "reading_in_contact", "residual_or_none"]
