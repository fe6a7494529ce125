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
