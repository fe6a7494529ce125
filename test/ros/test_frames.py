"""The frame table (pure), its TransformStamped / TFMessage form, and the sensor frames of the models.

Expected transforms are derived by hand: Rx(90 deg) = [[1, 0, 0], [0, 0, -1], [0, 1, 0]], whose
quaternion is (sin 45, 0, 0, cos 45); Rz(90 deg) maps x -> y.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import deserialize_message

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.rig.frames import frame_table, sensor_frame_name, world_frame_table
from vsf_sensor_ros.ros.frames import TFMessage, transform_msg
from vsf_sensor_ros.ros.scene import SensorFactory
from vsf_sensor_ros.ros.messages.readings import encode_markers, encode_vector
from vsf_sensor_ros.ros.parameter_table import ConfigError, sensor_specs
from vsf_sensor_ros.ros.parameters import SensorParameters

S45 = math.sqrt(0.5)
RX90 = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
LINKS = ["world", "base", "tool"]


def _T(R=np.eye(3), t=(0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def _config(name: str, type_name: str, **values) -> SensorParameters:
    v = {s.key: s.default for s in sensor_specs(type_name)}
    v.update(values)
    return SensorParameters(name, type_name, v)


# --------------------------------------------------------------------------- the table
def test_fixed_bodies_and_sensor_frames_are_static_free_bodies_follow_world_frame():
    T_mount = _T(t=(0.0, 0.0, 0.1))
    bodies = [("bubble", "tool", T_mount), ("box", None, None), ("cam", "bubble", _T(t=(0.01, 0, 0)))]
    table = frame_table("world", LINKS, "world", bodies, [("pad_frame", "bubble", RX90)])
    assert [(t.parent, t.child) for t in table.static] == [
        ("tool", "bubble"), ("bubble", "cam"), ("bubble", "pad_frame")]
    np.testing.assert_array_equal(table.static[0].T, T_mount)
    np.testing.assert_array_equal(table.static[2].T, RX90)
    assert table.free == {"box": "world"}


def test_a_world_frame_outside_the_urdf_is_announced_at_the_root_and_world_parents_follow_it():
    # URDF rooted at 'base' (no 'world' link); contacts in 'map'; a body fixed to the node's 'world'
    table = frame_table("map", ["base", "tool"], "base", [("table", "world", _T(t=(0, 0, -0.5)))], [])
    assert [(t.parent, t.child) for t in table.static] == [("map", "base"), ("map", "table")]
    np.testing.assert_array_equal(table.static[0].T, np.eye(4))


def test_a_fixed_body_without_transform_is_refused():
    with pytest.raises(ValueError, match="'b'"):
        frame_table("world", LINKS, "world", [("b", "tool", None)], [])


def test_transform_message_of_rx90_is_the_hand_derived_quaternion():
    msg = transform_msg("tool", "pad_frame", _T(RX90[:3, :3], (0.1, -0.2, 0.3)), Time(sec=4, nanosec=5))
    assert (msg.header.frame_id, msg.child_frame_id) == ("tool", "pad_frame")
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (4, 5)
    tr, r = msg.transform.translation, msg.transform.rotation
    np.testing.assert_allclose([tr.x, tr.y, tr.z], [0.1, -0.2, 0.3])
    np.testing.assert_allclose([r.x, r.y, r.z, r.w], [S45, 0.0, 0.0, S45], atol=1e-12)


def test_command_line_states_the_transform_for_static_transform_publisher():
    table = frame_table("world", LINKS, "world", [], [("pad_frame", "tool", _T(RX90[:3, :3], (0, 0, 0.03)))])
    (line,) = [t.command() for t in table.static]
    m = re.fullmatch(r"ros2 run tf2_ros static_transform_publisher --frame-id tool "
                     r"--child-frame-id pad_frame --x (\S+) --y (\S+) --z (\S+) "
                     r"--qx (\S+) --qy (\S+) --qz (\S+) --qw (\S+)", line)
    assert m, line
    np.testing.assert_allclose([float(v) for v in m.groups()], [0, 0, 0.03, S45, 0, 0, S45], atol=1e-8)


@pytest.mark.skipif(TFMessage is None, reason="tf2_msgs is not importable (make venv builds it; a build "
                                              "without a compiler has none): the node cannot publish TF here")
def test_tf_message_carries_every_static_transform():
    table = frame_table("world", LINKS, "world", [("bubble", "tool", _T(t=(0, 0, 0.1)))],
                        [("pad_frame", "bubble", RX90)])
    msg = TFMessage(transforms=[transform_msg(t.parent, t.child, t.T, Time()) for t in table.static])
    got = {t.child_frame_id: (t.header.frame_id, t.transform.translation.z, t.transform.rotation.x)
           for t in msg.transforms}
    assert got["bubble"] == ("tool", pytest.approx(0.1), 0.0)
    assert got["pad_frame"][0] == "bubble" and got["pad_frame"][2] == pytest.approx(S45)


# --------------------------------------------------------------------------- the models' frames
@pytest.fixture(scope="module")
def world():
    return embedded_world()


def test_klampt_pad_reads_in_its_announced_frame_and_the_value_is_right_in_the_link_frame(world):
    """Tsensor = Rx(90), 2 N along the link's +y: (0, 0, -2) in pad_frame = (0, 2, 0) in tool_link."""
    import torch

    from vsf_sensor_ros.sensor import ContactState, SimState
    cfg = _config("pad", "ContactSensor", attachment="tool_link", Tsensor=RX90.reshape(-1).tolist(),
                  patchMin=[-0.05, -0.05], patchMax=[0.05, 0.05], hasForce=[True, True, True])
    sensor, layout = SensorFactory(world, {}).build(cfg)
    assert layout.frame_id == "tool_link" and layout.sensor_frame == "pad_frame" == sensor_frame_name("pad")
    np.testing.assert_array_equal(layout.body_T_sensor, RX90)
    Tt = world.body_transform("tool_link")
    f_world = Tt[:3, :3] @ np.array([0.0, 2.0, 0.0])
    cs = ContactState(torch.tensor(Tt[:3, 3].reshape(1, 3)), torch.tensor(f_world.reshape(1, 3)),
                      torch.tensor([-1]), torch.tensor([-1]))
    state = SimState(world.body_transforms(torch.float64), {}, {("tool_link", "object"): cs})
    msg = deserialize_message(encode_vector(layout, sensor.predict(state).numpy(), 1_000_000_000),
                              WrenchStamped)
    f = np.array([msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z])
    assert msg.header.frame_id == "pad_frame"
    np.testing.assert_allclose(f, [0.0, 0.0, -2.0], atol=1e-12)
    # expressed in the link with the transform the node announces for pad_frame
    (entry,) = [t for t in world_frame_table(world, "world", [layout]).static if t.child == "pad_frame"]
    assert entry.parent == "tool_link"
    np.testing.assert_allclose(entry.T[:3, :3] @ f, [0.0, 2.0, 0.0], atol=1e-12)
    # markers: points in world_frame, the label in the reading's frame
    markers = encode_markers("pad", layout, "world", Time(sec=1), np.zeros((0, 3)), np.zeros((0, 3)),
                             sensor.predict(state).numpy(), 0.01, True)
    assert {m.ns: m.header.frame_id for m in markers.markers} == {
        "pad/contacts": "world", "pad/forces": "world", "pad/label": "pad_frame"}


