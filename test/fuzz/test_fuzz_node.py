"""Fuzz: the sensor node's message handlers and live parameter updates, in-process.

A real ``SensorNode`` (real rclpy context, the package's embedded world, a
Punyo pressure sensor and a Punyo dense force sensor on the bubble) gets
the strategies' messages through its own handlers: contacts and JointState as
serialised bytes through the raw subscriptions' callbacks,
PoseStamped and measured messages, and parameter requests through
``node.set_parameters`` (which runs the node's registered pre-set,
validate and apply callbacks).

Properties:

* no exception escapes a handler;
* a malformed message (the reference decoders of :mod:`test.fuzz.reference`
  decide) raises exactly one reject counter by one, under a reason the
  reference finds, and nothing is published for it (the per-sensor publish
  counters and ``contacts_processed`` stay put);
* a well-formed contacts message is either published, each sensor's values
  equal to the library's ``predict`` on the *reference* decoding (with the
  library's reverse-pair rule), or rejected for a reason that prediction
  confirms (an element past the dense sensor's vertices, a non-finite or
  float32-overflowing prediction);
* a well-formed JointState/pose moves the world to the reference's
  positions/rotation; a malformed one leaves it as it was;
* a parameter request is either refused with a reason and every parameter
  and sensor unchanged, or accepted, after which a contacts message still
  goes through without ``internal_error``.

The contacts targets run half the profile's count (each example is a whole
node step through both sensor models, and the reference prediction again):
:data:`CONTACTS_SHARE`; the other node targets the full count.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Dict, List

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from test.fuzz.strategies import (FLOAT32, FLOAT64, NORMAL_NAMES, Column, SensorSpec, any_float, clouds,
                                  contact_clouds, contact_columns, joint_states, measured_messages, poses,
                                  stamps, weighted_bool)
from vsf_sensor_ros.ros.messages.wire import CDR_REJECT_REASONS
from vsf_sensor_ros.ros.sensor_node import SensorNode
from vsf_sensor_ros.sensor import ContactState, SimState
from vsf_sensor_ros.sensor.base_sensor import with_reverse_pairs

CONTACTS_SHARE = 0.5
"""The contacts targets run this share of the profile's examples (each one is a whole node step with
both sensor models, and the reference prediction again): 1 000 in ``make test``, 7 500 in ``make fuzz``."""
NODE_SHARE = 1.0
"""The other node targets run this share: the profile's full count."""
F32_MAX = float(np.finfo(np.float32).max)
WORLD = "world"


def _node_settings(share: float = NODE_SHARE):
    return settings(max_examples=max(20, int(settings().max_examples * share)))


def _overrides() -> List[Parameter]:
    params = {"sensors": ["pressure", "force"],
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.measured_scale": 100.0, "pressure.publish_markers": False,
              "pressure.publish_jacobian": False,
              "force.type": "PunyoDenseForceSensor", "force.attachment": "punyo",
              "force.publish_markers": False, "force.publish_jacobian": False}
    return [Parameter(k, value=v) for k, v in params.items()]


def _make(name: str) -> SensorNode:
    return SensorNode(name, namespace=f"/fuzz_{name}", parameter_overrides=_overrides())


@pytest.fixture(scope="module")
def fuzz_node(rclpy_context):
    n = _make("fuzz_node")
    yield n
    n.destroy_node()


def _published(node: SensorNode) -> Dict[str, int]:
    return {n: h.stats.published for n, h in node._handles.items()}


def _rejected(node: SensorNode) -> Dict[str, int]:
    out = {f"node:{k}": v for k, v in node.inputs.rejected.items()}
    for n, h in node._handles.items():
        out.update({f"{n}:{k}": v for k, v in h.stats.rejected.items()})
    return out


def _new_rejections(before: Dict[str, int], after: Dict[str, int]) -> Dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


# ------------------------------------------------------------------------------------ contacts

