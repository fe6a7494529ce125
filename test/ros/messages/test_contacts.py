"""Contacts PointCloud2 codec (docs/interface.md field table; parsing pitfalls).

Hand-built clouds are packed here with ``struct`` (an independent writer),
point by point, so the decoder is checked against bytes it did not produce.
"""
import struct

import numpy as np
import pytest
import torch
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2, write_cloud
from vsf_sensor_ros.ros.messages.wire import (CONTACT_FIELDS, DECODE_REASONS, ContactsDecodeError,
                                              pointcloud2_to_contacts)
from vsf_sensor_ros.sensor.base_sensor import ContactState, validate_contact_state

BODIES = ["punyo", "object", "table"]
F32, F64, U16, U32, I32 = PointField.FLOAT32, PointField.FLOAT64, PointField.UINT16, PointField.UINT32, \
    PointField.INT32
STRUCT = {F32: "f", F64: "d", U16: "H", U32: "I", I32: "i", PointField.INT16: "h"}


def cs(points, forces, elems1=None, elems2=None):
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    e = lambda v: None if v is None else torch.tensor(v, dtype=torch.int64)  # noqa: E731
    return ContactState(t(points), t(forces), e(elems1), e(elems2))


def hand_cloud(layout, rows, point_step, height=1, row_pad=0, big_endian=False, frame_id="world"):
    """Pack ``rows`` (list of dicts name -> value) with ``struct``.

    layout: list of (name, offset, datatype); bytes not covered stay 0xEE padding.
    """
    width = len(rows) // height
    row_step = width * point_step + row_pad
    endian = ">" if big_endian else "<"
    data = bytearray(b"\xee" * (height * row_step))
    for i, r in enumerate(rows):
        v, u = divmod(i, width)
        base = v * row_step + u * point_step
        for name, offset, dt in layout:
            struct.pack_into(endian + STRUCT[dt], data, base + offset, r[name])
    msg = PointCloud2()
    msg.header.frame_id = frame_id
    msg.header.stamp = Time(sec=3, nanosec=250)
    msg.height, msg.width = height, width
    msg.fields = [PointField(name=n, offset=o, datatype=d, count=1) for n, o, d in layout]
    msg.is_bigendian = big_endian
    msg.point_step, msg.row_step = point_step, row_step
    msg.data = bytes(data)
    return msg


ROWS = [  # pair (punyo, object), (table, object), (punyo, object) interleaved
    dict(x=0.1, y=0.2, z=0.3, fx=1.0, fy=-2.0, fz=3.5, body1=0, body2=1, elem1=17, elem2=-1),
    dict(x=-1.0, y=0.0, z=0.5, fx=0.0, fy=0.0, fz=-9.81, body1=2, body2=1, elem1=-1, elem2=4),
    dict(x=0.25, y=0.125, z=0.0625, fx=0.5, fy=0.25, fz=0.125, body1=0, body2=1, elem1=3, elem2=-1),
]


def _assert_rows_decoded(dec, float_tol=0.0):
    assert list(dec.contacts) == [("punyo", "object"), ("table", "object")]   # first appearance
    np.testing.assert_array_equal(dec.rows[("punyo", "object")], [0, 2])
    np.testing.assert_array_equal(dec.rows[("table", "object")], [1])
    po = dec.contacts[("punyo", "object")]
    np.testing.assert_allclose(po.points.numpy(), [[0.1, 0.2, 0.3], [0.25, 0.125, 0.0625]], atol=float_tol)
    np.testing.assert_allclose(po.forces.numpy(), [[1.0, -2.0, 3.5], [0.5, 0.25, 0.125]], atol=float_tol)
    to = dec.contacts[("table", "object")]
    np.testing.assert_allclose(to.forces.numpy(), [[0.0, 0.0, -9.81]], atol=float_tol)
    assert dec.num_points == 3


# ------------------------------------------------------------------ parsing layouts

def test_reordered_fields_with_padding_and_mixed_widths():
    # body ids first, a 2-byte hole, forces as float64, points float32, elems last, 6 bytes tail padding
    layout = [("body2", 0, U16), ("body1", 4, U32), ("fz", 8, F64), ("fy", 16, F64), ("fx", 24, F64),
              ("z", 32, F32), ("x", 36, F32), ("y", 40, F32), ("elem2", 44, I32), ("elem1", 48, I32)]
    dec = pointcloud2_to_contacts(hand_cloud(layout, ROWS, point_step=58), BODIES)
    _assert_rows_decoded(dec, float_tol=1e-7)                          # float32 points
    po = dec.contacts[("punyo", "object")]
    assert po.forces[1, 0].item() == 0.5                               # float64 forces exact
    np.testing.assert_array_equal(po.elems1.numpy(), [17, 3])
    np.testing.assert_array_equal(po.elems2.numpy(), [-1, -1])          # -1 kept: "no element"
    np.testing.assert_array_equal(dec.contacts[("table", "object")].elems2.numpy(), [4])
    assert dec.frame_id == "world" and dec.stamp_ns == 3_000_000_250