def test_isaac_sensor_frame_is_its_position_and_punyo_models_stay_in_the_body_frame(world):
    factory = SensorFactory(world, {})
    _, load = factory.build(_config("load", "IsaacContactSensor", attachment="object",
                                    position=[0.0, 0.0, 0.02]))
    assert (load.frame_id, load.sensor_frame) == ("object", "load_frame")
    np.testing.assert_array_equal(load.body_T_sensor, _T(t=(0.0, 0.0, 0.02)))
    for type_name in ("PunyoPressureSensor", "PunyoDenseForceSensor"):
        _, lay = factory.build(_config("p", type_name, attachment="punyo"))
        assert (lay.sensor_frame, lay.reading_frame, lay.body_T_sensor) == ("", "punyo", None)


def test_embedded_world_table_announces_its_extra_bodies(world):
    table = world_frame_table(world, "world", [])
    assert [(t.parent, t.child) for t in table.static] == [("tool_link", "punyo")]
    assert table.free == {"table": "world", "object": "world"}
    assert set(world.urdf_link_names) == {"world", "base_link", "shoulder_link", "upper_arm_link",
                                          "forearm_link", "wrist_link", "tool_link"}


def test_a_sensor_frame_named_like_a_body_is_a_configuration_error():
    w = embedded_world()
    w.attach_body("pad_frame", w.body_mesh("punyo"), "tool_link")
    with pytest.raises(ConfigError) as err:
        SensorFactory(w, {}).build(_config("pad", "ContactSensor", attachment="tool_link"))
    assert err.value.value == "pad" and "pad_frame" in err.value.detail     # the sensor, and its frame
