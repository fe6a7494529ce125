"""The one PointCloud2 reader/writer; clouds are packed by hand with ``struct``, point by point."""
import struct

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from vsf_sensor_ros.ros.messages.pointcloud import read_cloud, write_cloud
from vsf_sensor_ros.ros.messages.wire import (CLOUD_REASONS, CloudDecodeError, CloudLayout, FieldSpec,
                                              FrozenFields, float_columns, read_points, require_finite)

# name, offset, datatype, struct code: every integer type, both float widths, a 3-byte hole at 9..11
LAYOUT = [("i8", 0, PointField.INT8, "b"), ("u8", 1, PointField.UINT8, "B"),
          ("i16", 2, PointField.INT16, "h"), ("u16", 4, PointField.UINT16, "H"),
          ("f32", 6, PointField.FLOAT32, "f"), ("u32", 12, PointField.UINT32, "I"),
          ("i32", 16, PointField.INT32, "i"), ("f64", 20, PointField.FLOAT64, "d")]
STEP = 30        # 28 bytes of fields + 2 bytes tail padding per point


def point(k):
    """Point k holds i8 = -k, u8 = 200 + k, i16 = -300 k, u16 = 60000 + k, f32 = k / 4,
    u32 = 4e9 + k, i32 = -2e9 + k, f64 = k / 3 (all exactly representable except k/3)."""
    return {"i8": -k, "u8": 200 + k, "i16": -300 * k, "u16": 60000 + k, "f32": k / 4,
            "u32": 4_000_000_000 + k, "i32": -2_000_000_000 + k, "f64": k / 3}


def pack(height, width, big_endian, row_pad=5):
    e = ">" if big_endian else "<"
    row_step = width * STEP + row_pad
    data = bytearray(b"\xab" * (height * row_step))
    for v in range(height):
        for u in range(width):
            p = point(v * width + u)
            for name, off, _, code in LAYOUT:
                struct.pack_into(e + code, data, v * row_step + u * STEP + off, p[name])
    fields = [PointField(name=n, offset=o, datatype=d, count=1) for n, o, d, _ in reversed(LAYOUT)]
    return PointCloud2(height=height, width=width, fields=fields, is_bigendian=big_endian,
                       point_step=STEP, row_step=row_step, data=bytes(data))


@pytest.mark.parametrize("big_endian", [False, True])
def test_every_datatype_any_order_padding_rows_and_endianness(big_endian):
    msg = pack(2, 3, big_endian)
    names = [n for n, *_ in LAYOUT]
    pts = read_cloud(msg, names)
    assert pts.shape == (6,)
    for k in range(6):                          # row-major: point k = (v, u) = divmod(k, 3)
        want = point(k)
        for n in names:
            assert pts[n][k] == pytest.approx(want[n], rel=1e-15), (k, n)
    # the integers come back exact, with their sign and full range
    assert pts["u32"].astype(np.int64).tolist() == [4_000_000_000 + k for k in range(6)]
    assert pts["i8"].astype(np.int64).tolist() == [0, -1, -2, -3, -4, -5]


def test_raw_buffer_with_plain_field_specs_reads_like_the_message():
    msg = pack(2, 3, False)
    specs = [FieldSpec(f.name, f.offset, f.datatype, f.count) for f in msg.fields]
    layout = CloudLayout(specs, 2, 3, STEP, msg.row_step, False)
    raw = memoryview(bytes(msg.data))
    got = float_columns(read_points(layout, raw, ["f64", "u16"]), ["f64", "u16"])
    want = float_columns(read_cloud(msg, ["f64", "u16"]), ["f64", "u16"])
    np.testing.assert_array_equal(got, want)
    assert got[4].tolist() == [4 / 3, 60004.0]


def test_optional_fields_are_read_only_when_present():
    pts = read_cloud(pack(1, 2, False), ["f32"], optional=["depth", "u8"])
    assert pts.dtype.names == ("f32", "u8")


def _reason(fn, reason, match):
    with pytest.raises(CloudDecodeError, match=match) as info:
        fn()
    assert info.value.reason == reason and reason in CLOUD_REASONS
    assert isinstance(info.value, ValueError)


