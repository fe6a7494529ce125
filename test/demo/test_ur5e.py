"""The generated UR5e URDF: Klampt forward kinematics through World against the DH product."""
import math

import numpy as np
import pytest

from vsf_sensor_ros.demo.ur5e import PUNYO_BODY, TOOL_LINK, UR5E_DH, UR5E_JOINTS, punyo_apex_local, ur5e_world

CONFIGS = [
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.3163559, -1.7873775, -1.9812598, 2.5057890, -1.7074111, 0.6994233],   # the recorded poke, frame 0
    [1.0, -0.5, 0.7, -1.2, 0.4, 2.9],
    [-2.5, 1.1, -2.0, 0.3, -1.4, -0.8],
]


def dh_forward_kinematics(q, dh=UR5E_DH):
    """Flange pose ``(4, 4)`` (DH frame 6 -> frame 0, m) from the standard DH product: the oracle."""
    T = np.eye(4)
    for qi, (d, a, alpha) in zip(q, dh):
        ct, st, ca, sa = math.cos(qi), math.sin(qi), math.cos(alpha), math.sin(alpha)
        T = T @ np.array([[ct, -st * ca, st * sa, a * ct],
                          [st, ct * ca, -ct * sa, a * st],
                          [0.0, sa, ca, d],
                          [0.0, 0.0, 0.0, 1.0]])
    return T


def test_dh_formula_at_zero_by_hand():
    # q = 0: x = a2 + a3 = -0.8172, y = -(d4 + d6) = -0.2329 (alpha_4 = +pi/2, alpha_5 = -pi/2
    # turn d6 into -y), z = d1 - d5 = 0.0628.
    T = dh_forward_kinematics(np.zeros(6))
    d1, a2, a3, d4, d5, d6 = 0.1625, -0.425, -0.3922, 0.1333, 0.0997, 0.0996
    assert T[:3, 3] == pytest.approx([a2 + a3, -(d4 + d6), d1 - d5], abs=1e-12)


@pytest.mark.parametrize("q", CONFIGS)
def test_world_forward_kinematics_matches_dh(q):
    w = ur5e_world()
    w.set_joint_positions(UR5E_JOINTS, q)
    T = w.body_transform(TOOL_LINK)
    assert np.allclose(T, dh_forward_kinematics(q), atol=1e-9)


def test_punyo_faces_tool_minus_y():
    w = ur5e_world()
    q = CONFIGS[2]
    w.set_joint_positions(UR5E_JOINTS, q)
    T_tool = dh_forward_kinematics(q)
    T_body = w.body_transform(PUNYO_BODY)
    # the bubble's base normal (+z of its body) is the tool's -y axis
    assert np.allclose(T_body[:3, 2], -T_tool[:3, 1], atol=1e-9)
    apex_world = T_body[:3, :3] @ punyo_apex_local() + T_body[:3, 3]
    apex_tool = np.linalg.solve(T_tool, np.append(apex_world, 1.0))[:3]
    assert apex_tool[1] < 0 and abs(apex_tool[0]) < 1e-9 and abs(apex_tool[2]) < 1e-9
    assert len(UR5E_DH) == 6 and math.isclose(UR5E_DH[3][2], math.pi / 2)
