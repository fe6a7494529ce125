"""Shared pieces of the sensor_node DDS tests: the four-sensor configuration, message builders,
hand-derived contact scenes, and a helper that starts a node process with a probe.

Nothing here keeps state between tests: every builder returns a new message, and
:func:`start_node` gives each caller its own node process and probe.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence, Tuple

import numpy as np
import torch
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2, PointField
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.rig.calibration import HEADER
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
from vsf_sensor_ros.sensor import ContactState, SimState

from .node_helpers import NodeProcess, Probe, deliver_counted, joint_state, latest_status, write_params

F64 = torch.float64
N_TARE = 3
SENSORS = ["pressure", "force", "patch", "load"]
PRESSURE_TARE_FROM_FILE = 500.0          # Pa, written to the calibration file before start
MEASURED_SCALE = 100.0                   # pressure measured in hPa


def node_params(calibration_file: str) -> dict:
    return {
        "sensors": SENSORS,
        "tare_samples": N_TARE,
        "calibration_file": calibration_file,
        "markers_max_rate": 0.0,
        "diagnostics_period": 0.2,
        "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
        "pressure.measured_scale": MEASURED_SCALE,
        "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo",
        "patch.type": "ContactSensor", "patch.attachment": "tool_link",
        "patch.patchMin": [-0.05, -0.05], "patch.patchMax": [0.05, 0.05],
        "patch.hasForce": [True, True, True],
        "load.type": "IsaacContactSensor", "load.attachment": "object",
        "load.position": [0, 0, 0],      # integers in the file are accepted for doubles
    }


KINDS = {"pressure": FluidPressure, "force": PointCloud2, "patch": WrenchStamped, "load": WrenchStamped}
JOINT_NAMES = ["elbow_pitch", "gripper_finger", "shoulder_yaw"]   # reordered, partial, one extra
JOINT_POS = [0.3, 0.01, -0.2]


def write_calibration(path: Path, tare_pa: float = PRESSURE_TARE_FROM_FILE) -> Path:
    """A calibration file as the node writes it (header line first) with the pressure sensor's tare."""
    path.write_text(HEADER + "\n" + yaml.safe_dump({"sensors": {"pressure": {
        "type": "PunyoPressureSensor", "calibration": {"tare": [tare_pa]}}}}))
    return path


@contextmanager
def start_node(d: Path, probe_name: str, extra: Optional[dict] = None,
               extra_args: Sequence[str] = ()) -> Iterator[Tuple[NodeProcess, Probe, Path]]:
    """A fresh node process (the four sensors, a calibration file in ``d``) and a probe listening
    to every output; both end with the block, and the node must exit cleanly (code 0, no traceback).
    ``extra`` with ``contacts_type: ros_gz_interfaces/msg/Contacts``: the node is waited for on that
    contacts type."""
    cal = write_calibration(d / "calibration.yaml")
    params = node_params(str(cal))
    params.update(extra or {})
    contacts_msg = PointCloud2
    if params.get("contacts_type") == "ros_gz_interfaces/msg/Contacts":
        from ros_gz_interfaces.msg import Contacts as contacts_msg
    proc = NodeProcess(write_params(d / "params.yaml", params), d / "node.log", extra_args=extra_args).start()
    p = Probe(probe_name)
    try:
        for s, kind in KINDS.items():
            p.listen(f"/{s}/predicted", kind)
            p.listen(f"/{s}/residual", kind)
            p.listen(f"/{s}/jacobian", PointCloud2)
        p.listen("/force/markers", MarkerArray)
        p.listen("/diagnostics", DiagnosticArray)
        assert p.wait_for_subscriber("/contacts", contacts_msg, timeout=90.0), proc.output()[-3000:]
        assert p.wait_for_subscriber("/joint_states", JointState)
        assert p.wait_for_subscriber("/pressure/measured", FluidPressure)
        # outputs are matched once a report arrived (the node publishes diagnostics from the start)
        assert p.spin_until(lambda: len(p.received["/diagnostics"]) > 0, 15.0)
        yield proc, p, cal
    finally:
        p.destroy_node()
        code = proc.stop()
        out = proc.output()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


def posed_world():
    """A fresh embedded world in the configuration the tests send to the node (JOINT_POS)."""
    w = embedded_world()
    w.set_joint_positions(JOINT_NAMES, JOINT_POS)
    return w


