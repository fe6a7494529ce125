"""A step's joint state is applied before its contacts, also when both wait in the node's queues.

A simulator publishes ``joint_states`` then ``contacts`` for each step.  When the node is busy,
messages of several steps wait together and the executor may serve the joint state of step k + 1
before the contacts of step k, or the contacts of step k before its joint state; the prediction
for step k must still use step k's joint state (matched by stamp).  Each step moves the wrist; the
Punyo pressure depends on the bubble's rotation, so a configuration from another step shows.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from builtin_interfaces.msg import Time
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS, EMBEDDED_JOINTS, HOME, embedded_world
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import NodeProcess, Probe, joint_state, write_params

BODIES = ["punyo", "object", "table"]
STEPS = 40
FORCE = np.array([0.0, 0.0, 5.0])        # N on the bubble, world frame


@pytest.fixture(scope="module")
def node(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("ordering")
    params = write_params(d / "params.yaml", {
        "sensors": ["pressure"], "contact_body_names": BODIES,
        "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
        "pressure.publish_markers": False, "pressure.publish_jacobian": False,
        "qos.inputs.reliability": "reliable", "qos.inputs.depth": 1000,
    })
    proc = NodeProcess(params, d / "node.log").start()
    yield proc
    assert proc.stop() == 0, proc.output()[-3000:]


def _home() -> dict:
    return {name: HOME[name] for name in EMBEDDED_JOINTS}


def _steps(n):
    """Per step k = 1..n: (joint state, contacts cloud), and the pressure expected by hand."""
    world = embedded_world()
    area = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)   # the 24-gon base
    expected, msgs = {}, []
    q = _home()
    for k in range(n):
        q["wrist_pitch"] = _home()["wrist_pitch"] + 0.02 * k   # rad: the bubble tilts each step
        names, pos = list(q), [q[n] for n in q]
        world.set_joint_positions(names, pos)
        T = world.body_transform("punyo")
        # pressure = -(1/A) (R^T f) . z = -(1/A) f . (R z), by hand from this step's pose
        expected[k + 1] = -FORCE @ T[:3, 2] / area
        point = torch.tensor(T[:3, 3][None], dtype=torch.float64)
        contacts = {("punyo", "object"): ContactState(point, torch.tensor(FORCE[None]))}
        stamp = Time(sec=k + 1)
        js = joint_state(names, pos)
        js.header.stamp = stamp                                    # the simulator stamps both
        msgs.append((js, contacts_to_pointcloud2(contacts, BODIES, stamp=stamp)))
    return msgs, expected


def _run(node, sends, expected):
    probe = Probe("ordering_probe")
    try:
        got = probe.listen("/pressure/predicted", FluidPressure)
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), node.output()[-3000:]
        assert probe.wait_for_subscriber("/joint_states", JointState)
        sends(probe)
        assert probe.spin_until(lambda: len(got) >= len(expected), 30.0), (len(got), node.output()[-2000:])
        readings = {m.header.stamp.sec: m.fluid_pressure for m in got}
        for k, value in expected.items():
            assert readings[k] == pytest.approx(value, rel=1e-9), (k, readings[k], value)
    finally:
        probe.destroy_node()


def test_each_contacts_message_uses_the_joint_state_of_its_own_step(node, rclpy_context):
    msgs, expected = _steps(STEPS)

    def sends(probe):
        for js, _ in msgs:
            probe.send("/joint_states", js)
        # Every joint state is served before any contacts message: the worst case of the race.
        probe.spin_for(1.0)
        for _, cloud in msgs:
            probe.send("/contacts", cloud)
    _run(node, sends, expected)


def test_contacts_served_before_their_joint_states_wait_for_them(node, rclpy_context):
    msgs, expected = _steps(STEPS)

    def sends(probe):
        # the simulator restarted at stamp 1: two steps in lockstep, then the contacts of four steps
        # ahead of their joint states (the topics' queues slipped), four at a time
        for js, cloud in msgs[:2]:
            probe.send("/joint_states", js)
            probe.send("/contacts", cloud)
            probe.spin_for(0.2)
        for i in range(2, STEPS, 4):
            for _, cloud in msgs[i:i + 4]:
                probe.send("/contacts", cloud)
            for js, _ in msgs[i:i + 4]:
                probe.send("/joint_states", js)
    _run(node, sends, expected)
