"""The seed's module path ``vsf.sensor.constructors``: config objects and the two factories.

:class:`SensorConfig` and :class:`CalibrationConfig` have the seed's fields, so seed code that
builds them and calls :func:`sensor_from_config` / :func:`calibration_from_config` runs after
swapping the import.  The factories are this package's (:mod:`.config`): they also take plain
dicts (the node's parameter namespaces) and every registered type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from .config import calibration_from_config, sensor_from_config

__all__ = ["CalibrationConfig", "SensorConfig", "calibration_from_config", "sensor_from_config"]


@dataclass
class SensorConfig:
    """A sensor's configuration, with the seed's fields.

    Attributes:
        name: the sensor's name.
        type: a registered sensor type, e.g. ``'PunyoPressureSensor'``.
        attachment_name: the rigid object or link the sensor is attached to
            (the ``attachment`` key of a dict config).
        link_names: the seed's joint torque sensor's links; not used by the
            sensors of this package (must stay ``None``).
    """

    name: str
    type: str
    attachment_name: str
    link_names: Optional[List[str]] = None


@dataclass
class CalibrationConfig:
    """A calibrator's configuration, with the seed's fields.

    Attributes:
        type: ``'tare'`` (the seed's name) or ``'TareCalibrator'``.
        num_samples: samples averaged by the tare (an int here; the seed's
            default is the string ``'10'``, which the factory also reads).
        output_key: calibration key written (``'tare'``, the only one the
            sensors read).
    """

    type: str
    num_samples: int = 10
    output_key: str = "tare"
