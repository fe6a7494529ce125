"""ROS-free sensor models with the seed ``vsf.sensor`` API (imports without rclpy)."""
from .base import BaseCalibrator, BaseSensor, SparseJacobian
from .state import ContactState, SimState

__all__ = [
    "BaseCalibrator", "BaseSensor", "ContactState", "SimState", "SparseJacobian",
]
