"""ROS-free sensor models with the seed ``vsf.sensor`` API (imports without rclpy)."""
from .base_calibrator import BaseCalibrator, GainCalibrator, GainFit, TareCalibrator, TareSimulator
from .base_sensor import BaseSensor, SparseJacobian
from .constructors import calibration_from_config, register_sensor_type, sensor_class, sensor_from_config
from .isaac_contact_sensor import ContactSensorInterface, CsProperties, CsSensorReading, IsaacContactSensor
from .klampt_contact_sensor import ContactSensor
from .mesh import ClosestTriangleQuery, ClosestTriangleResult, projected_area, triangle_mesh_of
from .punyo_dense_force_sensor import PunyoDenseForceSensor
from .punyo_pressure_sensor import PunyoPressureSensor
from .base_sensor import ContactState, SimState, rigid_transform, with_reverse_pairs

__all__ = [
    "ContactSensor", "ContactSensorInterface", "CsProperties", "CsSensorReading", "IsaacContactSensor",
    "BaseCalibrator", "BaseSensor", "ContactState", "SimState", "SparseJacobian",
    "ClosestTriangleQuery", "ClosestTriangleResult", "PunyoDenseForceSensor", "PunyoPressureSensor",
    "GainCalibrator", "GainFit", "TareCalibrator", "TareSimulator", "calibration_from_config",
    "projected_area", "register_sensor_type", "rigid_transform", "sensor_class", "sensor_from_config",
    "triangle_mesh_of", "with_reverse_pairs",
]
