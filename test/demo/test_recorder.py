"""The demo recorder keeps every message of real ROS publishers and writes a readable rosbag2 MCAP."""
import struct
import time

import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import FluidPressure, PointCloud2
from std_msgs.msg import String

from vsf_sensor_ros.demo.recorder import (TopicRecorder, cloud_point_count, header_stamp_ns, message_class,
                                          passes_message_info, write_bag)
from test.ros.node_helpers import spin_until


@pytest.fixture
def ros(private_ros):
    """A private rclpy context on a leased domain (see the root conftest)."""
    return private_ros


def pressure(sec, nanosec, value):
    msg = FluidPressure()
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    msg.header.frame_id = "punyo"
    msg.fluid_pressure = value
    msg.variance = 0.5
    return msg


def test_header_stamp_is_read_from_cdr_bytes_of_any_stamped_message():
    # 12 s + 345 ns -> 12_000_000_345 ns.
    assert header_stamp_ns(serialize_message(pressure(12, 345, 1.0))) == 12_000_000_345
    w = WrenchStamped()
    w.header.stamp.sec, w.header.stamp.nanosec = 3, 999_999_999
    assert header_stamp_ns(serialize_message(w)) == 3_999_999_999
    # Hand-built big-endian CDR: encapsulation 00 00 00 00, sec = -1, nanosec = 5 -> -1e9 + 5.
    big = bytes([0, 0, 0, 0]) + struct.pack(">iI", -1, 5) + b"\0" * 8
    assert header_stamp_ns(big) == -1_000_000_000 + 5


def test_header_stamp_rejects_short_or_headerless_bytes():
    with pytest.raises(ValueError):
        header_stamp_ns(b"\0\1\0\0\0\0")
    s = String()
    s.data = "no header here, just text"
    with pytest.raises(ValueError):
        header_stamp_ns(serialize_message(s))


@pytest.mark.parametrize("frame_id", ["", "w", "wo", "wor", "world", "base_link_long_name"])
def test_cloud_point_count_reads_height_times_width_for_any_frame_id_padding(frame_id):
    cloud = PointCloud2()
    cloud.header.frame_id = frame_id
    cloud.height, cloud.width = 3, 7
    assert cloud_point_count(serialize_message(cloud)) == 21
    cloud.height, cloud.width = 1, 0
    assert cloud_point_count(serialize_message(cloud)) == 0
    with pytest.raises(ValueError):
        cloud_point_count(serialize_message(cloud)[:16 + len(frame_id)])


def test_message_info_detection_matches_what_rclpy_actually_passes(ros):
    # Ask rclpy itself: a callback that needs two arguments gets (msg, info) where
    # the feature exists (Jazzy and Kilted, whether or not rclpy exports the
    # MessageInfo name) and is called with the message alone where it does not
    # (Humble), which raises TypeError out of the executor.
    ctx, executor, _ = ros
    node = rclpy.create_node("info_probe", context=ctx)
    executor.add_node(node)
    calls = []
    pub = node.create_publisher(String, "info_probe", 10)
    node.create_subscription(String, "info_probe", lambda msg, info: calls.append((msg.data, info)), 10)
    assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
    msg = String()
    msg.data = "probe"
    before_ns = time.time_ns()
    pub.publish(msg)
    try:
        got_info = spin_until(executor, lambda: len(calls) == 1)
    except TypeError:
        got_info = False
    assert passes_message_info() == got_info
    if got_info:
        data, info = calls[0]
        assert data == "probe"
        # Source timestamp: the publisher's wall clock at publish, this same host.
        assert before_ns - 1e9 <= int(info["source_timestamp"]) <= time.time_ns()
    node.destroy_node()


def test_message_class_imports_the_type_or_raises_naming_it():
    assert message_class("sensor_msgs/msg/FluidPressure") is FluidPressure
    for bad in ("no_such_pkg/msg/Thing", "sensor_msgs/FluidPressure"):
        with pytest.raises(ValueError, match=bad):
            message_class(bad)


