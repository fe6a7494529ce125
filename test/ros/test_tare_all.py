"""Global ``tare`` with the shipped embedded config: all four sensors tare, the load sensor while its box
rests on the table.

The node runs ``config/sensor_node.yaml`` as shipped (the simulator's sensor set and body table
``[punyo, object, table]``), with ``tare_samples`` 3 and a calibration file in a temporary directory.
For three steps the box rests on the table -- two contacts on its bottom face, 2 cm below its centre,
i.e. 4.5 cm from the load sensor's point (the top face centre), outside its 3 cm radius -- and nothing
touches the bubble.  Every sensor gets a measured message per step; the tare offsets must be the
hand-computed means (the raw contact-free predictions are 0: nothing presses the bubble, nothing is
inside the load sensor's radius).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import FluidPressure, PointCloud2, PointField
from std_srvs.srv import Trigger

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.sensor import ContactState

from .node_helpers import NodeProcess, Probe

ROOT = Path(__file__).resolve().parents[2]
N = 3
BODIES = ["punyo", "object", "table"]           # the shipped config's contact_body_names
SENSORS = ["punyo_pressure", "punyo_force", "punyo_pad", "object_load"]
# measured per step (SI: the shipped config has measured_scale 1.0 everywhere)
PRESSURE = [101300.0, 101330.0, 101345.0]                       # mean 101325 Pa
FORCE_ENTRY = [0.001, 0.002, 0.003]                             # every vertex/axis; mean 0.002 N
PAD = [(0.04, -0.02, 0.05), (0.06, 0.0, 0.07), (0.05, 0.02, 0.03)]   # mean (0.05, 0, 0.05) N
LOAD = [(0.0, 0.0, 0.04), (0.0, 0.03, 0.04), (0.0, 0.0, 0.09)]       # |.| = 0.04, 0.05, 0.09: mean 0.06 N


@pytest.fixture(scope="module")
def node(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("tare_all")
    cal = d / "calibration.yaml"
    proc = NodeProcess(ROOT / "config" / "sensor_node.yaml", d / "node.log",
                       extra_args=["-p", f"tare_samples:={N}", "-p", f"calibration_file:={cal}"]).start()
    yield proc, cal
    code = proc.stop()
    assert code == 0 and "Traceback" not in proc.output(), proc.output()[-3000:]


@pytest.fixture(scope="module")
def probe(node, rclpy_context):
    p = Probe("tare_all_probe")
    kinds = {"punyo_pressure": FluidPressure, "punyo_force": PointCloud2, "punyo_pad": WrenchStamped,
             "object_load": WrenchStamped}
    for s, kind in kinds.items():
        p.listen(f"/{s}/predicted", kind)
        p.listen(f"/{s}/residual", kind)
    proc, _ = node
    assert p.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), proc.output()[-3000:]
    for s, kind in kinds.items():
        assert p.wait_for_subscriber(f"/{s}/measured", kind)
    yield p
    p.destroy_node()


def box_on_table(t: Time) -> PointCloud2:
    """The box (centre (0.45, 0, 0.02), 6 x 6 x 4 cm) resting on the table with 2.94 N over two
    bottom-face contacts, in both pair orders as the simulator sends them."""
    pts = torch.tensor([[0.47, 0.0, 0.0], [0.43, 0.0, 0.0]], dtype=torch.float64)
    up = torch.tensor([[0.0, 0.0, 1.47], [0.0, 0.0, 1.47]], dtype=torch.float64)
    msg = contacts_to_pointcloud2({("object", "table"): ContactState(pts, up),
                                   ("table", "object"): ContactState(pts, -up)}, BODIES, stamp=t,
                                  frame_id="world")
    return msg


def wrench(f, t: Time) -> WrenchStamped:
    m = WrenchStamped()
    m.header.stamp = t
    m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = f
    return m


def forces_cloud(value: float, nv: int, t: Time) -> PointCloud2:
    """Measured dense force: ``fx fy fz`` (float64) = ``value`` on every vertex, built by hand."""
    rec = np.full((nv, 3), value, dtype="<f8")
    msg = PointCloud2(height=1, width=nv, is_bigendian=False, point_step=24, row_step=24 * nv, is_dense=True,
                      fields=[PointField(name=n, offset=8 * i, datatype=PointField.FLOAT64, count=1)
                              for i, n in enumerate(("fx", "fy", "fz"))])
    msg.header.stamp, msg.header.frame_id = t, "punyo"
    msg.data = rec.tobytes()
    return msg


def for_stamp(probe: Probe, topic: str, t: Time):
    return [m for m in probe.received[topic] if m.header.stamp == t]


def test_global_tare_succeeds_for_all_four_sensors_with_the_box_resting_on_the_table(node, probe):
    _, cal = node
    nv = len(embedded_world().body_mesh("punyo").vertices)
    for k in range(N):
        t = Time(sec=10 + k)
        probe.send("/contacts", box_on_table(t))
        probe.send("/punyo_pressure/measured", FluidPressure(header=wrench((0, 0, 0), t).header,
                                                             fluid_pressure=PRESSURE[k]))
        probe.send("/punyo_force/measured", forces_cloud(FORCE_ENTRY[k], nv, t))
        probe.send("/punyo_pad/measured", wrench(PAD[k], t))
        probe.send("/object_load/measured", wrench(LOAD[k], t))
        for s in SENSORS:
            assert probe.spin_until(lambda s=s: for_stamp(probe, f"/{s}/residual", t), 10.0), (s, k)

    r = probe.call(Trigger, "/tare", Trigger.Request())
    lines = r.message.split("\n")
    assert r.success is True, r.message
    assert [ln.split(":", 1)[0] for ln in lines] == SENSORS
    for ln in lines:
        assert f"tared with {N} of {N} samples" in ln, ln
    # the answer reports the physical entries only (the pad's contact flag and the load's in_contact
    # carry no offset)
    pad_line, load_line = lines[2], lines[3]
    assert ("force_x=0.05 N" in pad_line and "force_z=0.05 N" in pad_line and "contact=" not in pad_line
            and "value=0.06 N" in load_line and "in_contact" not in load_line), lines

    # the tare offsets are the hand means; the simulated averages 0 (nothing touches the sensors)
    assert probe.call(Trigger, "/save_calibration", Trigger.Request()).success
    saved = yaml.safe_load(Path(cal).read_text())["sensors"]
    assert saved["punyo_pressure"]["calibration"]["tare"] == pytest.approx([101325.0], abs=1e-9)
    np.testing.assert_allclose(saved["punyo_force"]["calibration"]["tare"], 0.002, atol=1e-12)
    # pad: [contact, fx, fy, fz]; the contact entry's observation is the model's own 0 (not measured)
    assert saved["punyo_pad"]["calibration"]["tare"] == pytest.approx([0.0, 0.05, 0.0, 0.05], abs=1e-12)
    assert saved["punyo_pad"]["calibration"]["tare_sim_avg"] == [0.0, 0.0, 0.0, 0.0]
    assert saved["object_load"]["calibration"]["tare"] == pytest.approx([0.0, 0.06], abs=1e-12)
    assert saved["object_load"]["calibration"]["tare_sim_avg"] == [0.0, 0.0]
    assert {s: saved[s]["samples"] for s in SENSORS} == {s: N for s in SENSORS}

    # the next step (box still resting) predicts the offsets
    t = Time(sec=20)
    probe.send("/contacts", box_on_table(t))
    for s in SENSORS:
        assert probe.spin_until(lambda s=s: for_stamp(probe, f"/{s}/predicted", t), 10.0), s
    assert for_stamp(probe, "/punyo_pressure/predicted", t)[-1].fluid_pressure == pytest.approx(101325.0)
    f = for_stamp(probe, "/punyo_pad/predicted", t)[-1].wrench.force
    assert (f.x, f.y, f.z) == pytest.approx((0.05, 0.0, 0.05), abs=1e-12)
    assert for_stamp(probe, "/object_load/predicted", t)[-1].wrench.force.z == pytest.approx(0.06, abs=1e-12)
