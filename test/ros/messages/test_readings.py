"""Message encoders/decoders of the sensor node; every expected number is written out by hand."""
import struct

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import FluidPressure, PointCloud2, PointField

from vsf_sensor_ros.ros import kinds
from vsf_sensor_ros.ros.messages import readings as enc

from vsf_sensor_ros.rig.calibration import select_samples
from vsf_sensor_ros.rig.sensors import PairedSample

STAMP_NS = 12_000_000_500


def encoded(layout, values, msg_type):
    """The encoder's bytes read back by rclpy's own deserialiser (a second method)."""
    msg = deserialize_message(enc.encode_vector(layout, np.array(values), STAMP_NS), msg_type)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (12, 500)
    return msg


def test_jacobian_columns_are_remapped_to_contact_message_rows():
    # Library order: pair A = (punyo, object) with 2 contacts, then pair B = (punyo, table) with 1.
    # In the message, A's contacts are rows 4 and 1, B's contact is row 2.
    pairs = [("punyo", "object"), ("punyo", "table")]
    offsets = [0, 2, 3]
    rows = {("punyo", "object"): np.array([4, 1]), ("punyo", "table"): np.array([2])}
    lib_cols = np.array([0, 2, 3, 5, 6, 8])          # c = 0, 0, 1, 1, 2, 2 ; k = 0, 2, 0, 2, 0, 2
    expected = np.array([3 * 4 + 0, 3 * 4 + 2, 3 * 1 + 0, 3 * 1 + 2, 3 * 2 + 0, 3 * 2 + 2])
    got = enc.jacobian_message_columns(lib_cols, pairs, offsets, rows)
    assert got.tolist() == expected.tolist()


def test_jacobian_columns_of_one_pair_follow_its_rows_in_every_arrangement():
    cols = np.array([0, 4, 8, 2])                       # c = 0, 1, 2, 0 ; k = 0, 1, 2, 2
    pair = [("punyo", "object")]
    for rows, want_c in (([0, 1, 2], [0, 1, 2, 0]),     # rows 0..2 in order: columns unchanged
                         ([1, 2, 3], [1, 2, 3, 1]),     # shifted by a row of another pair
                         ([0, 2, 1], [0, 2, 1, 0]),     # first 0 and last n-1, but not in order
                         ([0, 5, 2], [0, 5, 2, 0])):
        got = enc.jacobian_message_columns(cols, pair, [0, 3], {pair[0]: np.array(rows)})
        assert got.tolist() == [3 * c + k for c, k in zip(want_c, [0, 1, 2, 2])], rows
        assert got.dtype == np.int64 and got is not cols
    with pytest.raises(IndexError):    # a column past the pair's contacts is not passed through
        enc.jacobian_message_columns(np.array([0, 1, 2, 3]), pair, [0, 1], {pair[0]: np.array([0])})


def test_jacobian_remap_rejects_a_pair_whose_rows_disagree():
    with pytest.raises(ValueError):
        enc.jacobian_message_columns(np.array([0]), [("a", "b")], [0, 2], {("a", "b"): np.array([0])})


def test_jacobian_cloud_keeps_nonzeros_with_uint32_row_col_and_float64_value():
    raw = enc.encode_jacobian(np.array([0, 0, 1]), np.array([3, 4, 5]), np.array([0.25, 0.0, -2.0]),
                              STAMP_NS, "world")
    msg = deserialize_message(raw, PointCloud2)
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("row", 0, PointField.UINT32), ("col", 4, PointField.UINT32), ("value", 8, PointField.FLOAT64)]
    assert msg.point_step == 16 and msg.width == 2 and msg.height == 1
    raw = bytes(msg.data)
    assert struct.unpack("<IId", raw[:16]) == (0, 3, 0.25)
    assert struct.unpack("<IId", raw[16:]) == (1, 5, -2.0)
    assert (msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec) == ("world", 12, 500)
    assert msg.row_step == 32 and msg.is_dense and not msg.is_bigendian


def _big_endian_force_cloud(forces, pad=4):
    # fields fz, fx, fy (any order), float64 big endian, with padding and a 2-row layout
    n = len(forces)
    step = 24 + pad
    fields = [PointField(name="fz", offset=0, datatype=PointField.FLOAT64, count=1),
              PointField(name="fx", offset=8, datatype=PointField.FLOAT64, count=1),
              PointField(name="fy", offset=16, datatype=PointField.FLOAT64, count=1)]
    w = n // 2
    row_step = w * step + 8
    data = bytearray()
    for r in range(2):
        for u in range(w):
            fx, fy, fz = forces[r * w + u]
            data += struct.pack(">ddd", fz, fx, fy) + b"\0" * pad
        data += b"\0" * 8
    return PointCloud2(height=2, width=w, fields=fields, is_bigendian=True, point_step=step,
                       row_step=row_step, data=bytes(data))


