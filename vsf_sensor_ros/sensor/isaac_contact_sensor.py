"""Isaac-Sim-style contact (load) sensor (seed: Isaac Sim's contact sensor extension; docs/python_api.md)."""
from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Deque, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import torch

from ._punyo_common import check_config_keys
from .base_sensor import Pair, SimState
from .errors import InputError, SettingError
from .indicator_tare import IndicatorTareMixin

INVALID_HANDLE = -1           # seed constant; never returned (invalid input raises instead)
_TIME_SLACK = 1e-9            # s; absorbs float error in accumulated nominal sample times
_PROPERTY_NAMES = ("radius", "minThreshold", "maxThreshold", "sensorPeriod", "position")


def _bad(field_name: str, value: Any, reason: str) -> ValueError:
    return SettingError(f"IsaacContactSensor property {field_name!r}: value {value!r} rejected: {reason}",
                        field_name, value)


def _number(field_name: str, value: Any) -> float:
    if isinstance(value, (bool, str, bytes)):
        raise _bad(field_name, value, "expected a number")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise _bad(field_name, value, "expected a number") from None
    if math.isnan(v):
        raise _bad(field_name, value, "NaN")
    return v


@dataclass
class CsProperties:
    """Contact sensor properties (seed ``CsProperties``): ``radius`` (m, ``<= 0`` = whole body),
    ``minThreshold`` / ``maxThreshold`` (N; max default inf, not the seed's 0), ``sensorPeriod`` (s, 0 =
    every update), ``position`` (m, body frame)."""

    radius: float = -1.0
    minThreshold: float = 0.0
    maxThreshold: float = math.inf
    sensorPeriod: float = 0.0
    position: Tuple[float, float, float] = (0.0, 0.0, 0.0)

    def validated(self) -> "CsProperties":
        """A normalised copy (floats, ``position`` a 3-tuple); ValueError naming the first bad field."""
        radius, lo, hi, period = (_number(name, getattr(self, name)) for name in _PROPERTY_NAMES[:4])
        finite = "must be finite and >= 0"
        for name, ok, rule in (("minThreshold", math.isfinite(lo) and lo >= 0, finite),
                               ("maxThreshold", hi >= lo, f"must be >= minThreshold ({lo})"),
                               ("sensorPeriod", math.isfinite(period) and period >= 0, finite)):
            if not ok:
                raise _bad(name, getattr(self, name), rule)
        try:
            pos = tuple(float(v) for v in self.position)
        except (TypeError, ValueError):
            raise _bad("position", self.position, "expected 3 numbers") from None
        if len(pos) != 3 or not all(math.isfinite(v) for v in pos):
            raise _bad("position", self.position, "expected 3 finite numbers")
        return CsProperties(radius, lo, hi, period, pos)  # type: ignore[arg-type]


@dataclass(frozen=True)
class CsSensorReading:
    """One reading (seed ``CsReading``): ``time`` (s), ``value`` (N), ``inContact``, ``isValid``."""

    time: float = 0.0
    value: float = 0.0
    inContact: bool = False
    isValid: bool = False


@dataclass
class CsRawData:
    """Raw contacts of a sensor (seed ``CsRawData``, forces for impulses): ``body0`` / ``body1`` per contact,
    ``position``, ``force`` ``(N, 3)`` world (m; N on ``body0``), ``in_radius`` ``(N,)`` bool."""

    body0: List[str]
    body1: List[str]
    position: torch.Tensor
    force: torch.Tensor
    in_radius: torch.Tensor


def _as_properties(properties: Any, owner: str) -> CsProperties:
    """``properties`` (``CsProperties`` or a dict of its fields) validated; SettingError naming a bad key
    (``'unknown_key'``), field, or type (``'properties'``, ``'type'``)."""
    if isinstance(properties, Mapping):
        unknown = sorted(str(k) for k in properties if k not in _PROPERTY_NAMES)
        if unknown:
            raise SettingError(f"{owner}: unknown properties {', '.join(map(repr, unknown))}; "
                               f"known: {', '.join(_PROPERTY_NAMES)}", unknown[0], properties[unknown[0]],
                               "unknown_key", _PROPERTY_NAMES)
        properties = CsProperties(**properties)
    if not isinstance(properties, CsProperties):
        raise SettingError(f"{owner}: properties must be a CsProperties or a dict of its fields, got "
                           f"{type(properties).__name__} {properties!r}", "properties", properties, "type")
    return properties.validated()


