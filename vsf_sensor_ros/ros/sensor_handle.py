"""One sensor inside the node: the rig's :class:`~vsf_sensor_ros.rig.sensors.RigSensor` plus its
parameters, endpoints (docs/interface.md) and counters."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, List, Mapping, Optional

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from ..rig.calibration import AutoTareSettings, ContactFreeLoop
from ..rig.counters import SensorStats
from ..rig.sensors import RigSensor
from ..sensor import GainCalibrator
from ..sensor.base_sensor import BaseSensor
from .messages import readings as enc
from .parameter_table import ConfigError
from .parameters import SensorParameters


def qos_reliability(parameter: str, value: str):
    """rclpy's policy of ``best_effort`` / ``reliable``; ConfigError naming ``parameter`` otherwise."""
    policy = {"best_effort": ReliabilityPolicy.BEST_EFFORT, "reliable": ReliabilityPolicy.RELIABLE}.get(
        value.strip().lower().replace("-", "_"))
    if policy is None:
        raise ConfigError(parameter, value, "must be 'best_effort' or 'reliable'")
    return policy


@dataclass(frozen=True)
class EndpointQoS:
    """QoS of a sensor's subscription (``inputs``) and publishers (``outputs``)."""

    inputs: QoSProfile
    outputs: QoSProfile

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "EndpointQoS":
        """The keep-last, volatile profiles of ``qos.inputs.*`` and ``qos.outputs.*`` (parameter
        values); ConfigError: see :func:`qos_reliability`."""
        def side(s: str) -> QoSProfile:   # (keep last and volatile: QoSProfile's defaults)
            key = f"qos.{s}.reliability"
            return QoSProfile(depth=int(values[f"qos.{s}.depth"]),
                              reliability=qos_reliability(key, values[key]))
        return cls(side("inputs"), side("outputs"))


class SensorEndpoints:
    """One sensor's publishers, subscription and services on ``node``; ``on_measured(name, msg)``,
    ``on_tare(name, request, response)``, ``on_calibrate_gain`` (a service when ``sensor`` takes a gain)."""

    def __init__(self, node: Node, config: SensorParameters, layout: enc.SensorLayout, qos: EndpointQoS,
                 on_measured: Callable[[str, Any], None], on_tare: Callable[..., Trigger.Response],
                 on_calibrate_gain: Callable[..., Trigger.Response], sensor: BaseSensor) -> None:
        self._node, self._qos = node, qos
        # contacts messages since the last published Jacobian (jacobian_decimation)
        self._since_jacobian = 0
        self.name = config.name
        self.predicted, self.residual, self.measured_si = (
            node.create_publisher(layout.codec.message, f"{self.name}/{o}", qos.outputs)
            for o in ("predicted", "residual", "measured_si"))
        self.jacobian: Optional[Any] = None
        self.markers: Optional[Any] = None
        self.set_optional(bool(config.values["publish_jacobian"]), bool(config.values["publish_markers"]))
        self.measured = node.create_subscription(enc.MEASURED_TYPES[config.measured_type()],
                                                 config.measured_topic(), partial(on_measured, self.name),
                                                 qos.inputs)
        self.tare = node.create_service(Trigger, f"{self.name}/tare", partial(on_tare, self.name))
        self.calibrate_gain: Optional[Any] = (node.create_service(
            Trigger, f"{self.name}/calibrate_gain", partial(on_calibrate_gain, self.name))
            if GainCalibrator().compatible(sensor) else None)

    def set_optional(self, jacobian: bool, markers: bool) -> None:
        """Create or destroy ``<s>/jacobian`` and ``<s>/markers`` to match the flags."""
        for attr, wanted, msg_type in (("jacobian", jacobian, PointCloud2),
                                       ("markers", markers, MarkerArray)):
            pub = getattr(self, attr)
            if wanted and pub is None:
                pub = self._node.create_publisher(msg_type, f"{self.name}/{attr}", self._qos.outputs)
                self._since_jacobian = 0 if attr == "jacobian" else self._since_jacobian
            elif not wanted and pub is not None:
                self._node.destroy_publisher(pub)
                pub = None
            setattr(self, attr, pub)

    def jacobian_due(self, decimation: int) -> bool:
        """This contacts message's Jacobian is published (the first after it is switched on, then
        every ``decimation``-th; never while ``<s>/jacobian`` is off); advances the count."""
        if self.jacobian is None:
            return False
        due = self._since_jacobian % max(int(decimation), 1) == 0
        self._since_jacobian = 1 if due else self._since_jacobian + 1
        return due


def contact_free_loop(values: Mapping[str, Any], layout: enc.SensorLayout) -> Optional[ContactFreeLoop]:
    """A sensor's automatic tare (``auto_tare*`` parameters, when ``auto_tare``) and, for a pressure
    reading, its drift and leak watch (``leak_rate``, ``ambient_pressure``, ``min_gauge_pressure``);
    None when it has neither."""
    auto = None if not values["auto_tare"] else AutoTareSettings(
        *(float(values[f"auto_tare_{k}"]) for k in ("max_step", "steady_std", "window", "min_interval")),
        int(values["auto_tare_min_samples"]))
    watch = None
    if layout.codec.kind == "pressure":
        ambient = float(values["ambient_pressure"])
        watch = {"leak_rate": float(values["leak_rate"])}
        if ambient > 0.0:
            watch.update(ambient_pa=ambient, min_gauge_pa=float(values["min_gauge_pressure"]))
    if auto is None and watch is None:
        return None
    return ContactFreeLoop(auto, watch, int(layout.slots[0]) if watch is not None else 0)


class SensorHandle(RigSensor):
    """The rig's sensor with its parameters, endpoints and counters (``buffer_size``: of each
    pairing queue; ``tolerance_ns``: ``max_stamp_difference`` in ns, None = adaptive)."""

    def __init__(self, config: SensorParameters, sensor: BaseSensor, layout: enc.SensorLayout,
                 buffer_size: int, tolerance_ns: Optional[int]) -> None:
        super().__init__(config.name, config.type, sensor, layout, buffer_size, tolerance_ns,
                         headerless=config.measured_type() in enc.HEADERLESS_MEASURED_TYPES)
        self.config = config
        self.contact_free_loop = contact_free_loop(config.values, layout)
        self.endpoints: Optional[SensorEndpoints] = None
        self.stats = SensorStats()
        self.last_marker_time = 0.0

    def measured_delay_ns(self) -> int:
        """``<s>.measured_delay`` in ns: added to a header-less measured message's receive time."""
        return round(float(self.config.values.get("measured_delay", 0.0)) * 1e9)

    def apply_live(self, values: Mapping[str, Any]) -> List[str]:
        """Apply checked live values (key -> value); a new ``measured_scale`` clears the measured
        samples, a new ``measured_delay`` of a header-less stream the pairing buffers (a sentence each)."""
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
