"""One sensor inside the node: model, buffers, endpoints; predict, check, publish, residual.

:class:`SensorHandle` is everything the node keeps for one sensor; for each contacts message
the node asks every handle for a :class:`SensorResult` (:meth:`SensorHandle.predict`),
checks them all together (:func:`check_predictions`: a bad message is rejected whole) and
then has each handle's :class:`SensorEndpoints` publish its outputs.

Per sensor ``<s>`` (:class:`SensorEndpoints`, created at start):

* publishers ``<s>/predicted``, ``<s>/residual`` and ``<s>/measured_si`` (type of the sensor's
  kind; ``measured_si`` = the measured stream as the node understood it: SI, stamped with the
  contacts stamp of the prediction it was paired with),
  ``<s>/jacobian`` while ``<s>.publish_jacobian``, ``<s>/markers`` while
  ``<s>.publish_markers``;
* the subscription ``<s>/measured`` (type ``<s>.measured_type``; topic ``<s>.measured_topic``
  when set);
* the service ``<s>/tare`` (``std_srvs/Trigger``);
* the service ``<s>/calibrate_gain`` (``std_srvs/Trigger``) for a sensor with a gain
  (:mod:`vsf_sensor_ros.ros.calibration`).

Predicted, residual, measured-SI and Jacobian messages are published as serialised bytes
(:mod:`vsf_sensor_ros.ros.messages.wire`, the node's one message path); markers, an rviz aid off
the hot path, as message objects.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
import dataclasses
from typing import Any, Callable, Deque, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from ..sensor import GainCalibrator
from ..sensor.base_sensor import BaseSensor, SimState
from .diagnostics import SensorStats
from .messages import readings as enc
from .messages import wire
from .messages.stamps import ns_to_stamp, stamp_to_ns
from .pairing import StampPairer
from .parameter_table import ConfigError
from .parameters import SensorParameters

# A buffered prediction: (values (#meas,) float64, the SimState it came from, contact-free for a tare,
# the contacts message's stamp in ns -- the pairing key may be the receive time instead).
Prediction = Tuple[np.ndarray, SimState, bool, int]

F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class PairedSample:
    """A measured message paired with the prediction of the same stamp.

    Attributes:
        stamp_ns: stamp of the contacts message (ns).
        measured: ``(#meas,)`` float64 measured vector in SI (NaN = not carried by the message).
        state: the ``SimState`` the prediction came from.
        contact_free: ``not sensor.in_contact(state)`` (see the module docstring).
    """

    stamp_ns: int
    measured: np.ndarray
    state: SimState
    contact_free: bool


def contact_buffer_size(buffer_size: int) -> int:
    """Capacity of a sensor's contact-sample buffer: ``max(4 * alignment_buffer_size, 100)``, as the
    buffer of all paired samples."""
    return max(4 * int(buffer_size), 100)


def new_buffer(buffer_size: int) -> Deque[PairedSample]:
    """An empty contact-sample buffer for ``alignment_buffer_size`` = ``buffer_size``."""
    return deque(maxlen=contact_buffer_size(buffer_size))


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


def qos_reliability(parameter: str, value: str):
    """Map ``best_effort`` / ``reliable`` to rclpy's policy.

    Raises:
        ConfigError: any other value.
    """
    from rclpy.qos import ReliabilityPolicy
    v = value.strip().lower().replace("-", "_")
    if v == "best_effort":
        return ReliabilityPolicy.BEST_EFFORT
    if v == "reliable":
        return ReliabilityPolicy.RELIABLE
    raise ConfigError(parameter, value, "must be 'best_effort' or 'reliable'")


@dataclass(frozen=True)
class EndpointQoS:
    """QoS of a sensor's subscription (``inputs``) and publishers (``outputs``)."""

    inputs: QoSProfile
    outputs: QoSProfile

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "EndpointQoS":
        """The keep-last, volatile profiles of ``qos.inputs.*`` and ``qos.outputs.*`` (parameter values).

        Raises:
            ConfigError: for a reliability that is neither ``reliable`` nor ``best_effort``.
        """
        def side(s: str) -> QoSProfile:
            key = f"qos.{s}.reliability"
            return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(values[f"qos.{s}.depth"]),
                              reliability=qos_reliability(key, values[key]),
                              durability=DurabilityPolicy.VOLATILE)
        return cls(side("inputs"), side("outputs"))


