"""Fuzz: JointState and PoseStamped applied to the World as the node applies them.

The node hands a JointState's names and positions to
``World.set_joint_positions`` and turns a pose into a transform with
``transform_from_xyz_quat`` before ``World.set_body_pose``.  Both are driven
here with any message: a malformed one must raise ``ValueError`` and leave
the World exactly as it was (every body transform, every joint position,
the ignored-names list); a well-formed one must give the reference's
joint positions and transforms (forward kinematics composed here with
scipy from the URDF text, never Klampt's numbers).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Dict

import numpy as np
import pytest
import trimesh
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from test.fuzz.strategies import joint_states, poses
from vsf_sensor_ros.world import World, transform_from_xyz_quat

URDF = """<robot name="fuzz_arm">
  <link name="world"/>
  <joint name="fix" type="fixed"><origin xyz="0.1 0.2 0.3" rpy="0 0 0.5"/>
    <parent link="world"/><child link="base"/></joint>
  <link name="base"/>
  <joint name="j_rev" type="revolute"><origin xyz="0 0 0.5" rpy="0.1 0 0"/><parent link="base"/>
    <child link="l1"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="l1"/>
  <joint name="j_pri" type="prismatic"><origin xyz="0 0 0.4"/><parent link="l1"/><child link="l2"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="l2"/>
  <joint name="j_cont" type="continuous"><origin xyz="0 0.1 0" rpy="0 0.2 0"/><parent link="l2"/>
    <child link="l3"/><axis xyz="0 0 1"/></joint>
  <link name="l3"/>
  <joint name="j_mimic" type="revolute"><origin xyz="0 0 0.1"/><parent link="l3"/><child link="l4"/>
    <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/>
    <mimic joint="j_rev" multiplier="-1" offset="0.2"/></joint>
  <link name="l4"/>