def test_records_reliable_best_effort_and_latched_topics_and_writes_readable_mcap(ros, tmp_path):
    ctx, executor, _ = ros
    talker = rclpy.create_node("tiny_talker", context=ctx)
    rec_node = rclpy.create_node("tiny_recorder", context=ctx)
    executor.add_node(talker)
    executor.add_node(rec_node)
    latched_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
    best_effort = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
    pub_p = talker.create_publisher(FluidPressure, "punyo_pressure/predicted", 10)
    pub_w = talker.create_publisher(WrenchStamped, "pad/predicted", best_effort)
    pub_l = talker.create_publisher(String, "robot_description", latched_qos)
    latched = String()
    latched.data = "<robot name='r'/>"
    pub_l.publish(latched)  # before the recorder exists: only durability can deliver it

    recorder = TopicRecorder(rec_node, exclude=["/rosout", "/parameter_events"])
    wanted = {"/punyo_pressure/predicted", "/pad/predicted", "/robot_description"}
    assert spin_until(executor, lambda: wanted <= set(recorder.refresh()) | set(recorder.logs))
    # Wait until each publisher has matched our subscription before publishing.
    assert spin_until(executor, lambda: pub_p.get_subscription_count() > 0
                      and pub_w.get_subscription_count() > 0)
    assert rec_node.get_subscriptions_info_by_topic("/pad/predicted")[0].qos_profile.reliability \
        == ReliabilityPolicy.BEST_EFFORT
    values = [101325.0 + 10.0 * k for k in range(20)]
    for k, v in enumerate(values):
        pub_p.publish(pressure(k // 10, (k % 10) * 100_000_000, v))  # stamps 0.0, 0.1, ... 1.9 s
        w = WrenchStamped()
        w.header.stamp.sec = k
        w.wrench.force.z = -float(k)
        pub_w.publish(w)
        executor.spin_once(timeout_sec=0.005)
    assert spin_until(executor, lambda: len(recorder.logs["/punyo_pressure/predicted"]) == 20
                      and len(recorder.logs["/robot_description"]) == 1
                      and len(recorder.logs["/pad/predicted"]) >= 15)  # best effort may drop a few
    log = recorder.logs["/punyo_pressure/predicted"]
    assert log.msgtype == "sensor_msgs/msg/FluidPressure"
    assert log.stamps_ns() == [k * 100_000_000 for k in range(20)]
    assert all(b >= a for a, b in zip(log.recv_ns, log.recv_ns[1:]))
    assert [m.fluid_pressure for m in log.decode()] == values
    # Send times (publisher's DDS source timestamp, same host clock) precede receive times.
    assert len(log.sent_ns) == 20
    assert all(0 <= r - s < 5e9 for s, r in zip(log.sent_ns, log.recv_ns))
    recorder.stop()
    n_wrench = len(recorder.logs["/pad/predicted"])

    info = write_bag(recorder.logs.values(), tmp_path / "out")
    # zstd-compressed MCAP chunks: the file says so in its chunk records.
    assert b"zstd" in (tmp_path / "out" / "run.mcap").read_bytes()
    assert info["path"] == tmp_path / "out" / "run.mcap"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["metadata.yaml", "run.mcap"]

    # Read back with rosbags' own reader and deserializer (independent of rclpy).
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_KILTED)
    with Reader(tmp_path / "out") as reader:
        topics = {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
        assert topics == {"/punyo_pressure/predicted": ("sensor_msgs/msg/FluidPressure", 20),
                          "/pad/predicted": ("geometry_msgs/msg/WrenchStamped", n_wrench),
                          "/robot_description": ("std_msgs/msg/String", 1)}
        # Offered QoS survives: the latched topic is transient-local in the bag.
        qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
        assert qos["/robot_description"][0].durability.name == "TRANSIENT_LOCAL"
        assert qos["/pad/predicted"][0].reliability.name == "BEST_EFFORT"
        got = []
        for conn, t, raw in reader.messages():
            msg = typestore.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == "/punyo_pressure/predicted":
                got.append((msg.header.stamp.sec, msg.header.stamp.nanosec, msg.fluid_pressure))
            elif conn.topic == "/robot_description":
                assert msg.data == "<robot name='r'/>"
            else:
                assert msg.wrench.force.z == -float(msg.header.stamp.sec)
        assert got == [(k // 10, (k % 10) * 100_000_000, v) for k, v in enumerate(values)]
        # Log times are wall receive times in order.
        times = [t for _, t, _ in reader.messages()]
        assert times == sorted(times) and times[0] > 1.6e18
    talker.destroy_node()
    rec_node.destroy_node()


def test_bag_reads_with_the_official_mcap_library_as_foxglove_sees_it(tmp_path):
    """Independent reader: Foxglove's own ``mcap`` package, no rosbags, no rclpy."""
    mcap_reader = pytest.importorskip("mcap.reader")
    from vsf_sensor_ros.demo.recorder import TopicLog
    raw = [serialize_message(pressure(0, k, 100.0 + k)) for k in range(5)]
    write_bag([TopicLog("/punyo_pressure/predicted", "sensor_msgs/msg/FluidPressure",
                        [10 + k for k in range(5)], raw)], tmp_path)
    with open(tmp_path / "run.mcap", "rb") as f:
        reader = mcap_reader.make_reader(f)
        assert reader.get_header().profile == "ros2"
        got = list(reader.iter_messages())
        stats = reader.get_summary().statistics
    assert stats.message_count == 5
    schema, channel, message = got[0]
    assert schema.name == "sensor_msgs/msg/FluidPressure" and schema.encoding == "ros2msg"
    # The embedded definition is the standard one, with Header's definition appended.
    text = schema.data.decode()
    assert "float64 fluid_pressure" in text and "float64 variance" in text and "MSG: std_msgs/Header" in text
    assert channel.topic == "/punyo_pressure/predicted" and channel.message_encoding == "cdr"
    # Bytes unchanged, log times = receive times.
    assert [m.data for _, _, m in got] == raw
    assert [m.log_time for _, _, m in got] == [10, 11, 12, 13, 14]


def test_write_bag_leaves_out_types_rosbags_does_not_know(tmp_path):
    from vsf_sensor_ros.demo.recorder import TopicLog
    good = TopicLog("/p", "sensor_msgs/msg/FluidPressure", [1, 2],
                    [serialize_message(pressure(0, 1, 5.0)), serialize_message(pressure(0, 2, 6.0))])
    odd = TopicLog("/x", "my_pkg/msg/Custom", [3], [b"\0\1\0\0"])
    info = write_bag([good, odd], tmp_path)
    assert info["counts"] == {"/p": 2}
    assert "my_pkg/msg/Custom" in info["left_out"]["/x"]
