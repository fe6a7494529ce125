"""Frames over real DDS: every frame_id the node stamps resolves, and values are in the stamped frame.

One node process with the four test sensors (``sensor_node_scene``) and a Klampt pad whose
``Tsensor`` is rotated 90 deg about x.  The frames a user's TF tree has are the URDF's links
(read here from the URDF file, as robot_state_publisher would), ``world_frame``, and the frames
the node announces: on ``/tf_static`` and ``/tf`` where ``tf2_msgs`` is importable, else in its
start-up log as ``static_transform_publisher`` command lines (parsed here).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Set, Tuple

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from visualization_msgs.msg import MarkerArray

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.ros.frames import TFMessage

from .sensor_node_scene import (KINDS, SENSORS, first_send, measured_forces, measured_pressure, rows_to_cloud,
                                stamp, start_node)

URDF = Path(__file__).resolve().parents[2] / "vsf_sensor_ros" / "data" / "embedded_arm.urdf"
# Tsensor = Rx(90 deg), row-major: the sensor's z axis is the link's -y axis
RX90 = [1.0, 0.0, 0.0, 0.0,
        0.0, 0.0, -1.0, 0.0,
        0.0, 1.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 1.0]
_CMD = re.compile(r"--frame-id (\S+) --child-frame-id (\S+) --x (\S+) --y (\S+) --z (\S+) "
                  r"--qx (\S+) --qy (\S+) --qz (\S+) --qw (\S+)")
_FREE = re.compile(r"^\s+(\S+): a free body .* broadcast (\S+) -> \1 on /tf", re.M)


def _at(probe, topic: str, t) -> list:
    """Messages of ``topic`` stamped ``t`` (a MarkerArray by its markers' stamps)."""
    def stamp_of(m):
        return m.markers[0].header.stamp if isinstance(m, MarkerArray) and m.markers else \
            getattr(getattr(m, "header", None), "stamp", None)
    return [m for m in probe.received.get(topic, []) if stamp_of(m) == t]


def _urdf_links() -> Set[str]:
    return {link.get("name") for link in ET.parse(URDF).getroot().findall("link")}


def _rotate(q: Tuple[float, float, float, float], v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the unit quaternion ``q = (x, y, z, w)``: v' = v + 2w (u x v) + 2 u x (u x v)."""
    u, w = np.asarray(q[:3], dtype=float), float(q[3])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))


def _announced_from_log(log: str) -> Dict[str, Tuple[str, tuple]]:
    """child frame -> (parent, (x, y, z, qx, qy, qz, qw)); free bodies get (parent, ())."""
    out = {m.group(2): (m.group(1), tuple(float(v) for v in m.groups()[2:])) for m in _CMD.finditer(log)}
    out.update({m.group(1): (m.group(2), ()) for m in _FREE.finditer(log)})
    return out


def _announced_from_tf(msgs) -> Dict[str, Tuple[str, tuple]]:
    out = {}
    for msg in msgs:
        for t in msg.transforms:
            tr, r = t.transform.translation, t.transform.rotation
            out[t.child_frame_id] = (t.header.frame_id, (tr.x, tr.y, tr.z, r.x, r.y, r.z, r.w))
    return out


@pytest.fixture(scope="module")
def session(tmp_path_factory, rclpy_context):
    extra = {"patch.Tsensor": RX90, "patch.measured_scale": 1.0}
    with start_node(tmp_path_factory.mktemp("frames_node"), "frames_probe", extra=extra) as (proc, probe, _):
        for s in SENSORS:
            probe.listen(f"/{s}/markers", MarkerArray)
        if TFMessage is not None:
            from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
            latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            probe.listen("/tf_static", TFMessage, latched)
            probe.listen("/tf", TFMessage)
        yield proc, probe


