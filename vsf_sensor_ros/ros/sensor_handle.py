"""One sensor inside the node: its model and buffers (:class:`SensorHandle`) and its ROS endpoints.

Per sensor ``<s>`` (:class:`SensorEndpoints`, created and destroyed together):

* publishers ``<s>/predicted`` and ``<s>/residual`` (type of the sensor's kind),
  ``<s>/jacobian`` while ``<s>.publish_jacobian``, ``<s>/markers`` while
  ``<s>.publish_markers``;
* the subscription ``<s>/measured`` (type ``<s>.measured_type``; topic ``<s>.measured_topic``
  when set);
* the service ``<s>/tare`` (``std_srvs/Trigger``);
* the service ``<s>/calibrate_gain`` (``std_srvs/Trigger``) for a sensor with a gain
  (:mod:`vsf_sensor_ros.ros.gain_service`).

With ``fast`` (the node's ``fast_path``) predicted, residual and Jacobian
messages are serialised from numpy and published as bytes
(:mod:`vsf_sensor_ros.ros.fast_io`); markers always use message objects.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Mapping, Optional, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from ..sensor.base_sensor import BaseSensor
from ..sensor.base_sensor import SimState
from . import gain_service
from . import fast_io
from .messages import readings as enc
from .diagnostics import SensorStats
from .pairing import StampPairer
from .parameter_table import SensorConfig, qos_reliability
from .messages.stamps import ns_to_stamp, stamp_to_ns
from .tare import PairedSample

# A buffered prediction: (values (#meas,) float64, the SimState it came from, contact-free for a tare,
# the contacts message's stamp in ns -- the pairing key may be the receive time instead).
Prediction = Tuple[np.ndarray, SimState, bool, int]


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
        node: the node that creates (and later destroys) every endpoint.
        config: the sensor's parameters (name, measured type, publish flags).
        layout: the sensor's message layout (predicted / residual type).
        qos: QoS profiles.
        on_measured: ``f(sensor_name, msg)`` for ``<s>/measured``.
        on_tare: ``f(sensor_name, request, response) -> response`` for ``<s>/tare``.
        on_calibrate_gain: the same for ``<s>/calibrate_gain``, created when given and the
            sensor ``sensor`` takes a gain (``gain_service.supports_gain``).
        sensor: the sensor's model (decides ``<s>/calibrate_gain``).
        fast: publish serialised bytes built with numpy (same messages).
    """

    def __init__(self, node: Node, config: SensorConfig, layout: enc.SensorLayout, qos: EndpointQoS,
                 on_measured: Callable[[str, Any], None],
                 on_tare: Callable[[str, Trigger.Request, Trigger.Response], Trigger.Response],
                 on_calibrate_gain: Optional[Callable[[str, Trigger.Request, Trigger.Response],
                                                      Trigger.Response]] = None,
                 sensor: Optional[BaseSensor] = None,
                 fast: bool = False) -> None:
        self._node, self._qos, self._on_measured = node, qos, on_measured
        self.fast = bool(fast)
        # contacts messages since the last published Jacobian (jacobian_decimation)
        self._since_jacobian = 0
        self.name = config.name
        kind_msg = enc.KIND_MESSAGES[layout.kind]
        self.predicted = node.create_publisher(kind_msg, f"{self.name}/predicted", qos.outputs)
        self.residual = node.create_publisher(kind_msg, f"{self.name}/residual", qos.outputs)
        self.jacobian: Optional[Any] = None
        self.markers: Optional[Any] = None
        self.measured: Optional[Any] = None
        self.set_optional(bool(config.values["publish_jacobian"]), bool(config.values["publish_markers"]))
        self._measured_key: Optional[Tuple[str, str]] = None
        self.subscribe_measured(config.measured_type(), measured_topic(config))
        self.tare = node.create_service(Trigger, f"{self.name}/tare",
                                        lambda req, resp, n=self.name: on_tare(n, req, resp))
        self.calibrate_gain: Optional[Any] = None
        if on_calibrate_gain is not None and sensor is not None and gain_service.supports_gain(sensor):
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

    def subscribe_measured(self, measured_type: str, topic: str) -> None:
        """(Re)subscribe the measured topic ``topic`` with the canonical type name ``measured_type``.

        The new subscription is created before the old one is destroyed, so a
        failure keeps the old one.  Only when the topic stays and the type
        changes must the old one go first (DDS refuses two types on one topic
        in a participant); should the new one then fail, the old one is made
        again.

        Raises:
            Exception: rclpy's error when the new subscription cannot be made
                (the old subscription is still in place).
        """
        def make(mtype: str, name: str) -> Any:
            return self._node.create_subscription(enc.MEASURED_TYPES[mtype], name,
                                                  lambda msg, n=self.name: self._on_measured(n, msg),
                                                  self._qos.inputs)
        old, old_key = self.measured, self._measured_key
        if old is not None and old_key is not None and old_key[1] == topic and old_key[0] != measured_type:
            self._node.destroy_subscription(old)
            self.measured = None
            try:
                self.measured = make(measured_type, topic)
            except Exception:
                self.measured = make(*old_key)
                raise
        else:
            self.measured = make(measured_type, topic)
            if old is not None:
                self._node.destroy_subscription(old)
        self._measured_key = (measured_type, topic)

    def publish_step(self, layout: enc.SensorLayout, r: Any, state: SimState, stamp: Any, world_frame: str,
                     in_contact: bool, marker_force_scale: Optional[float]) -> bool:
        """Publish a checked step: prediction, Jacobian, and markers when ``marker_force_scale`` is given.

        Outputs nobody subscribes to are not encoded (serialising clouds costs).

        Args:
            layout: the sensor's layout.
            r: its :class:`~vsf_sensor_ros.ros.step.SensorResult`.
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
            self.predicted.publish(fast_io.vector_message(layout, values, stamp_ns, self.fast))
        if jac is not None and self.jacobian is not None and wanted(self.jacobian):
            self.jacobian.publish(fast_io.jacobian_message(
                jac.rows.cpu().numpy(), r.jacobian_cols, jac.values.detach().cpu().numpy(), stamp_ns,
                world_frame, self.fast))
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
        self.residual.publish(fast_io.vector_message(layout, residual, stamp_ns, self.fast))
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

    def destroy(self) -> None:
        """Destroy every endpoint (the sensor leaves the graph)."""
        node = self._node
        for pub in (self.predicted, self.residual, self.jacobian, self.markers):
            if pub is not None:
                node.destroy_publisher(pub)
        if self.measured is not None:
            node.destroy_subscription(self.measured)
        node.destroy_service(self.tare)
        if self.calibrate_gain is not None:
            node.destroy_service(self.calibrate_gain)
            self.calibrate_gain = None
        self.jacobian = self.markers = self.measured = None


def measured_topic(config: SensorConfig) -> str:
    """The measured topic of a sensor: ``<s>.measured_topic``, or ``<s>/measured`` when empty."""
    return str(config.values.get("measured_topic", "") or "").strip() or f"{config.name}/measured"


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
    """

    def __init__(self, config: SensorConfig, sensor: BaseSensor, layout: enc.SensorLayout,
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
        self.contact_pairs: Deque[PairedSample] = gain_service.new_buffer(buffer_size)
        # measured messages decoded and accepted (rejected ones are in stats.rejected)
        self.measured_accepted = 0
        self.tared_on_start = False
        self.tare_samples_used: Optional[int] = None
        self.last_values: Optional[np.ndarray] = None
        self.last_marker_time = 0.0
        self.headerless = config.measured_type() in enc.HEADERLESS_MEASURED_TYPES
        self.plausibility_warned = False

    @property
    def name(self) -> str:
        """The sensor's name."""
        return self.config.name

    def measured_delay_ns(self) -> int:
        """``<s>.measured_delay`` in ns: added to a header-less measured message's receive time."""
        return round(float(self.config.values.get("measured_delay", 0.0)) * 1e9)

    def replace_model(self, sensor: BaseSensor, layout: enc.SensorLayout) -> Optional[str]:
        """Swap in a rebuilt model (new settings), keeping calibration and internal state where they fit.

        The calibration carries over unless the measurement names change (e.g.
        a ContactSensor's ``hasForce``: the tare's entries no longer line up);
        the pairing buffers are cleared when the layout's kind or size changes.

        Returns:
            Why the calibration was dropped, or None when it was kept.
        """
        dropped = None
        old_cal = self.sensor.get_calibration()
        try:
            if old_cal and sensor.measurement_names() != self.sensor.measurement_names():
                raise ValueError(f"measurements {self.sensor.measurement_names()} -> "
                                 f"{sensor.measurement_names()}")
            sensor.set_calibration(old_cal)
        except ValueError as exc:
            self.stats.calibration = "none (dropped: measurement layout changed)"
            self.tare_samples_used = None
            dropped = str(exc)
        sensor.set_internal_state(self.sensor.get_internal_state())
        self.sensor = sensor
        if layout.kind != self.layout.kind or len(layout.names) != len(self.layout.names):
            self.clear_buffers()
        self.layout = layout
        return dropped

    def clear_measured(self) -> None:
        """Forget the buffered measured samples (unmatched and paired, the tare pairs and the contact
        samples of ``calibrate_gain``): their unit or type changed."""
        self.pairer.clear_measurements()
        self.pairs.clear()
        self.contact_pairs.clear()
        self.plausibility_warned = False

    def clear_buffers(self) -> None:
        """Forget everything paired by stamp (after a stamp jump or a layout change)."""
        self.pairer.clear()
        self.pairs.clear()
        self.contact_pairs.clear()


__all__ = ["EndpointQoS", "Prediction", "SensorEndpoints", "SensorHandle", "measured_topic", "wanted"]
