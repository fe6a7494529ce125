"""Build sensors and calibrators from plain configuration dicts (the node's parameter namespaces).

A sensor config is ``{'name': ..., 'type': ..., 'attachment': body, <type-specific keys>}``
(nav2 / ros2_control style: adding a sensor is adding a block of YAML).  Types are
looked up in a registry of ``"module:Class"`` strings, imported only when first
used, so a type whose module needs an optional dependency costs nothing until
it is configured.
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, Mapping, Type, Union

from .base import BaseCalibrator, BaseSensor

__all__ = ["SENSOR_TYPES", "CALIBRATOR_TYPES", "calibration_from_config", "register_sensor_type",
           "sensor_class", "sensor_from_config"]

#: type string -> "module:Class" (or the class itself once registered directly)
SENSOR_TYPES: Dict[str, Union[str, type]] = {
    "PunyoPressureSensor": "vsf_sensor_ros.sensor.punyo_pressure:PunyoPressureSensor",
    "PunyoDenseForceSensor": "vsf_sensor_ros.sensor.punyo_dense_force:PunyoDenseForceSensor",
    "ContactSensor": "vsf_sensor_ros.sensor.klampt_contact_sensor:ContactSensor",
    "IsaacContactSensor": "vsf_sensor_ros.sensor.isaac_contact_sensor:IsaacContactSensor",
}

CALIBRATOR_TYPES: Dict[str, Union[str, type]] = {
    "TareCalibrator": "vsf_sensor_ros.sensor.calibration:TareCalibrator",
}


def _resolve(table: Dict[str, Union[str, type]], kind: str, type_name: Any) -> type:
    if not isinstance(type_name, str) or type_name not in table:
        raise ValueError(f"unknown {kind} type {type_name!r}; known types: {', '.join(sorted(table))}")
    target = table[type_name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target


def register_sensor_type(type_name: str, target: Union[str, Type[BaseSensor]]) -> None:
    """Add (or replace) a sensor type: a ``BaseSensor`` subclass or a ``"module:Class"`` string.

    Raises:
        ValueError: empty type name, or a string without ``':'``.
    """
    if not isinstance(type_name, str) or not type_name:
        raise ValueError(f"sensor type name must be a non-empty string, got {type_name!r}")
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"sensor type target must be 'module:Class', got {target!r}")
    SENSOR_TYPES[type_name] = target


def sensor_class(type_name: str) -> Type[BaseSensor]:
    """The class registered for ``type_name`` (imported on first use).

    Raises:
        ValueError: unknown type, naming it and listing the known ones.
    """
    return _resolve(SENSOR_TYPES, "sensor", type_name)


def sensor_from_config(config: Mapping[str, Any]) -> BaseSensor:
    """Build a sensor from ``{'name', 'type', 'attachment', ...type-specific keys}``.

    Dispatches to ``Class.from_config(name, cfg)`` with ``cfg`` = every key
    but ``name`` (``type`` included; each class checks it matches).  Keys per
    type: ``PunyoPressureSensor``: attachment, base_normal_local, variance;
    ``PunyoDenseForceSensor``: attachment; ``ContactSensor`` and
    ``IsaacContactSensor``: see their ``from_config``.

    Raises:
        ValueError: not a mapping, missing/empty ``name``, unknown ``type``
            (named, with the known types), or the class's own key errors.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"sensor config must be a mapping, got {type(config).__name__}")
    name = config.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"sensor config needs a non-empty 'name', got {name!r}")
    if "type" not in config:
        raise ValueError(f"sensor {name!r}: config needs a 'type'; "
                         f"known types: {', '.join(sorted(SENSOR_TYPES))}")
    cls = sensor_class(config["type"])
    return cls.from_config(name, {k: v for k, v in config.items() if k != "name"})


def calibration_from_config(config: Mapping[str, Any]) -> BaseCalibrator:
    """Build a calibrator, e.g. ``{'type': 'TareCalibrator', 'num_samples': 10, 'output_key': 'tare'}``.

    Raises:
        ValueError: unknown ``type`` (named, with the known ones) or bad keys.
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"calibrator config must be a mapping, got {type(config).__name__}")
    cls = _resolve(CALIBRATOR_TYPES, "calibrator", config.get("type"))
    return cls.from_config(config)
