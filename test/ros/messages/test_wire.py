"""The node's CDR codec checked with rclpy's own serialiser, over randomised messages.

Decoders read what ``serialize_message`` wrote; encoders' bytes are read back with
``deserialize_message`` and every field is compared with the value it must carry.
"""
import struct

import numpy as np
import pytest
import rclpy
import torch
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2, PointField

from vsf_sensor_ros.ros.messages import wire as cdr
from vsf_sensor_ros.ros import kinds
from vsf_sensor_ros.ros.messages import readings as enc
from vsf_sensor_ros.ros.kinematics import decode_joint_state
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts

from test.ros.node_helpers import spin_until

ALPHABET = list("abcxyz_019 ") + ["é", "ß", "中", "文", "😀", "Ω"]
SIZES = {PointField.INT8: 1, PointField.UINT8: 1, PointField.INT16: 2, PointField.UINT16: 2,
         PointField.INT32: 4, PointField.UINT32: 4, PointField.FLOAT32: 4, PointField.FLOAT64: 8}


def rand_text(rng: np.random.Generator, max_len: int = 9) -> str:
    return "".join(rng.choice(ALPHABET, size=int(rng.integers(0, max_len + 1))))


def rand_time(rng: np.random.Generator) -> Time:
    return Time(sec=int(rng.integers(0, 2**31)), nanosec=int(rng.integers(0, 10**9)))


# -- decoders ---------------------------------------------------------------------------------
def test_joint_state_decoder_equals_the_message_for_random_messages():
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(0, 9))
        msg = JointState()
        msg.header.stamp = rand_time(rng)
        msg.header.frame_id = rand_text(rng)
        msg.name = [rand_text(rng) for _ in range(n)]
        # each array independently empty, full, or of another length
        for attr in ("position", "velocity", "effort"):
            k = int(rng.choice([0, n, int(rng.integers(0, 5))]))
            setattr(msg, attr, rng.standard_normal(k).tolist())
        got = decode_joint_state(serialize_message(msg))
        assert got.header.stamp.sec == msg.header.stamp.sec
        assert got.header.stamp.nanosec == msg.header.stamp.nanosec
        assert got.header.frame_id == msg.header.frame_id
        assert got.name == list(msg.name)
        for attr in ("position", "velocity", "effort"):
            want = np.array(getattr(msg, attr), dtype=np.float64)
            assert getattr(got, attr).dtype == np.float64
            assert getattr(got, attr).tobytes() == want.tobytes(), (trial, attr)


def test_repeated_joint_names_and_layouts_are_decoded_afresh_when_their_bytes_change():
    # a driver repeats its names (the decoder reuses the parse of identical bytes); names of the
    # same length at the same offset, a renamed field and a truncated copy must still be read anew
    def js(names, frame="base"):
        return JointState(name=names, position=[0.5] * len(names))
    seq = [js(["j1", "j2"]), js(["j1", "j2"]), js(["j1", "j3"]), js(["j1", "j2"], "bas2"), js(["j1", "j2"]),
           js(["j1"]), js(["j1", "j2", "j4"])]
    for msg in seq:
        got = decode_joint_state(serialize_message(msg))
        assert got.name == list(msg.name) and got.header.frame_id == msg.header.frame_id
        got.name.append("x")          # the caller's list is its own
    raw = serialize_message(js(["j1", "j2"]))
    decode_joint_state(raw)
    with pytest.raises(cdr.CdrDecodeError):
        decode_joint_state(raw[:20])       # inside the names section that was just cached

    def cloud(names, step=12, dt=PointField.FLOAT32):
        fields = [PointField(name=n, offset=4 * i, datatype=dt, count=1) for i, n in enumerate(names)]
        return PointCloud2(height=1, width=2, fields=fields, point_step=step, row_step=2 * step,
                           data=bytes(range(2 * step)))
    for msg in (cloud("xyz"), cloud("xyz"), cloud("xyw"), cloud("xyz", step=16),
                cloud("xyz", dt=PointField.INT32), cloud("xyz")):
        got = cdr.decode_pointcloud2(serialize_message(msg))
        assert [(f.name, f.offset, f.datatype) for f in got.fields] == [
            (f.name, f.offset, f.datatype) for f in msg.fields]
        assert (got.point_step, got.row_step, got.data.tobytes()) == (msg.point_step, msg.row_step,
                                                                      bytes(msg.data))
    raw = serialize_message(cloud("xyz"))
    with pytest.raises(cdr.CdrDecodeError):
        cdr.decode_pointcloud2(raw[:40])


