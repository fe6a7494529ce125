"""Stamp 0 in membrane_force_node's pairings: a depth frame, colour image or stamped pressure stamped 0
is rejected, counted per topic and named on /diagnostics (over DDS) and in the log.

An in-process node on the dome scene of test_membrane_force_node.py with a ``FluidPressure`` (frame
and pressure pair by stamp) and a colour topic (frame and colour image pair by stamp).  A depth
frame, colour image and pressure all stamped 0 would pair with one another (|0 - 0| = 0): the frame
would be estimated with that pressure and become the reference.  Each is rejected instead; the
frame stamped 1 s then pairs with the pressure stamped 1 s and, no colour coming, goes on from
depth alone after ``colour_timeout``: the reference is set from that one frame.
"""
from __future__ import annotations

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import FluidPressure, Image

from .node_helpers import spin_until
from .test_membrane_force_node import P_REF, _bare_node, _camera_info, _image_32f, scene  # noqa: F401

DEPTH, COLOUR, PRESSURE = "/camera/depth/image_rect_raw", "/camera/color/image_raw", "/punyo/pressure"


def _pressure(pa: float, sec: int) -> FluidPressure:
    m = FluidPressure(fluid_pressure=pa)
    m.header.stamp = Time(sec=sec)
    return m


def _grey(cam, sec: int) -> Image:
    msg = Image(height=cam.height, width=cam.width, encoding="mono8", step=cam.width,
                data=bytes(cam.width * cam.height))
    msg.header.stamp = Time(sec=sec)
    return msg


def test_depth_colour_and_pressure_stamped_0_are_rejected_counted_and_named(
        scene, rclpy_context, capfd):  # noqa: F811
    import rclpy
    node = _bare_node(scene, "zero_stamp_membrane_node", pressure_scale=1.0, diagnostics_period=0.2,
                      pressure_type="sensor_msgs/msg/FluidPressure", colour_topic="camera/color/image_raw",
                      colour_timeout=0.2)
    probe = rclpy.create_node("zero_stamp_listener")
    reports = []
    probe.create_subscription(DiagnosticArray, "/diagnostics", reports.append, 50)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    ex.add_node(probe)
    out = []
    node._publish = lambda header, res: out.append(header.stamp.sec)     # what would go out
    try:
        node._on_camera_info(_camera_info(scene["cam"]))
        node._on_pressure(_pressure(P_REF, 0))
        node._on_colour(_grey(scene["cam"], 0))
        node._on_image(_image_32f(scene["ref"], 0))
        assert node.zero_stamps == {DEPTH: 1, COLOUR: 1, PRESSURE: 1}
        assert {r: node.rejected[r] for r in ("zero_stamp", "colour_zero_stamp", "pressure_zero_stamp")} == \
            {"zero_stamp": 1, "colour_zero_stamp": 1, "pressure_zero_stamp": 1}
        # nothing kept to pair with, nothing waiting, nothing estimated
        assert not node.pressures.by_stamp and not node.pairing.colours and not node.pairing.pending
        assert not node.pressures.pending and out == [] and node.estimator.model is None

        node._on_pressure(_pressure(P_REF, 1))
        node._on_image(_image_32f(scene["ref"], 1))                      # waits for its colour ...
        assert len(node.pairing.pending) == 1
        assert spin_until(ex, lambda: out == [1], timeout=5.0)           # ... then goes on without it
        assert node.depth_only["no_colour"] == 1 and node.estimator.model is not None

        def named():
            for arr in reports:
                for st in arr.status:
                    if st.name == "/zero_stamp_membrane_node":
                        return st
            return None
        reports.clear()
        node._on_colour(_grey(scene["cam"], 0))                          # one more in this period
        assert spin_until(ex, lambda: named() is not None, timeout=5.0)
        st = named()
        values = {kv.key: kv.value for kv in st.values}
        assert (values[f"zero_stamps.{DEPTH}"], values[f"zero_stamps.{COLOUR}"],
                values[f"zero_stamps.{PRESSURE}"]) == ("1", "2", "1")
        assert values["rejected.colour_zero_stamp"] == "2"
        level = st.level[0] if isinstance(st.level, bytes) else int(st.level)
        assert level == 1 and f"{COLOUR} (2)" in st.message and "stamped 0" in st.message
        err = capfd.readouterr().err
        assert all(f"{topic} stamped 0 (1 so far)" in err for topic in (PRESSURE, DEPTH, COLOUR)), err
    finally:
        ex.remove_node(probe)
        ex.remove_node(node)
        probe.destroy_node()
        node.destroy_node()
        ex.shutdown()
