"""Contacts that wait for the joint state of their stamp (rig.kinematics.JointStateWait).

Streams are played as a busy node's two queues would serve them; each expected release is written
out by hand from the rule: in lockstep (the last two contacts found a joint state of exactly their
stamp) a contacts message stamped after the newest joint state waits for it, at most ``max_held``
messages and ``max_wait_s`` seconds; messages leave in arrival order.
"""
from __future__ import annotations

import numpy as np
import torch

from vsf_sensor_ros.embedded_world import EMBEDDED_JOINTS, HOME, embedded_world
from vsf_sensor_ros.rig.kinematics import BodyTransforms, JointStateWait

MS = 1_000_000


def _wait(**kw):
    transforms = BodyTransforms(embedded_world(), torch.float64, torch.device("cpu"))
    names = list(EMBEDDED_JOINTS)

    def joint(ms):
        transforms.remember(ms * MS, names, [HOME[n] for n in names])
    return transforms, JointStateWait(transforms, **kw), joint


def _lockstep(wait, joint, stamps_ms):
    """Joint state then contacts per stamp, as a simulator sends them: each steps at once."""
    for ms in stamps_ms:
        joint(ms)
        assert wait.joint_state() == []
        assert wait.offer(ms * MS, ms, 0.0) == [ms]


def test_in_lockstep_contacts_ahead_of_the_joint_states_wait_for_their_own():
    _, wait, joint = _wait()
    _lockstep(wait, joint, [10, 20])
    # the queues slipped: contacts 30 and 40 are served before joint states 30 and 40
    assert wait.offer(30 * MS, 30, 0.0) == []
    assert wait.offer(40 * MS, 40, 0.0) == []
    joint(30)
    assert wait.joint_state() == [30]
    joint(40)
    assert wait.joint_state() == [40]
    # still in lockstep: 50 waits too
    assert wait.offer(50 * MS, 50, 0.0) == []
    joint(60)                       # a later joint state reaches it (and 50 was never sent)
    assert wait.joint_state() == [50]


def test_out_of_lockstep_nothing_waits():
    _, wait, joint = _wait()
    joint(10)
    # joint states every 10 ms, contacts every 1 ms: no contacts stamp has its own joint state
    # after 10, so the lockstep count never reaches two
    assert wait.offer(10 * MS, 10, 0.0) == [10]          # exact: count 1
    assert wait.offer(11 * MS, 11, 0.0) == [11]          # count 1 < 2: does not wait; count 0
    assert wait.offer(12 * MS, 12, 0.0) == [12]
    joint(20)
    assert wait.offer(20 * MS, 20, 0.0) == [20]          # count 1
    assert wait.offer(21 * MS, 21, 0.0) == [21]


def test_no_joint_state_yet_or_an_unstamped_contacts_message_never_waits():
    _, wait, joint = _wait()
    assert wait.offer(5 * MS, "a", 0.0) == ["a"]          # no stamped joint state yet
    _lockstep(wait, joint, [10, 20])
    assert wait.offer(0, "zero", 0.0) == ["zero"]         # stamp 0: no time to wait for


def test_a_message_that_need_not_wait_goes_after_those_waiting():
    _, wait, joint = _wait()
    _lockstep(wait, joint, [10, 20])
    assert wait.offer(30 * MS, 30, 0.0) == []
    # the simulator restarted: stamp 5 is before the newest joint state, it steps now, after 30
    assert wait.offer(5 * MS, 5, 0.0) == [30, 5]


def test_at_most_max_held_wait_and_none_longer_than_max_wait():
    _, wait, joint = _wait(max_held=2, max_wait_s=0.1)
    _lockstep(wait, joint, [10, 20])
    assert wait.offer(30 * MS, 30, 1.00) == []
    assert wait.offer(40 * MS, 40, 1.05) == []
    # a third: the oldest leaves with the configuration there is; lockstep is lost (30 had no joint
    # state of its own), so 50 would not wait -- but 40 still does until it expires
    assert wait.offer(50 * MS, 50, 1.06) == [30]
    assert wait.expire(1.10) == []               # 40 waited 0.05 s
    assert wait.expire(1.20) == [40, 50]        # both waited longer than 0.1 s
    assert wait.offer(60 * MS, 60, 1.2) == [60]  # out of lockstep: no wait


def test_a_contacts_message_uses_the_free_body_pose_of_its_stamp_and_the_world_keeps_the_latest():
    transforms, _, _ = _wait()
    world = transforms._world
    body = world.free_body_names[0]

    def pose(x):                                  # a translation along x only (m)
        T = np.eye(4)
        T[0, 3] = x
        return T
    for ms, x in ((10, 0.1), (20, 0.2), (30, 0.3)):      # applied in order, as the node does
        world.set_body_pose(body, pose(x))
        assert transforms.remember_pose(body, ms * MS, pose(x)) is None
    assert float(transforms.at(15 * MS)[body][0, 3]) == 0.1      # newest pose stamped <= 15 ms
    assert float(transforms.at(20 * MS)[body][0, 3]) == 0.2
    assert float(transforms.at(35 * MS)[body][0, 3]) == 0.3      # the latest
    assert world.body_transform(body)[0, 3] == 0.3               # put back after a rewind
    assert transforms.remember_pose(body, 5 * MS, pose(0.05)) == 30 * MS   # restarted: history gone
    world.set_body_pose(body, pose(0.05))
    assert float(transforms.at(15 * MS)[body][0, 3]) == 0.05


def test_a_rewind_puts_the_latest_free_body_pose_back_bit_for_bit():
    # a pose is snapped to a rotation when set; snapping again is not exact, so the world must not re-snap
    from scipy.spatial.transform import Rotation
    transforms, _, _ = _wait()
    world = transforms._world
    body = world.free_body_names[0]
    rng = np.random.default_rng(3)
    for ms in (10, 20):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = Rotation.random(random_state=rng).as_matrix(), rng.normal(size=3)
        world.set_body_pose(body, T)
        transforms.remember_pose(body, ms * MS, T)
    latest = world.body_transform(body)
    for _ in range(5):
        transforms.at(15 * MS)                    # the pose of 10 ms, then the latest put back
    assert np.array_equal(world.body_transform(body), latest)