def rand_cloud(rng: np.random.Generator, names=None, data: bytes = None) -> PointCloud2:
    """A cloud of random layout: field order, gaps, datatypes, endianness, height, row padding."""
    if names is None:
        names = [rand_text(rng, 5) or "f" for _ in range(int(rng.integers(0, 7)))]
    order = rng.permutation(len(names))
    fields, offset = [], 0
    for i in order:
        dt = int(rng.integers(1, 9))
        offset += int(rng.integers(0, 4))
        fields.append(PointField(name=names[i], offset=offset, datatype=dt,
                                 count=int(rng.choice([1, 1, 2]))))
        offset += SIZES[dt] * fields[-1].count
    step = offset + int(rng.integers(0, 5))
    h, w = int(rng.integers(0, 4)), int(rng.integers(0, 6))
    row = w * step + int(rng.integers(0, 7))
    msg = PointCloud2(height=h, width=w, fields=fields, is_bigendian=bool(rng.integers(0, 2)),
                      point_step=step, row_step=row, is_dense=bool(rng.integers(0, 2)))
    msg.header.stamp = rand_time(rng)
    msg.header.frame_id = rand_text(rng)
    msg.data = rng.integers(0, 256, size=h * row, dtype=np.uint8).tobytes() if data is None else data
    return msg