def _reference_outcome(node: SensorNode, want: ref.Contacts):
    """``(reason or None, {sensor: values})``: what the node must do with a well-formed cloud."""
    contacts = {}
    for pair, w in want.pairs.items():
        k = len(w["rows"])
        # the reference lists an element column's values only when the cloud has that field
        e = {a: torch.tensor(w[a], dtype=torch.int64) if w[a] else None for a in ("elem1", "elem2")}
        contacts[pair] = ContactState(torch.tensor(w["points"], dtype=torch.float64).reshape(k, 3),
                                      torch.tensor(w["forces"], dtype=torch.float64).reshape(k, 3),
                                      e["elem1"], e["elem2"])
    dense = {h.layout.frame_id: len(h.layout.vertices) for h in node._handles.values()
             if h.layout.codec.per_vertex}
    for (b1, b2), c in contacts.items():
        for body, elems in ((b1, c.elems1), (b2, c.elems2)):
            nv = dense.get(body)
            if nv is not None and elems is not None and elems.numel() and int(elems.max()) >= nv:
                return "element_index_out_of_range", {}
    state = SimState(node.world.body_transforms(), {}, with_reverse_pairs(contacts))
    try:
        values = {n: h.sensor.predict(state).detach().numpy().astype(np.float64)
                  for n, h in node._handles.items() if getattr(h.sensor, "enabled", True)}
    except (ValueError, IndexError, RuntimeError):     # e.g. a point 1e200 m from the mesh
        return "model_error", {}
    if not all(np.isfinite(v).all() for v in values.values()):
        return "non_finite_prediction", values
    if any(node._handles[n].layout.codec.float32_values and v.size and float(np.abs(v).max()) > F32_MAX
           for n, v in values.items()):
        return "out_of_range", values
    return None, values


