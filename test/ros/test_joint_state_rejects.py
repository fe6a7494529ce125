"""A rejected joint state names what it rejects: the joint and its value (the node's KinematicInputs)."""
import math

import torch
from rclpy.logging import get_logger
from sensor_msgs.msg import JointState

from vsf_sensor_ros.embedded_world import EMBEDDED_JOINTS, HOME, embedded_world
from vsf_sensor_ros.rig.kinematics import BodyTransforms
from vsf_sensor_ros.ros.kinematics import KinematicInputs


def test_a_non_finite_position_is_rejected_naming_the_joint_and_value_and_nothing_is_applied():
    world = embedded_world()
    rejected = []
    inputs = KinematicInputs(world, "world", {}, BodyTransforms(world, torch.float64, torch.device("cpu")),
                             lambda reason, detail: rejected.append((reason, detail)), get_logger("t"))
    names = list(EMBEDDED_JOINTS)
    before = world.configuration()
    positions = [HOME[n] for n in names]
    positions[2] = math.inf
    inputs.on_joint_state(JointState(name=names, position=positions))
    assert len(rejected) == 1 and rejected[0][0] == "non_finite"
    assert repr(names[2]) in rejected[0][1] and "inf" in rejected[0][1]
    assert (world.configuration() == before).all()            # rejected whole


def test_a_mapped_joint_is_named_as_the_driver_sent_it_too():
    world = embedded_world()
    rejected = []
    names = list(EMBEDDED_JOINTS)
    name_map = {f"d_{n}": n for n in names}                      # driver name -> URDF name
    inputs = KinematicInputs(world, "world", name_map,
                             BodyTransforms(world, torch.float64, torch.device("cpu")),
                             lambda reason, detail: rejected.append((reason, detail)), get_logger("t"))
    sent = [f"d_{n}" for n in names]
    positions = [HOME[n] for n in names]
    positions[1] = math.nan
    inputs.on_joint_state(JointState(name=sent, position=positions))
    twice = sent[:2] + [sent[0]]                                 # d_<first> twice
    inputs.on_joint_state(JointState(name=twice, position=[0.0, 0.0, 0.0]))
    assert [r for r, _ in rejected] == ["non_finite", "joint_state_invalid"]
    assert repr(names[1]) in rejected[0][1] and repr(sent[1]) in rejected[0][1]
    assert repr(names[0]) in rejected[1][1] and rejected[1][1].count(repr(sent[0])) == 2
