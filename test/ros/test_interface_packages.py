"""The interface packages the pip path builds (interfaces/, tools/build_interfaces.sh) work over DDS.

``make venv`` leaves ``tf2_msgs`` and ``ros_gz_interfaces`` importable (built into the venv,
or a sourced ROS 2's own).  A child process publishes a ``TFMessage`` and a gz ``Contacts``
with known values; this process receives both through rclpy and reads the values back, so
the generated C type support, the Python bindings and the serialisation all run.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

PUBLISHER = textwrap.dedent("""
    import time
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from geometry_msgs.msg import TransformStamped, Vector3
    from ros_gz_interfaces.msg import Contact, Contacts, Entity, JointWrench
    from tf2_msgs.msg import TFMessage

    rclpy.init()
    node = rclpy.create_node("interface_packages_publisher")
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    tf_pub = node.create_publisher(TFMessage, "interface_test_tf", qos)
    gz_pub = node.create_publisher(Contacts, "interface_test_contacts", qos)
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = "left/tool_link", "left/punyo"
    t.header.stamp.sec, t.header.stamp.nanosec = 12, 345
    t.transform.translation.x, t.transform.translation.z = 0.25, -0.5
    t.transform.rotation.z, t.transform.rotation.w = 0.6, 0.8
    c = Contact(collision1=Entity(id=7, name="bubble::punyo::collision", type=Entity.COLLISION),
                collision2=Entity(id=9, name="box::link::collision", type=Entity.COLLISION))
    c.positions = [Vector3(x=1.0, y=2.0, z=3.0)]
    c.normals = [Vector3(z=1.0)]
    c.depths = [0.002]
    w = JointWrench()
    w.body_1_wrench.force.z, w.body_2_wrench.force.z = 4.5, -4.5
    c.wrenches = [w]
    msg = Contacts(contacts=[c])
    msg.header.frame_id = "world"
    tf_pub.publish(TFMessage(transforms=[t]))
    gz_pub.publish(msg)
    end = time.monotonic() + 30.0
    while time.monotonic() < end:   # latched: kept until the test has read both and stops us
        rclpy.spin_once(node, timeout_sec=0.1)
""")


def test_the_built_packages_import():
    from ros_gz_interfaces.msg import Contact, Contacts, Entity, JointWrench  # noqa: F401
    from tf2_msgs.msg import TF2Error, TFMessage  # noqa: F401
    from tf2_msgs.srv import FrameGraph  # noqa: F401
    # the constants of our definitions (values of the upstream definitions)
    assert (Entity.NONE, Entity.LINK, Entity.COLLISION, Entity.JOINT) == (0, 3, 5, 7)
    assert (TF2Error.NO_ERROR, TF2Error.TIMEOUT_ERROR, TF2Error.TRANSFORM_ERROR) == (0, 5, 6)
    assert [n for n in Contact.get_fields_and_field_types()] == [
        "collision1", "collision2", "positions", "normals", "depths", "wrenches"]
    assert JointWrench.get_fields_and_field_types()["body_1_wrench"] == "geometry_msgs/Wrench"
    assert TFMessage.get_fields_and_field_types() == {
        "transforms": "sequence<geometry_msgs/TransformStamped>"}


def test_tf_and_gz_contacts_cross_processes(rclpy_context):
    from ros_gz_interfaces.msg import Contacts
    from tf2_msgs.msg import TFMessage
    got = {}
    node = rclpy.create_node("interface_packages_subscriber")
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(TFMessage, "interface_test_tf", lambda m: got.setdefault("tf", m), qos)
    node.create_subscription(Contacts, "interface_test_contacts", lambda m: got.setdefault("gz", m), qos)
    child = subprocess.Popen([sys.executable, "-c", PUBLISHER], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 25.0
        while len(got) < 2 and time.monotonic() < end and child.poll() is None:
            rclpy.spin_once(node, timeout_sec=0.1)
        if len(got) < 2:
            child.kill()
            pytest.fail(f"received {sorted(got)}; publisher said: {child.communicate()[0].decode()[-2000:]}")
    finally:
        if child.poll() is None:
            child.terminate()
        child.wait(10)
        node.destroy_node()
    (t,) = got["tf"].transforms
    assert (t.header.frame_id, t.child_frame_id) == ("left/tool_link", "left/punyo")
    assert (t.header.stamp.sec, t.header.stamp.nanosec) == (12, 345)
    tr, r = t.transform.translation, t.transform.rotation
    assert (tr.x, tr.y, tr.z, r.x, r.y, r.z, r.w) == (0.25, 0.0, -0.5, 0.0, 0.0, 0.6, 0.8)
    (c,) = got["gz"].contacts
    assert got["gz"].header.frame_id == "world"
    assert (c.collision1.id, c.collision1.name, c.collision1.type) == (7, "bubble::punyo::collision", 5)
    assert c.collision2.name == "box::link::collision"
    assert [(p.x, p.y, p.z) for p in c.positions] == [(1.0, 2.0, 3.0)]
    assert [(n.x, n.y, n.z) for n in c.normals] == [(0.0, 0.0, 1.0)]
    assert list(c.depths) == [0.002]
    assert [(w.body_1_wrench.force.z, w.body_2_wrench.force.z) for w in c.wrenches] == [(4.5, -4.5)]