def test_pointcloud2_decoder_equals_the_message_for_random_layouts():
    rng = np.random.default_rng(2)
    for trial in range(300):
        msg = rand_cloud(rng)
        got = cdr.decode_pointcloud2(serialize_message(msg))
        assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (
            msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
        assert [(f.name, f.offset, f.datatype, f.count) for f in got.fields] == [
            (f.name, f.offset, f.datatype, f.count) for f in msg.fields]
        assert (got.height, got.width, got.is_bigendian, got.point_step, got.row_step, got.is_dense) == (
            msg.height, msg.width, msg.is_bigendian, msg.point_step, msg.row_step, msg.is_dense)
        assert got.data.dtype == np.uint8 and got.data.tobytes() == bytes(msg.data), trial


def contacts_cloud(rng: np.random.Generator, n_bodies: int) -> PointCloud2:
    """A valid contacts cloud of random layout (float32/64 coordinates, int body ids)."""
    names = ["x", "y", "z", "fx", "fy", "fz", "body1", "body2"]
    if rng.integers(0, 2):
        names += ["elem1", "elem2"]
    order = rng.permutation(len(names))
    fields, offset, dtypes = [], 0, {}
    for i in order:
        nm = names[i]
        if nm.startswith("body"):
            dt = int(rng.choice([PointField.UINT32, PointField.UINT16]))
        elif nm.startswith("elem"):
            dt = PointField.INT32
        else:
            dt = int(rng.choice([PointField.FLOAT32, PointField.FLOAT64]))
        offset += int(rng.integers(0, 3)) * SIZES[dt]
        fields.append(PointField(name=nm, offset=offset, datatype=dt, count=1))
        dtypes[nm] = dt
        offset += SIZES[dt]
    step = offset + int(rng.integers(0, 4))
    h, w = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    row = w * step + int(rng.integers(0, 5))
    big = bool(rng.integers(0, 2))
    e = ">" if big else "<"
    codes = {PointField.FLOAT32: "f4", PointField.FLOAT64: "f8", PointField.UINT32: "u4",
             PointField.INT32: "i4", PointField.UINT16: "u2"}
    buf = np.zeros(h * row, dtype=np.uint8)
    for r in range(h):
        for c in range(w):
            base = r * row + c * step
            for f in fields:
                if f.name.startswith("body"):
                    v = rng.integers(0, n_bodies)
                elif f.name.startswith("elem"):
                    v = rng.integers(-1, 50)
                else:
                    v = rng.standard_normal()
                b = np.array([v], dtype=e + codes[f.datatype]).tobytes()
                buf[base + f.offset: base + f.offset + len(b)] = np.frombuffer(b, np.uint8)
    msg = PointCloud2(height=h, width=w, fields=fields, is_bigendian=big, point_step=step,
                      row_step=row, is_dense=True)
    msg.header.frame_id = "world"
    msg.header.stamp = rand_time(rng)
    msg.data = buf.tobytes()
    return msg


def test_decoded_contacts_cloud_gives_the_same_contacts_as_the_message():
    rng = np.random.default_rng(3)
    bodies = ["punyo", "object", "table"]
    for trial in range(60):
        msg = contacts_cloud(rng, len(bodies))
        ref = pointcloud2_to_contacts(msg, bodies, expected_frame_id="world")
        got = pointcloud2_to_contacts(cdr.decode_pointcloud2(serialize_message(msg)), bodies,
                                      expected_frame_id="world")
        assert (got.stamp_ns, got.frame_id, got.num_points, got.fields) == (
            ref.stamp_ns, ref.frame_id, ref.num_points, ref.fields)
        assert list(got.contacts) == list(ref.contacts)
        for pair, c in ref.contacts.items():
            assert torch.equal(got.contacts[pair].points, c.points)
            assert torch.equal(got.contacts[pair].forces, c.forces)
            for attr in ("elems1", "elems2"):
                a, b = getattr(got.contacts[pair], attr), getattr(c, attr)
                assert (a is None and b is None) or torch.equal(a, b)
            assert got.rows[pair].tolist() == ref.rows[pair].tolist()


def test_decoded_cloud_reads_the_same_field_columns_as_the_message():
    # the measured-cloud reader takes any object with the PointCloud2 attributes
    rng = np.random.default_rng(8)
    checked = 0
    for _ in range(200):
        msg = rand_cloud(rng, names=["fx", "fy", "fz", "q"])
        if any(f.count != 1 for f in msg.fields):
            continue
        floats = rng.standard_normal(len(msg.data) // 8 + 1).tobytes()[:len(msg.data)]
        # bytes of random doubles: read at other offsets or widths some values are NaN/inf, and then
        # both readers must reject the cloud with the same reason
        msg.data = floats
        try:
            ref = enc.read_cloud_fields(msg, ["fx", "fy", "fz"])
        except enc.MeasuredDecodeError as exc:
            with pytest.raises(enc.MeasuredDecodeError) as err:
                enc.read_cloud_fields(cdr.decode_pointcloud2(serialize_message(msg)), ["fx", "fy", "fz"])
            assert err.value.reason == exc.reason
            continue
        got = enc.read_cloud_fields(cdr.decode_pointcloud2(serialize_message(msg)), ["fx", "fy", "fz"])
        for k in ref:
            assert got[k].tobytes() == ref[k].tobytes()
        checked += 1
    assert checked >= 20


def test_big_endian_and_xcdr2_joint_states_written_by_hand():
    # JointState{stamp 7 s 9 ns, frame "ab", name ["j"], position [1.5], velocity [], effort [-2.0]}.
    # Offsets below count from the end of the 4-byte encapsulation header.
    def body(e: str) -> bytes:
        b = struct.pack(e + "iI", 7, 9)                      # 0..7 stamp
        b += struct.pack(e + "I", 3) + b"ab\x00" + b"\x00"   # 8..11 len, 12..14 text, 15 pad
        b += struct.pack(e + "I", 1)                         # 16 name count
        b += struct.pack(e + "I", 2) + b"j\x00" + b"\x00\x00"  # 20 len, 24..25, pad to 28
        b += struct.pack(e + "I", 1)                         # 28 position count -> 32
        b += struct.pack(e + "d", 1.5)                       # 32 is 8-aligned: no pad either way
        b += struct.pack(e + "I", 0)                         # 40 velocity count (empty)
        b += struct.pack(e + "I", 1)                         # 44 effort count -> 48 (8-aligned)
        b += struct.pack(e + "d", -2.0)
        return b
    for head, e in ((b"\x00\x00\x00\x00", ">"), (b"\x00\x07\x00\x00", "<"), (b"\x00\x06\x00\x00", ">")):
        got = decode_joint_state(head + body(e))
        assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (7, 9, "ab")
        assert got.name == ["j"]
        assert got.position.tolist() == [1.5] and got.velocity.size == 0 and got.effort.tolist() == [-2.0]
    # XCDR2 aligns 8-byte values to 4 only.  Frame "abcde": length at 8, text 12..17, pad to 20;
    # no names (count at 20); position count at 24 ends at 28: XCDR1 pads to 32, XCDR2 does not.
    e = "<"
    core = struct.pack(e + "iI", 0, 0) + struct.pack(e + "I", 6) + b"abcde\x00" + b"\x00" * 2
    core += struct.pack(e + "I", 0) + struct.pack(e + "I", 1)
    tail = struct.pack(e + "d", 3.25) + b"\x00" * 8            # value, empty velocity and effort
    x1 = b"\x00\x01\x00\x00" + core + b"\x00" * 4 + tail
    x2 = b"\x00\x07\x00\x00" + core + tail
    assert decode_joint_state(x1).position.tolist() == [3.25]
    assert decode_joint_state(x2).position.tolist() == [3.25]


def test_truncated_or_foreign_buffers_are_rejected_with_a_reason():
    msg = JointState(name=["a", "b"], position=[1.0, 2.0])
    raw = serialize_message(msg)
    # encapsulation 4, stamp 8, frame "" 4+1(+3 pad), names 4+(4+2+2)+(4+2+2), position 4+16 (its
    # values start at offset 40 of the data, already 8-aligned), velocity and effort counts 4+4:
    # the message ends at byte 68 (rmw's buffer is longer: it reserves padding it never writes).
    real_end = 4 + 8 + 8 + 4 + 8 + 8 + 4 + 16 + 8
    for cut in range(real_end):
        with pytest.raises(cdr.CdrDecodeError) as err:
            decode_joint_state(raw[:cut])
        assert err.value.reason == "malformed_cdr"
    with pytest.raises(cdr.CdrDecodeError) as err:
        decode_joint_state(b"\x00\x03\x00\x00" + raw[4:])
    assert err.value.reason == "unsupported_encapsulation"
    cloud = serialize_message(PointCloud2(height=1, width=1, point_step=1, row_step=1, data=b"\x05"))
    for cut in range(len(cloud) - 1):
        with pytest.raises(cdr.CdrDecodeError):
            cdr.decode_pointcloud2(cloud[:cut])


def test_string_without_terminator_is_rejected():
    raw = bytearray(serialize_message(JointState(name=["abc"])))
    raw[4 + 8 + 4 + 1 + 3 + 4 + 4 + 3] = ord("d")        # the NUL of "abc"
    with pytest.raises(cdr.CdrDecodeError):
        decode_joint_state(bytes(raw))


# -- encoders ---------------------------------------------------------------------------------
def stamp_pair(rng: np.random.Generator):
    t = rand_time(rng)
    return t, t.sec * 1_000_000_000 + t.nanosec


def check_header(msg, ns: int, frame: str) -> None:
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == divmod(ns, 1_000_000_000)
    assert msg.header.frame_id == frame


def check_cloud(msg: PointCloud2, fields, n: int) -> np.ndarray:
    """An unorganised packed little-endian cloud of ``n`` points with ``fields`` ((name, dtype)
    pairs, in order); returns its points as a record array."""
    dt = np.dtype([(nm, "<" + code) for nm, code in fields])
    codes = {"f4": PointField.FLOAT32, "f8": PointField.FLOAT64, "u4": PointField.UINT32}
    offsets = np.cumsum([0] + [np.dtype(c).itemsize for _, c in fields])[:-1].tolist()
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        (nm, off, codes[c], 1) for (nm, c), off in zip(fields, offsets)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (1, n, dt.itemsize, n * dt.itemsize)
    assert (msg.is_bigendian, msg.is_dense) == (False, True)
    return np.frombuffer(bytes(msg.data), dtype=dt, count=n)


def test_pressure_encoder_writes_the_value_and_the_squared_error():
    rng = np.random.default_rng(4)
    for _ in range(100):
        t, ns = stamp_pair(rng)
        frame = rand_text(rng)
        std = None if rng.integers(0, 2) else [float(rng.uniform(0, 50))]
        lay = kinds.sensor_layout("PunyoPressureSensor", frame, ["pressure"], std)
        vals = rng.standard_normal(1) * 1e5
        msg = deserialize_message(enc.encode_vector(lay, vals, ns), FluidPressure)
        check_header(msg, ns, frame)
        assert msg.fluid_pressure == vals[0]
        assert msg.variance == (0.0 if std is None else std[0] ** 2)


def test_wrench_and_load_encoders_write_the_force_and_no_torque():
    rng = np.random.default_rng(5)
    for _ in range(100):
        t, ns = stamp_pair(rng)
        frame = rand_text(rng)
        vals = rng.standard_normal(4) * 10
        if rng.integers(0, 2):
            axes = [a for a in ("force_x", "force_y", "force_z") if rng.integers(0, 3)]
            names = axes + ["contact"]
            lay = kinds.sensor_layout("ContactSensor", frame, names, None)
            # an axis the pad does not measure is 0; the contact flag has no slot
            want = [vals[axes.index(a)] if a in axes else 0.0 for a in ("force_x", "force_y", "force_z")]
        else:
            names = ["value", "in_contact"]
            lay = kinds.sensor_layout("IsaacContactSensor", frame, names, None)
            want = [0.0, 0.0, vals[0]]          # the load cell's one axis is z
        msg = deserialize_message(enc.encode_vector(lay, vals[:len(names)], ns), WrenchStamped)
        check_header(msg, ns, frame)
        f, tq = msg.wrench.force, msg.wrench.torque
        assert [f.x, f.y, f.z] == want and [tq.x, tq.y, tq.z] == [0.0, 0.0, 0.0]


def test_dense_force_encoder_writes_each_vertex_and_its_force_as_float32():
    rng = np.random.default_rng(6)
    for _ in range(60):
        t, ns = stamp_pair(rng)
        v = int(rng.integers(0, 40))
        verts = rng.standard_normal((v, 3)).astype(np.float32)
        names = [f"p{i}_{a}" for i in range(v) for a in "xyz"]
        frame = rand_text(rng)
        lay = kinds.sensor_layout("PunyoDenseForceSensor", frame, names, None, verts)
        vals = rng.standard_normal(3 * v)
        msg = deserialize_message(enc.encode_vector(lay, vals, ns), PointCloud2)
        check_header(msg, ns, frame)
        pts = check_cloud(msg, [(c, "f4") for c in ("x", "y", "z", "fx", "fy", "fz")], v)
        for k, c in enumerate("xyz"):
            assert pts[c].tolist() == verts[:, k].tolist()
            assert pts["f" + c].tolist() == vals[k::3].astype(np.float32).tolist()


def test_jacobian_encoder_writes_the_nonzeros_in_order():
    rng = np.random.default_rng(7)
    for _ in range(60):
        t, ns = stamp_pair(rng)
        nnz = int(rng.integers(0, 200))
        rows = rng.integers(0, 2000, nnz)
        cols = rng.integers(0, 300, nnz)
        vals = rng.standard_normal(nnz) * (rng.random(nnz) > 0.2)   # some exact zeros, dropped
        frame = rand_text(rng) or "world"
        msg = deserialize_message(enc.encode_jacobian(rows, cols, vals, ns, frame), PointCloud2)
        check_header(msg, ns, frame)
        keep = [i for i in range(nnz) if vals[i] != 0.0]
        pts = check_cloud(msg, [("row", "u4"), ("col", "u4"), ("value", "f8")], len(keep))
        assert list(zip(pts["row"].tolist(), pts["col"].tolist(), pts["value"].tolist())) == [
            (int(rows[i]), int(cols[i]), float(vals[i])) for i in keep]


def test_encoded_cloud_round_trips_through_the_decoder():
    recs = np.zeros(3, dtype=[("row", "<u4"), ("col", "<u4"), ("value", "<f8")])
    recs["row"], recs["col"], recs["value"] = [1, 2, 3], [4, 5, 6], [0.5, -1.0, 2.0]
    got = cdr.decode_pointcloud2(enc.encode_pointcloud2(5_000_000_001, "wörld", recs))
    assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (5, 1, "wörld")
    assert [(f.name, f.offset, f.datatype, f.count) for f in got.fields] == [
        ("row", 0, PointField.UINT32, 1), ("col", 4, PointField.UINT32, 1),
        ("value", 8, PointField.FLOAT64, 1)]
    assert (got.height, got.width, got.point_step, got.row_step) == (1, 3, 16, 48)
    assert struct.unpack_from("<IId", got.data.tobytes(), 16) == (2, 5, -1.0)


def test_encoders_reject_bad_input_with_the_value_named():
    with pytest.raises(ValueError, match="-1"):
        enc.encode_fluid_pressure(-1, "a", 1.0, 0.0)
    with pytest.raises(ValueError):
        enc.encode_dense_force(0, "a", np.zeros((4, 3)), np.zeros(9))
    with pytest.raises(ValueError, match="'q'"):
        enc.encode_pointcloud2(0, "a", np.zeros(2, dtype=[("q", "<i8")]))
    with pytest.raises(ValueError):
        gap = np.dtype({"names": ["a"], "formats": ["<f4"], "offsets": [4], "itemsize": 8})
        enc.encode_pointcloud2(0, "a", np.zeros(2, dtype=gap))


# -- over real DDS ----------------------------------------------------------------------------
def test_raw_subscription_delivers_bytes_and_publisher_sends_bytes(rclpy_context):
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    node = rclpy.create_node("cdr_wire_test")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        raw_in, objects_in = [], []
        node.create_subscription(JointState, "cdr_test/joints", raw_in.append, qos, raw=True)
        node.create_subscription(PointCloud2, "cdr_test/jacobian", objects_in.append, qos)
        pub_js = node.create_publisher(JointState, "cdr_test/joints", qos)
        pub_jac = node.create_publisher(PointCloud2, "cdr_test/jacobian", qos)
        spin_until(ex, lambda: pub_js.get_subscription_count() and pub_jac.get_subscription_count())

        sent = JointState(name=["shoulder", "é"], position=[0.5, -1.25], effort=[3.0])
        sent.header.stamp = Time(sec=4, nanosec=44)
        pub_js.publish(sent)
        rows, cols, vals = np.array([0, 7]), np.array([3, 2]), np.array([1.5, -0.25])
        pub_jac.publish(enc.encode_jacobian(rows, cols, vals, 9_000_000_001, "world"))
        spin_until(ex, lambda: raw_in and objects_in)

        assert isinstance(raw_in[0], bytes)
        got = decode_joint_state(raw_in[0])
        assert got.name == ["shoulder", "é"] and got.position.tolist() == [0.5, -1.25]
        assert got.effort.tolist() == [3.0] and got.velocity.size == 0
        assert (got.header.stamp.sec, got.header.stamp.nanosec) == (4, 44)
        jac = objects_in[0]
        assert (jac.header.stamp.sec, jac.header.stamp.nanosec, jac.header.frame_id) == (9, 1, "world")
        assert np.frombuffer(bytes(jac.data), dtype=[("row", "<u4"), ("col", "<u4"), ("value", "<f8")]
                             ).tolist() == [(0, 3, 1.5), (7, 2, -0.25)]
    finally:
        ex.shutdown()
        node.destroy_node()


def test_a_repeated_contacts_layout_is_still_checked_against_each_message():
    rng = np.random.default_rng(7)
    msg = contacts_cloud(rng, 3)
    first = cdr.decode_pointcloud2(serialize_message(msg))
    again = cdr.decode_pointcloud2(serialize_message(msg))
    assert again.fields is first.fields            # the repeated layout's parse is reused
    bodies = ["punyo", "object", "table"]
    want = pointcloud2_to_contacts(msg, bodies)
    got = pointcloud2_to_contacts(again, bodies)
    assert list(got.contacts) == list(want.contacts)
    short = PointCloud2(header=msg.header, height=msg.height, width=msg.width, fields=msg.fields,
                        is_bigendian=msg.is_bigendian, point_step=msg.point_step, row_step=msg.row_step,
                        data=bytes(msg.data)[:-1])
    with pytest.raises(ValueError) as info:        # same layout, data one byte short: still rejected
        pointcloud2_to_contacts(cdr.decode_pointcloud2(serialize_message(short)), bodies)
    assert info.value.reason == "bad_size"
