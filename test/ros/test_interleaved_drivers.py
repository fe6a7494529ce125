"""An arm driver and a gripper driver on one ``joint_states`` topic, stamps interleaved.

The arm driver sends ``shoulder_yaw, shoulder_pitch, elbow_pitch`` stamped ``k`` s, the
"gripper" driver sends ``wrist_pitch`` stamped ``k - 0.5`` s, right after.  Each driver's stamps
rise, but every gripper message is older than the arm message before it: that must not clear the
arm's history.  The contacts of step ``k`` (stamped ``k`` s) then use the arm's joints of ``k``
and the wrist of ``k - 0.5``, also when every joint state was served before any contacts.

Poses by hand, embedded arm (pitch axes all +y, the bubble fixed to the tool without rotation):
with ``a, b, c`` the shoulder, elbow and wrist pitch and ``t = a + b + c``, the bubble's rotation
is ``Rz(yaw) Ry(t)``, so its z axis is ``(cos(yaw) sin t, sin(yaw) sin t, cos t)``; at yaw 0 the
tool sits at ``x = 0.3 sin a + 0.25 sin(a + b) + 0.06 sin t``,
``z = 0.18 + 0.3 cos a + 0.25 cos(a + b) + 0.06 cos t`` (link lengths of the URDF).  A 5 N push
up on the bubble reads ``p = -(1/A) (R^T f) . z = -5 cos(t) / A`` with ``A`` the 24-gon base.

A simulator reset moves both drivers' stamps back: each restart is counted and described in
``/diagnostics``, and the steps after it again use their own joint states.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS, embedded_world
from vsf_sensor_ros.rig.kinematics import BodyTransforms
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import NodeProcess, Probe, joint_state, write_params

BODIES = ["punyo", "object", "table"]
ARM = ["shoulder_yaw", "shoulder_pitch", "elbow_pitch"]
GRIPPER = ["wrist_pitch"]
AREA = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)   # m^2, the bubble's 24-gon base
PUSH = 5.0                                                           # N along world +z on the bubble
S = 1_000_000_000                                                    # ns per s


def arm_at(k: float) -> list:
    """The arm driver's positions for step ``k`` (rad)."""
    return [0.3 - 0.01 * k, 0.10 + 0.05 * k, 0.20 + 0.03 * k]


def wrist_at(k: float) -> list:
    """The gripper driver's position for step ``k`` (rad)."""
    return [0.30 - 0.03 * k]


def tilt(k_arm: float, k_wrist: float) -> float:
    """t = shoulder + elbow + wrist pitch (rad)."""
    _, a, b = arm_at(k_arm)
    return a + b + wrist_at(k_wrist)[0]


def pressure(k_arm: float, k_wrist: float) -> float:
    """-5 cos(t) / A (Pa)."""
    return -PUSH * math.cos(tilt(k_arm, k_wrist)) / AREA


# ------------------------------------------------------------------ the history itself, without DDS

def _tool_pose(a: float, b: float, c: float) -> np.ndarray:
    """The bubble's pose at yaw 0, by hand (see the module docstring)."""
    t = a + b + c
    T = np.eye(4)
    T[:3, :3] = [[math.cos(t), 0.0, math.sin(t)], [0.0, 1.0, 0.0], [-math.sin(t), 0.0, math.cos(t)]]
    T[:3, 3] = [0.3 * math.sin(a) + 0.25 * math.sin(a + b) + 0.06 * math.sin(t), 0.0,
                0.18 + 0.3 * math.cos(a) + 0.25 * math.cos(a + b) + 0.06 * math.cos(t)]
    return T


def _apply(world, bt: BodyTransforms, names, pos, stamp_ns) -> bool:
    world.set_joint_positions(names, pos)
    return bt.remember(stamp_ns, names, pos)