class SensorEndpoints:
    """The publishers, subscription and service of one sensor, owned by ``node``.

    Args:
        node: the node that creates every endpoint.
        config: the sensor's parameters (name, measured type, publish flags).
        layout: the sensor's message layout (predicted / residual type).
        qos: QoS profiles.
        on_measured: ``f(sensor_name, msg)`` for ``<s>/measured``.
        on_tare: ``f(sensor_name, request, response) -> response`` for ``<s>/tare``.
        on_calibrate_gain: the same for ``<s>/calibrate_gain``, created when given and the
            sensor ``sensor`` takes a gain (``GainCalibrator.compatible``).
        sensor: the sensor's model (decides ``<s>/calibrate_gain``).
    """

    def __init__(self, node: Node, config: SensorParameters, layout: enc.SensorLayout, qos: EndpointQoS,
                 on_measured: Callable[[str, Any], None],
                 on_tare: Callable[[str, Trigger.Request, Trigger.Response], Trigger.Response],
                 on_calibrate_gain: Optional[Callable[[str, Trigger.Request, Trigger.Response],
                                                      Trigger.Response]] = None,
                 sensor: Optional[BaseSensor] = None) -> None:
        self._node, self._qos = node, qos
        # contacts messages since the last published Jacobian (jacobian_decimation)
        self._since_jacobian = 0
        self.name = config.name
        self.predicted = node.create_publisher(layout.codec.message, f"{self.name}/predicted", qos.outputs)
        self.residual = node.create_publisher(layout.codec.message, f"{self.name}/residual", qos.outputs)
        self.measured_si = node.create_publisher(layout.codec.message, f"{self.name}/measured_si",
                                                 qos.outputs)
        self.jacobian: Optional[Any] = None
        self.markers: Optional[Any] = None
        self.set_optional(bool(config.values["publish_jacobian"]), bool(config.values["publish_markers"]))
        self.measured = node.create_subscription(enc.MEASURED_TYPES[config.measured_type()],
                                                 config.measured_topic(),
                                                 lambda msg, n=self.name: on_measured(n, msg), qos.inputs)
        self.tare = node.create_service(Trigger, f"{self.name}/tare",
                                        lambda req, resp, n=self.name: on_tare(n, req, resp))
        self.calibrate_gain: Optional[Any] = None
        if on_calibrate_gain is not None and sensor is not None and GainCalibrator().compatible(sensor):
            self.calibrate_gain = node.create_service(
                Trigger, f"{self.name}/calibrate_gain",
                lambda req, resp, n=self.name: on_calibrate_gain(n, req, resp))

    def set_optional(self, jacobian: bool, markers: bool) -> None:
        """Create or destroy ``<s>/jacobian`` and ``<s>/markers`` to match the flags."""
        node, qos = self._node, self._qos.outputs
        if jacobian and self.jacobian is None:
            self.jacobian = node.create_publisher(PointCloud2, f"{self.name}/jacobian", qos)
            self._since_jacobian = 0
        elif not jacobian and self.jacobian is not None:
            node.destroy_publisher(self.jacobian)
            self.jacobian = None
        if markers and self.markers is None:
            self.markers = node.create_publisher(MarkerArray, f"{self.name}/markers", qos)
        elif not markers and self.markers is not None:
            node.destroy_publisher(self.markers)
            self.markers = None

    def publish_step(self, layout: enc.SensorLayout, r: Any, state: SimState, stamp: Any, world_frame: str,
                     in_contact: bool, marker_force_scale: Optional[float]) -> bool:
        """Publish a checked step: prediction, Jacobian, and markers when ``marker_force_scale`` is given.

        Outputs nobody subscribes to are not encoded (serialising clouds costs).

        Args:
            layout: the sensor's layout.
            r: its :class:`SensorResult`.
            state: the step's ``SimState`` (contact points for the markers).
            stamp: the contacts message's stamp.
            world_frame: frame of the Jacobian and the markers' points.
            in_contact: the sensor's contact state (colours the markers).
            marker_force_scale: m per N of the arrows, or None: no markers this step.

        Returns:
            True when markers were published.
        """
        values, jac = r.values, r.jacobian
        stamp_ns = stamp_to_ns(stamp)
        if wanted(self.predicted):
            self.predicted.publish(enc.encode_vector(layout, values, stamp_ns))
        if jac is not None and self.jacobian is not None and wanted(self.jacobian):
            self.jacobian.publish(wire.encode_jacobian(
                jac.rows.cpu().numpy(), r.jacobian_cols, jac.values.detach().cpu().numpy(), stamp_ns,
                world_frame))
        if marker_force_scale is None or self.markers is None or not wanted(self.markers):
            return False
        pts, frc = state.contacts_on_body(layout.frame_id, local=False)
        self.markers.publish(enc.encode_markers(self.name, layout, world_frame, ns_to_stamp(stamp_ns),
                                                pts.cpu().numpy(),
                                                frc.cpu().numpy(), values, marker_force_scale, in_contact))
        return True

    def publish_residual(self, layout: enc.SensorLayout, residual: np.ndarray, stamp_ns: int) -> bool:
        """Publish ``<s>/residual`` (``(#meas,)`` float64, SI) when someone subscribes; True if sent."""
        if not wanted(self.residual):
            return False
        self.residual.publish(enc.encode_vector(layout, residual, stamp_ns))
        return True

    def publish_measured_si(self, layout: enc.SensorLayout, measured: np.ndarray, stamp_ns: int) -> bool:
        """Publish ``<s>/measured_si`` when someone subscribes; True if sent.

        ``measured`` is the ``(#meas,)`` float64 measured vector in SI (the reading x
        ``measured_scale``, as the residual uses it; entries the measured type cannot carry are
        NaN and have no slot in the message).  ``stamp_ns`` is the contacts stamp of the
        prediction it was paired with, so ``<s>/predicted`` and ``<s>/measured_si`` of one
        instant carry the same stamp and overlay in one unit in a plot.
        """
        if not wanted(self.measured_si):
            return False
        self.measured_si.publish(enc.encode_vector(layout, measured, stamp_ns))
        return True

    def jacobian_due(self, decimation: int) -> bool:
        """Whether this contacts message's Jacobian is computed and published; advances the count.

        With ``<s>.jacobian_decimation`` k: the first message after start
        (or after the Jacobian was switched on), then every k-th.  False
        while ``<s>/jacobian`` is off.
        """
        if self.jacobian is None:
            return False
        due = self._since_jacobian % max(int(decimation), 1) == 0
        self._since_jacobian = 1 if due else self._since_jacobian + 1
        return due


