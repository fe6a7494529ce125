"""TF over real DDS with ``frame_prefix``: a TF buffer resolves every frame the node stamps.

The node runs the four test sensors (``sensor_node_scene``) with ``frame_prefix: left/``, a
Klampt pad whose ``Tsensor`` is a 90 deg turn about x and a load sensor at ``(0.01, 0.02,
0.03)`` on the object.  The test keeps its own small TF buffer: the transforms the node sends
on ``/tf_static`` and ``/tf``, plus the URDF link frames robot_state_publisher would send with
the same prefix (computed here from the URDF file's joint origins, the robot at zero).  Every
``frame_id`` of every output then resolves to the root ``left/world``, and the values the
buffer gives are the hand-derived ones:

* the flange ``tool_link`` at zero: ``z = 0.10 + 0.08 + 0.30 + 0.25 + 0.06 = 0.79``, no rotation;
* the object, posed at ``(0.5, 0.1, 0.02)`` turned 90 deg about z: the load frame's origin
  ``(0.5 - 0.02, 0.1 + 0.01, 0.02 + 0.03) = (0.48, 0.11, 0.05)``;
* 2 N on the pad along world +y read ``(0, 0, -2)`` in ``left/patch_frame``, which the
  buffer's rotation of that frame turns back into ``(0, 2, 0)``.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Tuple

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, WrenchStamped
from visualization_msgs.msg import MarkerArray

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.ros.frames import TFMessage

from .node_helpers import joint_state
from .sensor_node_scene import (SENSORS, first_send, measured_forces, measured_pressure, rows_to_cloud, stamp,
                                start_node)

pytestmark = pytest.mark.skipif(TFMessage is None,
                                reason="tf2_msgs is not importable (make venv builds it)")

URDF = Path(__file__).resolve().parents[2] / "vsf_sensor_ros" / "data" / "embedded_arm.urdf"
PREFIX = "left/"
RX90 = [1.0, 0.0, 0.0, 0.0,
        0.0, 0.0, -1.0, 0.0,
        0.0, 1.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 1.0]
LOAD_POSITION = [0.01, 0.02, 0.03]
OBJECT_XYZ = (0.5, 0.1, 0.02)
OBJECT_QUAT = (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))   # 90 deg about z
FLANGE = np.array([0.0, 0.0, 0.79])


def _quat_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """Rotation matrix of a unit quaternion (the textbook formula)."""
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    """URDF rpy: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


