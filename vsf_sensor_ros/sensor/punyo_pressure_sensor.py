"""The seed's module path ``vsf.sensor.punyo_pressure_sensor``: the same sensor, from this package."""
from .punyo_pressure import PunyoPressureSensor

__all__ = ["PunyoPressureSensor"]