def _property(name: str) -> property:
    def fget(self: "IsaacContactSensor") -> Any:
        return getattr(self._props, name)

    def fset(self: "IsaacContactSensor", value: Any) -> None:
        self.set_properties(replace(self._props, **{name: value}))

    return property(fget, fset, doc=f"``CsProperties.{name}``; validated on assignment.")


@dataclass
class _Clock:
    latest: CsSensorReading = field(default_factory=CsSensorReading)
    sample: CsSensorReading = field(default_factory=CsSensorReading)
    sample_time: Optional[float] = None


class IsaacContactSensor(IndicatorTareMixin):
    """Isaac-style contact load sensor on one body (seed: Isaac Sim; equations: docs/python_api.md):
    ``properties`` a ``CsProperties`` or dict of its fields; ``max_buffer`` samples kept (>= 1, oldest
    dropped).  ValueError: invalid properties (named) or ``max_buffer``."""

    type_name = "IsaacContactSensor"

    radius = _property("radius")
    minThreshold = _property("minThreshold")
    maxThreshold = _property("maxThreshold")
    sensorPeriod = _property("sensorPeriod")
    position = _property("position")

    def __init__(self, name: str = "", attachModelName: str = "",
                 properties: Optional[Union[CsProperties, Mapping[str, Any]]] = None, *,
                 max_buffer: int = 1000) -> None:
        super().__init__(name, attachModelName)
        self._props = _as_properties(properties if properties is not None else CsProperties(),
                                     f"IsaacContactSensor {name!r}")
        if isinstance(max_buffer, bool) or not isinstance(max_buffer, int) or max_buffer < 1:
            raise ValueError(f"IsaacContactSensor max_buffer must be an int >= 1, got {max_buffer!r}")
        self._buffer: Deque[CsSensorReading] = deque(maxlen=max_buffer)
        self._clock = _Clock()
        self._init_tare()

    # -- configuration ------------------------------------------------------------
    @property
    def properties(self) -> CsProperties:
        """A copy of the current properties."""
        return replace(self._props)

    def set_properties(self, properties: Union[CsProperties, Mapping[str, Any]]) -> None:
        """Replace all properties (a dict's missing fields take the defaults); ValueError (nothing changes):
        another type, unknown dict keys (named), a bad field value."""
        self._props = _as_properties(properties, f"IsaacContactSensor {self.name!r}")

    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "IsaacContactSensor":
        """Build from ``attachment``, optional ``type`` and the ``CsProperties`` fields; SettingError naming
        the key."""
        body = check_config_keys(cls.type_name, cls.type_name, name, config, _PROPERTY_NAMES)
        props = CsProperties(**{k: config[k] for k in _PROPERTY_NAMES if k in config})
        return cls(name, body, props)

    # -- instantaneous model -----------------------------------------------------------
    def reading_frame(self) -> np.ndarray:
        """A translation by ``position`` (body axes), ``(4, 4)`` float64: where the sensor sits."""
        T = np.eye(4)
        T[:3, 3] = np.asarray(self.position, dtype=np.float64).reshape(3)
        return T

    def measurement_names(self) -> List[str]:
        """``['in_contact', 'value']`` (1.0/0.0, N)."""
        return ["in_contact", "value"]

    def _net_force(self, state: SimState) -> Tuple[torch.Tensor, torch.Tensor]:
        """Inside mask ``(N,)`` bool and net force ``(3,)`` (world, N) over the body's contacts."""
        pts, frc = state.contacts_on_body(self.attachModelName, local=False)
        if self._props.radius <= 0:
            inside = torch.ones(len(pts), dtype=torch.bool, device=pts.device)
        else:
            T = state.body_transforms[self.attachModelName]
            p = T[:3, :3] @ torch.tensor(self._props.position, dtype=T.dtype, device=T.device) + T[:3, 3]
            inside = torch.linalg.vector_norm(pts.detach() - p.detach(), dim=1) < self._props.radius
        F = (inside.to(frc.dtype)[:, None] * frc).sum(dim=0)
        return inside, F

    def _value(self, inside: torch.Tensor, F: torch.Tensor
               ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(in_contact 0/1, value, slope gate) from the mask and the net force."""
        p = self._props
        n = torch.linalg.vector_norm(F)       # its gradient at F = 0 is 0
        clamped = bool(n.detach() > p.maxThreshold)
        v = torch.full_like(n, p.maxThreshold) if clamped else n
        in_contact = bool(inside.any()) and bool(v.detach() >= p.minThreshold)
        value = v if in_contact else torch.zeros_like(n)
        gate = in_contact and not clamped and bool(n.detach() > 0)
        return torch.tensor(float(in_contact), dtype=F.dtype, device=F.device), value, \
            torch.tensor(float(gate), dtype=F.dtype, device=F.device)

    def predict_torch(self, state: SimState) -> torch.Tensor:
        """Instantaneous ``[in_contact, value]``, ``(2,)`` of the state's dtype/device, differentiable;
        ValueError: body missing or not rigid, or contacts of another dtype/device."""
        self._check_state(state)
        inside, F = self._net_force(state)
        in_contact, value, _ = self._value(inside, F)
        if "tare" in self._calib:
            value = value + float(self.calibration_offset()[1])
        return torch.stack([in_contact, value])

    def in_contact(self, state: SimState) -> bool:
        """True when a contact of the body lies inside the radius, whatever its force."""
        self._check_state(state)
        inside, _ = self._net_force(state)
        return bool(inside.any())

    def evaluate(self, state: SimState, time: float) -> CsSensorReading:
        """Instantaneous reading at ``time`` (s) without touching the sensor's clock or buffer."""
        y = self.predict(state)
        return CsSensorReading(float(time), float(y[1]), bool(y[0] > 0), True)

    def get_contact_sensor_raw_data(self, state: SimState) -> CsRawData:
        """The body's contacts in ``state`` and which are inside the radius; ValueError as ``predict``."""
        pairs = self._check_state(state)
        inside, _ = self._net_force(state)
        pts, frc = state.contacts_on_body(self.attachModelName, local=False)
        names = [b for (_, b) in pairs for _ in range(len(state.contacts[(self.attachModelName, b)]))]
        return CsRawData([self.attachModelName] * len(names), names, pts.detach(), frc.detach(), inside)

    def _jacobian_all(self, state: SimState) -> Tuple[torch.Tensor, List[Pair], List[int]]:
        pairs = self._check_state(state)
        with torch.no_grad():
            inside, F = self._net_force(state)
            _, _, gate = self._value(inside, F)
            n = torch.linalg.vector_norm(F)
            unit = F / n if bool(n > 0) else torch.zeros_like(F)
            J = torch.zeros(2, len(inside), 3, dtype=F.dtype, device=F.device)
            J[1] = gate * inside.to(F.dtype)[:, None] * unit[None, :]
        return J, pairs, self._pairs_offsets(state, pairs)

    # -- stateful sensor ------------------------------------------------------------------
    @staticmethod
    def _check_time(time: Any) -> float:
        if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time):
            raise ValueError(
                f"IsaacContactSensor.update: time must be a finite number of seconds, got {time!r}")
        return float(time)

    def update(self, state: SimState, time: Optional[float] = None) -> Optional[CsSensorReading]:
        """Evaluate at ``time`` (s); the sample taken when one is due, else None.  ValueError (nothing
        changes): ``time`` missing or not finite, or a bad state."""
        t = self._check_time(time)
        return self._advance(self.evaluate(state, t))

    def _advance(self, reading: CsSensorReading) -> Optional[CsSensorReading]:
        clock, period, t = self._clock, self._props.sensorPeriod, reading.time
        prev: Optional[CsSensorReading] = clock.latest if clock.latest.isValid else None
        if prev is not None and t < prev.time:      # simulator reset: restart the sampling clock
            prev, clock.sample_time = None, None
        sample: Optional[CsSensorReading] = None
        long_step = prev is not None and t - prev.time >= period - _TIME_SLACK
        if clock.sample_time is None or period == 0 or long_step:
            sample = reading
        elif t >= clock.sample_time + period - _TIME_SLACK:
            nominal = clock.sample_time + period
            assert prev is not None
            chosen = reading if abs(t - nominal) <= abs(prev.time - nominal) else prev
            sample = replace(chosen, time=nominal)
        clock.latest = reading
        if sample is not None:
            clock.sample, clock.sample_time = sample, sample.time
            self._buffer.append(sample)
        return sample

    def get_sensor_reading(self, use_latest_data: bool = True) -> CsSensorReading:
        """The latest evaluation (``use_latest_data``) or period sample (before any: ``isValid`` False)."""
        return self._clock.latest if use_latest_data else self._clock.sample

    def get_sensor_readings(self) -> List[CsSensorReading]:
        """All samples since the last call, oldest first; clears the buffer."""
        out = list(self._buffer)
        self._buffer.clear()
        return out

    def reset(self) -> None:
        """Forget readings, samples and the sampling clock."""
        self._buffer.clear()
        self._clock = _Clock()

    def get_internal_state(self) -> dict:
        """Readings, sampling clock and buffer as plain Python values."""
        return {"latest": asdict(self._clock.latest), "sample": asdict(self._clock.sample),
                "sample_time": self._clock.sample_time, "buffer": [asdict(r) for r in self._buffer]}

    def set_internal_state(self, state: dict) -> None:
        """Restore from ``get_internal_state()``; ValueError for a malformed state (nothing changes)."""
        try:
            clock = _Clock(CsSensorReading(**state["latest"]), CsSensorReading(**state["sample"]),
                           None if state["sample_time"] is None else float(state["sample_time"]))
            buffer = [CsSensorReading(**r) for r in state["buffer"]]
        except (KeyError, TypeError) as err:
            raise ValueError(f"IsaacContactSensor.set_internal_state: malformed state ({err})") from None
        self._clock = clock
        self._buffer.clear()
        self._buffer.extend(buffer)


