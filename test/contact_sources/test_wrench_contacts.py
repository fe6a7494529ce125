"""Wrench contact source: frames, sign, bias tare, lag and deadband on small hand-computed cases.

World: a one-joint arm.  Link ``tool`` turns about world z (joint ``j``) and sits at (0.5, 0, 0);
the sensor body is fixed to ``tool`` 0.1 m up its z axis; the contact point is (0.02, 0, 0) in
the body frame.  At q = pi/2 the tool's x axis is world +y.
"""
import math

import numpy as np
import pytest

from vsf_sensor_ros.contact_sources.wrench_contacts import (BiasTare, ForceBuffer, WrenchContactConfig,
                                                            WrenchContactSource)
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.world import World

URDF = """<robot name="one">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0"
    izz="0.01"/></inertial></link>
  <link name="tool"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0"
    izz="0.01"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="tool"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 0 1"/><limit lower="-4" upper="4" effort="1" velocity="1"/></joint>
</robot>"""
BODY_T = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.1], [0, 0, 0, 1]], dtype=float)


def source(**kw):
    cfg = dict(body="punyo", other_body="indenter", body_parent="tool", body_transform=BODY_T,
               contact_point=[0.02, 0.0, 0.0], bias_samples=1)
    cfg.update(kw)
    return WrenchContactSource(World.from_urdf(URDF), WrenchContactConfig(**cfg))


def only(out):
    assert len(out) == 1
    stamp, contacts = out[0]
    (pair, c), = contacts.items()
    assert pair == ("punyo", "indenter")
    return stamp, c.points[0].numpy(), c.forces[0].numpy()


def test_wrench_in_a_moving_frame_is_rotated_into_the_world():
    s = source()
    s.on_wrench(0.01, "tool", [0.0, 0.0, 0.0])                 # the bias (1 sample): zero
    s.on_joint_state(1.0, ["j"], [math.pi / 2])
    stamp, p, f = only(s.on_wrench(1.0, "tool", [2.0, 0.0, 1.0]))
    assert stamp == 1.0
    assert p == pytest.approx([0.5, 0.02, 0.1], abs=1e-9)    # (0.02, 0, 0) turned to +y, 0.1 up
    assert f == pytest.approx([0.0, 2.0, 1.0], abs=1e-9)     # tool x = world y


def test_frame_override_and_unknown_frame_rejected():
    s = source()
    assert s.on_wrench(0.01, "ft_sensor_link", [0.0, 0.0, 0.0]) == []
    assert s.rejected_wrenches == 1 and "ft_sensor_link" in s.last_error
    s = source(wrench_frame="world")
    s.on_wrench(0.01, "ft_sensor_link", [0.0, 0.0, 0.0])
    s.on_joint_state(1.0, ["j"], [math.pi / 2])
    _, _, f = only(s.on_wrench(1.0, "ft_sensor_link", [2.0, 0.0, 0.0]))
    assert f == pytest.approx([2.0, 0.0, 0.0])               # already world: not rotated
    with pytest.raises(SettingError) as err:
        source(wrench_frame="nowhere")
    assert (err.value.setting, err.value.value) == ("wrench_frame", "nowhere")
    assert err.value.reason == "unknown_body"


def test_sign_minus_one_gives_the_reaction():
    s = source(force_sign=-1.0, wrench_frame="world")
    s.on_wrench(0.01, "world", [0.0, 0.0, 0.0])
    s.on_joint_state(1.0, ["j"], [0.0])
    _, _, f = only(s.on_wrench(1.0, "world", [1.0, -2.0, 3.0]))
    assert f == pytest.approx([-1.0, 2.0, -3.0])