def test_each_driver_keeps_its_own_history():
    world = embedded_world()
    bt = BodyTransforms(world, torch.float64, torch.device("cpu"))
    arm = {1: [0.0, 0.1, 0.2], 2: [0.0, 0.3, 0.4], 3: [0.0, 0.5, 0.6]}
    wrist = {1: [0.7], 2: [0.8], 3: [0.9]}
    for k in (1, 2, 3):                                  # arm at k s, then the wrist at k - 0.5 s
        assert not _apply(world, bt, ARM, arm[k], k * S)
        assert not _apply(world, bt, GRIPPER, wrist[k], k * S - S // 2)
    assert bt.stamp_jumps == 0
    for k in (1, 2):                                     # contacts at k s: arm of k, wrist of k - 0.5
        T = bt.at(k * S)["punyo"].numpy()
        np.testing.assert_allclose(T, _tool_pose(arm[k][1], arm[k][2], wrist[k][0]), atol=1e-12)
    # 1.7 s: the arm's newest <= 1.7 is its 1 s entry, the wrist's its 1.5 s entry (step 2's)
    np.testing.assert_allclose(bt.at(int(1.7 * S))["punyo"].numpy(), _tool_pose(0.1, 0.2, 0.8), atol=1e-12)
    # the latest: arm of 3 s, wrist of 2.5 s; and the world is back there after every rewind
    np.testing.assert_allclose(bt.at(3 * S)["punyo"].numpy(), _tool_pose(0.5, 0.6, 0.9), atol=1e-12)
    np.testing.assert_allclose(world.body_transform("punyo"), _tool_pose(0.5, 0.6, 0.9), atol=1e-12)
    # earlier than anything remembered: each driver's latest
    np.testing.assert_allclose(bt.at(S // 4)["punyo"].numpy(), _tool_pose(0.5, 0.6, 0.9), atol=1e-12)


def test_a_restart_of_one_driver_clears_only_its_history_and_is_described():
    world = embedded_world()
    bt = BodyTransforms(world, torch.float64, torch.device("cpu"))
    for k in (1, 2, 3):
        _apply(world, bt, ARM, [0.0, 0.1 * k, 0.0], k * S)
        _apply(world, bt, GRIPPER, [0.05 * k], k * S + S // 10)
    # the arm driver restarts: stamps from 0.001 s again
    assert _apply(world, bt, ARM, [0.0, 0.02, 0.03], S // 1000)
    assert bt.stamp_jumps == 1
    assert bt.last_stamp_jump == "3.000000000 -> 0.001000000 s (shoulder_yaw, shoulder_pitch, elbow_pitch)"
    # the wrist's history is kept: contacts at 2.5 s take its 2.1 s entry (0.10); the arm has nothing
    # that early in the new run and keeps its latest
    np.testing.assert_allclose(bt.at(int(2.5 * S))["punyo"].numpy(), _tool_pose(0.02, 0.03, 0.10),
                               atol=1e-12)
    assert _apply(world, bt, GRIPPER, [0.01], S // 1000 + 5)
    assert bt.stamp_jumps == 2 and bt.last_stamp_jump.endswith(" s (wrist_pitch)")


def test_a_driver_that_reorders_its_names_is_still_one_source():
    world = embedded_world()
    bt = BodyTransforms(world, torch.float64, torch.device("cpu"))
    _apply(world, bt, ARM + GRIPPER, [0.0, 0.1, 0.2, 0.3], 1 * S)
    _apply(world, bt, list(reversed(ARM + GRIPPER)), [0.6, 0.5, 0.4, 0.0], 2 * S)   # wrist first
    assert bt.stamp_jumps == 0
    np.testing.assert_allclose(bt.at(int(1.5 * S))["punyo"].numpy(), _tool_pose(0.1, 0.2, 0.3), atol=1e-12)
    np.testing.assert_allclose(bt.at(2 * S)["punyo"].numpy(), _tool_pose(0.4, 0.5, 0.6), atol=1e-12)
    assert _apply(world, bt, list(reversed(ARM + GRIPPER)), [0.0, 0.0, 0.0, 0.0], S // 2)
    assert bt.stamp_jumps == 1
    assert bt.last_stamp_jump == "2.000000000 -> 0.500000000 s (wrist_pitch, elbow_pitch, shoulder_pitch, " \
                                 "shoulder_yaw)"


# ------------------------------------------------------------------ over DDS: two publishers on one topic

STEPS = 12
RESET_STEPS = 4


@pytest.fixture(scope="module")
def node(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("interleaved")
    params = write_params(d / "params.yaml", {
        "sensors": ["pressure"], "contact_body_names": BODIES,
        "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
        "pressure.publish_markers": False, "pressure.publish_jacobian": False,
        "qos.inputs.reliability": "reliable", "qos.inputs.depth": 1000, "diagnostics_period": 0.5,
    })
    proc = NodeProcess(params, d / "node.log").start()
    yield proc
    assert proc.stop() == 0, proc.output()[-3000:]


def _js(names, pos, stamp_ns) -> JointState:
    msg = joint_state(names, pos)
    msg.header.stamp = ns_to_stamp(stamp_ns)
    return msg


def _cloud(world, stamp: Time) -> PointCloud2:
    p = torch.tensor(world.body_transform("punyo")[:3, 3][None], dtype=torch.float64)
    f = torch.tensor([[0.0, 0.0, PUSH]], dtype=torch.float64)
    return contacts_to_pointcloud2({("punyo", "object"): ContactState(p, f)}, BODIES, stamp=stamp)


def _inputs(probe: Probe, diags: list, since: int) -> dict:
    for m in reversed(diags[since:]):
        for st in m.status:
            if st.name == "/sensor_node: inputs":
                return {kv.key: kv.value for kv in st.values}
    return {}


def test_interleaved_drivers_over_dds_and_a_reset(node, rclpy_context):
    probe, arm, gripper = Probe("interleave_probe"), Probe("arm_driver"), Probe("gripper_driver")
    try:
        got = probe.listen("/pressure/predicted", FluidPressure)
        diags = probe.listen("/diagnostics", DiagnosticArray)
        assert probe.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), node.output()[-3000:]
        for drv in (arm, gripper):
            assert drv.wait_for_subscriber("/joint_states", JointState)
        world = embedded_world()       # only to place the contact point on the bubble
        expected, clouds = {}, []
        for k in range(1, STEPS + 1):
            arm.send("/joint_states", _js(ARM, arm_at(k), k * S))
            gripper.send("/joint_states", _js(GRIPPER, wrist_at(k), k * S - S // 2))
            expected[k * S] = pressure(k, k)
            clouds.append(_cloud(world, ns_to_stamp(k * S)))
        for drv in (arm, gripper):
            drv.spin_for(0.5)
        for cloud in clouds:            # every joint state was served before these
            probe.send("/contacts", cloud)
        assert probe.spin_until(lambda: len(got) >= STEPS, 30.0), (len(got), node.output()[-2000:])

        # the simulator resets: both drivers start again from 0.010 s, in 0.010 s steps
        reset = {}
        for j in range(1, RESET_STEPS + 1):
            t = j * S // 100
            arm.send("/joint_states", _js(ARM, arm_at(-j), t))
            gripper.send("/joint_states", _js(GRIPPER, wrist_at(-j), t - S // 200))
            reset[t] = pressure(-j, -j)
        for drv in (arm, gripper):
            drv.spin_for(0.5)
        for t in reset:
            probe.send("/contacts", _cloud(world, ns_to_stamp(t)))
        assert probe.spin_until(lambda: len(got) >= STEPS + RESET_STEPS, 30.0), node.output()[-2000:]

        readings = {m.header.stamp.sec * S + m.header.stamp.nanosec: m.fluid_pressure for m in got}
        for t, value in {**expected, **reset}.items():
            assert readings[t] == pytest.approx(value, rel=1e-9, abs=1e-9), (t, readings[t], value)
        # another step's wrist or arm would read differently: the pairing is really by stamp
        # (t = 0.6 + 0.05 k; the wrist alone moves 0.03 rad a step, the arm 0.08 rad)
        assert min(abs(pressure(k, k + 1) - pressure(k, k)) for k in range(1, STEPS + 1)) > 5.0
        assert min(abs(pressure(k + 1, k) - pressure(k, k)) for k in range(1, STEPS + 1)) > 5.0

        since = len(diags)
        assert probe.spin_until(lambda: _inputs(probe, diags, since).get(
            "joint_states.stamp_jumps_backwards") == "2", 10.0), _inputs(probe, diags, since)
        d = _inputs(probe, diags, since)
        # each driver restarted once: the arm from 12 s to 0.01 s, the wrist from 11.5 s to 0.005 s
        assert d["joint_states.last_stamp_jump"] in (
            "12.000000000 -> 0.010000000 s (shoulder_yaw, shoulder_pitch, elbow_pitch)",
            "11.500000000 -> 0.005000000 s (wrist_pitch)")
        assert d["stamp_jumps_backwards"] == "1"            # and the contacts, once
        assert d["rejected_total"] == "0"
    finally:
        for p in (probe, arm, gripper):
            p.destroy_node()
