"""Sensor kinds: one declaration per sensor type (model, settings, reading codec) and the registry
derived from them; packages add kinds through an entry point (docs/kinds.md)."""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

import numpy as np

from ...sensor.base_sensor import BaseSensor
from ..messages.readings import ReadingCodec, SensorLayout
from ..parameter_table import Spec

#: entry point group a package declares its kinds in (each entry point names a SensorKind)
ENTRY_POINT_GROUP = "vsf_sensor_ros.sensor_kinds"
#: the package's own kind modules, in the order the reference lists them
BUILT_IN = ("punyo_pressure", "punyo_dense_force", "klampt_contact", "isaac_contact")


@dataclass(frozen=True)
class SensorKind:
    """One sensor type: ``type_name`` (the unique ``<s>.type``), ``model`` (built with
    ``model.from_config(name, cfg)``, ``cfg`` holding ``type``, ``attachment`` and ``settings``'
    keys), ``settings`` (read-only ``<s>.<key>`` Specs), ``codec`` (its reading codec; each kind a
    distinct ``codec.kind``)."""

    type_name: str
    model: Type[BaseSensor]
    settings: Tuple[Spec, ...]
    codec: ReadingCodec

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", tuple(self.settings))


class SensorKindError(RuntimeError):
    """A kind that cannot be registered (fails to load, no :class:`SensorKind`, a type name or codec
    kind taken); ``source``: the entry point (``name = module:attr``) or built-in module at fault."""

    def __init__(self, source: str, detail: str) -> None:
        self.source = source
        super().__init__(f"sensor kind {source!r} (entry point group {ENTRY_POINT_GROUP}): {detail}")


def _register(kinds: Dict[str, SensorKind], codecs: Dict[str, str], kind: Any, source: str) -> None:
    if not isinstance(kind, SensorKind):
        raise SensorKindError(source, f"is a {type(kind).__name__}, not a SensorKind")
    if kind.type_name in kinds:
        raise SensorKindError(source, f"type name {kind.type_name!r} is already declared")
    other = codecs.get(kind.codec.kind)
    if other is not None and kinds[other].codec is not kind.codec:
        raise SensorKindError(source, f"codec kind {kind.codec.kind!r} is already {other}'s")
    if not (isinstance(kind.model, type) and issubclass(kind.model, BaseSensor)):
        raise SensorKindError(source, f"model {kind.model!r} is not a BaseSensor subclass")
    kinds[kind.type_name] = kind
    codecs.setdefault(kind.codec.kind, kind.type_name)


@functools.lru_cache(maxsize=None)
def sensor_kinds() -> Mapping[str, SensorKind]:
    """Type name -> :class:`SensorKind`: the built-in kinds, then :data:`ENTRY_POINT_GROUP`'s in
    name order (read once per process); SensorKindError naming the entry point at fault."""
    kinds: Dict[str, SensorKind] = {}
    codecs: Dict[str, str] = {}
    for name in BUILT_IN:
        _register(kinds, codecs, importlib.import_module(f"{__name__}.{name}").KIND, name)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        source = f"{ep.name} = {ep.value}"
        try:
            kind = ep.load()
        except Exception as exc:  # noqa: BLE001 -- any import failure of a user's package
            raise SensorKindError(source, f"cannot be loaded: {type(exc).__name__}: {exc}") from exc
        _register(kinds, codecs, kind, source)
    return MappingProxyType(kinds)


def reading_codecs() -> Dict[str, ReadingCodec]:
    """Codec kind (``pressure``, ``dense_force``, ``wrench``, ``load``, ...) -> its codec."""
    return {k.codec.kind: k.codec for k in sensor_kinds().values()}


def codec_of_type(type_name: str) -> ReadingCodec:
    """The codec of a sensor type; ValueError naming a type without a kind."""
    kind = sensor_kinds().get(type_name)
    if kind is None:
        raise ValueError(f"no ROS encoding for sensor type {type_name!r}")
    return kind.codec


def sensor_layout(type_name: str, frame_id: str, names: List[str], errors: Optional[Sequence[float]],
                  vertices: Optional[np.ndarray] = None, sensor_frame: str = "",
                  body_T_sensor: Optional[np.ndarray] = None, frame_prefix: str = "") -> SensorLayout:
    """The :class:`SensorLayout` of a sensor of ``type_name`` (``errors``: ``measurement_errors()``
    or None); ValueError: unknown type, names not of the type, ``3V`` entries not ``vertices``."""
    codec = codec_of_type(type_name)
    slots, flag = codec.slots(list(names), vertices)
    std = None if errors is None else np.asarray(errors, dtype=np.float64).reshape(-1)
    if std is not None and std.shape[0] != len(names):
        std = None
    verts = None if vertices is None else np.array(vertices, dtype=np.float32)
    if verts is not None:   # read-only: encode_dense_force keeps the message of fixed vertices
        verts.flags.writeable = False
    T = None if body_T_sensor is None else np.array(body_T_sensor, dtype=np.float64).reshape(4, 4)
    return SensorLayout(codec, frame_id, list(names), slots, flag, verts, std, sensor_frame, T, frame_prefix)


def model_setting(value: Any) -> Any:
    """A model's default as a parameter default: an array as row-major floats, a tuple as a list."""
    if isinstance(value, np.ndarray):
        return [v.item() for v in value.reshape(-1)]
    if isinstance(value, tuple):
        return list(value)
    return value