def send_pose(probe: Probe) -> None:
    """Put the node's robot in JOINT_POS (sent by the test, not left over by another), confirmed
    by the node's ``joint_states_received`` counter (resending a pose is harmless)."""
    first_send(probe)("/joint_states", joint_state(JOINT_NAMES, JOINT_POS))


def stamp(sec: int, nsec: int = 0) -> Time:
    return Time(sec=sec, nanosec=nsec)


def for_stamp(probe: Probe, topic: str, t: Time):
    return [m for m in probe.received[topic] if m.header.stamp == t]


def wait_stamp(probe: Probe, topic: str, t: Time, timeout: float = 10.0):
    """The last message on ``topic`` stamped ``t``, waiting up to ``timeout`` s; failing, the
    assertion shows the node's last input and sensor counters (was a message lost going in or out?)."""
    assert probe.spin_until(lambda: for_stamp(probe, topic, t), timeout), \
        f"no {topic} at {t}; the node's last report: {last_counts(probe, topic.split('/')[1])}"
    return for_stamp(probe, topic, t)[-1]


def last_counts(probe: Probe, sensor: str) -> dict:
    """The input counters and sensor ``sensor``'s counters of the last ``/diagnostics`` report."""
    keys = {"inputs": ("contacts_received", "contacts_processed", "joint_states_received", "rejected_total"),
            sensor: ("published", "measured_received", "residuals_published", "pairing")}
    return {f"{status}.{k}": latest_status(probe, f"/sensor_node: {status}").get(k)
            for status, ks in keys.items() for k in ks}


def empty_cloud(t: Time) -> PointCloud2:
    return contacts_to_pointcloud2({}, body_names(), stamp=t, frame_id="world")


def measured_pressure(hpa: float, t: Time) -> FluidPressure:
    m = FluidPressure(fluid_pressure=hpa)
    m.header.stamp = t
    return m


def measured_forces(forces: np.ndarray, t: Time) -> PointCloud2:
    """A measured dense-force cloud: fields fx fy fz (float64) per vertex, built by hand."""
    dt = np.dtype([("fx", "<f8"), ("fy", "<f8"), ("fz", "<f8")])
    rec = np.zeros(len(forces), dtype=dt)
    rec["fx"], rec["fy"], rec["fz"] = forces[:, 0], forces[:, 1], forces[:, 2]
    msg = PointCloud2(height=1, width=len(forces), is_bigendian=False, point_step=24,
                      row_step=24 * len(forces), is_dense=True,
                      fields=[PointField(name=n, offset=8 * i, datatype=PointField.FLOAT64, count=1)
                              for i, n in enumerate(("fx", "fy", "fz"))])
    msg.header.stamp, msg.header.frame_id = t, "punyo"
    msg.data = rec.tobytes()
    return msg


@functools.lru_cache(maxsize=1)
def _body_names() -> tuple:
    return tuple(embedded_world().body_names)


def body_names():
    return list(_body_names())


def scene_contacts(world):
    """Contacts used by several tests, in world coordinates, with hand-derived expectations.

    Message rows (pairs interleaved on purpose):
      0: (punyo, object)   at bubble vertex 5,  force f0, elem1 = 5
      1: (object, punyo)   at the same point,   force -f0 (on the object), elem2 = 5
      2: (tool_link, object) at the flange origin, force f2
      3: (punyo, object)   at bubble vertex 17, force f3, elem1 = 17
    """
    Tp = world.body_transform("punyo")
    Tt = world.body_transform("tool_link")
    V = np.asarray(world.body_mesh("punyo").vertices)
    p5 = Tp[:3, :3] @ V[5] + Tp[:3, 3]
    p17 = Tp[:3, :3] @ V[17] + Tp[:3, 3]
    f0, f2, f3 = np.array([0.5, -0.25, 3.0]), np.array([1.0, 2.0, -4.0]), np.array([-0.5, 0.0, 2.0])
    rows = [("punyo", "object", p5, f0, 5, -1), ("object", "punyo", p5, -f0, -1, 5),
            ("tool_link", "object", Tt[:3, 3], f2, -1, -1), ("punyo", "object", p17, f3, 17, -1)]
    return rows, dict(Tp=Tp, Tt=Tt, V=V, f0=f0, f2=f2, f3=f3)


