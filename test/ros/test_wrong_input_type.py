"""A publisher of the wrong message type that appears after the node started is named on /diagnostics.

The usual order on a robot: sensor_node starts, then the drivers.  A driver publishing another
type on an input topic never connects to the node's subscription, so the input stays silent; the
sensor status, the inputs status and the topic status then say what the topic carries instead
and from which node, and the node logs it once at WARN (read here from ``/rosout``).

The wrong publisher lives in a second rclpy Context (its own DDS participant, as a driver process
would be: one participant cannot hold two types on one topic, see test_topic_types.py); the node
under test is the real in-process ``SensorNode`` of test_loud_configuration.py.  Every expected
sentence is built from the topic, the type the test configured and the publisher's node name.
"""
from __future__ import annotations

from typing import List

import pytest
import rclpy
from geometry_msgs.msg import Pose
from rcl_interfaces.msg import Log
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32, String

from .test_loud_configuration import NS, _params, level, make, values  # noqa: F401 (make: fixture)

LOAD = {"sensors": ["load"], "load.type": "IsaacContactSensor", "load.attachment": "object",
        "load.publish_markers": False, "load.publish_jacobian": False}

# (the input, sensor, parameters, topic, the type the node subscribes, the wrong type published)
CASES = [
    ("joint_states", "pressure", {}, f"{NS}/joint_states", "sensor_msgs/msg/JointState", String),
    ("contacts", "pressure", {}, f"{NS}/contacts", "sensor_msgs/msg/PointCloud2", Image),
    ("pose", "load", LOAD, f"{NS}/object/pose", "geometry_msgs/msg/PoseStamped", Pose),
    ("measured", "pressure", {"pressure.measured_topic": "/rig/pressure"}, "/rig/pressure",
     "sensor_msgs/msg/FluidPressure", Float32),
    # the default measured topic: silence there is a prediction-only sensor, another type is not
    ("default_measured", "pressure", {}, f"{NS}/pressure/measured", "sensor_msgs/msg/FluidPressure",
     Float32),
]
WRONG_NAMES = {String: "std_msgs/msg/String", Image: "sensor_msgs/msg/Image", Pose: "geometry_msgs/msg/Pose",
               Float32: "std_msgs/msg/Float32"}


@pytest.fixture
def driver_context(rclpy_context):
    """A second rclpy Context on the session's domain: the wrong driver's own participant."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_wrong_type_published_after_start_is_named_with_its_publisher_and_logged_once(
        make, driver_context, case):  # noqa: F811 (make: the fixture imported above)
    _, sensor, extra, topic, expected, wrong = case
    node, lis = make(parameter_overrides=_params(**extra))
    logs: List[Log] = []
    lis.probe.create_subscription(Log, "/rosout", logs.append, 100)
    # no driver yet (input_timeout 1 s): the plain sentence; nothing on the default measured topic
    optional = case[0] == "default_measured"
    plain = f"no {expected} on {topic} since start"
    contacts = f"no sensor_msgs/msg/PointCloud2 on {NS}/contacts since start"

    def before(st) -> bool:
        return topic not in st.message and contacts in st.message if optional else plain in st.message
    lis.status(f": {sensor}", before)

    driver = Node("driver", namespace=NS, context=driver_context)
    try:
        driver.create_publisher(wrong, topic, 10)
        cause = f"{topic} carries {WRONG_NAMES[wrong]} (from {NS}/driver), not {expected}"
        sentence = f"no {expected} on {topic}: {cause}"
        st = lis.status(f": {sensor}", lambda st: sentence in st.message)
        assert level(st) == 1
        inputs = lis.status(": inputs", lambda st: sentence in values(st)["inputs.problems"])
        assert level(inputs) == 1
        assert "inputs missing or stopped: " in inputs.message and topic in values(inputs)["inputs.missing"]
        freq = lis.status(f"{topic} topic status", lambda st: cause in st.message)
        assert level(freq) == 1
        # ten more reports (0.2 s apart): the problem is logged once, at WARN, by the node
        lis.spin(2.0)
        logged = [m for m in logs if sentence in m.msg]
        assert len(logged) == 1, [m.msg for m in logged]
        assert logged[0].level == Log.WARN and logged[0].name == f"{NS[1:]}.sensor_node"
    finally:
        driver.destroy_node()
    # the wrong driver gone: the sentence is the plain one again (none for the default measured topic)
    lis.status(f": {sensor}", lambda st: before(st) and "carries" not in st.message)
