"""sensor_node next to stand-ins for real drivers, in process (real rclpy, the embedded world).

Stand-ins:

* a robot driver naming its joints ``drv_1`` .. ``drv_4`` where the URDF says ``shoulder_yaw``,
  ``shoulder_pitch``, ``elbow_pitch``, ``wrist_pitch`` -- all four move the bubble (``punyo`` is
  fixed to ``tool_link``, at the end of that chain);
* a Punyo pressure driver: ``std_msgs/Float32`` in hPa, no header, 100 Hz, against contacts at
  60 Hz stamped by a simulator clock unrelated to the node's (stamps from 1000 s);
* a pressure driver with a header on wall-clock time (1.7e9 s) against a simulator stamping from 0.

The callbacks are called directly in real time, so the node's receive times are the real
schedule's.  Expected values come from the stand-ins' own numbers (the baseline in hPa x 100).
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import FluidPressure, JointState
from std_msgs.msg import Float32
from std_srvs.srv import Trigger

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.rig.kinematics import MISSING_AFTER, joints_moving
from vsf_sensor_ros.ros.kinematics import parse_joint_name_map
from vsf_sensor_ros.ros.parameter_table import ConfigError
from vsf_sensor_ros.ros.sensor_node import SensorNode

URDF_JOINTS = ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"]
DRIVER_JOINTS = ["drv_1", "drv_2", "drv_3", "drv_4"]
NAME_MAP = [f"{d}:{u}" for d, u in zip(DRIVER_JOINTS, URDF_JOINTS)]
BASELINE_HPA = 1013.25


def _node(name: str, **extra) -> SensorNode:
    params = {"sensors": ["pressure"], "tare_samples": 10,
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.measured_type": "std_msgs/msg/Float32", "pressure.measured_scale": 100.0,
              "pressure.publish_markers": False, "pressure.publish_jacobian": False}
    params.update(extra)
    return SensorNode(name, namespace="/real_drivers_test",
                      parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


def _joint_state(names, q) -> JointState:
    return JointState(name=list(names), position=[float(v) for v in q])


def _contacts(node: SensorNode, sec: float):
    return contacts_to_pointcloud2({}, node.world.body_names, stamp=sec, frame_id="world")


# --------------------------------------------------------------------------- joint names
def test_joint_name_map_entries_are_checked_and_name_the_entry():
    assert parse_joint_name_map(NAME_MAP, URDF_JOINTS) == dict(zip(DRIVER_JOINTS, URDF_JOINTS))
    for bad, why in [(["drv_1"], "driver_name:urdf_name"), (["drv_1:"], "driver_name:urdf_name"),
                     (["a:b:c"], "driver_name:urdf_name"), (["drv_1:Actuator1"], "not a joint"),
                     (["drv_1:shoulder_yaw", "drv_1:elbow_pitch"], "mapped twice"),
                     (["a:shoulder_yaw", "b:shoulder_yaw"], "already the target")]:
        with pytest.raises(ConfigError) as err:
            parse_joint_name_map(bad, URDF_JOINTS)
        assert why in str(err.value) and repr(bad[-1]) in str(err.value), str(err.value)


def test_joints_moving_a_body_climb_fixed_joints_and_extra_bodies():
    w = embedded_world()
    parents = {b: w.body_parent(b) for b in w.attached_body_names}
    joints = [(j.name, j.parent, j.child, j.mimic[0] if j.mimic else None, j.type != "fixed")
              for j in w.joints]
    # punyo -> tool_link -(fixed)- wrist_link -wrist_pitch- forearm ... -shoulder_yaw- base_link
    assert joints_moving("punyo", parents, joints) == URDF_JOINTS
    assert joints_moving("forearm_link", parents, joints) == ["shoulder_yaw", "shoulder_pitch", "elbow_pitch"]
    assert joints_moving("object", parents, joints) == []          # a free body
    assert joints_moving("base_link", parents, joints) == []


def test_a_bad_joint_name_map_stops_the_node_with_the_entry_named(rclpy_context):
    with pytest.raises(ConfigError) as err:
        _node("bad_map_node", joint_name_map=["drv_1:shoulder_yaw", "drv_2:no_such_joint"])
    assert (err.value.parameter, err.value.value) == ("joint_name_map", "drv_2:no_such_joint")


def test_driver_joint_names_without_a_map_are_counted_warned_once_and_missing_joints_named(
        rclpy_context, capfd):
    node = _node("unmapped_node")
    try:
        T0 = node.world.body_transform("punyo").copy()
        for _ in range(MISSING_AFTER):
            node._on_joint_state(_joint_state(DRIVER_JOINTS, [0.3, -0.2, 0.4, 0.1]))
        assert node.joint_names.unknown == {d: MISSING_AFTER for d in DRIVER_JOINTS}
        np.testing.assert_array_equal(node.world.body_transform("punyo"), T0)   # nothing applied
        node._on_diagnostics()
        assert node.inputs.unknown_joint_names == {d: MISSING_AFTER for d in DRIVER_JOINTS}
        assert node.joint_names.missing() == URDF_JOINTS
        err = capfd.readouterr().err
        for d in DRIVER_JOINTS:
            assert err.count(f"JointState name '{d}' matches no URDF joint") == 1, err
        assert err.count("joints moving sensors were never received") == 1 and "shoulder_yaw" in err, err
    finally:
        node.destroy_node()


def test_driver_joint_names_with_the_map_move_the_bubble_as_the_urdf_names_would(rclpy_context, capfd):
    node = _node("mapped_node", joint_name_map=NAME_MAP)
    try:
        q = [0.3, -0.2, 0.4, 0.1]
        for _ in range(MISSING_AFTER):
            node._on_joint_state(_joint_state(DRIVER_JOINTS, q))
        # second method: a world of its own given the URDF names directly
        ref = embedded_world()
        ref.set_joint_positions(URDF_JOINTS, q)
        np.testing.assert_allclose(node.world.body_transform("punyo"), ref.body_transform("punyo"),
                                   atol=1e-12)
        assert not np.allclose(ref.body_transform("punyo"), embedded_world().body_transform("punyo"))
        assert node.joint_names.unknown == {} and node.joint_names.missing() == []
        node._on_diagnostics()
    finally:
        node.destroy_node()


# --------------------------------------------------------------------------- header-less pressure
def _run_schedule(node: SensorNode, seconds: float, pressure_hpa=lambda j: BASELINE_HPA,
                  contacts_hz: float = 60.0, driver_hz: float = 100.0, t0_sim: float = 1000.0):
    """Contacts at ``contacts_hz`` (stamps from ``t0_sim``) and Float32 at ``driver_hz``, in real time.

    Returns the contacts stamps sent (ns)."""
    events = [(k / contacts_hz, "c", k) for k in range(int(seconds * contacts_hz))]
    events += [(j / driver_hz, "m", j) for j in range(int(seconds * driver_hz))]
    events.sort()
    start = time.monotonic()
    sent = []
    for t, kind, k in events:
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if kind == "c":
            msg = _contacts(node, t0_sim + k / contacts_hz)
            sent.append(msg.header.stamp.sec * 10 ** 9 + msg.header.stamp.nanosec)
            node._on_contacts(msg)
        else:
            node._on_measured("pressure", Float32(data=pressure_hpa(k)))
    return sent


def _paired_fraction(node: SensorNode, sent, skip: int = 6) -> float:
    paired = {s.stamp_ns for s in node._handles["pressure"].pairs}
    later = sent[skip:]                 # once both periods are known (adaptive tolerance)
    return sum(s in paired for s in later) / len(later)


@pytest.fixture
def headerless(rclpy_context):
    node = _node("headerless_node")
    yield node
    node.destroy_node()


def test_headerless_hpa_driver_at_100_hz_pairs_with_contacts_at_60_hz_and_tares_to_its_baseline(headerless):
    node = headerless
    # +-0.5 hPa around the baseline, mean over whole periods = the baseline
    sent = _run_schedule(node, 1.5, lambda j: BASELINE_HPA + 0.5 * np.sin(2 * np.pi * j / 10))
    assert _paired_fraction(node, sent) >= 0.9
    h = node._handles["pressure"]
    assert h.pairer.tolerance_ns is None                  # max_stamp_difference 0: adaptive
    # half the longer period: contacts every 1/60 s -> 8.3 ms (scheduling jitter aside)
    assert 5e6 < h.pairer.effective_tolerance_ns() < 12e6
    # residual/tare stamps are the contacts' own stamps (1000 s + ...), not receive times
    assert all(s.stamp_ns in set(sent) for s in h.pairs)
    r = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert r.success, r.message
    offset = float(h.sensor.get_calibration()["tare"][0]) - float(
        np.asarray(h.sensor.get_calibration().get("tare_sim_avg", [0.0]))[0])
    assert offset == pytest.approx(BASELINE_HPA * 100.0, rel=0.01)


def test_a_live_scale_change_clears_the_buffered_samples_and_a_negative_scale_is_refused(headerless, capfd):
    node = headerless
    h = node._handles["pressure"]
    _run_schedule(node, 0.5)
    assert len(h.pairs) > 10
    res = node.set_parameters([Parameter("pressure.measured_scale", value=-100.0)])
    assert not res[0].successful and "must be > 0" in res[0].reason
    assert len(h.pairs) > 10                              # refused: nothing changed
    assert node.set_parameters([Parameter("pressure.measured_scale", value=1.0)])[0].successful
    assert len(h.pairs) == 0 and h.pairer._meas.stamps == []
    r = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not r.success and "no measured sample paired" in r.message
    # 1013.25 hPa read as Pa: implausible as an absolute pressure, warned once
    for _ in range(3):
        node._on_measured("pressure", Float32(data=BASELINE_HPA))
    err = capfd.readouterr().err
    assert err.count("is not a plausible absolute pressure") == 1 and "measured_scale: 100.0" in err, err
    # only new samples (scale 1) are buffered now: 1013.25 Pa each, not a mix with 101325
    _run_schedule(node, 0.5, t0_sim=2000.0)
    assert len(h.pairs) > 10
    assert all(float(s.measured[0]) == pytest.approx(BASELINE_HPA, rel=1e-6) for s in h.pairs)
    # and a tare on them is refused while they look like hPa read as Pa, naming value, unit and scale
    before = {k: np.asarray(v).tolist() for k, v in h.sensor.get_calibration().items()}
    r = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not r.success
    assert f"{BASELINE_HPA:g}" in r.message and "hPa" in r.message and "measured_scale" in r.message
    assert {k: np.asarray(v).tolist() for k, v in h.sensor.get_calibration().items()} == before


# --------------------------------------------------------------------------- a delayed contacts source
def _delayed_contacts_schedule(node: SensorNode, frames: range, latency_ms: int = 72):
    """Frames every 30 ms: frame k's pressure (1000 + k hPa, header-less) reaches the node at 30k ms,
    its contacts (stamped 1000 s + 30k ms) ``latency_ms`` later -- a ``wrench_contact_node``
    waiting ``time_shift`` for the force of the same instant.  The node's clock is set to each
    arrival time (use_sim_time: the override is its ROS time), so its receive times are exact."""
    from rclpy.time import Time
    events = sorted([(30 * k, 1, k) for k in frames] + [(30 * k + latency_ms, 0, k) for k in frames])
    clock = node.get_clock()
    for t_ms, kind, k in events:
        clock.set_ros_time_override(Time(nanoseconds=2_000_000_000 + t_ms * 1_000_000))
        if kind == 0:
            node._on_contacts(_contacts(node, 1000.0 + 0.03 * k))
        else:
            node._on_measured("pressure", Float32(data=1000.0 + k))


def _frames_of_pairs(node: SensorNode):
    """(frame of the contacts stamp, frame of the measured value) of every pair kept for tares."""
    out = []
    for s in node._handles["pressure"].pairs:
        k_contacts = round((s.stamp_ns - 1_000_000_000_000) / 30_000_000)
        out.append((k_contacts, round(float(s.measured[0]) / 100.0 - 1000.0)))
    return out


def test_measured_delay_pairs_a_headerless_pressure_with_the_late_contacts_of_the_same_frame(rclpy_context):
    # Tolerance 15 ms.  By hand, with delay 0: the contacts of frame k arrive at 30k + 72 ms; the
    # pressures received by then are those of frames <= k + 2 (30k + 60 ms, 12 ms away: the
    # nearest within 15 ms) -> frame k is compared with frame k + 2's pressure (frames 38, 39 of
    # 40 find none: no pressure of frame 40, 41).  With
    # measured_delay 0.07 s the pressure of frame j counts as received at 30j + 70 ms: frame k's
    # (2 ms from 30k + 72) is the nearest, frame k + 1's (30k + 100) is 28 ms away -> aligned.
    node = _node("delay_node", use_sim_time=True, max_stamp_difference=0.015)
    try:
        _delayed_contacts_schedule(node, range(40))
        pairs = _frames_of_pairs(node)
        assert pairs == [(k, k + 2) for k in range(38)], pairs
        ok = node.set_parameters([Parameter("pressure.measured_delay", value=0.07)])
        assert ok[0].successful, ok[0].reason
        assert len(node._handles["pressure"].pairs) == 0       # pairs of the old key dropped
        _delayed_contacts_schedule(node, range(40, 80))       # the same source, 40 frames on
        pairs = _frames_of_pairs(node)
        assert pairs == [(k, k) for k in range(40, 80)], pairs
        for bad in (1.5, -2.0, float("nan")):
            res = node.set_parameters([Parameter("pressure.measured_delay", value=bad)])
            assert not res[0].successful and "measured_delay" in res[0].reason, res[0].reason
        assert node._handles["pressure"].measured_delay_ns() == 70_000_000
    finally:
        node.destroy_node()


def test_measured_delay_is_ignored_for_a_stamped_measured_type(rclpy_context):
    # FluidPressure carries the stamp of its instant: frame k's pressure stamped like its contacts
    # pairs with them whatever the delay (1 s here) and whenever each arrives.
    node = _node("delay_stamped_node", **{"pressure.measured_type": "sensor_msgs/msg/FluidPressure",
                                          "pressure.measured_delay": 1.0, "max_stamp_difference": 0.005})
    try:
        for k in range(10):
            node._on_contacts(_contacts(node, 1000.0 + 0.03 * k))
            m = FluidPressure(fluid_pressure=1000.0 + k)
            m.header.stamp.sec, m.header.stamp.nanosec = 1000, 30_000_000 * k
            node._on_measured("pressure", m)
        assert _frames_of_pairs(node) == [(k, k) for k in range(10)]
    finally:
        node.destroy_node()


# --------------------------------------------------------------------------- clocks
def test_a_wall_clock_driver_against_a_simulator_clock_is_diagnosed_in_diagnostics_and_tare(rclpy_context):
    node = _node("clocks_node", **{"pressure.measured_type": "sensor_msgs/msg/FluidPressure"})
    try:
        h = node._handles["pressure"]
        for k in range(20):
            node._on_contacts(_contacts(node, 0.02 * k))                 # simulator: from 0 s
            m = FluidPressure(fluid_pressure=BASELINE_HPA)
            m.header.stamp.sec, m.header.stamp.nanosec = 1_700_000_000 + k // 50, (k % 50) * 20_000_000
            node._on_measured("pressure", m)                            # wall clock: 1.7e9 s
        assert len(h.pairs) == 0
        node._on_diagnostics()
        hint = "measured stamps are 1.7e+09 s ahead of contacts stamps: different clocks?"
        assert h.stats.pairing == hint
        r = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
        assert not r.success and hint in r.message, r.message
    finally:
        node.destroy_node()


# --------------------------------------------------------------------------- global tare
def test_global_tare_skips_sensors_without_a_measured_stream_and_is_all_or_nothing(rclpy_context):
    extra = {"sensors": ["pressure", "pressure_b", "force"],
             "pressure_b.type": "PunyoPressureSensor", "pressure_b.attachment": "punyo",
             "pressure_b.measured_type": "std_msgs/msg/Float32", "pressure_b.measured_scale": 100.0,
             "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo"}
    node = _node("tare_all_node", **extra)
    try:
        a, b = node._handles["pressure"], node._handles["pressure_b"]
        _run_schedule(node, 0.5)                       # only 'pressure' gets a measured stream
        assert node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response()).success
        before, text_before = a.sensor.get_calibration(), a.calibration_text
        assert float(before["tare"][0]) == pytest.approx(BASELINE_HPA * 100, rel=1e-6)
        _run_schedule(node, 0.5, lambda j: 1000.0, t0_sim=3000.0)   # 'pressure' alone would now tare to 1e5
        node._on_measured("pressure_b", Float32(data=BASELINE_HPA))   # arrives, pairs with nothing
        r = node.measurements.on_tare_all(Trigger.Request(), Trigger.Response())
        assert not r.success
        assert r.message.startswith("not applied: pressure: tared with 10 of 10 samples"), r.message
        assert "pressure_b: cannot tare" in r.message and "skipped (no measured stream): force" in r.message
        # all or nothing: 'pressure' keeps its earlier offset, not the 1e5 Pa its own tare just found
        after = a.sensor.get_calibration()
        assert set(after) == set(before) and all(np.array_equal(after[k], before[k]) for k in before)
        assert a.calibration_text == text_before and b.sensor.get_calibration() == {}
    finally:
        node.destroy_node()


# --------------------------------------------------------------------------- calibration file at start
def test_loading_a_calibration_file_is_logged_with_the_sensors_and_offsets_restored(
        rclpy_context, tmp_path, capfd):
    f = tmp_path / "cal.yaml"
    f.write_text("sensors:\n  pressure: {type: PunyoPressureSensor, calibration: {tare: [101325.0], "
                 "gain: [0.8]}}\n  gone: {type: PunyoPressureSensor, calibration: {tare: [1.0]}}\n")
    node = _node("cal_log_node", calibration_file=str(f))
    try:
        assert float(node._handles["pressure"].sensor.get_calibration()["tare"][0]) == 101325.0
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    line = next((ln for ln in err.splitlines() if "calibration file" in ln), "")
    assert str(f) in line and "=101325 Pa; gain 0.8)" in line and "gone" not in line, err
    # no file yet: said as before, and nothing about loading
    node = _node("cal_log_missing_node", calibration_file=str(tmp_path / "none.yaml"))
    node.destroy_node()
    err = capfd.readouterr().err
    assert "does not exist yet" in err and "loaded" not in err, err


def test_a_paused_header_less_pressure_gets_no_clock_hint(rclpy_context):
    """Float32 pressures are stamped on arrival with the node's own clock: a gap of 1.5 s between a
    contacts message and the next pressure is a pause, not another clock, so /diagnostics' pairing
    stays ``ok`` although the pairer itself keeps the gap (checked first: the case is reached)."""
    node = _node("headerless_pause_node")
    try:
        h = node._handles["pressure"]
        assert h.headerless
        node._on_contacts(_contacts(node, 0.0))
        time.sleep(1.5)   # more than the pairer's 1 s floor for a clock hint
        node._on_measured("pressure", Float32(data=BASELINE_HPA))
        assert "different clocks?" in (h.pairer.offset_hint() or "")
        node._on_diagnostics()
        assert h.stats.pairing == "ok"
        r = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
        assert "different clocks" not in r.message, r.message
    finally:
        node.destroy_node()
