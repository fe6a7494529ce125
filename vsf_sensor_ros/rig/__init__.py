"""The ROS-free core of the sensor node: world + sensors + pairing + tare, one step from arrays to
readings (:class:`~.rig.Rig`).  Imports no ROS; :mod:`vsf_sensor_ros.ros` decodes into it and encodes
what comes out."""