def _press_pad(probe, t):
    """2 N on the pad along the link's +y axis at the flange origin (robot at zero: the node's start)."""
    world = embedded_world()
    Tt = world.body_transform("tool_link")
    f_link = np.array([0.0, 2.0, 0.0])
    f_world = Tt[:3, :3] @ f_link
    rows = [("tool_link", "object", Tt[:3, 3], f_world, -1, -1),
            ("object", "tool_link", Tt[:3, 3], -f_world, -1, -1)]
    n_vertices = len(world.body_mesh("punyo").vertices)
    send = first_send(probe)   # the probe's first messages, each confirmed by a counter (see deliver)
    send("/pressure/measured", measured_pressure(1013.0, t))
    send("/force/measured", measured_forces(np.zeros((n_vertices, 3)), t))
    for s in ("patch", "load"):
        w = WrenchStamped()
        w.header.stamp = t
        send(f"/{s}/measured", w)
    send("/contacts", rows_to_cloud(rows, t))


def test_every_stamped_frame_resolves_and_the_pad_reads_in_its_announced_frame(session):
    proc, probe = session
    t = stamp(7)
    _press_pad(probe, t)
    topics = [f"/{s}/{o}" for s in SENSORS for o in ("predicted", "residual", "jacobian", "markers")]
    assert probe.spin_until(lambda: all(_at(probe, k, t) for k in topics), 20.0), \
        [k for k in topics if not _at(probe, k, t)]
    n_diag = len(probe.received["/diagnostics"])
    assert probe.spin_until(lambda: len(probe.received["/diagnostics"]) > n_diag, 5.0)

    if TFMessage is not None:
        assert probe.spin_until(lambda: probe.received["/tf_static"] and probe.received["/tf"], 5.0)
        announced = _announced_from_tf(probe.received["/tf_static"] + probe.received["/tf"])
    else:
        announced = _announced_from_log(proc.output())
    links = _urdf_links()
    resolvable = links | {"world"} | set(announced)
    # every announced frame hangs from a frame that resolves (a tree, no dangling parent)
    for child, (parent, _) in announced.items():
        assert parent in resolvable and parent != child, (child, parent)

    stamped = {}
    for k in topics:
        for msg in _at(probe, k, t):
            if isinstance(msg, MarkerArray):
                for m in msg.markers:
                    stamped[f"{k} {m.ns}"] = m.header.frame_id
            else:
                stamped[k] = msg.header.frame_id
    for d in probe.received["/diagnostics"]:
        assert d.header.frame_id == ""       # diagnostics carry no frame
    markers = {f"/{s}/markers {s}/{ns}" for s in SENSORS for ns in ("contacts", "forces", "label")}
    markers.add("/force/markers force/field")      # the dense force field of the bubble
    expected = {k for k in topics if not k.endswith("/markers")} | markers
    assert set(stamped) == expected, set(stamped) ^ expected
    bad = {k: f for k, f in stamped.items() if f not in resolvable}
    assert not bad, (bad, sorted(resolvable))
    # the frames the node adds are announced, not left to the user to guess
    for frame in ("punyo", "object", "patch_frame", "load_frame"):
        assert frame in announced, (frame, announced)

    # The pad: 2 N along the link's +y; Tsensor = Rx(90) -> in the sensor frame (0, 0, -2).
    patch = _at(probe, "/patch/predicted", t)[-1]
    f = patch.wrench.force
    assert patch.header.frame_id == "patch_frame"
    np.testing.assert_allclose([f.x, f.y, f.z], [0.0, 0.0, -2.0], atol=1e-12)
    parent, pose = announced["patch_frame"]
    assert parent == "tool_link"
    np.testing.assert_allclose(pose[:3], [0.0, 0.0, 0.0], atol=1e-9)
    # expressed in the link frame through the announced transform: (0, 2, 0)
    np.testing.assert_allclose(_rotate(pose[3:], np.array([f.x, f.y, f.z])), [0.0, 2.0, 0.0], atol=1e-7)
    # the load sensor: |2 N| on the object, in load_frame at its position (0 here) on the object
    load = _at(probe, "/load/predicted", t)[-1]
    assert load.header.frame_id == "load_frame" and load.wrench.force.z == pytest.approx(2.0, rel=1e-12)
    assert announced["load_frame"][0] == "object"
    # the residual is stamped like the prediction
    assert _at(probe, "/patch/residual", t)[-1].header.frame_id == "patch_frame"
    for s, kind in KINDS.items():
        assert isinstance(_at(probe, f"/{s}/predicted", t)[-1], kind)
