"""The seed's module path ``vsf.sensor.base_calibrator``: the same names, from this package."""
from .base import BaseCalibrator
from .calibration import TareCalibrator

__all__ = ["BaseCalibrator", "TareCalibrator"]
