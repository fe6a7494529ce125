"""What the codecs tell the layers above about their kind (message type, axes, flags, recorded vectors).

The demo decides everything per sensor kind through these attributes; the expected values here
come from the sensor types and the message definitions, not from the codecs.
"""
import math

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import FluidPressure, PointCloud2, PointField

from vsf_sensor_ros.ros.kinds import codec_of_type, reading_codecs
from vsf_sensor_ros.ros.messages.wire import CloudDecodeError
from vsf_sensor_ros.ros.messages.readings import MEASURED_TYPES

READING_CODECS = reading_codecs()

TYPES = ("PunyoPressureSensor", "PunyoDenseForceSensor", "ContactSensor", "IsaacContactSensor")


@pytest.mark.parametrize("kind", sorted(READING_CODECS))
def test_message_type_names_the_message_class(kind):
    codec = READING_CODECS[kind]
    pkg = codec.message.__module__.split(".")[0]
    assert codec.message_type == f"{pkg}/msg/{codec.message.__name__}"
    assert MEASURED_TYPES[codec.message_type] is codec.message


def test_flags_follow_the_sensor_types():
    # the Punyo bubble's two readings are the membrane's; Klampt's ContactSensor is the pad
    for t in TYPES:
        c = codec_of_type(t)
        assert c.membrane_reading == t.startswith("Punyo"), t
        assert c.pad_reading == (t == "ContactSensor"), t
    assert [k for k, c in READING_CODECS.items() if c.per_vertex] == ["dense_force"]


def test_axes_name_the_message_components():
    assert codec_of_type("PunyoPressureSensor").axes == ("pressure",)
    assert codec_of_type("PunyoDenseForceSensor").axes is None
    assert codec_of_type("ContactSensor").axes == ("force_x", "force_y", "force_z")
    assert codec_of_type("IsaacContactSensor").axes == ("load",)
    assert {c.unit for c in READING_CODECS.values() if c.axes != ("pressure",)} == {"N"}
    assert READING_CODECS["pressure"].unit == "Pa"


def _wrench(x, y, z):
    w = WrenchStamped()
    w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = x, y, z
    w.wrench.torque.x = 7.0   # no kind reads the torque
    return w


def test_recorded_vector_of_pressure_and_wrench_messages():
    assert READING_CODECS["pressure"].recorded_vector(FluidPressure(fluid_pressure=101325.0),
                                                      True).tolist() == [101325.0]
    w = _wrench(3.0, -4.0, 12.0)
    for measured in (False, True):
        assert READING_CODECS["wrench"].recorded_vector(w, measured).tolist() == [3.0, -4.0, 12.0]
    # a load cell: the predicted load is force.z, a measured one the magnitude (3-4-12-13)
    assert READING_CODECS["load"].recorded_vector(w, False).tolist() == [12.0]
    assert READING_CODECS["load"].recorded_vector(w, True).tolist() == [13.0]


def _hand_cloud(forces):
    """A cloud of float64 ``fz`` first, then float32 ``fx fy``, 4 pad bytes per point, big-endian."""
    dt = np.dtype([("fz", ">f8"), ("fx", ">f4"), ("fy", ">f4"), ("pad", "V4")])
    rec = np.zeros(len(forces), dtype=dt)
    f = np.asarray(forces, dtype=np.float64)
    rec["fx"], rec["fy"], rec["fz"] = f[:, 0], f[:, 1], f[:, 2]
    msg = PointCloud2(height=1, width=len(forces), is_bigendian=True, point_step=dt.itemsize,
                      row_step=dt.itemsize * len(forces), is_dense=True)
    msg.fields = [PointField(name="fz", offset=0, datatype=PointField.FLOAT64, count=1),
                  PointField(name="fx", offset=8, datatype=PointField.FLOAT32, count=1),
                  PointField(name="fy", offset=12, datatype=PointField.FLOAT32, count=1)]
    msg.data = rec.tobytes()
    return msg


def test_recorded_vector_of_a_dense_force_cloud_is_point_major_nan_kept():
    forces = [[0.5, -0.25, 2.0], [math.nan, 1.5, -3.0]]
    vec = READING_CODECS["dense_force"].recorded_vector(_hand_cloud(forces), True)
    expected = [0.5, -0.25, 2.0, math.nan, 1.5, -3.0]
    assert vec.dtype == np.float64
    np.testing.assert_array_equal(vec, expected)


def test_recorded_vector_of_a_cloud_without_forces_names_the_field():
    msg = PointCloud2(height=1, width=1, point_step=4, row_step=4, data=bytes(4))
    msg.fields = [PointField(name="fx", offset=0, datatype=PointField.FLOAT32, count=1)]
    with pytest.raises(CloudDecodeError) as err:
        READING_CODECS["dense_force"].recorded_vector(msg, False)
    assert err.value.reason == "missing_field"


def test_recorded_vector_reads_a_message_deserialised_from_a_bag():
    # what the demo's analysis reads: rosbags' own dataclasses, same field names as the rclpy types
    rosbags_typesys = pytest.importorskip("rosbags.typesys")
    from rclpy.serialization import serialize_message
    store = rosbags_typesys.get_typestore(rosbags_typesys.Stores.ROS2_KILTED)
    w = store.deserialize_cdr(serialize_message(_wrench(-6.0, 2.0, 3.0)), "geometry_msgs/msg/WrenchStamped")
    assert READING_CODECS["load"].recorded_vector(w, True).tolist() == [7.0]     # 6-2-3-7
    assert READING_CODECS["wrench"].recorded_vector(w, False).tolist() == [-6.0, 2.0, 3.0]
    p = store.deserialize_cdr(serialize_message(FluidPressure(fluid_pressure=2.5e4)),
                              "sensor_msgs/msg/FluidPressure")
    assert READING_CODECS["pressure"].recorded_vector(p, False).tolist() == [2.5e4]
    cloud = store.deserialize_cdr(serialize_message(_hand_cloud([[1.0, 2.0, 3.0]])),
                                  "sensor_msgs/msg/PointCloud2")
    assert READING_CODECS["dense_force"].recorded_vector(cloud, True).tolist() == [1.0, 2.0, 3.0]