</robot>"""
MOVABLE = ["j_rev", "j_pri", "j_cont"]
MIMIC = ["j_mimic"]
OTHER_NAMES = ["fix", "j_mimic", "l1", "world"]
T_CUBE_MARKER = np.array([[0.0, -1.0, 0.0, 0.05], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.02],
                          [0.0, 0.0, 0.0, 1.0]])
T_L3_TOOL = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.03],
                      [0.0, 0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def world() -> World:
    w = World.from_urdf(URDF)
    box = trimesh.creation.box(extents=(0.02, 0.02, 0.02))
    w.attach_body("cube", box, None)                         # free: follows its pose topic
    w.attach_body("marker", box, "cube", T_CUBE_MARKER)      # rides on the free body
    w.attach_body("tool", box, "l3", T_L3_TOOL)              # rides on a link
    return w


def _urdf_joints():
    """``(name, type, parent, child, T_origin, axis)`` per URDF joint, in file order (parents first)."""
    out = []
    for j in ET.fromstring(URDF).findall("joint"):
        o = j.find("origin")
        T_origin = np.eye(4)
        rpy = [float(v) for v in o.get("rpy", "0 0 0").split()]
        T_origin[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()
        T_origin[:3, 3] = [float(v) for v in o.get("xyz").split()]
        a = j.find("axis")
        axis = np.array([float(v) for v in a.get("xyz").split()]) if a is not None else np.zeros(3)
        out.append((j.get("name"), j.get("type"), j.find("parent").get("link"), j.find("child").get("link"),
                    T_origin, axis))
    return out


URDF_JOINTS = _urdf_joints()


def reference_fk(q: Dict[str, float]) -> Dict[str, np.ndarray]:
    """Link -> world transforms composed from the URDF text with scipy (URDF rpy = extrinsic x-y-z)."""
    out = {"world": np.eye(4)}
    for name, jtype, parent, child, T_origin, axis in URDF_JOINTS:
        motion = np.eye(4)
        v = q.get(name, 0.0)
        if jtype in ("revolute", "continuous"):
            motion[:3, :3] = Rotation.from_rotvec(axis * v).as_matrix()
        elif jtype == "prismatic":
            motion[:3, 3] = axis * v
        out[child] = out[parent] @ T_origin @ motion
    return out


def snapshot(w: World):
    return ({k: v.clone() for k, v in w.body_transforms().items()}, w.joint_positions().copy(),
            list(w.last_ignored_joints))


def assert_unchanged(w: World, before) -> None:
    T0, q0, ignored0 = before
    T1, q1, ignored1 = snapshot(w)
    assert np.array_equal(q1, q0), (q0, q1)
    assert ignored1 == ignored0
    for name, T in T0.items():
        assert np.array_equal(T1[name].numpy(), T.numpy()), name


@given(msg=joint_states(MOVABLE, OTHER_NAMES))
def test_joint_state_applies_whole_or_not_at_all(world, msg):
    before = snapshot(world)
    current = dict(zip(world.joint_names, before[1].tolist()))
    names, pos = list(msg.name), np.asarray(msg.position, dtype=np.float64)   # as the node reads them
    want = ref.joint_state(world.joint_names, MIMIC, current, names, pos.tolist())
    try:
        ignored = world.set_joint_positions(names, pos)
    except ValueError as exc:
        record("joint_state", "rejected:" + "|".join(sorted(want.reasons)) if isinstance(want, ref.Rejected)
               else "rejected:unexpected")
        assert isinstance(want, ref.Rejected), f"valid JointState rejected ({exc}); {names} {pos}"
        assert str(exc)
        assert_unchanged(world, before)
        return
    record("joint_state", "accepted")
    assert not isinstance(want, ref.Rejected), f"malformed JointState applied ({sorted(want.reasons)})"
    positions, want_ignored = want
    assert ignored == want_ignored and world.last_ignored_joints == want_ignored
    assert world.joint_positions().tolist() == [positions[n] for n in world.joint_names]
    T = world.body_transforms()
    fk = reference_fk(positions)
    tol = 1e-9 * (1.0 + max(abs(v) for v in positions.values()))
    for link in ("base", "l1", "l2", "l3"):
        np.testing.assert_allclose(T[link].numpy(), fk[link], rtol=0, atol=tol, err_msg=link)
    np.testing.assert_allclose(T["tool"].numpy(), fk["l3"] @ T_L3_TOOL, rtol=0, atol=tol)
    if "j_mimic" not in names:             # the mimic joint follows j_rev: -q + 0.2
        fk = reference_fk({**positions, "j_mimic": -positions["j_rev"] + 0.2})
        np.testing.assert_allclose(T["l4"].numpy(), fk["l4"], rtol=0, atol=tol, err_msg="l4")
    # the free body and its rider do not move with the joints
    assert np.array_equal(T["cube"].numpy(), before[0]["cube"].numpy())


POSE_BODIES = ("cube",) * 9 + ("marker", "tool", "l1", "nope")


@given(msg=poses(), body=st.sampled_from(POSE_BODIES))
def test_pose_applies_whole_or_not_at_all(world, msg, body):
    before = snapshot(world)
    p, q = msg.pose.position, msg.pose.orientation
    want = ref.pose([p.x, p.y, p.z], [q.x, q.y, q.z, q.w])
    if body != "cube" and not isinstance(want, ref.Rejected):
        want = ref.Rejected(frozenset({"not_a_free_body"}))
    try:
        T = transform_from_xyz_quat([p.x, p.y, p.z], [q.x, q.y, q.z, q.w])    # as the node does
        world.set_body_pose(body, T)
    except ValueError as exc:
        record("pose", "rejected:" + ("|".join(sorted(want.reasons)) if isinstance(want, ref.Rejected)
                                      else "on_threshold"))
        assert want is None or isinstance(want, ref.Rejected), f"valid pose rejected ({exc}); {msg}"
        assert_unchanged(world, before)
        return
    record("pose", "accepted")
    assert not isinstance(want, ref.Rejected), f"malformed pose applied ({sorted(want.reasons)}); {msg}"
    got = world.body_transform("cube")
    assert got[:3, 3].tolist() == [p.x, p.y, p.z]            # the position is taken as it is
    if want is not None:
        np.testing.assert_allclose(got[:3, :3], want[:3, :3], rtol=0, atol=1e-12)
    assert np.allclose(got[:3, :3] @ got[:3, :3].T, np.eye(3), atol=1e-12) and \
        np.linalg.det(got[:3, :3]) > 0.999999
    np.testing.assert_allclose(world.body_transform("marker"), got @ T_CUBE_MARKER, rtol=1e-12,
                               atol=1e-12 * (1 + float(np.abs(got).max())))
    T = world.body_transforms()
    for other in ("base", "l1", "l2", "l3", "l4", "tool"):
        assert np.array_equal(T[other].numpy(), before[0][other].numpy()), other


def test_huge_quaternion_keeps_its_rotation():
    # (1e200, 0, 0, 0) is a rotation of pi about x, as (1, 0, 0, 0) is
    T = transform_from_xyz_quat([0.0, 0.0, 0.0], [1e200, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(T[:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-12)


def test_reference_pose_is_scipy_for_a_quarter_turn():
    # the reference itself, by hand: (0, 0, sin 45deg, cos 45deg) turns x onto y
    T = ref.pose([1.0, 2.0, 3.0], [0.0, 0.0, 2 * math.sin(math.pi / 4), 2 * math.cos(math.pi / 4)])
    np.testing.assert_allclose(T, [[0, -1, 0, 1], [1, 0, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]], atol=1e-15)
