"""The node's hot path (``fast_path: true``) against its reference path (``fast_path: false``).

Two node processes with the same four sensors run side by side, one per path, in their own
namespaces.  The probe sends both the same serialised inputs -- contacts clouds of random layout
(field order, gaps, float32/float64 coordinates, uint16/uint32 body ids, optional element
columns, big- and little-endian payloads, several rows, row padding) and joint states of random
shape (partial, reordered, unknown names, velocity/effort of any length, some invalid) -- and
records every output as bytes.  For every stamp both publish, the bytes are the same except
padding bytes (rmw leaves them uninitialised, the fast path writes zeros; each differing byte is
shown to be padding by flipping it in the reference), which also makes the values identical.
What one path rejects the other rejects too (same counters on ``/diagnostics``).

Also here: ``<s>.jacobian_decimation`` set live on the fast node (every k-th Jacobian only).
"""
from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.embedded_world import EMBEDDED_JOINTS, HOME, embedded_world

from .node_helpers import RELIABLE, NodeProcess, Probe, write_params
from .sensor_node_scene import KINDS, body_names, node_params, rows_to_cloud, scene_contacts, stamp
from test.ros.messages.test_wire import assert_same_wire, contacts_cloud, rand_text

PATHS = ("fast", "ref")
BATCHES = 6
PER_BATCH = 8


def _outputs():
    """``(sensor, kind, message type)`` of every per-step output compared."""
    for s, kind in KINDS.items():
        yield s, "predicted", kind
        yield s, "jacobian", PointCloud2
    yield "pressure", "residual", FluidPressure


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, rclpy_context):
    d = tmp_path_factory.mktemp("fast_path")
    procs = {}
    for path in PATHS:
        params = node_params("")
        params.update({"fast_path": path == "fast",
                       "qos.inputs.reliability": "reliable", "qos.inputs.depth": 1000,
                       "qos.outputs.depth": 1000})
        for s in KINDS:
            params[f"{s}.publish_markers"] = False
        f = write_params(d / f"{path}.yaml", params, node_name="/**")
        procs[path] = NodeProcess(f, d / f"{path}.log",
                                  extra_args=["-r", f"__ns:=/{path}", "-r", f"__node:={path}_node"]).start()
    probe = Probe("fast_path_probe", target="fast/fast_node")
    raw = {}
    try:
        for path in PATHS:
            for s, kind, msg_type in _outputs():
                topic = f"/{path}/{s}/{kind}"
                raw[topic] = []
                probe._subs[topic] = probe.create_subscription(
                    msg_type, topic, lambda m, t=topic: raw[t].append(bytes(m)),
                    RELIABLE, raw=True)
            for topic, msg_type in (("contacts", PointCloud2), ("joint_states", JointState),
                                    ("pressure/measured", FluidPressure)):
                assert probe.wait_for_subscriber(f"/{path}/{topic}", msg_type, timeout=60.0), \
                    procs[path].output()[-3000:]
        # the outputs' publishers are matched too before anything is sent
        assert probe.spin_until(lambda: all(probe.count_publishers(t) >= 1 for t in raw), 30.0)
        probe.spin_for(0.5)
        yield procs, probe, raw
    finally:
        probe.destroy_node()
        for path, proc in procs.items():
            code = proc.stop()
            assert code == 0, proc.output()[-3000:]
            assert "Traceback" not in proc.output(), proc.output()[-3000:]


def _send_both(probe: Probe, topic: str, msg_type: type, data: bytes) -> None:
    """The same serialised message to both nodes (published as bytes: nothing re-serialised)."""
    for path in PATHS:
        probe.publisher(f"/{path}/{topic}", msg_type).publish(data)


def _joint_state(rng: np.random.Generator, k: int) -> JointState:
    """A joint state of random shape; every fourth one is invalid (rejected by both paths)."""
    names = [n for n in EMBEDDED_JOINTS if rng.random() < 0.7] or [EMBEDDED_JOINTS[0]]
    names = list(rng.permutation(names)) + (["not_a_joint"] if rng.random() < 0.5 else [])
    pos = [HOME.get(n, 0.0) + float(rng.uniform(-0.3, 0.3)) for n in names]
    if k % 4 == 3:
        pos = pos[:-1] if rng.random() < 0.5 else []
    msg = JointState(name=names, position=pos)
    msg.header.stamp = stamp(10 * k + 1)
    msg.header.frame_id = rand_text(rng)
    msg.velocity = rng.standard_normal(int(rng.choice([0, len(names), 2]))).tolist()
    msg.effort = rng.standard_normal(int(rng.choice([0, len(names), 1]))).tolist()
    return msg


def _stamp_of(data: bytes) -> int:
    sec, nsec = np.frombuffer(data, dtype="<i4", count=2, offset=4)
    return int(sec) * 1_000_000_000 + int(np.uint32(nsec))


def test_fast_and_reference_paths_publish_the_same_bytes_and_reject_the_same_messages(nodes):
    procs, probe, raw = nodes
    rng = np.random.default_rng(12)
    n_bodies = len(body_names())
    for b in range(BATCHES):
        _send_both(probe, "joint_states", JointState, serialize_message(_joint_state(rng, b)))
        probe.spin_for(0.3)   # the step's joint state is applied before its contacts, in both nodes
        for i in range(PER_BATCH):
            msg = contacts_cloud(rng, n_bodies)
            msg.header.stamp = stamp(10 * b + 1, 1000 * (i + 1))
            msg.header.frame_id = "world"
            _send_both(probe, "contacts", PointCloud2, serialize_message(msg))
            measured = FluidPressure(fluid_pressure=float(rng.uniform(900.0, 1100.0)))
            measured.header.stamp = msg.header.stamp
            _send_both(probe, "pressure/measured", FluidPressure, serialize_message(measured))
        probe.spin_for(0.1)
    last = "/{}/pressure/predicted"
    probe.spin_until(lambda: all(len(raw[last.format(p)]) == len(raw[last.format("ref")]) for p in PATHS)
                     and len(raw[last.format("ref")]) > 0, 30.0)
    probe.spin_for(1.0)

    compared = 0
    for s, kind, msg_type in _outputs():
        fast = {_stamp_of(d): d for d in raw[f"/fast/{s}/{kind}"]}
        ref = {_stamp_of(d): d for d in raw[f"/ref/{s}/{kind}"]}
        if kind != "residual":   # predictions: both paths publish for exactly the same messages
            assert sorted(fast) == sorted(ref), (s, kind)
        for st in sorted(set(fast) & set(ref)):
            assert_same_wire(fast[st], ref[st], msg_type)
            compared += 1
        # every published message is a well-formed message of its type
        for d in fast.values():
            assert isinstance(deserialize_message(d, msg_type), msg_type)
    n_pred = len(raw["/ref/pressure/predicted"])
    assert n_pred >= BATCHES * PER_BATCH // 2, "most random clouds are valid contacts messages"
    assert len(raw["/ref/pressure/residual"]) >= n_pred // 2
    assert compared >= 8 * n_pred
    # what was rejected, was rejected by both, for the same reasons
    counts = {path: _inputs_of(probe, path) for path in PATHS}
    assert counts["fast"] == counts["ref"]
    assert int(counts["ref"]["contacts_received"]) == BATCHES * PER_BATCH
    assert int(counts["ref"]["rejected_total"]) > 0, "some random inputs are invalid"


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


def test_fast_path_rejects_bytes_that_are_not_a_message_with_the_decoder_reason(nodes):
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