def test_measured_dense_force_cloud_any_layout_scaled_to_si():
    layout = kinds.sensor_layout("PunyoDenseForceSensor", "punyo",
                                 [f"p{i}_{a}" for i in range(4) for a in "xyz"], None,
                                 np.zeros((4, 3)))
    forces = [(1.0, 2.0, 3.0), (4.0, 5.0, 6.0), (-1.0, 0.0, 0.5), (0.0, 0.0, -2.0)]
    vec = enc.decode_measured(layout, _big_endian_force_cloud(forces), 0.5)
    assert vec.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, -0.5, 0.0, 0.25, 0.0, 0.0, -1.0]


def test_measured_dense_force_with_wrong_vertex_count_is_rejected_with_reason():
    layout = kinds.sensor_layout("PunyoDenseForceSensor", "punyo",
                                 [f"p{i}_{a}" for i in range(3) for a in "xyz"], None, np.zeros((3, 3)))
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, _big_endian_force_cloud([(0, 0, 0)] * 4), 1.0)
    assert err.value.reason == "measured_size_mismatch"


def test_pressure_in_hpa_is_scaled_and_variance_is_the_squared_error():
    layout = kinds.sensor_layout("PunyoPressureSensor", "punyo", ["pressure"], [3.0])
    vec = enc.decode_measured(layout, FluidPressure(fluid_pressure=1013.25), 100.0)
    assert vec.tolist() == [101325.0]
    msg = encoded(layout, [-42.5], FluidPressure)
    assert (msg.fluid_pressure, msg.variance, msg.header.frame_id) == (-42.5, 9.0, "punyo")


def test_a_bare_float_pressure_in_hpa_decodes_for_the_pressure_sensor_only():
    from std_msgs.msg import Float32, Float64
    layout = kinds.sensor_layout("PunyoPressureSensor", "punyo", ["pressure"], None)
    # float32 of 1013.25 is exact (1013.25 = 4053 / 4): x 100 = 101325 Pa
    assert enc.decode_measured(layout, Float32(data=1013.25), 100.0).tolist() == [101325.0]
    assert enc.decode_measured(layout, Float64(data=0.5), 100.0).tolist() == [50.0]
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, Float32(data=float("inf")), 100.0)
    assert err.value.reason == "non_finite"
    pad = kinds.sensor_layout("ContactSensor", "tool_link", ["contact", "force_x", "force_z"], None)
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(pad, Float64(data=1.0), 1.0)
    assert err.value.reason == "measured_type_mismatch"
    assert kinds.reading_codecs()["pressure"].measured_types == (
        "sensor_msgs/msg/FluidPressure", "std_msgs/msg/Float32", "std_msgs/msg/Float64")
    assert "std_msgs/msg/Float32" not in kinds.reading_codecs()["wrench"].measured_types
    assert enc.normalise_measured_type("std_msgs/Float32") == "std_msgs/msg/Float32"


def test_klampt_wrench_skips_axes_without_hasforce_and_contact_is_not_measured():
    # hasForce = (x, z): names contact, force_x, force_z
    layout = kinds.sensor_layout("ContactSensor", "tool_link", ["contact", "force_x", "force_z"], None)
    msg = encoded(layout, [1.0, 0.5, -3.0], WrenchStamped)
    f = msg.wrench.force
    assert (f.x, f.y, f.z) == (0.5, 0.0, -3.0)
    m = WrenchStamped()
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = 2.0, 7.0, -1.0
    vec = enc.decode_measured(layout, m, 2.0)
    assert np.isnan(vec[0]) and vec[1:].tolist() == [4.0, -2.0]


def test_isaac_load_goes_to_force_z_and_measured_wrench_decodes_as_magnitude():
    layout = kinds.sensor_layout("IsaacContactSensor", "object", ["in_contact", "value"], None)
    msg = encoded(layout, [1.0, 13.0], WrenchStamped)
    assert (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z) == (0.0, 0.0, 13.0)
    assert (msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) == (0.0, 0.0, 0.0)
    assert msg.header.frame_id == "object"
    m = WrenchStamped()
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = 3.0, 4.0, 12.0
    vec = enc.decode_measured(layout, m, 1.0)
    assert np.isnan(vec[0]) and vec[1] == 13.0


