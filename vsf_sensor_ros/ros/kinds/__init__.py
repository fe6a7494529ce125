"""Sensor kinds: one declaration per sensor type, and the registry derived from them.

A kind module holds the model, its settings and its reading codec, so everything keyed by type
name reads one place; packages add kinds through an entry point.  How: docs/kinds.md.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type

import numpy as np

from ...sensor.base_sensor import BaseSensor
from ..messages.readings import ReadingCodec, SensorLayout, make_layout
from ..parameter_table import Spec

#: entry point group a package declares its kinds in (each entry point names a SensorKind)
ENTRY_POINT_GROUP = "vsf_sensor_ros.sensor_kinds"
#: the package's own kind modules, in the order the reference lists them
BUILT_IN = ("punyo_pressure", "punyo_dense_force", "klampt_contact", "isaac_contact")


@dataclass(frozen=True)
class SensorKind:
    """One sensor type: everything the node needs to configure, build and publish it.

    Attributes:
        type_name: the ``<s>.type`` value (e.g. ``PunyoPressureSensor``); unique.
        model: the model class; the node builds it with ``model.from_config(name, cfg)``, ``cfg``
            holding ``type``, ``attachment`` and every key of ``settings``.
        settings: the model settings ``<s>.<key>`` (read-only: a model is built once, at start).
        codec: the reading codec (message of ``<s>/predicted`` and ``<s>/residual``, measured
            decoder, markers); kinds may share a codec class, each needs a distinct ``codec.kind``.
    """

    type_name: str
    model: Type[BaseSensor]
    settings: Tuple[Spec, ...]
    codec: ReadingCodec

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", tuple(self.settings))


class SensorKindError(RuntimeError):
    """A kind that cannot be registered: an entry point that fails to load, is no
    :class:`SensorKind`, or declares a type name (or codec kind) already taken.

    Attributes:
        source: the entry point (``name = module:attr``) or built-in module at fault.
    """

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
    """Type name -> :class:`SensorKind`: the built-in kinds, then the entry points of
    :data:`ENTRY_POINT_GROUP` in name order (read once per process).

    Raises:
        SensorKindError: naming the entry point that fails to load, is no ``SensorKind`` or
            declares a type name or codec kind already declared.
    """
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


def kind_of(type_name: str) -> SensorKind:
    """The kind of ``type_name``; KeyError naming an unknown type and the known ones."""
    kinds = sensor_kinds()
    if type_name not in kinds:
        raise KeyError(f"unknown sensor type {type_name!r}; known types: {', '.join(kinds)}")
    return kinds[type_name]


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
    """How a sensor's vector maps to its messages: :func:`~.messages.readings.make_layout` with the
    codec of ``type_name``.

    Raises:
        ValueError: unknown type, names not matching the type, or a dense force sensor whose
            ``3V`` entries disagree with ``vertices``.
    """
    return make_layout(codec_of_type(type_name), frame_id, names, errors, vertices, sensor_frame,
                       body_T_sensor, frame_prefix)


def model_setting(value: Any) -> Any:
    """A model's default as a parameter default: a 4x4 array as 16 row-major floats, a tuple or
    array as a list, a number or bool as it is (so a kind's Spec reads its default off the model)."""
    if isinstance(value, np.ndarray):
        return [v.item() for v in value.reshape(-1)]
    if isinstance(value, tuple):
        return list(value)
    return value
