"""End to end: ``demo --backend mujoco`` runs MuJoCo + the sensor node, tares, and writes a session whose
measured pad and load streams come from MuJoCo's own sensors.

One run (module fixture): 6 simulated seconds at 50 Hz -- 2 s contact-free, 1.5 s approach (touching
at 3.5 s), 1 s press, then hold -- with the demo's defaults otherwise.  The pad's measured stream is
MuJoCo's force sensor + 0.05 N offset + N(0, 0.02 N) noise per axis, so after the tare its
difference from the prediction is that noise (plus the offset estimate's error, 0.02/sqrt(10) N).
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DURATION_S = 6.0
RATE_HZ = 50.0
STEPS = int(round(DURATION_S * RATE_HZ))
PAD_NOISE_N = 0.02


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo_mujoco")
    cmd = [sys.executable, "-m", "vsf_sensor_ros.demo.demo", "--backend", "mujoco", "--out", str(out),
           "--duration", str(DURATION_S), "--rate", str(RATE_HZ), "--seed", "3"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, f"demo failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return {"out": out, "stdout": res.stdout, "summary": json.loads((out / "summary.json").read_text())}


def read_bag(out: Path):
    """topic -> [message] deserialised by rosbags (independent of rclpy and of the summary code)."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    typestore = get_typestore(Stores.ROS2_KILTED)
    topics = {}
    with Reader(out) as reader:
        for conn, _, raw in reader.messages():
            topics.setdefault(conn.topic, []).append(typestore.deserialize_cdr(raw, conn.msgtype))
    return topics


def stamp(msg) -> int:
    return msg.header.stamp.sec * 10 ** 9 + msg.header.stamp.nanosec


def test_the_session_is_recorded_tared_and_labelled_as_mujocos(demo):
    s = demo["summary"]
    assert s["backend"] == "mujoco" and s["world"] == "embedded" and s["steps"] == STEPS
    assert s["tare"]["success"] is True and 0.0 < s["tare"]["sim_time_s"] < 2.0, s["tare"]
    assert {n: e["measured_source"] for n, e in s["sensors"].items()} == {
        "punyo_pressure": "synthetic-model", "punyo_force": "synthetic-model",
        "punyo_pad": "mujoco-force-sensor", "object_load": "mujoco-touch-sensor"}
    for name, entry in s["sensors"].items():
        # every step predicted, but for a few a loaded machine may leave undelivered at the end
        assert STEPS - 5 <= entry["published"] <= STEPS and entry["tare_status"] == "tared", (name, entry)
    assert set(s["vs_mujoco"]) == {"punyo_pad", "object_load"}
    assert "vs MuJoCo (mujoco-force-sensor)" in demo["stdout"], demo["stdout"][-3000:]
    for f in ("run.mcap", "metadata.yaml", "pressure.png", "force_field.png", "punyo_pad.png",
              "object_load.png", "logs/mujoco_contact_node.log"):
        assert (demo["out"] / f).is_file(), f


def test_the_pad_agrees_with_mujocos_force_sensor_to_within_its_noise_recomputed_from_the_bag(demo):
    from vsf_sensor_ros.demo.analysis import cloud_fields
    topics = read_bag(demo["out"])
    assert len(topics["/contacts"]) == STEPS

    def force(m):
        return np.array([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z])
    touching = {stamp(m) for m in topics["/contacts"] if (cloud_fields(m, ("body1", "body2")) == 0).any()}
    pred = {stamp(m): force(m) for m in topics["/punyo_pad/predicted"]}
    meas = {stamp(m): force(m) for m in topics["/punyo_pad/measured"]}
    both = sorted(touching & set(pred) & set(meas))
    assert len(both) >= 100 and min(both) > 3.0e9       # contact from ~3.5 s on, long after the tare
    res = np.array([meas[t] - pred[t] for t in both])
    c = demo["summary"]["vs_mujoco"]["punyo_pad"]["in_contact"]
    assert c["samples"] == len(both)
    for i, axis in enumerate(("force_x", "force_y", "force_z")):
        assert c["rms"][axis] == pytest.approx(np.sqrt(np.mean(res[:, i] ** 2)), rel=1e-9)
    # the bubble is pressed with several newtons, and the two implementations differ by noise only
    assert np.mean([pred[t][2] for t in both]) < -5.0
    assert np.sqrt(np.mean(res ** 2)) < 2.0 * PAD_NOISE_N
    assert abs(demo["summary"]["vs_mujoco"]["punyo_pad"]["peak"]["relative_difference"]) < 0.01


def test_the_load_cell_reads_the_normal_force_of_the_recorded_contacts(demo):
    """MuJoCo's touch sensor counts normal forces only; the recorded contacts on the object (from
    mj_contactForce) give the same vertical force while the press holds still (t >= 5 s)."""
    from vsf_sensor_ros.demo.analysis import cloud_fields
    from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
    topics = read_bag(demo["out"])
    meas = {stamp(m): m.wrench.force for m in topics["/object_load/measured"]}
    checked = 0
    for msg in topics["/contacts"]:
        t = stamp(msg)
        if t < 5.0e9 or not (cloud_fields(msg, ("body1", "body2")) == 0).any():
            continue
        pairs = pointcloud2_to_contacts(msg, ["punyo", "object", "table"]).contacts
        down = -pairs[("object", "punyo")].forces.sum(0).numpy()[2]     # the bubble pushes the box down
        f = meas[t]
        value = np.linalg.norm([f.x, f.y, f.z]) - 0.05                   # minus the simulated offset
        assert value == pytest.approx(down, abs=0.25), t                 # 0.05 N noise, 5 sigma
        checked += 1
    assert checked >= 40
    peak = demo["summary"]["vs_mujoco"]["object_load"]["peak"]
    assert peak["measured"]["load"] > 5.0 and abs(peak["relative_difference"]) < 0.05
