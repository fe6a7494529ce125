"""gz contacts in an in-process node: configuration errors, a counted rejection, a hand-checked reading.

Same set-up as test_node_robustness (the embedded world, a Punyo pressure and dense force sensor on
the bubble).  Hand-derived: the bubble's base is a 24-gon of radius 0.05 m, area
``A = 0.5 * 24 * 0.05**2 * sin(2*pi/24)``, and a force ``F`` on the bubble along its base normal
reads ``p = F / A``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from geometry_msgs.msg import Vector3
from rclpy.parameter import Parameter

from vsf_sensor_ros.ros.parameter_table import ConfigError
from vsf_sensor_ros.ros.sensor_node import SensorNode

ros_gz = pytest.importorskip("ros_gz_interfaces.msg",
                             reason="ros_gz_interfaces not importable (make venv builds it)")

A = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)
GZ = {"contacts_type": "ros_gz_interfaces/msg/Contacts", "contact_body_map": ["box_model::*=object"]}


def _overrides(**extra):
    params = {"sensors": ["pressure", "force"],
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.publish_markers": False,
              "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo",
              "force.publish_markers": False, **GZ}
    params.update(extra)
    return [Parameter(k, value=v) for k, v in params.items()]


def _push(node, force, sec, normals=1):
    """gz Contacts: 'force' N into the bubble (along its -z) at mesh vertex 0, the bubble collision first."""
    T = node.world.body_transform("punyo")
    v0 = np.asarray(node.world.body_mesh("punyo").vertices)[0]
    p, f = T[:3, :3] @ v0 + T[:3, 3], T[:3, :3] @ np.array([0.0, 0.0, -force])
    c = ros_gz.Contact(collision1=ros_gz.Entity(name="bubble::punyo::collision"),
                       collision2=ros_gz.Entity(name="box_model::box::collision"))
    c.positions = [Vector3(x=p[0], y=p[1], z=p[2])]
    c.normals = [Vector3(z=1.0)] * normals
    w = ros_gz.JointWrench()
    w.body_1_wrench.force = Vector3(x=f[0], y=f[1], z=f[2])
    c.wrenches = [w]
    msg = ros_gz.Contacts(contacts=[c])
    msg.header.stamp.sec = sec
    return msg


@pytest.fixture
def node(rclpy_context):
    n = SensorNode("gz_sensor_node", namespace="/gz_config_test", parameter_overrides=_overrides())
    yield n
    n.destroy_node()


def test_a_gz_push_reads_f_over_a_and_a_malformed_one_is_counted(node):
    node._on_contacts(_push(node, 2.0, sec=1))
    assert node.inputs.contacts_processed == 1 and not node.inputs.rejected
    assert node._handles["pressure"].last_values[0] == pytest.approx(2.0 / A, rel=1e-6)
    node._on_contacts(_push(node, 5.0, sec=2, normals=2))       # 1 position, 2 normals
    assert node.inputs.rejected == {"mismatched_lengths": 1}
    assert node.inputs.contacts_processed == 1                   # nothing used of it
    assert node._handles["pressure"].last_values[0] == pytest.approx(2.0 / A, rel=1e-6)
    node._on_contacts(_push(node, 3.0, sec=3))
    assert node.inputs.contacts_processed == 2
    assert node._handles["pressure"].last_values[0] == pytest.approx(3.0 / A, rel=1e-6)


@pytest.mark.parametrize("key, value, words", [
    ("contacts_type", "gazebo_msgs/msg/ContactsState", "must be sensor_msgs/msg/PointCloud2 or"),
    ("contact_body_map", ["box_model::*"], "pattern=body"),
    ("frame_prefix", "left /", "white space"),
])
def test_bad_gz_and_prefix_settings_are_configuration_errors(rclpy_context, key, value, words):
    with pytest.raises(ConfigError) as err:
        SensorNode("gz_bad_node", namespace="/gz_config_test", parameter_overrides=_overrides(**{key: value}))
    assert err.value.parameter == key and words in str(err.value)


def _renamed(msg, c1=None, c2=None, body_1_name=None, wrench_frame=None):
    c = msg.contacts[0]
    if c1 is not None:
        c.collision1.name = c1
    if c2 is not None:
        c.collision2.name = c2
    for w in c.wrenches:
        if body_1_name is not None:
            w.body_1_name.data = body_1_name
        if wrench_frame is not None:
            w.header.frame_id = wrench_frame
    return msg


def test_a_wrench_naming_the_box_as_body_1_presses_the_bubble_with_its_opposite(node):
    # the same push, written from the box's side: body_1 = the box, its force = -(force on the bubble)
    msg = _push(node, -2.0, sec=1)                    # body_1 force = the force on the box
    node._on_contacts(_renamed(msg, body_1_name="box_model::box::collision"))
    assert node.inputs.contacts_processed == 1 and not node.inputs.rejected
    assert node._handles["pressure"].last_values[0] == pytest.approx(2.0 / A, rel=1e-6)


@pytest.mark.parametrize("change, reason", [
    (dict(c2="bubble::punyo::collision_2"), "same_body"),
    (dict(wrench_frame="punyo"), "wrench_frame"),
])
def test_a_self_contact_or_a_wrench_off_world_axes_publishes_nothing(node, change, reason):
    node._on_contacts(_push(node, 2.0, sec=1))
    node._on_contacts(_renamed(_push(node, 5.0, sec=2), **change))
    assert node.inputs.rejected == {reason: 1} and node.inputs.contacts_processed == 1
    assert node._handles["pressure"].last_values[0] == pytest.approx(2.0 / A, rel=1e-6)   # 5 N unused


def test_a_collision_of_an_unknown_body_is_warned_once_and_counted(node):
    from vsf_sensor_ros.ros.diagnostics import build_diagnostics, status_values
    # the bubble's link is called 'bubble_link' in the gz model: no map entry, no world body
    for sec in (1, 2, 3):
        node._on_contacts(_renamed(_push(node, 2.0, sec=sec), c1="bubble::bubble_link::collision"))
    assert node.inputs.contacts_processed == 3 and not node.inputs.rejected
    assert node.inputs.unknown_contact_bodies == {"bubble_link": 3}
    assert node._handles["pressure"].last_values[0] == 0.0     # nothing reached the bubble
    array = build_diagnostics(node.get_clock().now().to_msg(), "/n", node.inputs, {}, 1.0)
    assert status_values(array, "/n: inputs")["contacts.unknown_bodies"] == "bubble_link=3"


def test_a_body_map_entry_naming_no_world_body_is_a_startup_warning(rclpy_context):
    typo = _overrides(contact_body_map=["box_model::*=object", "bubble::*=punyoo"])
    n = SensorNode("gz_typo_node", namespace="/gz_config_test", parameter_overrides=typo)
    try:
        lines = [p for p in n.health.config_problems if "contact_body_map" in p]
        assert len(lines) == 1 and "'bubble::*=punyoo'" in lines[0] and "'punyoo' is not a body" in lines[0]
    finally:
        n.destroy_node()
