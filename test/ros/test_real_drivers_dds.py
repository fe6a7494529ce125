"""sensor_node over DDS next to stand-ins for a real Kinova driver, a real Punyo driver and a simulator.

* The shipped ``config/kinova_punyo_real.yaml`` as ``real_punyo.launch.py`` starts it (calibration
  file moved to a temporary directory): a robot driver sends ``joint_1`` .. ``joint_7`` (the
  URDF's ``Actuator1`` .. ``Actuator7``), the Punyo driver sends its absolute pressure as a
  header-less ``std_msgs/Float32`` in hPa at 100 Hz on ``/punyo/pressure``, and the contacts come
  at 60 Hz with stamps of a simulator clock unrelated to the node's (from 1000 s).  With the
  file's ``joint_name_map`` every joint applies; without it the seven names are counted and
  warned about.
* ``use_sim_time``: a simulator publishes ``/clock`` and its contacts in its own time; a
  header-less driver pairs by receive time (node clock = the simulator's), while a driver with a
  header on wall-clock time (reaching its sensor by a standard remapping of ``<s>/measured``)
  never pairs and the node says so.

Expected values are the stand-ins' own: the driver's baseline in hPa x 100 = Pa.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2
from std_msgs.msg import Float32
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp, stamp_to_ns

from .node_helpers import FIXTURES, ROOT, NodeProcess, Probe, joint_state, write_params

REAL = ROOT / "config" / "kinova_punyo_real.yaml"
DRIVER_JOINTS = [f"joint_{i}" for i in range(1, 8)]
URDF_JOINTS = [f"Actuator{i}" for i in range(1, 8)]
BASELINE_HPA = 1013.25
BODIES = ["punyo", "object", "table"]


def _needs_fixtures():
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")


def _real_params(tmp: Path, keep_map: bool) -> Path:
    data = yaml.safe_load(REAL.read_text())
    p = data["sensor_node"]["ros__parameters"]
    p["calibration_file"] = str(tmp / "calibration.yaml")
    p["diagnostics_period"] = 0.2
    if not keep_map:
        del p["joint_name_map"]
    return write_params(tmp / "params.yaml", p)


def _diag(probe: Probe) -> Dict[str, Dict[str, str]]:
    msgs = probe.received["/diagnostics"]
    return {st.name: {kv.key: kv.value for kv in st.values} for st in msgs[-1].status} if msgs else {}


def _stream(probe: Probe, seconds: float, contacts_topic: str = "/contacts", measured: Optional[dict] = None,
            joints: Optional[List[str]] = None, sim_clock: bool = False, t0_sim: float = 1000.0) -> List[int]:
    """Publish in real time: contacts at 60 Hz (stamps from ``t0_sim``), each ``measured`` topic at
    100 Hz (``topic -> f(sim_time_s) -> msg``), joint states at 50 Hz, ``/clock`` at 200 Hz when
    ``sim_clock``.  Returns the contacts stamps sent (ns)."""
    rates = {"c": 60.0, "m": 100.0, "j": 50.0, "k": 200.0}
    events = [(i / rates["c"], "c") for i in range(int(seconds * rates["c"]))]
    events += [(i / rates["m"], "m") for i in range(int(seconds * rates["m"]))] if measured else []
    events += [(i / rates["j"], "j") for i in range(int(seconds * rates["j"]))] if joints else []
    events += [(i / rates["k"], "k") for i in range(int(seconds * rates["k"]))] if sim_clock else []
    events.sort()
    pubs = {"c": probe.publisher(contacts_topic, PointCloud2),
            "j": probe.publisher("/joint_states", JointState), "k": probe.publisher("/clock", Clock)}
    mpubs = {t: probe.publisher(t, type(f(0.0))) for t, f in (measured or {}).items()}
    sent: List[int] = []
    start = time.monotonic()
    for t, kind in events:
        while time.monotonic() < start + t:
            rclpy_spin(probe)
        sim = t0_sim + t
        if kind == "c":
            msg = contacts_to_pointcloud2({}, BODIES, stamp=sim, frame_id="world")
            sent.append(stamp_to_ns(msg.header.stamp))
            pubs["c"].publish(msg)
        elif kind == "m":
            for topic, f in measured.items():
                mpubs[topic].publish(f(sim))
        elif kind == "j":
            pubs["j"].publish(joint_state(joints, [0.1 * (i + 1) for i in range(len(joints))]))
        else:
            pubs["k"].publish(Clock(clock=ns_to_stamp(int(round(sim * 1e9)))))
    return sent


def rclpy_spin(probe: Probe) -> None:
    rclpy.spin_once(probe, timeout_sec=0.001)


def _residual_fraction(probe: Probe, sensor: str, sent: List[int], skip: int = 10) -> float:
    predicted = {stamp_to_ns(m.header.stamp) for m in probe.received[f"/{sensor}/predicted"]}
    residual = {stamp_to_ns(m.header.stamp) for m in probe.received[f"/{sensor}/residual"]}
    later = [s for s in sent[skip:] if s in predicted]
    assert len(later) > 0.8 * len(sent[skip:])          # the predictions themselves arrived
    return sum(s in residual for s in later) / len(later)


def _offset_pa(message: str) -> float:
    m = re.search(r"offset pressure=([-0-9.e+]+) Pa", message)
    assert m, message
    return float(m.group(1))


def _start(params: Path, log: Path, probe_name: str, sensors: List[str], measured_topics: Dict[str, type],
           extra_args=()) -> "tuple[NodeProcess, Probe]":
    proc = NodeProcess(params, log, extra_args=extra_args).start()
    p = Probe(probe_name)
    for s in sensors:
        p.listen(f"/{s}/predicted", FluidPressure)
        p.listen(f"/{s}/residual", FluidPressure)
    p.listen("/diagnostics", DiagnosticArray)
    ok = p.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0)
    assert ok, proc.output()[-3000:]
    for topic, kind in measured_topics.items():
        assert p.wait_for_subscriber(topic, kind), (topic, proc.output()[-3000:])
    assert p.wait_for_subscriber("/joint_states", JointState)
    p.spin_for(1.0)   # the node's side of the outputs' discovery (it encodes only what is subscribed)
    return proc, p


def _stop(proc: NodeProcess, probe: Probe) -> str:
    probe.destroy_node()
    code = proc.stop()
    out = proc.output()
    assert code == 0 and "Traceback" not in out and "internal_error" not in out, out[-3000:]
    return out


def _float32(hpa: float) -> Callable[[float], Float32]:
    return lambda _t: Float32(data=hpa)


def test_real_config_with_the_kinova_and_punyo_drivers(tmp_path, rclpy_context):
    _needs_fixtures()
    proc, probe = _start(_real_params(tmp_path, keep_map=True), tmp_path / "node.log", "real_probe",
                         ["punyo_pressure"], {"/punyo/pressure": Float32})
    try:
        sent = _stream(probe, 2.0, measured={"/punyo/pressure": _float32(BASELINE_HPA)}, joints=DRIVER_JOINTS)
        probe.spin_for(0.5)
        assert _residual_fraction(probe, "punyo_pressure", sent) >= 0.9
        d = _diag(probe)["/sensor_node: inputs"]
        assert d["joint_states.unknown_names"] == "0" and d["joint_states.missing"] == "none", d
        r = probe.call(Trigger, "/punyo_pressure/tare", Trigger.Request())
        assert r.success, r.message
        assert _offset_pa(r.message) == pytest.approx(BASELINE_HPA * 100.0, rel=0.01)
        r = probe.call(Trigger, "/tare", Trigger.Request())
        assert r.success, r.message
        assert "skipped (no measured stream): punyo_force" in r.message
    finally:
        out = _stop(proc, probe)
    # 1013.25 hPa x 100 is a plausible absolute pressure
    assert "matches no URDF joint" not in out and "not a plausible absolute pressure" not in out


def test_real_config_without_the_joint_name_map_counts_and_names_the_driver_joints(tmp_path, rclpy_context):
    _needs_fixtures()
    proc, probe = _start(_real_params(tmp_path, keep_map=False), tmp_path / "node.log", "unmapped_probe",
                         ["punyo_pressure"], {"/punyo/pressure": Float32})
    try:
        _stream(probe, 1.5, joints=DRIVER_JOINTS)       # 75 joint states, past the first 50
        assert probe.spin_until(lambda: _diag(probe).get("/sensor_node: inputs", {}).get(
            "joint_states.missing", "none") != "none", 5.0)
        d = _diag(probe)["/sensor_node: inputs"]
        assert d["joint_states.unknown_names"] == "7", d
        counts = dict(kv.split("=") for kv in d["joint_states.unknown_names_list"].split(", "))
        assert set(counts) == set(DRIVER_JOINTS) and len(set(counts.values())) == 1
        assert int(counts["joint_1"]) >= 50
        for j in URDF_JOINTS:
            assert f"{j} (moves punyo_pressure, punyo_force)" in d["joint_states.missing"], d
    finally:
        out = _stop(proc, probe)
    for j in DRIVER_JOINTS:
        assert out.count(f"JointState name '{j}' matches no URDF joint") == 1, out[-3000:]
    assert out.count("joints moving sensors were never received") == 1


def _sim_params(tmp: Path) -> Path:
    return write_params(tmp / "params.yaml", {
        "use_sim_time": True, "diagnostics_period": 0.2, "tare_samples": 10,
        "sensors": ["pressure", "wall"],
        "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
        "pressure.measured_type": "std_msgs/msg/Float32", "pressure.measured_scale": 100.0,
        "pressure.measured_topic": "/punyo/pressure",
        "wall.type": "PunyoPressureSensor", "wall.attachment": "punyo", "wall.measured_scale": 100.0,
    })


def _wall_pressure(_t: float) -> FluidPressure:
    m = FluidPressure(fluid_pressure=BASELINE_HPA)
    m.header.stamp = ns_to_stamp(time.time_ns())         # the driver's wall clock
    return m


def test_sim_time_from_clock_pairs_a_headerless_driver_and_names_a_wall_clock_one(tmp_path, rclpy_context):
    # the wall-clock driver's topic reaches 'wall' by a standard remapping of wall/measured
    proc, probe = _start(_sim_params(tmp_path), tmp_path / "node.log", "sim_clock_probe",
                         ["pressure", "wall"],
                         {"/punyo/pressure": Float32, "/wall_driver/pressure": FluidPressure},
                         extra_args=["-r", "wall/measured:=/wall_driver/pressure"])
    try:
        sent = _stream(probe, 2.0, measured={"/punyo/pressure": _float32(BASELINE_HPA),
                                             "/wall_driver/pressure": _wall_pressure}, sim_clock=True,
                       t0_sim=5.0)
        probe.spin_for(0.5)
        # the node's clock is the simulator's: its reports are stamped at about 5-8 s
        assert 5.0 <= probe.received["/diagnostics"][-1].header.stamp.sec <= 9
        assert _residual_fraction(probe, "pressure", sent) >= 0.9
        assert not probe.received["/wall/residual"]
        hint = re.compile(r"measured stamps are 1\.[78]e\+09 s ahead of contacts stamps: different clocks\?")
        assert probe.spin_until(lambda: hint.fullmatch(_diag(probe)["/sensor_node: wall"]["pairing"]), 5.0)
        r = probe.call(Trigger, "/wall/tare", Trigger.Request())
        assert not r.success and hint.search(r.message), r.message
        r = probe.call(Trigger, "/pressure/tare", Trigger.Request())
        assert r.success and _offset_pa(r.message) == pytest.approx(BASELINE_HPA * 100.0, rel=0.01), r.message
        # all or nothing: 'wall' cannot tare, so the global tare changes no offset
        r = probe.call(Trigger, "/tare", Trigger.Request())
        assert not r.success and "no offset changed" in r.message, r.message
    finally:
        _stop(proc, probe)
