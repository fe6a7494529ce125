"""wrench_contact_node over real DDS (the session's leased domain, loopback only): one wrench and one
joint state in, the contacts cloud out; the bias tare service.

Same one-joint world as test_wrench_contacts: at q = pi/2 the tool's x axis is world +y, the body
sits 0.1 m up the tool's z and the contact point is (0.02, 0, 0) in the body frame.
"""
import math

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState, PointCloud2
from std_srvs.srv import Trigger

from test.contact_sources.test_wrench_contacts import BODY_T, URDF
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
from vsf_sensor_ros.contact_sources.wrench_contact_node import WrenchContactNode
from test.ros.node_helpers import spin_until

BODIES = ["punyo", "indenter"]


@pytest.fixture
def nodes(ros_domain_id):
    # a private context: the default one stays free for tests that run main()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domain_id)
    node = WrenchContactNode(context=ctx, parameter_overrides=[
        Parameter("robot_description", value=URDF), Parameter("contact_body_names", value=BODIES),
        Parameter("body", value="punyo"), Parameter("other_body", value="indenter"),
        Parameter("body_parent", value="tool"),
        Parameter("body_transform", value=BODY_T.reshape(-1).tolist()),
        Parameter("contact_point", value=[0.02, 0.0, 0.0]), Parameter("bias_samples", value=1)])
    probe = Node("wrench_probe", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    executor.add_node(probe)
    yield node, probe, executor
    executor.shutdown()
    probe.destroy_node()
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def test_wrench_and_joint_state_become_one_contact_in_the_world(nodes):
    node, probe, executor = nodes
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    got = []
    probe.create_subscription(PointCloud2, "contacts", got.append, qos)
    pub_w = probe.create_publisher(WrenchStamped, "wrench", qos)
    pub_j = probe.create_publisher(JointState, "joint_states", qos)
    assert spin_until(executor, lambda: pub_w.get_subscription_count() and pub_j.get_subscription_count()
                      and node.pub.get_subscription_count())

    def wrench(t, f):
        m = WrenchStamped()
        m.header.stamp, m.header.frame_id = ns_to_stamp(int(t * 1e9)), "tool"
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = f
        pub_w.publish(m)

    def joints(t):
        m = JointState()
        m.header.stamp = ns_to_stamp(int(t * 1e9))
        m.name, m.position = ["j"], [math.pi / 2]
        pub_j.publish(m)

    wrench(1.0, (0.0, 0.0, 0.0))                         # the bias (1 sample): zero
    assert spin_until(executor, lambda: node.source.bias.bias is not None)
    joints(2.0)
    assert spin_until(executor, lambda: len(node.source._pending) == 1)
    wrench(2.0, (2.0, 0.0, 1.0))
    assert spin_until(executor, lambda: len(got) == 1)
    msg = got[0]
    assert msg.header.frame_id == "world" and msg.header.stamp.sec == 2 and msg.header.stamp.nanosec == 0
    (pair, c), = pointcloud2_to_contacts(msg, BODIES).contacts.items()
    assert pair == ("punyo", "indenter")
    np.testing.assert_allclose(c.points[0].numpy(), [0.5, 0.02, 0.1], atol=1e-9)
    np.testing.assert_allclose(c.forces[0].numpy(), [0.0, 2.0, 1.0], atol=1e-9)   # tool x = world y

    client = probe.create_client(Trigger, "/wrench_contact_node/tare")
    assert spin_until(executor, client.service_is_ready)
    future = client.call_async(Trigger.Request())
    assert spin_until(executor, future.done)
    assert future.result().success and "bias from 1 of 1 samples: (2.0000, 0.0000, 1.0000) N" in \
        future.result().message


def test_zero_stamps_are_rejected_counted_by_topic_and_never_paired(nodes, capfd):
    """A wrench or joint state stamped 0 (a driver that never sets the stamp) is named on
    /diagnostics and in the log and pairs with nothing: the joint state at t = 2 s still gets the
    wrench at t = 2 s, force (2, 0, 1) in the tool = (0, 2, 1) in the world, by hand."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    node, probe, executor = nodes
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    got, diag = [], []
    probe.create_subscription(PointCloud2, "contacts", got.append, qos)
    probe.create_subscription(DiagnosticArray, "/diagnostics", diag.append, 10)
    pub_w = probe.create_publisher(WrenchStamped, "wrench", qos)
    pub_j = probe.create_publisher(JointState, "joint_states", qos)
    assert spin_until(executor, lambda: pub_w.get_subscription_count() and pub_j.get_subscription_count()
                      and node.pub.get_subscription_count())

    def wrench(t, f):
        m = WrenchStamped()
        m.header.stamp, m.header.frame_id = ns_to_stamp(int(t * 1e9)), "tool"
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = f
        pub_w.publish(m)

    def joints(t):
        m = JointState()
        m.header.stamp = ns_to_stamp(int(t * 1e9))
        m.name, m.position = ["j"], [math.pi / 2]
        pub_j.publish(m)

    wrench(1.0, (0.0, 0.0, 0.0))                          # the bias (1 sample): zero
    assert spin_until(executor, lambda: node.source.bias.bias is not None)
    joints(0.0)                                           # would pair with the wrench at 1 s
    wrench(0.0, (9.0, 9.0, 9.0))                          # would be the oldest reading
    wrench(0.0, (9.0, 9.0, 9.0))                          # within the 5 s throttle: not logged again
    assert spin_until(executor, lambda: node.source.zero_stamps == {"wrench": 2, "joint_states": 1})
    joints(2.0)
    wrench(2.0, (2.0, 0.0, 1.0))
    assert spin_until(executor, lambda: len(got) >= 1)
    executor.spin_once(timeout_sec=0.2)
    assert len(got) == 1 and got[0].header.stamp.sec == 2
    (_, c), = pointcloud2_to_contacts(got[0], BODIES).contacts.items()
    np.testing.assert_allclose(c.forces[0].numpy(), [0.0, 2.0, 1.0], atol=1e-9)

    def status():
        for m in reversed(diag):
            for s in m.status:
                if s.name == "/wrench_contact_node":
                    return s
    assert spin_until(executor, lambda: status() is not None, timeout=5.0)
    s = status()
    values = {kv.key: kv.value for kv in s.values}
    assert values["zero_stamps./wrench"] == "2" and values["zero_stamps./joint_states"] == "1"
    assert s.level == DiagnosticStatus.WARN and "/wrench" in s.message and "/joint_states" in s.message
    err = capfd.readouterr().err
    assert err.count("/wrench: message stamped 0 rejected") == 1 \
        and "/joint_states: message stamped 0 rejected" in err, err