def test_big_endian_cloud():
    layout = [(n, 8 * i, F64) for i, n in enumerate(("x", "y", "z", "fx", "fy", "fz"))]
    layout += [("body1", 48, U16), ("body2", 50, U16)]
    dec = pointcloud2_to_contacts(hand_cloud(layout, ROWS, point_step=52, big_endian=True), BODIES)
    _assert_rows_decoded(dec)
    assert dec.contacts[("punyo", "object")].elems1 is None           # no elem fields -> None


def test_height_greater_than_one_with_row_padding():
    rows = ROWS + [dict(x=2.0, y=2.0, z=2.0, fx=0.0, fy=1.0, fz=0.0, body1=1, body2=2, elem1=0, elem2=0)]
    layout = [(n, 4 * i, F32) for i, n in enumerate(("x", "y", "z", "fx", "fy", "fz"))]
    layout += [("body1", 24, U32), ("body2", 28, U32)]
    msg = hand_cloud(layout, rows, point_step=32, height=2, row_pad=12)
    assert (msg.height, msg.width, msg.row_step, len(msg.data)) == (2, 2, 76, 152)
    dec = pointcloud2_to_contacts(msg, BODIES, dtype=torch.float32)
    # row-major: row 2 is (v=1, u=0), row 3 is (v=1, u=1)
    assert list(dec.contacts) == [("punyo", "object"), ("table", "object"), ("object", "table")]
    np.testing.assert_array_equal(dec.rows[("punyo", "object")], [0, 2])
    np.testing.assert_array_equal(dec.rows[("object", "table")], [3])
    assert dec.contacts[("object", "table")].points.dtype == torch.float32
    np.testing.assert_array_equal(dec.contacts[("object", "table")].points.numpy(), [[2.0, 2.0, 2.0]])
    assert dec.num_points == 4


def test_empty_cloud_means_no_contacts():
    assert pointcloud2_to_contacts(PointCloud2(), BODIES).contacts == {}
    msg = contacts_to_pointcloud2({}, BODIES, stamp=1.5)
    assert msg.width == 0 and len(msg.data) == 0
    assert msg.header.stamp.sec == 1 and msg.header.stamp.nanosec == 500_000_000
    dec = pointcloud2_to_contacts(msg, BODIES)
    assert dec.contacts == {} and dec.rows == {} and dec.num_points == 0


# ------------------------------------------------------------------ rejections

BASE_LAYOUT = [(n, 8 * i, F64) for i, n in enumerate(("x", "y", "z", "fx", "fy", "fz"))] + \
    [("body1", 48, U32), ("body2", 52, U32), ("elem1", 56, I32)]


def _reject(msg, reason, match, bodies=BODIES):
    with pytest.raises(ContactsDecodeError, match=match) as info:
        pointcloud2_to_contacts(msg, bodies)
    assert info.value.reason == reason
    assert reason in DECODE_REASONS


def test_missing_field_rejected():
    _reject(hand_cloud([f for f in BASE_LAYOUT if f[0] != "fz"], ROWS, 60), "missing_field", "'fz'")


def test_duplicate_field_rejected():
    _reject(hand_cloud(BASE_LAYOUT + [("x", 8, F64)], ROWS, 60), "duplicate_field", "'x'")


@pytest.mark.parametrize("name, dt", [("x", I32), ("body1", F32), ("elem1", U32),
                                      ("body2", PointField.INT16)])
def test_wrong_datatype_rejected(name, dt):
    layout = [(n, o, dt if n == name else d) for n, o, d in BASE_LAYOUT]
    rows = [dict(r, **{name: 0}) for r in ROWS]
    _reject(hand_cloud(layout, rows, 60), "bad_field_type", f"'{name}' has datatype {dt}")


def test_field_count_not_one_rejected():
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60)
    msg.fields[0].count = 3
    _reject(msg, "bad_field_count", "'x' has count 3")


def test_field_beyond_point_step_rejected():
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60)
    msg.fields[-1].offset = 57          # 57 + 4 > 60
    _reject(msg, "bad_field_offset", "'elem1' at offset 57")