def test_bias_tare_on_start_then_by_service():
    s = source(wrench_frame="world", bias_samples=3)
    for t, w in ((0.01, [1, 2, 3]), (0.1, [3, 2, 1])):
        s.on_joint_state(t, [], [])
        assert s.on_wrench(t, "world", w) == [(t, {})]       # no bias yet: no contact
    s.on_joint_state(0.2, [], [])
    out = s.on_wrench(0.2, "world", [2, 2, 2])               # third sample: bias (2, 2, 2)
    assert s.bias.bias == pytest.approx([2.0, 2.0, 2.0]) and out == [(0.2, {})]   # zero force
    s.on_joint_state(0.3, [], [])
    _, _, f = only(s.on_wrench(0.3, "world", [5.0, 2.0, 2.0]))
    assert f == pytest.approx([3.0, 0.0, 0.0])
    ok, msg = s.bias.tare()              # the last 3 readings: (3,2,1), (2,2,2), (5,2,2)
    assert ok and s.bias.bias == pytest.approx([10.0 / 3.0, 2.0, 5.0 / 3.0]) and "3 of 3" in msg
    assert BiasTare(2).tare()[0] is False


def test_time_shift_uses_the_later_force_interpolated():
    s = source(wrench_frame="world", time_shift=0.1)
    s.on_wrench(0.01, "world", [0.0, 0.0, 0.0])               # bias 0
    s.on_wrench(0.1, "world", [10.0, 0.0, 0.0])
    assert s.on_joint_state(0.05, [], []) == []              # waits for the force at 0.15
    stamp, _, f = only(s.on_wrench(0.2, "world", [20.0, 0.0, 0.0]))
    assert stamp == 0.05 and f == pytest.approx([15.0, 0.0, 0.0])


def test_deadband_and_force_buffer():
    s = source(wrench_frame="world", min_force=1.0)
    s.on_wrench(0.01, "world", [0.0, 0.0, 0.0])
    s.on_joint_state(1.0, [], [])
    assert s.on_wrench(1.0, "world", [0.6, 0.0, 0.7]) == [(1.0, {})]   # |f| = 0.92 N < 1 N
    b = ForceBuffer()
    b.add(1.0, [1, 1, 1], "a")
    b.add(0.0, [0, 0, 0], "a")                                 # out of order: kept sorted
    assert b.at(0.25)[0] == pytest.approx([0.25] * 3) and b.at(1.5) is None


def test_shipped_config_lists_every_parameter_with_the_ur5e_mount():
    import yaml

    from vsf_sensor_ros.demo.ur5e import punyo_apex_local, punyo_mount_transform
    from vsf_sensor_ros.contact_sources.wrench_contact_node import DEFAULTS
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    params = yaml.safe_load((root / "config" / "wrench_contact_node.yaml").read_text())[
        "wrench_contact_node"]["ros__parameters"]
    assert set(params) == set(DEFAULTS)
    assert np.allclose(np.reshape(params["body_transform"], (4, 4)), punyo_mount_transform())
    assert np.allclose(params["contact_point"], punyo_apex_local())


def test_zero_stamps_are_rejected_and_counted_never_paired():
    """Stamp 0 is a stamp never set: a joint state so stamped would pair with the oldest wrench
    (here the bias sample at 0.01 s), a wrench so stamped would be that oldest wrench."""
    s = source(wrench_frame="world")
    s.on_wrench(0.01, "world", [0.0, 0.0, 0.0])                # bias 0
    assert s.on_joint_state(0.0, [], []) == []                 # not paired, not left waiting
    assert s.on_wrench(0.0, "world", [9.0, 9.0, 9.0]) == []
    assert s.zero_stamps == {"wrench": 1, "joint_states": 1} and s.rejected_wrenches == 1
    assert "stamped 0" in s.last_error and len(s._pending) == 0
    s.on_joint_state(1.0, [], [])
    # the joint state at 1 s: the force interpolated between (0.01 s, 0) and (2 s, (4, 0, 0)):
    # (1 - 0.01) / (2 - 0.01) x 4 = 1.98994975 N along x, the zero-stamped (9, 9, 9) unused
    stamp, _, f = only(s.on_wrench(2.0, "world", [4.0, 0.0, 0.0]))
    assert stamp == 1.0 and f == pytest.approx([0.99 / 1.99 * 4.0, 0.0, 0.0])
