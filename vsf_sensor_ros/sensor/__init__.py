"""ROS-free sensor models with the seed ``vsf.sensor`` API (imports without rclpy)."""
from .base import BaseCalibrator, BaseSensor, SparseJacobian
from .klampt_contact_sensor import ContactSensor
from .state import ContactState, SimState

__all__ = [
    "ContactSensor",
    "BaseCalibrator", "BaseSensor", "ContactState", "SimState", "SparseJacobian",
]