def test_rejections_name_the_problem():
    msg = pack(2, 3, False)
    _reason(lambda: read_cloud(msg, ["x"]), "missing_field", "'x'")
    _reason(lambda: read_cloud(msg, ["i32"], datatypes={"i32": (PointField.FLOAT32,)}),
            "bad_field_type", "'i32' has datatype 5")
    dup = pack(1, 2, False)
    dup.fields = list(dup.fields) + [PointField(name="f32", offset=0, datatype=PointField.FLOAT32, count=1)]
    _reason(lambda: read_cloud(dup, ["f32"]), "duplicate_field", "'f32' appears twice")
    read_cloud(dup, ["u8"])                      # a duplicate the caller does not read is harmless
    wide = pack(1, 2, False)
    wide.fields[0].count = 2
    _reason(lambda: read_cloud(wide, [wide.fields[0].name]), "bad_field_count", "count 2")
    over = pack(1, 2, False)
    over.point_step = 27                         # f64 at 20..27 no longer fits
    over.row_step = 2 * 27 + 5
    _reason(lambda: read_cloud(over, ["f64"]), "bad_field_offset", "'f64' at offset 20")


def test_data_length_exact_and_tolerant():
    msg = pack(2, 3, False)                      # row_step 95, 190 bytes
    short = PointCloud2(height=2, width=3, fields=msg.fields, point_step=STEP, row_step=95,
                        data=bytes(msg.data)[:-5])   # last row without its 5 pad bytes
    _reason(lambda: read_cloud(short, ["f32"]), "bad_size", "185 bytes, expected height 2 x row_step 95")
    # tolerant: the last point ends at byte 95 + 90 = 185, so the values are all there
    assert read_cloud(short, ["f32"], exact_size=False)["f32"].tolist() == [k / 4 for k in range(6)]
    shorter = PointCloud2(height=2, width=3, fields=msg.fields, point_step=STEP, row_step=95,
                          data=bytes(msg.data)[:-6])
    _reason(lambda: read_cloud(shorter, ["f32"], exact_size=False), "bad_size", "184 bytes")
    squeezed = pack(2, 3, False)
    squeezed.row_step = 89                       # 3 x 30 = 90 bytes do not fit in a row
    _reason(lambda: read_cloud(squeezed, ["f32"], exact_size=False), "bad_size", "exceeds row_step 89")


def test_require_finite_names_the_first_bad_row():
    vals = np.array([[0.0, 1.0], [2.0, np.nan], [np.inf, 0.0]])
    _reason(lambda: require_finite(vals, "fx/fy"), "non_finite", "fx/fy at 2 row.*first row 1")
    require_finite(vals[:1], "fx/fy")


def test_writer_packs_columns_in_order_little_endian():
    header = Header(stamp=Time(sec=4, nanosec=7), frame_id="punyo")
    msg = write_cloud(header, [("row", np.array([1, 7], dtype=np.uint32)),
                               ("value", np.array([0.5, -2.0])), ("k", np.array([-3, 4], dtype=np.int8))])
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ("row", 0, PointField.UINT32, 1), ("value", 4, PointField.FLOAT64, 1), ("k", 12, PointField.INT8, 1)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step, msg.is_bigendian) == (1, 2, 13, 26, False)
    assert bytes(msg.data) == struct.pack("<Idb", 1, 0.5, -3) + struct.pack("<Idb", 7, -2.0, 4)
    assert msg.header.frame_id == "punyo" and msg.header.stamp == Time(sec=4, nanosec=7)
    for fields, named in (([("row", np.zeros(2, np.uint32)), ("value", np.zeros(1))], "value"),   # 1 of 2
                          ([("c", np.zeros(2, np.complex64))], "c")):          # no PointField type
        with pytest.raises(ValueError, match=f"'{named}'"):
            write_cloud(header, fields)


