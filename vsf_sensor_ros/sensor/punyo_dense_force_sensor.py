"""The seed's module path ``vsf.sensor.punyo_dense_force_sensor``: the same sensor, from this package.

(The seed's helper ``barycentric_weights`` is not provided: the sensor's closest-triangle
query, :class:`~vsf_sensor_ros.sensor.mesh.ClosestTriangleQuery`, replaces it.)
"""
from .punyo_dense_force import PunyoDenseForceSensor

__all__ = ["PunyoDenseForceSensor"]