class ContactSensorInterface:
    """Registry of contact sensors by handle (seed ``_contact_sensor``): positive ints, never reused; an
    unknown handle raises ``ValueError`` (the seed returns an invalid reading)."""

    def __init__(self, max_buffer: int = 1000) -> None:
        self._sensors: Dict[int, IsaacContactSensor] = {}
        self._next = 1
        self._max_buffer = max_buffer

    def _get(self, handle: int) -> IsaacContactSensor:
        try:
            return self._sensors[handle]
        except (KeyError, TypeError):
            raise InputError(f"unknown contact sensor handle {handle!r}; known: {sorted(self._sensors)}",
                             "handle", handle, "unknown_handle", sorted(self._sensors)) from None

    def add_sensor_on_body(self, body_name: str, properties: CsProperties,
                           name: Optional[str] = None) -> int:
        """Add a sensor on ``body_name``; returns its handle.  ValueError: empty name or bad properties."""
        if not isinstance(body_name, str) or not body_name.strip():
            raise ValueError(f"add_sensor_on_body: body name must be a non-empty string, got {body_name!r}")
        handle = self._next
        sensor = IsaacContactSensor(name or f"{body_name}/contact_sensor_{handle}", body_name.strip(),
                                    properties, max_buffer=self._max_buffer)
        self._sensors[handle] = sensor
        self._next += 1
        return handle

    def remove_sensor(self, handle: int) -> None:
        """Remove a sensor.  Raises ``ValueError`` for an unknown handle."""
        self._get(handle)
        del self._sensors[handle]

    def get_sensors_on_body(self, body_name: str) -> List[int]:
        """Handles of the sensors on ``body_name`` in creation order (empty when none)."""
        return [h for h, s in self._sensors.items() if s.attachModelName == body_name]

    def get_num_sensors_on_body(self, body_name: str) -> int:
        """Number of sensors on ``body_name``."""
        return len(self.get_sensors_on_body(body_name))

    def get_sensor_properties(self, handle: int) -> CsProperties:
        """A copy of the sensor's properties."""
        return self._get(handle).properties

    def set_sensor_properties(self, handle: int, properties: Union[CsProperties, Mapping[str, Any]]) -> None:
        """Replace the sensor's properties (as ``IsaacContactSensor.set_properties``)."""
        self._get(handle).set_properties(properties)

    def get_sensor_reading(self, handle: int, use_latest_data: bool = True) -> CsSensorReading:
        """Current reading of one sensor (see ``IsaacContactSensor.get_sensor_reading``)."""
        return self._get(handle).get_sensor_reading(use_latest_data)

    def get_sensor_readings(self, handle: int) -> List[CsSensorReading]:
        """Buffered samples of one sensor since the last call; clears its buffer."""
        return self._get(handle).get_sensor_readings()

    def get_contact_sensor_raw_data(self, handle: int, state: SimState) -> CsRawData:
        """Raw contacts of one sensor's body in ``state`` (see ``IsaacContactSensor``)."""
        return self._get(handle).get_contact_sensor_raw_data(state)

    def update(self, state: SimState, time: float) -> Dict[int, Optional[CsSensorReading]]:
        """Update every sensor at ``time`` (s); ``{handle: sample or None}`` (a bad state changes none)."""
        t = IsaacContactSensor._check_time(time)
        readings = {h: s.evaluate(state, t) for h, s in self._sensors.items()}
        return {h: self._sensors[h]._advance(r) for h, r in readings.items()}