def test_data_length_disagreeing_with_size_rejected():
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60)
    msg.data = bytes(msg.data)[:-1]
    _reject(msg, "bad_size", "179 bytes, expected height 1 x row_step 180")
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60)
    msg.row_step = 170                   # 3 x 60 does not fit in a row
    _reject(msg, "bad_size", "exceeds row_step")
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60)
    msg.width = 4                        # claims 4 points, carries 3
    msg.row_step = 240
    _reject(msg, "bad_size", "180 bytes")


@pytest.mark.parametrize("name", ["y", "fz"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_rejected(name, value):
    rows = [dict(r) for r in ROWS]
    rows[1][name] = value
    _reject(hand_cloud(BASE_LAYOUT, rows, 60), "non_finite", "first row 1")


def test_body_index_out_of_range_rejected():
    rows = [dict(r) for r in ROWS]
    rows[2]["body2"] = 3                 # BODIES has indices 0..2
    _reject(hand_cloud(BASE_LAYOUT, rows, 60), "body_index_out_of_range", r"row 2: body indices \(0, 3\)")


def test_element_below_minus_one_rejected():
    rows = [dict(r) for r in ROWS]
    rows[0]["elem1"] = -2
    _reject(hand_cloud(BASE_LAYOUT, rows, 60), "elem_index_invalid", "row 0: elem1 = -2")


def test_wrong_frame_rejected_only_when_asked():
    msg = hand_cloud(BASE_LAYOUT, ROWS, 60, frame_id="map")
    assert len(pointcloud2_to_contacts(msg, BODIES).contacts) == 2
    with pytest.raises(ContactsDecodeError) as info:
        pointcloud2_to_contacts(msg, BODIES, expected_frame_id="world")
    assert info.value.reason == "bad_frame_id"


def test_duplicate_body_names_are_a_configuration_error():
    with pytest.raises(ValueError, match="'punyo'"):
        pointcloud2_to_contacts(hand_cloud(BASE_LAYOUT, ROWS, 60), ["punyo", "punyo", "table"])


# ------------------------------------------------------------------ encoder

def test_encoder_layout_by_hand():
    msg = contacts_to_pointcloud2({("punyo", "table"): cs([[1, 2, 3]], [[4, 5, 6]])}, BODIES)
    # 6 float64 (48 bytes) + 2 uint32 (8 bytes), packed, little-endian
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("x", 0, F64), ("y", 8, F64), ("z", 16, F64), ("fx", 24, F64), ("fy", 32, F64), ("fz", 40, F64),
        ("body1", 48, U32), ("body2", 52, U32)]
    assert (msg.point_step, msg.row_step, msg.height, msg.width, msg.is_bigendian) == (56, 56, 1, 1, False)
    assert bytes(msg.data) == struct.pack("<6d2I", 1, 2, 3, 4, 5, 6, 0, 2)
    assert tuple(f.name for f in msg.fields[:8]) == CONTACT_FIELDS


def test_round_trip_float64_is_exact_with_elems_normals_and_depths():
    rng = np.random.default_rng(3)
    a = cs(rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), elems1=[5, 0, 389, -1])
    b = cs(rng.normal(size=(2, 3)), rng.normal(size=(2, 3)))
    contacts = {("object", "punyo"): a, ("table", "object"): b}
    normals = {p: rng.normal(size=(len(c), 3)) for p, c in contacts.items()}
    depths = {p: rng.uniform(0, 1e-3, size=len(c)) for p, c in contacts.items()}
    msg = contacts_to_pointcloud2(contacts, BODIES, stamp=Time(sec=7, nanosec=9), normals=normals,
                                  depths=depths)
    dec = pointcloud2_to_contacts(msg, BODIES)
    assert list(dec.contacts) == list(contacts)
    for p, c in contacts.items():
        validate_contact_state(dec.contacts[p])     # decoded states meet ContactState's invariants
        assert torch.equal(dec.contacts[p].points, c.points)
        assert torch.equal(dec.contacts[p].forces, c.forces)
        np.testing.assert_array_equal(dec.normals[p], normals[p])
        np.testing.assert_array_equal(dec.depths[p], depths[p])
    np.testing.assert_array_equal(dec.contacts[("object", "punyo")].elems1.numpy(), [5, 0, 389, -1])
    np.testing.assert_array_equal(dec.contacts[("table", "object")].elems1.numpy(), [-1, -1])  # filled
    assert dec.contacts[("object", "punyo")].elems2 is None
    np.testing.assert_array_equal(dec.rows[("object", "punyo")], [0, 1, 2, 3])
    np.testing.assert_array_equal(dec.rows[("table", "object")], [4, 5])
    assert dec.stamp_ns == 7_000_000_009


