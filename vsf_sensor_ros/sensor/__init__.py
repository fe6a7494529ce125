"""ROS-free sensor models with the seed ``vsf.sensor`` API (imports without rclpy)."""
from .base import BaseCalibrator, BaseSensor, SparseJacobian
from .isaac_contact_sensor import ContactSensorInterface, CsProperties, CsSensorReading, IsaacContactSensor
from .klampt_contact_sensor import ContactSensor
from .state import ContactState, SimState

__all__ = [
    "ContactSensor", "ContactSensorInterface", "CsProperties", "CsSensorReading", "IsaacContactSensor",
    "BaseCalibrator", "BaseSensor", "ContactState", "SimState", "SparseJacobian",
]
