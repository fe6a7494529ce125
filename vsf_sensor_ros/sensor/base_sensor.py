"""The seed's module path ``vsf.sensor.base_sensor``: the same names, from this package.

Seed code imports ``from vsf.sensor.base_sensor import SimState, ContactState``; after
swapping ``vsf.sensor`` for ``vsf_sensor_ros.sensor`` that import lands here.
"""
from .base import BaseSensor
from .state import ContactState, SimState

__all__ = ["BaseSensor", "ContactState", "SimState"]