def wanted(pub: Any) -> bool:
    """A publisher has at least one matched subscription."""
    return pub.get_subscription_count() > 0


class SensorHandle:
    """Everything the node keeps for one sensor: model, layout, endpoints, pairing buffers, stats.

    Args:
        config: the sensor's parameters.
        sensor: the attached model.
        layout: its message layout.
        buffer_size: capacity of each pairing queue (``alignment_buffer_size``).
        tolerance_ns: pairing tolerance (``max_stamp_difference``, ns), None = adaptive.

    Attributes:
        headerless: the measured type has no header: both streams pair by receive time.
        plausibility_warned: the implausible-pressure warning was given (once per scale).
        unit_warning: while the latest measured value lies outside its kind's plausible range, the
            sentence naming the value, the unit it looks like and ``measured_scale``; else None.
    """

    def __init__(self, config: SensorParameters, sensor: BaseSensor, layout: enc.SensorLayout,
                 buffer_size: int, tolerance_ns: Optional[int]) -> None:
        self.config = config
        self.sensor = sensor
        self.layout = layout
        self.endpoints: Optional[SensorEndpoints] = None
        self.stats = SensorStats()
        self.pairer: StampPairer[Prediction, np.ndarray] = StampPairer(buffer_size, tolerance_ns)
        # paired samples kept for tares (most recent last)
        self.pairs: Deque[PairedSample] = deque(maxlen=max(4 * buffer_size, 100))
        # paired samples with contact kept for a gain fit (most recent last)
        self.contact_pairs: Deque[PairedSample] = new_buffer(buffer_size)
        # measured messages decoded and accepted (rejected ones are in stats.rejected)
        self.measured_accepted = 0
        self.tared_on_start = False
        self.tare_samples_used: Optional[int] = None
        self.last_values: Optional[np.ndarray] = None
        self.last_marker_time = 0.0
        self.headerless = config.measured_type() in enc.HEADERLESS_MEASURED_TYPES
        self.plausibility_warned = False
        # the sentence while the latest measured value looks like the wrong unit (live), else None
        self.unit_warning: Optional[str] = None

    @property
    def name(self) -> str:
        """The sensor's name."""
        return self.config.name

    def measured_delay_ns(self) -> int:
        """``<s>.measured_delay`` in ns: added to a header-less measured message's receive time."""
        return round(float(self.config.values.get("measured_delay", 0.0)) * 1e9)

    def apply_live(self, values: Mapping[str, Any]) -> List[str]:
        """Apply checked live values of :data:`~.parameter_table.LIVE_SENSOR_KEYS` (key -> value).

        A new ``measured_scale`` forgets the buffered measured samples (a tare must not average
        two units); a new ``measured_delay`` of a header-less stream forgets the pairing buffers
        (its pairing key moved).

        Returns:
            One sentence per buffer cleared, for the log.
        """
        old = dict(self.config.values)
        self.config = SensorParameters(self.name, self.config.type, {**old, **values})
        new = self.config.values
        if self.endpoints is not None:
            self.endpoints.set_optional(bool(new["publish_jacobian"]), bool(new["publish_markers"]))
        notes = []
        if float(new["measured_scale"]) != float(old["measured_scale"]):
            self.clear_measured()
            notes.append(f"sensor {self.name!r}: measured_scale changed; buffered measured samples cleared")
        if self.headerless and float(new["measured_delay"]) != float(old["measured_delay"]):
            self.clear_buffers()
            notes.append(f"sensor {self.name!r}: measured_delay changed; pairing buffers cleared")
        return notes

    def predict(self, state: SimState, decoded: Any, want_jacobian: bool) -> SensorResult:
        """This sensor's prediction (and its Jacobian when wanted) for ``state``.

        Args:
            state: the step's ``SimState``.
            decoded: the decoded contacts message (``contacts``, ``rows``, ``implied``),
                completed by :func:`~vsf_sensor_ros.ros.messages.contacts.with_implied_pairs`.
            want_jacobian: compute the sparse force Jacobian too.

        The published Jacobian's columns are ``3·r + k`` with ``r`` the message row.
        A contact of an implied pair ``(b, a)`` carries ``-f`` of its row ``r`` of
        ``(a, b)``, so ``d reading / d f_r = -d reading / d f_implied``: its
        entries are negated here, as are those of a flipped row (``decoded.flipped_rows``).

        Raises:
            ValueError, IndexError, RuntimeError: from the model (the node counts
                them as ``model_error``).
        """
        if want_jacobian and hasattr(self.sensor, "predict_with_jacobian"):
            pred, jac = self.sensor.predict_with_jacobian(state)   # one contact mapping for both
        else:
            pred = self.sensor.predict(state)
            jac = self.sensor.sparse_force_jacobian(state) if want_jacobian else None
        values = pred.detach().cpu().numpy().astype(np.float64)
        cols = None
        if jac is not None:
            cols = enc.jacobian_message_columns(jac.cols.cpu().numpy(), jac.pairs, jac.offsets, decoded.rows)
            jac = _signed_to_rows(jac, decoded)
        body = self.layout.frame_id
        n_on_body = sum(len(c) for (b1, _), c in decoded.contacts.items() if b1 == body)
        # contact-free for a tare: nothing touches what the sensor senses (its patch/radius)
        touched = n_on_body > 0 and self.sensor.in_contact(state)
        return SensorResult(self, values, jac, cols, n_on_body, touched)

    def residual(self, measured: np.ndarray, predicted: np.ndarray) -> Optional[np.ndarray]:
        """``measured - predicted`` (entries the message does not carry, NaN, read 0), or None when it
        does not fit its message (non-finite, or beyond float32 for a kind with float32 fields)."""
        residual = np.where(np.isnan(measured), 0.0, measured - predicted)
        limit = F32_MAX if self.layout.codec.float32_values else np.inf
        if not (np.isfinite(residual).all() and (np.abs(residual) <= limit).all()):
            return None
        return residual

    def in_contact(self, values: np.ndarray, n_contacts: int) -> bool:
        """The contact state the sensor reports (its kind's codec: a flag entry, a positive load, or
        any contact on its body)."""
        return self.layout.codec.in_contact(self.layout, values, n_contacts)

    def clear_measured(self) -> None:
        """Forget the buffered measured samples (unmatched and paired, the tare pairs and the contact
        samples of ``calibrate_gain``): their unit or type changed."""
        self.pairer.clear_measurements()
        self.pairs.clear()
        self.contact_pairs.clear()
        self.plausibility_warned = False
        self.unit_warning = None

    def clear_buffers(self) -> None:
        """Forget everything paired (after a stamp jump or a new ``measured_delay``)."""
        self.pairer.clear()
        self.pairs.clear()
        self.contact_pairs.clear()


