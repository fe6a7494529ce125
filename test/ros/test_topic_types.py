"""foreign_publishers / wrong_type_message read the real ROS graph (one process, real rclpy + DDS)."""
import time

import pytest

pytest.importorskip("rclpy")


def _until(what, timeout=10.0):
    """Poll ``what()`` until it is truthy (graph discovery between participants takes a moment)."""
    end = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.05)


def test_a_publisher_of_another_type_is_named_with_its_node(private_ros):
    import rclpy
    from std_msgs.msg import Float32, String
    from rclpy.node import Node
    from vsf_sensor_ros.ros.topic_types import foreign_publishers, type_name, wrong_type_message
    ctx, _executor, _domain = private_ros
    # A participant of its own for each type: DDS refuses two types on one topic in one participant.
    other = rclpy.Context()
    rclpy.init(context=other)
    third = rclpy.Context()
    rclpy.init(context=third)
    checker = Node("type_checker", namespace="/rig", context=ctx)
    talker = Node("talker", namespace="/rig", context=other)
    good = Node("good_talker", namespace="/rig", context=third)
    try:
        assert type_name(Float32) == "std_msgs/msg/Float32"
        checker.create_subscription(Float32, "pressure", lambda m: None, 10)
        # nothing published yet, then only the expected type: no problem
        assert foreign_publishers(checker, "pressure", "std_msgs/msg/Float32") == []
        good.create_publisher(Float32, "/rig/pressure", 10)
        assert _until(lambda: checker.count_publishers("/rig/pressure") == 1)
        assert foreign_publishers(checker, "pressure", "std_msgs/msg/Float32") == []
        talker.create_publisher(String, "/rig/pressure", 10)
        assert _until(lambda: foreign_publishers(checker, "pressure", "std_msgs/msg/Float32"))
        # the type is known first, the node's name a moment later
        assert wrong_type_message("/rig/pressure", "std_msgs/msg/Float32", [("", "std_msgs/msg/String")]) == (
            "/rig/pressure carries std_msgs/msg/String, not std_msgs/msg/Float32")
        foreign = _until(lambda: [f for f in foreign_publishers(checker, "pressure", "std_msgs/msg/Float32")
                                  if f[0]])
        assert foreign == [("/rig/talker", "std_msgs/msg/String")]
        assert wrong_type_message("/rig/pressure", "std_msgs/msg/Float32", foreign) == (
            "/rig/pressure carries std_msgs/msg/String (from /rig/talker), not std_msgs/msg/Float32")
        assert wrong_type_message("/rig/pressure", "std_msgs/msg/Float32", []) == ""
    finally:
        for node in (good, talker, checker):
            node.destroy_node()
        for c in (other, third):
            rclpy.try_shutdown(context=c)
