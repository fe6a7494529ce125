"""vsf_sensor_ros: predicted tactile sensor readings and force Jacobians over ROS 2.

Layers (data flows one way): ``sensor`` (pure models, no ROS) -> ``world`` (Klampt robot + attached bodies
-> body transforms) -> ``ros`` (message encode/decode, the node) -> ``contact_sources`` (simulator, wrench
node) -> ``demo``.
"""
__version__ = "0.1.0"