def test_non_finite_or_wrong_type_measured_is_rejected_with_reason():
    layout = kinds.sensor_layout("PunyoPressureSensor", "punyo", ["pressure"], None)
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, FluidPressure(fluid_pressure=float("nan")), 1.0)
    assert err.value.reason == "non_finite"
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, WrenchStamped(), 1.0)
    assert err.value.reason == "measured_type_mismatch"


def test_measured_value_finite_in_its_unit_but_overflowing_in_si_is_rejected():
    layout = kinds.sensor_layout("PunyoPressureSensor", "punyo", ["pressure"], None)
    # 1e306 hPa x 100 = 1e308 Pa: below the float64 maximum (1.797e308), kept
    assert enc.decode_measured(layout, FluidPressure(fluid_pressure=1e306), 100.0)[0] == 1e308
    # 1e307 hPa x 100 = 1e309 Pa: beyond float64, would become inf in SI
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, FluidPressure(fluid_pressure=1e307), 100.0)
    assert err.value.reason == "non_finite"


def test_measured_dense_cloud_with_integer_force_fields_is_rejected():
    verts = np.zeros((2, 3))
    layout = kinds.sensor_layout("PunyoDenseForceSensor", "punyo",
                                 [f"p{i}_{a}" for i in range(2) for a in "xyz"], None, verts)
    # two points, fx fy fz as INT32 (what the contacts decoder refuses for forces too)
    msg = PointCloud2(height=1, width=2, point_step=12, row_step=24, is_bigendian=False,
                      fields=[PointField(name=n, offset=4 * k, datatype=PointField.INT32, count=1)
                              for k, n in enumerate(("fx", "fy", "fz"))])
    msg.data = struct.pack("<6i", 1, 2, 3, 4, 5, 6)
    with pytest.raises(enc.MeasuredDecodeError) as err:
        enc.decode_measured(layout, msg, 1.0)
    assert err.value.reason == "bad_field_type"


def test_dense_force_cloud_has_vertex_positions_and_local_forces_per_vertex():
    verts = np.array([[0.0, 0.0, 0.0], [0.01, 0.0, 0.02]])
    layout = kinds.sensor_layout("PunyoDenseForceSensor", "punyo",
                                 [f"p{i}_{a}" for i in range(2) for a in "xyz"], None, verts)
    msg = encoded(layout, [0.0, 0.0, 0.0, 1.5, -2.0, 0.25], PointCloud2)
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        (n, 4 * k, PointField.FLOAT32, 1) for k, n in enumerate(["x", "y", "z", "fx", "fy", "fz"])]
    assert (msg.height, msg.width, msg.point_step, msg.row_step, msg.is_bigendian, msg.is_dense) == (
        1, 2, 24, 48, False, True)
    cols = enc.read_cloud_fields(msg, ["x", "z", "fx", "fy", "fz"])
    assert cols["x"].tolist() == pytest.approx([0.0, 0.01])
    assert cols["z"].tolist() == pytest.approx([0.0, 0.02])
    assert (cols["fx"][1], cols["fy"][1], cols["fz"][1]) == (1.5, -2.0, 0.25)


def _pair(stamp, free):
    return PairedSample(stamp, np.array([float(stamp)]), None, free)


def test_tare_uses_the_last_n_of_the_most_recent_contact_free_run():
    # free free contact free free free contact : the most recent run is stamps 4, 5, 6
    pairs = [_pair(1, True), _pair(2, True), _pair(3, False), _pair(4, True), _pair(5, True),
             _pair(6, True), _pair(7, False)]
    got, why = select_samples(pairs, 2)
    assert why is None and [p.stamp_ns for p in got] == [5, 6]
    got, why = select_samples(pairs, 10)
    assert [p.stamp_ns for p in got] == [4, 5, 6]


def test_tare_sample_selection_explains_why_nothing_is_usable():
    assert select_samples([], 10) == ([], "no measured sample paired with a prediction yet")
    got, why = select_samples([_pair(1, False), _pair(2, False)], 10)
    assert got == [] and "all 2 buffered samples have contact" in why


def test_isaac_load_magnitude_of_huge_and_tiny_forces_neither_overflows_nor_underflows():
    layout = kinds.sensor_layout("IsaacContactSensor", "object", ["value"], None)
    m = WrenchStamped()
    # |(3, 4, 12) x 1e200| = 13e200: the squares (1e401) would overflow to inf
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = 3e200, 4e200, 12e200
    assert enc.decode_measured(layout, m, 1.0)[0] == pytest.approx(13e200, rel=1e-15)
    # |(3, 4, 12) x 1e-200| = 13e-200: the squares (1e-399) would underflow to 0
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = 3e-200, 4e-200, 12e-200
    assert enc.decode_measured(layout, m, 1.0)[0] == pytest.approx(13e-200, rel=1e-15)