def _near(centre: float):
    """Column values within 6 cm of ``centre`` (the bubble's radius is 5 cm), float32-rounded or not."""
    def values(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
        return (centre + rng.uniform(-0.06, 0.06, n)).astype(dtype)
    return values


@st.composite
def contact_calls(draw, names, centre):
    """A contacts cloud; half of them with their points around the bubble so the sensors read them."""
    if draw(st.booleans()):
        cloud = draw(contact_clouds(names))
    else:
        required, optional = contact_columns(len(set(names)))
        required = [replace(c, values=_near(float(centre[i]))) if i < 3 else c
                    for i, c in enumerate(required)]      # x y z first, as contact_columns lists them
        normals = draw(st.sampled_from(((), NORMAL_NAMES)))
        cloud = draw(clouds(required + [Column(n, (FLOAT32, FLOAT64)) for n in normals], optional))
        cloud.frame_id = draw(st.sampled_from((WORLD, WORLD, "", "map")))
        cloud.stamp = draw(stamps())
    truncate = draw(weighted_bool(0.1))
    return cloud, truncate


def _bubble_centre(node: SensorNode) -> np.ndarray:
    T = node.world.body_transform("punyo")
    return T[:3, :3] @ np.asarray(node.world.body_mesh("punyo").vertices).mean(axis=0) + T[:3, 3]


def _check_contacts(node: SensorNode, cloud, deliver, target: str, cdr_fault: bool) -> None:
    names = node._contact_body_names
    before_pub, before_rej = _published(node), _rejected(node)
    done = node.inputs.contacts_processed
    deliver()                                     # must not raise
    got_rej = _new_rejections(before_rej, _rejected(node))
    want = ref.contacts(cloud.fields, cloud.height, cloud.width, cloud.point_step, cloud.row_step,
                        cloud.is_bigendian, cloud.data, names, cloud.frame_id, WORLD)
    assert "node:internal_error" not in got_rej, got_rej
    if cdr_fault:
        reason = next(iter(got_rej), "none").split(":", 1)[1] if got_rej else "none"
        record(target, f"rejected:{reason}")
        assert list(got_rej.values()) == [1] and reason in CDR_REJECT_REASONS, got_rej
        assert _published(node) == before_pub and node.inputs.contacts_processed == done
        return
    if isinstance(want, ref.Rejected):
        expected, values = sorted(want.reasons), {}
    else:
        reason, values = _reference_outcome(node, want)
        expected = [reason] if reason else []
    if expected:
        assert len(got_rej) == 1 and list(got_rej.values()) == [1], (got_rej, expected, cloud)
        reason = next(iter(got_rej)).split(":", 1)[1]
        record(target, f"rejected:{reason}")
        assert reason in expected, (reason, expected, cloud)
        assert _published(node) == before_pub, "something was published for a rejected message"
        assert node.inputs.contacts_processed == done
        return
    record(target, "accepted")
    assert not got_rej, (got_rej, cloud)
    assert node.inputs.contacts_processed == done + 1
    assert _published(node) == {n: v + 1 for n, v in before_pub.items()}
    for n, v in values.items():
        got = node._handles[n].last_values
        assert got.shape == v.shape
        np.testing.assert_allclose(got, v, rtol=1e-12, atol=1e-12 * (1.0 + float(np.abs(v).max(initial=0))),
                                   err_msg=n)


def test_contacts_raw_bytes_path(fuzz_node):
    callback = fuzz_node.sub_contacts.callback     # the raw subscription's own callback

    @_node_settings(CONTACTS_SHARE)
    @given(call=contact_calls(fuzz_node._contact_body_names, _bubble_centre(fuzz_node)), data=st.data())
    def run(call, data):
        cloud, truncate = call
        raw = serialize_message(cloud.message())
        if truncate:               # bytes cut short in transport: the CDR decoder must refuse them
            raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
        _check_contacts(fuzz_node, cloud, lambda: callback(raw), "node_contacts_raw", truncate)
    run()


# ------------------------------------------------------------------------------------ joint states

JOINT_REASONS = {"empty": "joint_state_empty", "length_mismatch": "joint_state_short",
                 "non_finite": "non_finite", "duplicate": "joint_state_invalid"}


def test_joint_state_handler(fuzz_node):
    w = fuzz_node.world
    movable = list(w.joint_names)
    others = [j.name for j in w.joints if j.name not in movable][:3] + list(w.body_names)[:2]

    @_node_settings()
    @given(msg=joint_states(movable, others))
    def run(msg):
        q0 = w.joint_positions().copy()
        before_pub, before_rej = _published(fuzz_node), _rejected(fuzz_node)
        mimic = [j.name for j in w.joints if j.mimic]
        want = ref.joint_state(movable, mimic, dict(zip(movable, q0.tolist())), list(msg.name),
                               list(msg.position))
        fuzz_node.sub_joints.callback(serialize_message(msg))   # the raw subscription's own callback
        got_rej = _new_rejections(before_rej, _rejected(fuzz_node))
        assert _published(fuzz_node) == before_pub
        if isinstance(want, ref.Rejected):
            assert list(got_rej.values()) == [1], (got_rej, want)
            reason = next(iter(got_rej)).split(":", 1)[1]
            record("node_joint_state", f"rejected:{reason}")
            assert reason in {JOINT_REASONS[r] for r in want.reasons}, (reason, want)
            assert np.array_equal(w.joint_positions(), q0)
            return
        record("node_joint_state", "accepted")
        assert not got_rej, got_rej
        positions, _ = want
        assert w.joint_positions().tolist() == [positions[n] for n in movable]
    run()


# ------------------------------------------------------------------------------------ poses

POSE_FRAMES = st.sampled_from((WORLD, WORLD, WORLD, "", None))


def test_pose_handler(fuzz_node):
    w = fuzz_node.world
    free = list(w.free_body_names)
    if not free:
        pytest.skip("the embedded world has no free body")

    @_node_settings()
    @given(msg=poses(), body=st.sampled_from(free), frame=POSE_FRAMES)
    def run(msg, body, frame):
        if frame is not None:            # mostly the world frame, so that most poses are read
            msg.header.frame_id = frame
        T0 = w.body_transform(body).copy()
        before_pub, before_rej = _published(fuzz_node), _rejected(fuzz_node)
        p, q = msg.pose.position, msg.pose.orientation
        want = ref.pose([p.x, p.y, p.z], [q.x, q.y, q.z, q.w])
        if isinstance(want, ref.Rejected):
            reasons = {"non_finite" if r == "non_finite" else "pose_invalid" for r in want.reasons}
        else:
            reasons = set()
        if msg.header.frame_id and msg.header.frame_id != WORLD:
            reasons = {"pose_wrong_frame"}          # checked first: the pose is not read at all
        fuzz_node._on_pose(body, msg)
        got_rej = _new_rejections(before_rej, _rejected(fuzz_node))
        assert _published(fuzz_node) == before_pub
        if got_rej:
            assert list(got_rej.values()) == [1], got_rej
            reason = next(iter(got_rej)).split(":", 1)[1]
            record("node_pose", f"rejected:{reason}")
            assert reason in reasons or (want is None and reason == "pose_invalid"), (reason, reasons, msg)
            assert np.array_equal(w.body_transform(body), T0)
            return
        record("node_pose", "accepted")
        assert not reasons, (reasons, msg)
        T = w.body_transform(body)
        assert T[:3, 3].tolist() == [p.x, p.y, p.z]
        if want is not None:
            np.testing.assert_allclose(T[:3, :3], want[:3, :3], rtol=0, atol=1e-12)
    run()


# ------------------------------------------------------------------------------------ measured

def _spec(h) -> SensorSpec:
    return SensorSpec(h.config.type, tuple(h.layout.names), None,
                      np.asarray(h.layout.vertices) if h.layout.codec.per_vertex else None)


def test_measured_handler(fuzz_node):
    handles = {n: h for n, h in fuzz_node._handles.items()}
    specs = {n: _spec(h) for n, h in handles.items()}

    @st.composite
    def calls(draw):
        name = draw(st.sampled_from(sorted(specs)))
        return name, draw(measured_messages(specs[name]))

    @_node_settings()
    @given(call=calls())
    def run(call):
        name, msg = call
        h = handles[name]
        spec = specs[name]
        before_pub, before_rej = _published(fuzz_node), _rejected(fuzz_node)
        received = h.stats.measured_received
        kind = type(msg).__name__
        if kind == "FluidPressure":
            mk, values = "pressure", msg.fluid_pressure
        elif kind == "WrenchStamped":
            f = msg.wrench.force
            mk, values = "wrench", (f.x, f.y, f.z)
        else:
            mk = "cloud"
            values = ref.measured_cloud_columns(msg.fields, msg.height, msg.width, msg.point_step,
                                                msg.row_step, msg.is_bigendian, bytes(msg.data))
        want = ref.measured(spec.type_name, spec.names, mk, values, float(h.config.values["measured_scale"]))
        fuzz_node._on_measured(name, msg)
        got_rej = _new_rejections(before_rej, _rejected(fuzz_node))
        assert h.stats.measured_received == received + 1
        assert _published(fuzz_node) == before_pub         # a measurement alone publishes no prediction
        assert "node:internal_error" not in got_rej
        if isinstance(want, ref.Rejected):
            assert list(got_rej.values()) == [1], (got_rej, want)
            key = next(iter(got_rej))
            record("node_measured", f"rejected:{key.split(':', 1)[1]}")
            assert key.split(":", 1)[0] == name and key.split(":", 1)[1] in want.reasons, (key, want)
            return
        record("node_measured", "accepted")
        # a residual may be rejected as out of range when it pairs; nothing else may be counted
        assert set(got_rej) <= {f"{name}:residual_out_of_range"}, got_rej
    run()


# ------------------------------------------------------------------------------------ parameters

SENSOR_KEYS = ("type", "attachment", "measured_scale", "measured_topic", "measured_type", "publish_jacobian",
               "publish_markers", "jacobian_decimation", "enabled", "nonsense")
NODE_KEYS = ("sensors", "alignment_tolerance", "alignment_buffer_size", "tare_samples", "tare_on_start",
             "marker_force_scale", "markers_max_rate", "world_frame", "executor", "contact_body_names",
             "no_such_parameter", "")
VALUES = st.one_of(
    st.booleans(), st.integers(-3, 10), st.integers(-2 ** 63, 2 ** 63 - 1), any_float(),
    st.sampled_from((math.nan, math.inf, 1e308, -0.0)),
    st.sampled_from(("", "pressure", "PunyoPressureSensor", "PunyoDenseForceSensor", "ContactSensor",
                     "IsaacContactSensor", "punyo", "nope", "/abs/topic", "rel/topic", "bad topic!", "~/x",
                     "world", "sensor_msgs/msg/FluidPressure")),
    st.lists(st.sampled_from(("pressure", "force", "extra", "", "pressure")), max_size=4),
    st.lists(any_float(), max_size=3), st.lists(st.integers(-5, 5), max_size=3),
    st.lists(st.booleans(), max_size=3))


@st.composite
def parameter_requests(draw) -> List[Parameter]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(NODE_KEYS))
        else:
            sensor = draw(st.sampled_from(("pressure", "force", "extra", "new_one")))
            name = f"{sensor}.{draw(st.sampled_from(SENSOR_KEYS))}"
        value = draw(VALUES)
        if isinstance(value, list) and value and isinstance(value[0], float):
            value = [float(v) for v in value]
        out.append(Parameter(name, value=value))
    return out