class TfBuffer:
    """child frame -> (parent frame, 4x4 child -> parent); resolves a frame to its root."""

    def __init__(self) -> None:
        self.edges: Dict[str, Tuple[str, np.ndarray]] = {}

    def add_message(self, msg) -> None:
        for t in msg.transforms:
            tr, r = t.transform.translation, t.transform.rotation
            T = np.eye(4)
            T[:3, :3] = _quat_matrix(r.x, r.y, r.z, r.w)
            T[:3, 3] = (tr.x, tr.y, tr.z)
            self.edges[t.child_frame_id] = (t.header.frame_id, T)

    def add_urdf_at_zero(self, path: Path, prefix: str) -> None:
        """What robot_state_publisher with ``frame_prefix`` sends for a robot at zero."""
        for j in ET.parse(path).getroot().findall("joint"):
            o = j.find("origin")
            xyz = [float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
            rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = _rpy_matrix(*rpy), xyz
            self.edges[prefix + j.find("child").get("link")] = (prefix + j.find("parent").get("link"), T)

    def resolve(self, frame: str) -> Tuple[str, np.ndarray]:
        """(root, 4x4 frame -> root); raises KeyError naming a frame nothing announces."""
        T, f, seen = np.eye(4), frame, set()
        while f in self.edges:
            assert f not in seen, f"TF loop through {f}"
            seen.add(f)
            parent, T_cp = self.edges[f]
            T, f = T_cp @ T, parent
        if f == frame and frame not in {p for p, _ in self.edges.values()}:
            raise KeyError(f"frame {frame!r} is announced by no one")
        return f, T


@pytest.fixture(scope="module")
def session(tmp_path_factory, rclpy_context):
    extra = {"frame_prefix": PREFIX, "patch.Tsensor": RX90, "patch.measured_scale": 1.0,
             "load.position": LOAD_POSITION}
    with start_node(tmp_path_factory.mktemp("tf_tree"), "tf_tree_probe", extra=extra) as (proc, probe, _):
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        probe.listen("/tf_static", TFMessage, latched)
        probe.listen("/tf", TFMessage)
        for s in SENSORS:
            probe.listen(f"/{s}/markers", MarkerArray)
        yield proc, probe


def _outputs_at(probe, t) -> Dict[str, object]:
    out = {}
    for s in SENSORS:
        for o in ("predicted", "residual", "jacobian", "markers"):
            for m in probe.received.get(f"/{s}/{o}", []):
                if isinstance(m, MarkerArray):
                    if m.markers and m.markers[0].header.stamp == t:
                        out[f"/{s}/{o}"] = m
                elif m.header.stamp == t:
                    out[f"/{s}/{o}"] = m
    return out


def test_every_stamped_frame_resolves_with_the_prefix_and_the_hand_derived_transforms(session):
    proc, probe = session
    t = stamp(21)
    pose = PoseStamped()
    pose.header.stamp, pose.header.frame_id = t, "world"      # inputs keep the bare world_frame
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = OBJECT_XYZ
    q = pose.pose.orientation
    q.x, q.y, q.z, q.w = OBJECT_QUAT
    send = first_send(probe)   # the probe's first messages, each confirmed by a counter (see deliver)
    send("/object/pose", pose)
    # the robot at zero (the node starts at the embedded world's HOME), as the buffer's URDF frames
    js = joint_state(["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"], [0.0] * 4)
    js.header.stamp = t
    send("/joint_states", js)
    # 2 N on the pad (tool_link) along world +y at the flange origin, the opposite on the object
    f = np.array([0.0, 2.0, 0.0])
    rows = [("tool_link", "object", FLANGE, f, -1, -1), ("object", "tool_link", FLANGE, -f, -1, -1)]
    send("/pressure/measured", measured_pressure(1013.0, t))
    n_vertices = len(embedded_world().body_mesh("punyo").vertices)
    send("/force/measured", measured_forces(np.zeros((n_vertices, 3)), t))
    for s in ("patch", "load"):
        w = WrenchStamped()
        w.header.stamp = t
        send(f"/{s}/measured", w)
    send("/contacts", rows_to_cloud(rows, t))
    wanted = [f"/{s}/{o}" for s in SENSORS for o in ("predicted", "residual", "jacobian", "markers")]
    assert probe.spin_until(lambda: set(_outputs_at(probe, t)) == set(wanted), 20.0), \
        (sorted(set(wanted) - set(_outputs_at(probe, t))), proc.output()[-3000:])
    assert probe.spin_until(lambda: probe.received["/tf_static"] and any(
        tr.header.stamp == t for m in probe.received["/tf"] for tr in m.transforms), 5.0)

    buf = TfBuffer()
    buf.add_urdf_at_zero(URDF, PREFIX)
    for m in probe.received["/tf_static"][-1:] + [m for m in probe.received["/tf"]
                                                  if m.transforms[0].header.stamp == t]:
        for tr in m.transforms:      # every frame the node announces carries the prefix
            assert tr.header.frame_id.startswith(PREFIX) and tr.child_frame_id.startswith(PREFIX), tr
        buf.add_message(m)

    outputs = _outputs_at(probe, t)
    stamped = {}
    for k, m in outputs.items():
        if isinstance(m, MarkerArray):
            stamped.update({f"{k} {mk.ns}": mk.header.frame_id for mk in m.markers})
        else:
            stamped[k] = m.header.frame_id
    assert len(stamped) > len(wanted)        # the markers' frames are in as well
    for key, frame in stamped.items():
        assert frame.startswith(PREFIX), (key, frame)
        root, _ = buf.resolve(frame)
        assert root == PREFIX + "world", (key, frame, root)

    # hand-derived transforms from the buffer
    np.testing.assert_allclose(buf.resolve("left/tool_link")[1], np.block(
        [[np.eye(3), FLANGE.reshape(3, 1)], [np.zeros((1, 3)), np.ones((1, 1))]]), atol=1e-12)
    np.testing.assert_allclose(buf.resolve("left/punyo")[1][:3, 3], FLANGE, atol=1e-12)   # on the flange
    np.testing.assert_allclose(buf.resolve("left/load_frame")[1][:3, 3], [0.48, 0.11, 0.05], atol=1e-9)
    np.testing.assert_allclose(buf.resolve("left/object")[1][:3, :3],
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-9)
    # the pad reads (0, 0, -2) in its frame; the buffer's rotation of that frame gives world (0, 2, 0)
    patch = outputs["/patch/predicted"]
    assert patch.header.frame_id == "left/patch_frame"
    fp = np.array([patch.wrench.force.x, patch.wrench.force.y, patch.wrench.force.z])
    np.testing.assert_allclose(fp, [0.0, 0.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(buf.resolve("left/patch_frame")[1][:3, :3] @ fp, f, atol=1e-9)
    # markers: the contact point in the (prefixed) world frame is the flange origin sent
    (spheres,) = [mk for mk in outputs["/patch/markers"].markers if mk.ns == "patch/contacts"]
    assert spheres.header.frame_id == "left/world"
    np.testing.assert_allclose([[p.x, p.y, p.z] for p in spheres.points], [FLANGE], atol=1e-12)
    assert outputs["/patch/jacobian"].header.frame_id == "left/world"
    assert outputs["/pressure/predicted"].header.frame_id == "left/punyo"
    assert outputs["/load/predicted"].header.frame_id == "left/load_frame"