def test_point_step_past_what_a_record_can_span_is_a_size_error_not_a_crash():
    fields = [FieldSpec("x", 0, PointField.FLOAT32)]
    # an empty cloud reads as no points whatever its point_step (2**31 bytes cannot back a numpy record)
    empty = read_points(CloudLayout(fields, 0, 5, 2 ** 31, 0, False), b"", ["x"])
    assert empty.shape == (0,) and empty.dtype.names == ("x",)
    # with a point, 2**31 bytes per point: far more than the data holds
    with pytest.raises(CloudDecodeError) as err:
        read_points(CloudLayout(fields, 1, 1, 2 ** 31, 2 ** 31, False), bytes(8), ["x"])
    assert err.value.reason == "bad_size"


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("code,datatype", [("f", PointField.FLOAT32), ("d", PointField.FLOAT64)])
def test_float_columns_of_adjacent_fields_match_the_values_packed(big_endian, code, datatype):
    # x y z adjacent (one strided block) and a, b apart (column by column), 2 rows with row padding
    size = struct.calcsize(code)
    step, height, width, row_pad = 5 * size + 8, 2, 3, 3
    e = ">" if big_endian else "<"
    data = bytearray(b"\xcd" * (height * (width * step + row_pad)))
    for k in range(height * width):
        base = (k // width) * (width * step + row_pad) + (k % width) * step
        struct.pack_into(e + 3 * code, data, base + size, k + 0.5, -k - 0.25, 2.0 * k)
        struct.pack_into(e + code, data, base, 10.0 * k)
        struct.pack_into(e + code, data, base + 4 * size + 4, -10.0 * k)
    fields = [PointField(name=n, offset=o, datatype=datatype, count=1)
              for n, o in (("z", 3 * size), ("a", 0), ("x", size), ("y", 2 * size), ("b", 4 * size + 4))]
    msg = PointCloud2(height=height, width=width, fields=fields, is_bigendian=big_endian, point_step=step,
                      row_step=width * step + row_pad, data=bytes(data))
    pts = read_cloud(msg, ["x", "y", "z", "a", "b"])
    xyz = float_columns(pts, ["x", "y", "z"])
    assert xyz.dtype == np.float64 and xyz.flags.c_contiguous and xyz.flags.writeable
    np.testing.assert_array_equal(xyz, [[k + 0.5, -k - 0.25, 2.0 * k] for k in range(6)])
    np.testing.assert_array_equal(float_columns(pts, ["a", "b"]), [[10.0 * k, -10.0 * k] for k in range(6)])
    np.testing.assert_array_equal(float_columns(pts, ["y", "x"]), xyz[:, [1, 0]])   # not in memory order
    np.testing.assert_array_equal(float_columns(pts[::2], ["x", "y", "z"]), xyz[::2])   # a strided selection
    empty = PointCloud2(height=1, width=0, fields=fields, is_bigendian=big_endian, point_step=step,
                        row_step=0)
    got = float_columns(read_cloud(empty, ["x", "y", "z"]), ["x", "y", "z"])   # no point: no buffer to view
    assert got.shape == (0, 3) and got.dtype == np.float64


def test_a_field_plan_is_reused_only_for_inputs_that_cannot_change():
    # read_points may reuse its last checked plan; an input changed in place must be read anew
    data = np.arange(6, dtype="<f4").tobytes()
    lay = CloudLayout((FieldSpec("x", 0, 7), FieldSpec("y", 4, 7), FieldSpec("z", 8, 7)), 1, 2, 12, 24, False)
    names = ["x"]
    read_points(lay, data, names)
    names.append("y")
    assert read_points(lay, data, names).dtype.names == ("x", "y")
    names[0] = "nope"
    with pytest.raises(CloudDecodeError) as err:
        read_points(lay, data, names)
    assert err.value.reason == "missing_field"
    allowed = {"x": (PointField.FLOAT32,)}
    read_points(lay, data, ("x",), (), allowed)
    allowed["x"] = (PointField.FLOAT64,)
    _reason(lambda: read_points(lay, data, ("x",), (), allowed), "bad_field_type", "x")
    fields = (PointField(name="x", offset=0, datatype=7, count=1),
              PointField(name="y", offset=4, datatype=7, count=1))
    lay2 = CloudLayout(fields, 1, 2, 12, 24, False)
    assert read_points(lay2, data, ("x", "y"))["y"].tolist() == [1.0, 4.0]
    fields[1].offset = 8                       # a message's PointField is mutable
    assert read_points(lay2, data, ("x", "y"))["y"].tolist() == [2.0, 5.0]
    fields[1].datatype = 8
    _reason(lambda: read_points(lay2, data, ("x", "y")), "bad_field_offset", "y")
    frozen = CloudLayout(FrozenFields(lay.fields), 1, 2, 12, 24, False)   # a plan may be kept for it
    names = ["x"]
    assert read_points(frozen, data, names).dtype.names == ("x",)
    names.append("z")
    assert read_points(frozen, data, names)["z"].tolist() == [2.0, 5.0]
    _reason(lambda: read_points(frozen, data[:-4], names), "bad_size", "bytes")   # data still checked