def _snapshot(node: SensorNode):
    values = {}
    for name, p in node._parameters.items():
        v = p.value
        values[name] = (p.type_, list(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else v)
    return values, {n: (h.config.type, dict(h.config.values)) for n, h in node._handles.items()}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _probe(node: SensorNode, sec: int):
    """A small well-formed contacts message: one contact on the bubble's first vertex."""
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    T = node.world.body_transform("punyo")
    V = np.asarray(node.world.body_mesh("punyo").vertices)
    p = T[:3, :3] @ V[0] + T[:3, 3]
    f = T[:3, :3] @ np.array([0.0, 0.0, -1.0])
    cs = {("punyo", "object"): ContactState(torch.tensor(p[None], dtype=torch.float64),
                                            torch.tensor(f[None], dtype=torch.float64),
                                            torch.tensor([0]), torch.tensor([-1]))}
    msg = contacts_to_pointcloud2(cs, node.world.body_names, stamp=None, frame_id=WORLD)
    msg.header.stamp.sec = sec
    return msg


PARAMETERS_SHARE = 0.5
"""Parameter requests (1-3 parameters each, plus a contacts message after each request): half the count."""


def test_parameter_updates(rclpy_context):
    node = _make("param_node")
    sec = [1000]
    try:
        @_node_settings(PARAMETERS_SHARE)
        @given(request=parameter_requests())
        def run(request):
            # node.set_parameters applies a list one parameter at a time (each through the pre-set,
            # validate and apply callbacks), so each one is checked on its own
            for p in request:
                before = _snapshot(node)
                try:
                    results = node.set_parameters([p])       # must not raise but for an undeclared name
                except ParameterNotDeclaredException:
                    results = [SetParametersResult(successful=False, reason=f"undeclared {p.name}")]
                assert len(results) == 1
                after = _snapshot(node)
                if not results[0].successful:
                    record("node_parameters", "rejected:refused")
                    assert results[0].reason, (p.name, p.value)
                    changed = sorted(k for k in set(after[0]) | set(before[0])
                                     if not _same(after[0].get(k), before[0].get(k)))
                    assert not changed, ("a refused parameter changed parameters", p.name, p.value,
                                         results[0].reason,
                                         {k: (before[0].get(k), after[0].get(k)) for k in changed})
                    assert _same(after[1], before[1]), ("a refused parameter changed a sensor", p.name)
                    continue
                record("node_parameters", "accepted")
                got = after[0][p.name][1]
                # the file's int -> double leniency: an integer for a double parameter is taken as a float
                assert _same(got, p.value) or (isinstance(p.value, int) and got == float(p.value)) or \
                    (isinstance(p.value, list) and _same(got, [float(v) for v in p.value])), \
                    (p.name, got, p.value)
            # whatever happened, the node still takes contacts
            sec[0] += 1
            rej = dict(node.inputs.rejected)
            done = node.inputs.contacts_processed
            if "punyo" in node._contact_body_names and "object" in node._contact_body_names:
                node._on_contacts(_probe(node, sec[0]))
                assert node.inputs.rejected.get("internal_error", 0) == rej.get("internal_error", 0)
                assert node.inputs.contacts_processed == done + 1 or \
                    _new_rejections(rej, dict(node.inputs.rejected)), "contacts message lost"
        run()
    finally:
        node.destroy_node()
