"""link_frames_node: robot_state_publisher's rules for the URDF link frames (hand-derived transforms).

The embedded arm (vsf_sensor_ros/data/embedded_arm.urdf): world -(fixed)-> base_link
-(shoulder_yaw, z, origin z 0.10)-> shoulder_link -(shoulder_pitch, y, z 0.08)-> upper_arm_link
-(elbow_pitch, y, z 0.30)-> forearm_link -(wrist_pitch, y, z 0.25)-> wrist_link -(fixed, z 0.06)->
tool_link.  A revolute joint's child -> parent transform is origin @ rotation(axis, q).
"""
import math

import numpy as np

from vsf_sensor_ros.demo.link_frames_node import joint_edges, main, relative_transforms
from vsf_sensor_ros.embedded_world import embedded_world


def _T(R, z):
    T = np.eye(4)
    T[:3, :3], T[2, 3] = R, z
    return T


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def test_fixed_joints_go_static_and_movable_ones_follow_the_joint_state():
    w = embedded_world()
    fixed, movable = joint_edges(w)
    assert fixed == [("world", "base_link"), ("wrist_link", "tool_link")]
    assert movable == [("base_link", "shoulder_link"), ("shoulder_link", "upper_arm_link"),
                       ("upper_arm_link", "forearm_link"), ("forearm_link", "wrist_link")]
    w.set_joint_positions(["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"],
                          [0.5, -0.2, 0.3, 0.0])
    rel = relative_transforms(w, movable)
    np.testing.assert_allclose(rel[("base_link", "shoulder_link")], _T(_rz(0.5), 0.10), atol=1e-9)
    np.testing.assert_allclose(rel[("shoulder_link", "upper_arm_link")], _T(_ry(-0.2), 0.08), atol=1e-9)
    np.testing.assert_allclose(rel[("upper_arm_link", "forearm_link")], _T(_ry(0.3), 0.30), atol=1e-9)
    np.testing.assert_allclose(rel[("forearm_link", "wrist_link")], _T(np.eye(3), 0.25), atol=1e-9)
    stat = relative_transforms(w, fixed)
    np.testing.assert_allclose(stat[("world", "base_link")], np.eye(4), atol=1e-12)
    np.testing.assert_allclose(stat[("wrist_link", "tool_link")], _T(np.eye(3), 0.06), atol=1e-9)


def test_help_prints_usage_and_exits_0_without_ros(capsys):
    assert main(["link_frames_node", "--help"]) == 0
    out = capsys.readouterr().out
    assert "robot_description_path" in out and "frame_prefix" in out and "--ros-args" in out


def test_sigterm_ends_the_node_with_exit_code_0():
    import os
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-m", "vsf_sensor_ros.demo.link_frames_node"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and "link frames:" not in line:
            line = proc.stdout.readline() or "link frames:"    # up once it has logged its frames (or ended)
        time.sleep(1.0)    # and idle, waiting for a joint state
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()