def test_round_trip_float32_within_float32_rounding():
    cols = [(k, np.array([v], dtype=np.float32)) for k, v in zip(("x", "y", "z", "fx", "fy", "fz"),
                                                                 (0.1, 0.2, 0.3, 1e-3, 12.5, -7.25))]
    cols += [("body1", np.array([0], dtype="<u4")), ("body2", np.array([1], dtype="<u4"))]
    dec = pointcloud2_to_contacts(write_cloud(Header(), cols), BODIES)
    got = dec.contacts[("punyo", "object")]
    np.testing.assert_allclose(got.points.numpy(), [[0.1, 0.2, 0.3]], rtol=6e-8)
    assert got.forces[0, 2].item() == -7.25                           # exactly representable
    assert got.points.dtype == torch.float64


def test_encoder_errors_name_the_problem():
    c = cs([[0, 0, 0]], [[0, 0, 1]])
    with pytest.raises(ValueError, match="'gripper'"):
        contacts_to_pointcloud2({("punyo", "gripper"): c}, BODIES)
    with pytest.raises(ValueError):
        contacts_to_pointcloud2({("punyo", "table"): c}, BODIES, normals={})
    with pytest.raises(ValueError):
        contacts_to_pointcloud2({("punyo", "table"): c}, BODIES, depths={("punyo", "table"): [1.0, 2.0]})


def test_bridge_example_two_pairs_through_serialization():
    """What a simulator bridge does: dict of ContactState -> bytes on the wire -> the node's decode."""
    names = ["punyo", "object", "table"]
    # the bubble presses a block down onto the table: block pushes the bubble up, table holds the block
    step = {
        ("punyo", "object"): cs([[0.45, 0.0, 0.05], [0.46, 0.0, 0.05]], [[0, 0, 2.0], [0, 0, 1.0]],
                                elems1=[12, 13]),
        ("object", "table"): cs([[0.45, 0.0, 0.0]], [[0, 0, 3.0 + 0.1 * 9.81]]),
    }
    wire = serialize_message(contacts_to_pointcloud2(step, names, stamp=0.002))
    msg = deserialize_message(wire, PointCloud2)
    dec = pointcloud2_to_contacts(msg, names, expected_frame_id="world")
    assert list(dec.contacts) == [("punyo", "object"), ("object", "table")]
    assert dec.stamp_ns == 2_000_000
    # total force on the bubble = 3 N up; Jacobian columns 3*c+k: contact rows 0, 1 belong to the bubble
    assert dec.contacts[("punyo", "object")].forces[:, 2].sum().item() == 3.0
    np.testing.assert_array_equal(dec.rows[("punyo", "object")], [0, 1])
    np.testing.assert_array_equal(dec.rows[("object", "table")], [2])
    np.testing.assert_array_equal(dec.contacts[("punyo", "object")].elems1.numpy(), [12, 13])
    np.testing.assert_array_equal(dec.contacts[("object", "table")].elems1.numpy(), [-1])


def test_float64_values_past_the_float32_range_reject_a_float32_decode():
    rows = [dict(r) for r in ROWS]
    rows[1]["fz"] = 1e39                  # float32 tops out at 3.4028235e38: would become inf
    msg = hand_cloud(BASE_LAYOUT, rows, 60)
    assert pointcloud2_to_contacts(msg, BODIES).contacts[("table", "object")].forces[0, 2].item() == 1e39
    with pytest.raises(ContactsDecodeError) as info:
        pointcloud2_to_contacts(msg, BODIES, dtype=torch.float32)
    assert info.value.reason == "non_finite"


def test_seed_style_contact_objects_with_lists_are_encoded_as_contact_states():
    """A plain object with the seed's ContactState attributes (lists) gives the same cloud as the
    ContactState of the same numbers; one without ``forces`` is refused naming what it lacks."""
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts

    class Plain:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    pts, frc = [[0.1, 0.2, 0.3], [0.0, -0.1, 0.05]], [[0.0, 0.0, -2.0], [1.0, 0.5, -0.25]]
    plain = Plain(points=pts, forces=frc, elems1=[4, -1], elems2=None)
    ref = ContactState(torch.tensor(pts, dtype=torch.float64), torch.tensor(frc, dtype=torch.float64),
                       torch.tensor([4, -1]), None)
    a = contacts_to_pointcloud2({("punyo", "object"): plain}, ["punyo", "object"])
    b = contacts_to_pointcloud2({("punyo", "object"): ref}, ["punyo", "object"])
    assert bytes(a.data) == bytes(b.data) and a.fields == b.fields
    back = pointcloud2_to_contacts(a, ["punyo", "object"]).contacts[("punyo", "object")]
    assert back.forces.tolist() == frc and back.elems1.tolist() == [4, -1]
    with pytest.raises(ValueError):
        contacts_to_pointcloud2({("punyo", "object"): Plain(points=pts)}, ["punyo", "object"])
