"""wrench_contact_node's ``joint_name_map``: a driver's joint names mapped onto the URDF's.

Same one-joint world as test_wrench_contacts (URDF joint ``j``): at q = pi/2 the tool's x axis is
world +y, the body sits 0.1 m up the tool's z and the contact point is (0.02, 0, 0) in the body
frame, so the contact lands at (0.5, 0.02, 0.1) and a tool-frame force (2, 0, 1) N reads (0, 2, 1)
N in the world.  A driver calling the joint ``drv_j`` moves the tool only through the map.
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

from test.contact_sources.test_wrench_contacts import BODY_T, URDF
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
from vsf_sensor_ros.ros.parameter_table import ConfigError
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
from vsf_sensor_ros.contact_sources.wrench_contact_node import WrenchContactNode

from test.ros.node_helpers import spin_until

BODIES = ["punyo", "indenter"]


def _params(name_map):
    return [Parameter("robot_description", value=URDF), Parameter("contact_body_names", value=BODIES),
            Parameter("body", value="punyo"), Parameter("other_body", value="indenter"),
            Parameter("body_parent", value="tool"),
            Parameter("body_transform", value=BODY_T.reshape(-1).tolist()),
            Parameter("contact_point", value=[0.02, 0.0, 0.0]), Parameter("bias_samples", value=1),
            Parameter("joint_name_map", value=name_map)]


@pytest.fixture
def ctx(ros_domain_id):
    c = rclpy.Context()
    rclpy.init(context=c, domain_id=ros_domain_id)
    yield c
    rclpy.shutdown(context=c)


def _contact_after(ctx, name_map, driver_joint):
    node = WrenchContactNode(context=ctx, parameter_overrides=_params(name_map))
    probe = Node("wrench_names_probe", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    executor.add_node(probe)
    try:
        qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        got = []
        probe.create_subscription(PointCloud2, "contacts", got.append, qos)
        pub_w = probe.create_publisher(WrenchStamped, "wrench", qos)
        pub_j = probe.create_publisher(JointState, "joint_states", qos)
        assert spin_until(executor, lambda: pub_w.get_subscription_count() and pub_j.get_subscription_count()
                          and node.pub.get_subscription_count())
        for t, f in ((1.0, (0.0, 0.0, 0.0)), (2.0, (2.0, 0.0, 1.0))):
            if t == 2.0:
                j = JointState(name=[driver_joint], position=[math.pi / 2])
                j.header.stamp = ns_to_stamp(int(t * 1e9))
                pub_j.publish(j)
                assert spin_until(executor, lambda: len(node.source._pending) == 1)
            w = WrenchStamped()
            w.header.stamp, w.header.frame_id = ns_to_stamp(int(t * 1e9)), "tool"
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = f
            pub_w.publish(w)
            if t == 1.0:
                assert spin_until(executor, lambda: node.source.bias.bias is not None)
        assert spin_until(executor, lambda: len(got) == 1)
        (pair, c), = pointcloud2_to_contacts(got[0], BODIES).contacts.items()
        return c.points[0].numpy(), c.forces[0].numpy()
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


def test_a_mapped_driver_joint_name_moves_the_contact_as_the_urdf_name_would(ctx):
    point, force = _contact_after(ctx, ["drv_j:j"], "drv_j")
    np.testing.assert_allclose(point, [0.5, 0.02, 0.1], atol=1e-9)
    np.testing.assert_allclose(force, [0.0, 2.0, 1.0], atol=1e-9)      # tool x = world y


def test_without_the_map_the_driver_name_is_ignored_and_the_tool_stays_at_zero(ctx):
    point, force = _contact_after(ctx, [""], "drv_j")
    # q = 0: tool x = world x, so the same tool-frame force stays (2, 0, 1) in the world
    np.testing.assert_allclose(force, [2.0, 0.0, 1.0], atol=1e-9)
    assert not np.allclose(point, [0.5, 0.02, 0.1], atol=1e-6)


@pytest.mark.parametrize("entry", ["drv_j", "drv_j:nope"])       # no colon; no such URDF joint
def test_a_bad_map_entry_is_a_configuration_error_naming_it(ctx, entry):
    with pytest.raises(ConfigError) as err:
        WrenchContactNode(context=ctx, parameter_overrides=_params([entry]))
    assert (err.value.parameter, err.value.value) == ("joint_name_map", entry)
