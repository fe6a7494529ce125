"""The node's inputs read from serialised bytes, over DDS, in one node process.

Bytes that are not a message of the topic's type are rejected with the decoder's reason and the
node goes on; ``<s>.jacobian_decimation`` set live publishes every k-th Jacobian only; the
keep-warm timer running while the node idles publishes nothing.  (The encoders' and decoders'
fields are checked against rclpy's serialiser in ``test/ros/messages/test_wire.py``.)
"""
from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.serialization import serialize_message
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.embedded_world import embedded_world

from .node_helpers import RELIABLE, NodeProcess, Probe, write_params
from .sensor_node_scene import KINDS, node_params, rows_to_cloud, scene_contacts, stamp


def _outputs():
    """``(sensor, kind, message type)`` of every per-step output."""
    for s, kind in KINDS.items():
        yield s, "predicted", kind
        yield s, "jacobian", PointCloud2
    yield "pressure", "residual", FluidPressure


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("node_bytes")
    params = node_params("")
    params.update({"qos.inputs.reliability": "reliable", "qos.inputs.depth": 1000,
                   "qos.outputs.depth": 1000})
    for s in KINDS:
        params[f"{s}.publish_markers"] = False
    f = write_params(d / "fast.yaml", params, node_name="/**")
    proc = NodeProcess(f, d / "fast.log",
                       extra_args=["-r", "__ns:=/fast", "-r", "__node:=fast_node"]).start()
    probe = Probe("node_bytes_probe", target="fast/fast_node")
    raw = {}
    try:
        for s, kind, msg_type in _outputs():
            topic = f"/fast/{s}/{kind}"
            raw[topic] = []
            probe._subs[topic] = probe.create_subscription(
                msg_type, topic, lambda m, t=topic: raw[t].append(bytes(m)), RELIABLE, raw=True)
        for topic, msg_type in (("contacts", PointCloud2), ("joint_states", JointState)):
            assert probe.wait_for_subscriber(f"/fast/{topic}", msg_type, timeout=60.0), proc.output()[-3000:]
        # the outputs' publishers are matched too before anything is sent
        assert probe.spin_until(lambda: all(probe.count_publishers(t) >= 1 for t in raw), 30.0)
        probe.spin_for(0.5)
        yield {"fast": proc}, probe, raw
    finally:
        probe.destroy_node()
        code = proc.stop()
        assert code == 0, proc.output()[-3000:]
        assert "Traceback" not in proc.output(), proc.output()[-3000:]


def _stamp_of(data: bytes) -> int:
    sec, nsec = np.frombuffer(data, dtype="<i4", count=2, offset=4)
    return int(sec) * 1_000_000_000 + int(np.uint32(nsec))


def _inputs_of(probe: Probe, path: str) -> dict:
    """Received/processed/rejected counters of one node's ``inputs`` status (from /diagnostics)."""
    msgs = probe.listen("/diagnostics", DiagnosticArray)
    start = len(msgs)

    def found():
        for m in msgs[start:]:
            for st in m.status:
                if st.name == f"/{path}/{path}_node: inputs" and st.hardware_id == f"/{path}/{path}_node":
                    return {kv.key: kv.value for kv in st.values}
        return None
    assert probe.spin_until(lambda: found() is not None, 10.0), f"no inputs status of {path}_node"
    return {k: v for k, v in found().items() if k.startswith(("rejected", "contacts_", "joint_states_"))}


def test_jacobian_decimation_is_live_and_publishes_every_kth(nodes):
    procs, probe, raw = nodes
    res = probe.set_params({"force.jacobian_decimation": 3})
    assert all(r.successful for r in res), [r.reason for r in res]
    bad = probe.set_params({"force.jacobian_decimation": 0})
    assert not bad[0].successful
    rows, _ = scene_contacts(embedded_world())
    topic_j, topic_p = "/fast/force/jacobian", "/fast/force/predicted"
    j0, p0 = len(raw[topic_j]), len(raw[topic_p])
    sent = []
    for i in range(9):
        msg = rows_to_cloud(rows, stamp(1000 + i))
        probe.publisher("/fast/contacts", PointCloud2).publish(serialize_message(msg))
        sent.append((1000 + i) * 1_000_000_000)
    assert probe.spin_until(lambda: len(raw[topic_p]) >= p0 + 9, 20.0)
    probe.spin_for(0.5)
    predicted = sorted(_stamp_of(d) for d in raw[topic_p][p0:])
    jac = sorted(_stamp_of(d) for d in raw[topic_j][j0:])
    assert predicted == sent
    # the first message after the change counts from where the count stood; 3 of 9, 3 apart
    assert len(jac) == 3 and all(b - a == 3_000_000_000 for a, b in zip(jac, jac[1:]))
    # the pressure sensor keeps every Jacobian
    assert sorted(_stamp_of(d) for d in raw["/fast/pressure/jacobian"][-9:]) == sent
    assert probe.set_params({"force.jacobian_decimation": 1})[0].successful


def test_bytes_that_are_not_a_message_are_rejected_with_the_decoder_reason(nodes):
    procs, probe, raw = nodes
    rows, _ = scene_contacts(embedded_world())
    good = serialize_message(rows_to_cloud(rows, stamp(2000)))
    before = _inputs_of(probe, "fast")
    # truncated inside the data block, and an encapsulation id that is not CDR
    probe.publisher("/fast/contacts", PointCloud2).publish(good[:len(good) - 40])
    probe.publisher("/fast/contacts", PointCloud2).publish(b"\x00\x0a\x00\x00" + good[4:])
    probe.publisher("/fast/joint_states", JointState).publish(b"\x00\x01\x00\x00\x01\x00")

    def grew(key, by):
        return lambda: int(_inputs_of(probe, "fast").get(key, 0)) >= int(before.get(key, 0)) + by
    assert probe.spin_until(grew("rejected.malformed_cdr", 2), 15.0)
    assert probe.spin_until(grew("rejected.unsupported_encapsulation", 1), 15.0)
    assert not any(_stamp_of(d) == 2000 * 1_000_000_000 for d in raw["/fast/pressure/predicted"])
    # and the node goes on with the next good message
    probe.publisher("/fast/contacts", PointCloud2).publish(
        serialize_message(rows_to_cloud(rows, stamp(2001))))
    assert probe.spin_until(lambda: any(_stamp_of(d) == 2001 * 1_000_000_000
                                        for d in raw["/fast/pressure/predicted"]), 15.0)
