"""gz contacts in an in-process node: configuration errors, a counted rejection, a hand-checked reading,
and the steps without a contacts message (gz publishes only while something touches).

Same set-up as test_node_robustness (the embedded world, a Punyo pressure and dense force sensor on
the bubble).  Hand-derived: the bubble's base is a 24-gon of radius 0.05 m, area
``A = 0.5 * 24 * 0.05**2 * sin(2*pi/24)``, and a force ``F`` on the bubble along its base normal
reads ``p = F / A``.
"""
from __future__ import annotations

import math

import time

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Vector3
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

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


def _ms(ms):
    return Time(sec=ms // 1000, nanosec=(ms % 1000) * 1_000_000)


def _joints(ms):
    """Joint state of the embedded arm, stamped ``ms`` (the simulator's clock)."""
    js = JointState(name=["elbow_pitch", "shoulder_yaw"], position=[0.3, -0.2])
    js.header.stamp = _ms(ms)
    return js


def _push_at(node, ms):
    msg = _push(node, 2.0, sec=0)
    msg.header.stamp = _ms(ms)
    return msg


@pytest.mark.parametrize("extra", [{"contact_free_period": 0.0},
                                   {"contacts_type": "sensor_msgs/msg/PointCloud2"}])
def test_contact_free_steps_are_off_with_a_zero_period_or_for_the_cloud_by_default(rclpy_context, extra):
    n = SensorNode("gz_off_node", namespace="/gz_config_test", parameter_overrides=_overrides(**extra))
    try:
        assert n._contact_free is None
    finally:
        n.destroy_node()


def test_a_late_contacts_message_is_used_and_counted_an_earlier_one_is_a_reset(rclpy_context):
    node = SensorNode("gz_late_node", namespace="/gz_config_test",
                      parameter_overrides=_overrides(contact_free_period=0.2))
    try:
        pressure = node._handles["pressure"]
        node._on_joint_state(_joints(10_000))
        node._on_contacts(_push_at(node, 10_000))
        node._on_joint_state(_joints(10_150))          # 0.15 s < 0.2 s after the contacts: no step
        assert node._contact_free.steps == 0 and pressure.last_values[0] == pytest.approx(2.0 / A, rel=1e-6)
        node._on_joint_state(_joints(10_200))          # 0.2 s: a contact-free step at 10.2 s
        assert node._contact_free.steps == 1 and pressure.last_values[0] == 0.0
        assert node.rig.last_stamp == 10_200_000_000 and node.inputs.contacts_processed == 1
        node._on_contacts(_push_at(node, 10_100))      # after the last contacts, before the step: late
        assert node._contact_free.late == 1 and node.inputs.stamp_jumps_backwards == 0
        assert node.inputs.contacts_processed == 2
        assert pressure.last_values[0] == pytest.approx(2.0 / A, rel=1e-6)
        node._on_contacts(_push_at(node, 5_000))       # before the last contacts message: a reset
        assert node.inputs.stamp_jumps_backwards == 1 and node._contact_free.late == 1
    finally:
        node.destroy_node()


def test_contacts_stamped_0_hold_off_contact_free_steps_while_they_come(rclpy_context):
    """Contacts without a stamp cannot be placed in time, but they say the source is not silent: each
    holds off the contact-free steps for a period from the newest joint stamp."""
    node = SensorNode("gz_zero_node", namespace="/gz_config_test",
                      parameter_overrides=_overrides(contact_free_period=0.2))
    try:
        pressure = node._handles["pressure"]
        node._on_joint_state(_joints(10_000))
        for ms in range(10_000, 11_000, 50):            # touching, stamped 0, joints every 50 ms
            node._on_joint_state(_joints(ms))
            node._on_contacts(_push_at(node, 0))
        assert node._contact_free.steps == 0 and pressure.last_values[0] == pytest.approx(2.0 / A, rel=1e-6)
        node._on_joint_state(_joints(11_150))          # 0.2 s after the last one (at 10.95 s): a step
        assert node._contact_free.steps == 1 and pressure.last_values[0] == 0.0
    finally:
        node.destroy_node()


def test_joint_stamps_going_back_restart_the_period_and_the_step_follows_them(rclpy_context):
    node = SensorNode("gz_restart_node", namespace="/gz_config_test",
                      parameter_overrides=_overrides(contact_free_period=0.2))
    try:
        for ms in (10_000, 10_100, 10_200):
            node._on_joint_state(_joints(ms))
        assert node._contact_free.steps == 1 and node.rig.last_stamp == 10_200_000_000
        for ms in (1_000, 1_100):                      # the simulator restarted at 1.0 s
            node._on_joint_state(_joints(ms))
        assert node._contact_free.steps == 1 and node.inputs.stamp_jumps_backwards == 0
        node._on_joint_state(_joints(1_200))           # one period into the new run
        assert node._contact_free.steps == 2 and node.rig.last_stamp == 1_200_000_000
        assert node.inputs.stamp_jumps_backwards == 1  # the step followed the simulator back: a reset
    finally:
        node.destroy_node()


def test_under_use_sim_time_without_joint_stamps_the_clock_paces_the_steps(rclpy_context):
    ns = "/gz_sim_time_test"
    node = SensorNode("gz_sim_time_node", namespace=ns,
                      parameter_overrides=_overrides(contact_free_period=0.2, use_sim_time=True))
    source = rclpy.create_node("clock_source", namespace=ns)
    pub = source.create_publisher(Clock, "/clock", 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    ex.add_node(source)

    def clock_to(ms):
        """Publish /clock = ``ms`` until the node's clock reads it, spinning the node's timers."""
        end = time.monotonic() + 10.0
        while node.get_clock().now().nanoseconds != ms * 1_000_000 and time.monotonic() < end:
            pub.publish(Clock(clock=_ms(ms)))
            ex.spin_once(timeout_sec=0.02)
        assert node.get_clock().now().nanoseconds == ms * 1_000_000
        for _ in range(5):                             # the quarter-period timer gets its tick
            ex.spin_once(timeout_sec=0.01)

    try:
        clock_to(10_000)
        node._on_contacts(_push_at(node, 10_000))      # touching at 10.0 s, then nothing
        for ms in (10_050, 10_100, 10_150):
            clock_to(ms)
        assert node._contact_free.steps == 0
        for ms in (10_200, 10_250, 10_300):
            clock_to(ms)
        # stamped on the simulator's clock, one period after the contacts (the timer ticks every 50 ms)
        assert node._contact_free.steps == 1 and node.rig.last_stamp in (10_200_000_000, 10_250_000_000)
        assert node._handles["pressure"].last_values[0] == 0.0
    finally:
        ex.shutdown()
        source.destroy_node()
        node.destroy_node()