def _signed_to_rows(jac: Any, decoded: Any) -> Any:
    """``jac`` with the entries of contacts whose force is minus their row's written force negated
    (a new object), or ``jac``: contacts of ``decoded.implied`` pairs, and rows in
    ``decoded.flipped_rows`` (both: negated twice)."""
    implied = getattr(decoded, "implied", frozenset())
    flipped = getattr(decoded, "flipped_rows", None)
    signs = {}
    for p, pair in enumerate(jac.pairs):
        pair = tuple(pair)
        s = -1.0 if pair in implied else 1.0
        if flipped is None:
            if s < 0:
                signs[p] = s
            continue
        per_row = np.where(flipped[decoded.rows[pair]], -s, s)
        if (per_row < 0).any():
            signs[p] = per_row
    if not signs:
        return jac
    n = int(jac.offsets[-1])
    sign = torch.ones(n, dtype=jac.values.dtype, device=jac.values.device)
    for p, s in signs.items():
        lo, hi = int(jac.offsets[p]), int(jac.offsets[p + 1])
        sign[lo:hi] = torch.as_tensor(s, dtype=sign.dtype, device=sign.device)
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
        if h.layout.codec.float32_values and values.size and float(np.abs(values).max()) > F32_MAX:
            i = int(np.argmax(np.abs(values)))
            return "out_of_range", (f"{h.name}: {h.layout.names[i]} = {values[i]:.6g} N exceeds the float32 "
                                    f"range (+-{F32_MAX:.6g}) of its message's fields")
    return None


__all__ = ["EndpointQoS", "F32_MAX", "PairedSample", "Prediction", "SensorEndpoints", "SensorHandle",
           "SensorResult", "StepRejected", "check_elements", "check_predictions", "contact_buffer_size",
           "new_buffer", "qos_reliability", "wanted"]