def rows_to_cloud(rows, t: Time) -> PointCloud2:
    """Build the cloud row by row (struct layout by hand, float64, body indices uint32, elems int32)."""
    names = body_names()
    dt = np.dtype([("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("fx", "<f8"), ("fy", "<f8"), ("fz", "<f8"),
                   ("body1", "<u4"), ("body2", "<u4"), ("elem1", "<i4"), ("elem2", "<i4")])
    rec = np.zeros(len(rows), dtype=dt)
    for i, (b1, b2, p, f, e1, e2) in enumerate(rows):
        rec[i] = (p[0], p[1], p[2], f[0], f[1], f[2], names.index(b1), names.index(b2), e1, e2)
    fields = [PointField(name=n, offset=dt.fields[n][1],
                         datatype={"<f8": PointField.FLOAT64, "<u4": PointField.UINT32,
                                   "<i4": PointField.INT32}[dt.fields[n][0].str], count=1)
              for n in dt.names]
    msg = PointCloud2(height=1, width=len(rows), fields=fields, is_bigendian=False, point_step=dt.itemsize,
                      row_step=dt.itemsize * len(rows), is_dense=True)
    msg.header.stamp, msg.header.frame_id = t, "world"
    msg.data = rec.tobytes()
    return msg


def library_models(world):
    """The sensors as the library builds them from the same configuration (independent of the node)."""
    from vsf_sensor_ros.sensor import sensor_from_config
    p = node_params("")
    out = {}
    for s in SENSORS:
        cfg = {"name": s}
        cfg.update({k.split(".", 1)[1]: v for k, v in p.items()
                    if k.startswith(s + ".") and k.split(".", 1)[1] not in ("measured_scale",)})
        sensor = sensor_from_config(cfg)
        sensor.attach(world.body_model(cfg["attachment"]))
        out[s] = sensor
    return out


def library_state(world, rows):
    contacts = {}
    for b1, b2, p, f, e1, e2 in rows:
        contacts.setdefault((b1, b2), []).append((p, f, e1, e2))
    cs = {pair: ContactState(torch.tensor(np.array([r[0] for r in v]), dtype=F64),
                             torch.tensor(np.array([r[1] for r in v]), dtype=F64),
                             torch.tensor([r[2] for r in v]), torch.tensor([r[3] for r in v]))
          for pair, v in contacts.items()}
    return SimState(world.body_transforms(F64), {}, cs)


def diag(probe: Probe):
    return probe.diagnostics(timeout=5.0)


def counter(report, status: str, key: str) -> int:
    return int(report.get(status, {}).get(key, "0"))


def deliver(probe: Probe, topic: str, msg, status: str, key: str, timeout: float = 20.0) -> None:
    """:func:`~.node_helpers.deliver_counted` with sensor_node's status ``/sensor_node: <status>``."""
    deliver_counted(probe, topic, msg, f"/sensor_node: {status}", key, timeout)


# which node counter confirms a message on each input topic (see deliver)
COUNTERS = {"/contacts": ("inputs", "contacts_received"),
            "/joint_states": ("inputs", "joint_states_received"),
            "/object/pose": ("inputs", "poses_received")}
COUNTERS.update({f"/{s}/measured": (s, "measured_received") for s in SENSORS})


def first_send(probe: Probe):
    """A ``send(topic, msg)`` for a test's first message on a topic: :func:`deliver` with the
    topic's counter (:data:`COUNTERS`)."""
    return lambda topic, msg: deliver(probe, topic, msg, *COUNTERS[topic])


def tare_pressure(probe: Probe) -> Trigger.Response:
    """Three contact-free steps with measured 1013.0, 1013.2, 1013.4 hPa, then ``pressure/tare``.

    The measured pressures are 101300, 101320, 101340 Pa; the contact-free prediction before the
    tare is 500 Pa (the file's tare).  The new offset averages the measured pressure:
    (101300 + 101320 + 101340) / 3 = 101320 Pa.

    The first step's messages are confirmed by the node's counters (see :func:`deliver`).  A
    resent copy (rare) is a second prediction or measurement of stamp 50 s; were both resent,
    two pairs of 101300 Pa would precede the others, and the tare, which averages the latest
    ``N_TARE`` pairs, still gives 101320 Pa.
    """
    for k, v in enumerate([1013.0, 1013.2, 1013.4]):
        t = stamp(50 + k)
        send = probe.send if k else first_send(probe)
        send("/contacts", empty_cloud(t))
        send("/pressure/measured", measured_pressure(v, t))
        wait_stamp(probe, "/pressure/residual", t)
    return probe.call(Trigger, "/pressure/tare", Trigger.Request())
