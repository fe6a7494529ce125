"""Build sensors and calibrators from seed config objects or plain dicts (seed: ``vsf.sensor.constructors``);
types are ``"module:Class"`` strings imported on first use: an optional dependency costs nothing until used.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Type, Union

from .base_calibrator import BaseCalibrator
from .base_sensor import BaseSensor
from .errors import SettingError

__all__ = ["SENSOR_TYPES", "CALIBRATOR_ALIASES", "CALIBRATOR_TYPES", "CalibrationConfig", "SensorConfig",
           "calibration_from_config", "register_sensor_type", "sensor_class", "sensor_from_config"]


@dataclass
class SensorConfig:
    """The seed's sensor config (``attachment_name``: a dict's ``attachment``; ``link_names`` stays None)."""

    name: str
    type: str
    attachment_name: str
    link_names: Optional[List[str]] = None


@dataclass
class CalibrationConfig:
    """The seed's calibrator config (``type`` ``'tare'`` or ``'TareCalibrator'``)."""

    type: str
    num_samples: int = 10
    output_key: str = "tare"


#: type string -> "module:Class" (or the class itself once registered directly)
SENSOR_TYPES: Dict[str, Union[str, type]] = {
    "PunyoPressureSensor": "vsf_sensor_ros.sensor.punyo_pressure_sensor:PunyoPressureSensor",
    "PunyoDenseForceSensor": "vsf_sensor_ros.sensor.punyo_dense_force_sensor:PunyoDenseForceSensor",
    "ContactSensor": "vsf_sensor_ros.sensor.klampt_contact_sensor:ContactSensor",
    "IsaacContactSensor": "vsf_sensor_ros.sensor.isaac_contact_sensor:IsaacContactSensor",
}

CALIBRATOR_TYPES: Dict[str, Union[str, type]] = {
    "TareCalibrator": "vsf_sensor_ros.sensor.base_calibrator:TareCalibrator",
}

#: the seed's calibrator type names -> the names above (the seed's factory knows ``'tare'``)
CALIBRATOR_ALIASES: Dict[str, str] = {"tare": "TareCalibrator"}


def _config_dict(config: Any, kind: str) -> Dict[str, Any]:
    """A config as a plain dict (a mapping, or a config object's fields); else SettingError (``setting``
    ``kind``, ``reason`` ``'type'``)."""
    if isinstance(config, Mapping):
        return dict(config)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    if hasattr(config, "__dict__") and not isinstance(config, type):
        return {k: v for k, v in vars(config).items() if not k.startswith("_")}
    raise SettingError(f"{kind} config must be a mapping or a config object, got {type(config).__name__}",
                       kind, config, "type")


def _seed_sensor_keys(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """A copy with ``attachment_name`` as ``attachment`` and a None ``link_names`` dropped."""
    cfg = dict(cfg)
    if "attachment_name" in cfg:
        seed_name = cfg.pop("attachment_name")
        if "attachment" in cfg and cfg["attachment"] != seed_name:
            raise SettingError(f"sensor {cfg.get('name')!r}: config gives attachment {cfg['attachment']!r} "
                               f"and attachment_name {seed_name!r}; give one", "attachment_name", seed_name,
                               "conflict", cfg["attachment"])
        cfg["attachment"] = seed_name
    if "link_names" in cfg and cfg["link_names"] is None:
        del cfg["link_names"]
    return cfg


def _resolve(table: Dict[str, Union[str, type]], kind: str, type_name: Any, aliases: Any = ()) -> type:
    if not isinstance(type_name, str) or type_name not in table:
        known = sorted(table) + sorted(aliases)
        raise SettingError(f"unknown {kind} type {type_name!r}; known types: {', '.join(known)}",
                           "type", type_name, "unknown_type", known)
    target = table[type_name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target


def register_sensor_type(type_name: str, target: Union[str, Type[BaseSensor]]) -> None:
    """Add (or replace) a sensor type: a ``BaseSensor`` subclass or a ``"module:Class"`` string; ValueError:
    empty type name, or a string without ``':'``."""
    if not isinstance(type_name, str) or not type_name:
        raise ValueError(f"sensor type name must be a non-empty string, got {type_name!r}")
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"sensor type target must be 'module:Class', got {target!r}")
    SENSOR_TYPES[type_name] = target


def sensor_class(type_name: str) -> Type[BaseSensor]:
    """The class registered for ``type_name`` (imported on first use); ValueError naming an unknown type."""
    return _resolve(SENSOR_TYPES, "sensor", type_name)


def sensor_from_config(config: Union[Mapping[str, Any], Any]) -> BaseSensor:
    """Build a sensor from ``{'name', 'type', 'attachment', ...}`` or a seed ``SensorConfig`` through
    ``Class.from_config(name, rest)``.  SettingError: not a mapping, missing ``name``, unknown ``type``
    (``'unknown_type'``, ``expected`` the known ones), ``attachment`` / ``attachment_name`` conflicting
    (``'conflict'``), or the class's own key errors.
    """
    config = _seed_sensor_keys(_config_dict(config, "sensor"))
    name = config.get("name")
    if not isinstance(name, str) or not name:
        raise SettingError(f"sensor config needs a non-empty 'name', got {name!r}", "name", name, "missing")
    if "type" not in config:
        raise SettingError(f"sensor {name!r}: config needs a 'type'; "
                           f"known types: {', '.join(sorted(SENSOR_TYPES))}", "type", None, "missing",
                           sorted(SENSOR_TYPES))
    cls = sensor_class(config["type"])
    return cls.from_config(name, {k: v for k, v in config.items() if k != "name"})


def calibration_from_config(config: Union[Mapping[str, Any], Any]) -> BaseCalibrator:
    """Build a calibrator from a dict or a seed ``CalibrationConfig`` (a digit-string ``num_samples``, the
    seed's default ``'10'``, read as an int).  SettingError: unknown ``type`` (``'unknown_type'``,
    ``expected`` names and aliases) or bad keys."""
    from_object = not isinstance(config, Mapping)
    config = _config_dict(config, "calibrator")
    type_name = config.get("type")
    if isinstance(type_name, str) and type_name in CALIBRATOR_ALIASES:
        config["type"] = type_name = CALIBRATOR_ALIASES[type_name]
    if from_object and isinstance(config.get("num_samples"), str) and config["num_samples"].strip().isdigit():
        config["num_samples"] = int(config["num_samples"])
    return _resolve(CALIBRATOR_TYPES, "calibrator", type_name, CALIBRATOR_ALIASES).from_config(config)
