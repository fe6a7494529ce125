"""PunyoDenseForceSensor: per-vertex and barycentric modes on tiny meshes, by hand.

Unit square mesh in the body frame (z = 0):  v0 (0,0,0)  v1 (1,0,0)  v2 (1,1,0)  v3 (0,1,0),
triangles t0 = (v0, v1, v2) (below the diagonal, x > y) and t1 = (v0, v2, v3).
Output entry 3 i + d = local force component d on vertex i.
"""
import warnings

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import ContactState, SimState
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.sensor.punyo_dense_force_sensor import PunyoDenseForceSensor

SQ_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
SQ_F = np.array([[0, 1, 2], [0, 2, 3]])

# Body rotated +90 deg about z and moved to (10, 0, 0): body x -> world y, body y -> world -x.
RZ90 = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


def T_of(R=None, t=(0.0, 0.0, 0.0), dtype=torch.float64):
    T = torch.eye(4, dtype=dtype)
    if R is not None:
        T[:3, :3] = torch.tensor(R, dtype=dtype)
    T[:3, 3] = torch.tensor(t, dtype=dtype)
    return T


def sensor():
    s = PunyoDenseForceSensor("punyo_force", "punyo")
    s.attach((SQ_V, SQ_F))
    return s


def cs(points, forces, elems1=None, elems2=None, dtype=torch.float64):
    return ContactState(torch.tensor(points, dtype=dtype), torch.tensor(forces, dtype=dtype),
                        None if elems1 is None else torch.tensor(elems1),
                        None if elems2 is None else torch.tensor(elems2))


def state(contacts, T=None, dtype=torch.float64):
    return SimState({"punyo": T_of(dtype=dtype) if T is None else T, "finger": T_of(dtype=dtype),
                     "box": T_of(dtype=dtype)}, {}, contacts)


def per_vertex(out):
    return out.reshape(-1, 3)


def both_paths(s, st):
    """``(predict, predict_torch)`` of ``st`` as (V, 3) float64 numpy arrays."""
    return (per_vertex(s.predict(st)).double().numpy(),
            per_vertex(s.predict_torch(st)).detach().double().numpy())


# ----------------------------------------------------------------------------------------------
def test_measurement_names_are_formatted_per_vertex_and_axis():
    s = sensor()
    assert s.measurement_names() == ["p0_x", "p0_y", "p0_z", "p1_x", "p1_y", "p1_z",
                                     "p2_x", "p2_y", "p2_z", "p3_x", "p3_y", "p3_z"]
    assert s.num_vertices == 4


def test_per_vertex_contact_lands_on_its_vertex_unrotated():
    s = sensor()
    st = state({("punyo", "finger"): cs([[5.0, 5.0, 5.0]], [[1.0, 2.0, 3.0]], elems1=[2])})
    out = s.predict(st)
    expect = np.zeros((4, 3))
    expect[2] = [1, 2, 3]          # the point is ignored in per-vertex mode
    np.testing.assert_allclose(per_vertex(out).numpy(), expect)


def test_per_vertex_force_is_rotated_into_the_body_frame():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.0, 0.0, 0.0]], [[1.0, 0.0, 0.0]], elems1=[1])},
               T=T_of(RZ90, (10.0, 0.0, 0.0)))
    # R^T (1,0,0): world +x is body -y
    np.testing.assert_allclose(per_vertex(s.predict(st)).numpy()[1], [0.0, -1.0, 0.0], atol=1e-15)


def test_repeated_vertices_accumulate():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0, 0, 0]] * 3, [[1, 0, 0], [2, 0, 0], [0, 0, 4]],
                                        elems1=[1, 1, 3])})
    out = per_vertex(s.predict(st)).numpy()
    np.testing.assert_allclose(out[1], [3, 0, 0])
    np.testing.assert_allclose(out[3], [0, 0, 4])


def test_barycentric_contact_on_rotated_translated_body_splits_the_local_force():
    s = sensor()
    # local point (0.75, 0.25, 0.5) -> world R p + t = (-0.25, 0.75, 0.5) + (10, 0, 0)
    st = state({("punyo", "finger"): cs([[9.75, 0.75, 0.5]], [[0.0, 0.0, -2.0]])},
               T=T_of(RZ90, (10.0, 0.0, 0.0)))
    # closest point (0.75, 0.25, 0) in t0: weights (0.25, 0.5, 0.25) on v0, v1, v2
    expect = np.zeros((4, 3))
    expect[0, 2], expect[1, 2], expect[2, 2] = -0.5, -1.0, -0.5
    for out in both_paths(s, st):
        np.testing.assert_allclose(out, expect, atol=1e-14)


def test_barycentric_force_off_axis_is_rotated_then_split():
    s = sensor()
    # local point (0.2, 0.6, 0) lies in t1 = (v0, v2, v3): p = s v2 + t v3 = (s, s + t)
    # -> s = 0.2, t = 0.4, weights (0.4, 0.2, 0.4) on v0, v2, v3
    # world force (0, 3, 0) reads locally R^T (0,3,0) = (3, 0, 0)
    st = state({("punyo", "finger"): cs([[10.0 - 0.6, 0.2, 0.0]], [[0.0, 3.0, 0.0]])},
               T=T_of(RZ90, (10.0, 0.0, 0.0)))
    expect = np.zeros((4, 3))
    expect[0, 0], expect[2, 0], expect[3, 0] = 1.2, 0.6, 1.2
    for out in both_paths(s, st):
        np.testing.assert_allclose(out, expect, atol=1e-14)


def test_minus_one_selects_barycentric_per_contact_and_elems2_does_not_matter():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.0, 0.0, 0.0], [1.0, 1.0, 3.0]],
                                        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
                                        elems1=[3, -1], elems2=[7, 7])})
    expect = np.zeros((4, 3))
    expect[3] = [1, 0, 0]            # per-vertex: vertex 3
    expect[2] = [0, 1, 0]            # barycentric: (1,1,3) projects onto vertex v2 exactly
    for out in both_paths(s, st):
        np.testing.assert_allclose(out, expect, atol=1e-14)


def test_contacts_from_several_pairs_add_and_reverse_pairs_are_ignored():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0, 0, 0]], [[1.0, 0, 0]], elems1=[0]),
                ("box", "punyo"): cs([[0, 0, 0]], [[100.0, 0, 0]], elems1=[0]),   # force on box
                ("punyo", "box"): cs([[0, 0, 0]], [[0, 2.0, 0]], elems1=[0])})
    np.testing.assert_allclose(per_vertex(s.predict(st)).numpy()[0], [1.0, 2.0, 0.0])
    assert s.contact_bodies(st) == [("punyo", "finger"), ("punyo", "box")]


def test_no_contacts_predicts_zero_of_the_state_dtype():
    s = sensor()
    for dt in (torch.float32, torch.float64):
        out = s.predict(state({}, dtype=dt))
        assert out.dtype == dt and out.shape == (12,)
        assert torch.count_nonzero(out) == 0
    assert s.measurement_force_jacobian(state({})) == {}
    assert s.sparse_force_jacobian(state({})).shape == (12, 0)


def test_float32_state_gives_float32_prediction_and_jacobian():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.75, 0.25, 0.5]], [[0.0, 0.0, -2.0]], dtype=torch.float32)},
               dtype=torch.float32)
    out = s.predict(st)
    assert out.dtype == torch.float32
    assert s.predict_torch(st).dtype == torch.float32
    J = s.sparse_force_jacobian(st)
    assert J.values.dtype == torch.float32 and J.rows.dtype == torch.int64
    np.testing.assert_allclose(per_vertex(out).numpy()[:3, 2], [-0.5, -1.0, -0.5], rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# Jacobian blocks by hand
# ----------------------------------------------------------------------------------------------
def test_jacobian_blocks_are_weight_times_R_transpose():
    s = sensor()
    R = np.array(RZ90)
    st = state({("punyo", "finger"): cs([[9.75, 0.75, 0.5], [0.0, 0.0, 0.0]],
                                        [[0, 0, -2.0], [1.0, 0, 0]], elems1=[-1, 3])},
               T=T_of(RZ90, (10.0, 0.0, 0.0)))
    J = s.measurement_force_jacobian(st)[("punyo", "finger")].numpy()
    assert J.shape == (12, 2, 3)
    expect = np.zeros((12, 2, 3))
    for i, w in ((0, 0.25), (1, 0.5), (2, 0.25)):       # barycentric contact 0
        expect[3 * i:3 * i + 3, 0, :] = w * R.T
    expect[9:12, 1, :] = R.T                              # per-vertex contact 1 on v3
    np.testing.assert_allclose(J, expect, atol=1e-14)


def test_sparse_jacobian_has_27_entries_per_barycentric_and_9_per_vertex_contact():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.3, 0.1, 0.2], [0, 0, 0]], [[1, 2, 3], [4, 5, 6]],
                                        elems1=[-1, 2]),
                ("punyo", "box"): cs([[0.2, 0.9, -0.1]], [[0, 0, 1.0]])})
    J = s.sparse_force_jacobian(st)
    assert len(J.values) == 27 + 9 + 27
    assert J.shape == (12, 9) and J.pairs == [("punyo", "finger"), ("punyo", "box")]
    assert J.offsets == [0, 2, 3]
    dense = J.to_pair_dict()
    for pair, block in s.measurement_force_jacobian(st).items():
        torch.testing.assert_close(dense[pair], block)


def test_predict_with_jacobian_matches_the_separate_calls():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.3, 0.1, 0.2], [0, 0, 0]], [[1, 2, 3], [4, 5, 6]],
                                        elems1=[-1, 2])})
    out, J = s.predict_with_jacobian(st)
    torch.testing.assert_close(out, s.predict(st))
    torch.testing.assert_close(J.to_dense(), s.sparse_force_jacobian(st).to_dense())


# ----------------------------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------------------------
def test_tare_calibration_adds_tare_minus_simulated_average():
    s = sensor()
    tare = np.arange(12.0)
    sim = np.full(12, 0.5)
    s.set_calibration({"tare": tare, "tare_sim_avg": sim})
    st = state({("punyo", "finger"): cs([[0, 0, 0]], [[1.0, 0, 0]], elems1=[0])})
    out = s.predict(st).numpy()
    expect = tare - 0.5
    expect[0] += 1.0
    np.testing.assert_allclose(out, expect)
    cal = s.get_calibration()
    np.testing.assert_array_equal(cal["tare"], tare)
    np.testing.assert_array_equal(cal["tare_sim_avg"], sim)
    s.set_calibration({})
    assert s.get_calibration() == {}
    np.testing.assert_allclose(s.predict(st).numpy()[0], 1.0)


TARE = "sensor 'punyo_force': calibration 'tare'"


@pytest.mark.parametrize("calib, argument, value, reason, expected", [
    ({"tare": np.zeros(11)}, TARE, (11,), "shape", (12,)),             # 4 vertices x 3
    ({"tare": np.full(12, np.nan)}, TARE, [np.nan] * 12, "not_finite", None),
    ({"tare": np.zeros(12), "bias": 1.0}, "calib", "bias", "unknown_key", ("tare", "tare_sim_avg", "gain")),
    ({"tare_sim_avg": np.zeros(12)}, "calib", "tare_sim_avg", "needs_tare", "tare"),
])
def test_bad_calibration_raises_and_keeps_the_old_one(calib, argument, value, reason, expected):
    s = sensor()
    s.set_calibration({"tare": np.ones(12)})
    with pytest.raises(InputError) as err:
        s.set_calibration(calib)
    assert (err.value.argument, err.value.reason, err.value.expected) == (argument, reason, expected)
    np.testing.assert_equal(err.value.value, value)
    np.testing.assert_array_equal(s.get_calibration()["tare"], np.ones(12))


# ----------------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [4, -2])           # 4 vertices: 0..3, and -1 for "no element"
def test_an_element_index_out_of_range_names_it(index):
    s = sensor()
    st = state({("punyo", "finger"): cs([[0, 0, 0]], [[1.0, 0, 0]], elems1=[index])})
    for call in (s.predict, s.sparse_force_jacobian):
        with pytest.raises(InputError) as err:
            call(st)
        assert (err.value.argument, err.value.value, err.value.reason) == ("elems1", index, "index")


def test_unknown_body_names_it():
    s = PunyoDenseForceSensor("f", "not_there")
    s.attach((SQ_V, SQ_F))
    with pytest.raises(ValueError):
        s.predict(state({}))


def test_non_finite_body_transform_is_rejected():
    s = sensor()
    T = T_of()
    T[0, 3] = float("nan")
    with pytest.raises(ValueError):
        s.predict(state({}, T=T))


def test_predict_before_attach_says_so():
    with pytest.raises(RuntimeError):
        PunyoDenseForceSensor("f", "punyo").predict(state({}))


def test_attaching_a_body_without_mesh_raises_and_keeps_the_old_mesh():
    klampt = pytest.importorskip("klampt")
    s = sensor()
    world = klampt.WorldModel()
    empty = world.makeRigidObject("punyo")
    with pytest.raises(ValueError):
        s.attach(empty)
    assert s.num_vertices == 4


def test_attaching_a_klampt_body_with_another_name_warns_and_attaches_as_the_seed():
    klampt = pytest.importorskip("klampt")
    world = klampt.WorldModel()
    obj = world.makeRigidObject("other_body")
    m = klampt.TriangleMesh()
    m.setVertices(SQ_V)
    m.setIndices(SQ_F.astype(np.int32))
    obj.geometry().setTriangleMesh(m)
    s = PunyoDenseForceSensor("f", "punyo")
    with pytest.warns(UserWarning):
        s.attach(obj)
    assert s.num_vertices == 4 and s.attachModelName == "punyo" and s.object is obj
    s = PunyoDenseForceSensor("f", "other_body")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # the matching name does not warn
        s.attach(obj)
    assert s.num_vertices == 4


def test_attach_rejects_a_mesh_that_disagrees_with_the_calibration():
    s = sensor()
    s.set_calibration({"tare": np.ones(12)})
    tri = (SQ_V[:3], SQ_F[:1])
    with pytest.raises(ValueError):
        s.attach(tri)
    assert s.num_vertices == 4


# ----------------------------------------------------------------------------------------------
# configuration
# ----------------------------------------------------------------------------------------------
def test_from_config_reads_the_attachment():
    s = PunyoDenseForceSensor.from_config("punyo_force", {"attachment": "punyo"})
    assert (s.name, s.attachModelName, s.type_name) == ("punyo_force", "punyo", "PunyoDenseForceSensor")


@pytest.mark.parametrize("cfg, word", [({}, "attachment"), ({"attachment": "p", "radius": 1}, "radius"),
                                       ({"attachment": 3}, "attachment")])
def test_from_config_rejects_bad_keys(cfg, word):
    with pytest.raises(SettingError) as err:
        PunyoDenseForceSensor.from_config("f", cfg)
    assert (err.value.setting, err.value.value) == (word, cfg.get(word))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available on this machine")
def test_cuda_state_gives_cuda_outputs():
    s = sensor()
    st = SimState({"punyo": T_of().cuda()}, {},
                  {("punyo", "finger"): cs([[0.75, 0.25, 0.5]], [[0.0, 0.0, -2.0]]).to("cuda")})
    out = s.predict(st)
    assert out.device.type == "cuda"
    assert s.sparse_force_jacobian(st).values.device.type == "cuda"
    np.testing.assert_allclose(per_vertex(out).cpu().numpy()[:3, 2], [-0.5, -1.0, -0.5])


# ----------------------------------------------------------------------------------------------
# fast path vs predict_torch; pairs with and without elems1; half precision
# ----------------------------------------------------------------------------------------------
def test_pairs_with_and_without_elems1_mix_in_contact_order():
    # pair finger, no elems1 (barycentric): (0.75, 0.25) on t0 = (v0, v1, v2): x = v + w, y = w
    #   -> v = 0.5, w = 0.25, u = 0.25; force (0, 0, -4) -> z: v0 -1, v1 -2, v2 -1
    # pair box, elems1 = [3, -1]: (1, 0, 0) on v3; (0.25, 0.75) on t1 = (v0, v2, v3): x = v,
    #   y = v + w -> v = 0.25, w = 0.5, u = 0.25; force (0, 2, 0) -> y: v0 0.5, v2 0.5, v3 1
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.75, 0.25, 1.0]], [[0.0, 0.0, -4.0]]),
                ("punyo", "box"): cs([[9.0, 9.0, 9.0], [0.25, 0.75, -0.5]], [[1.0, 0, 0], [0, 2.0, 0]],
                                     elems1=[3, -1])})
    expect = np.array([[0, 0.5, -1], [0, 0, -2], [0, 0.5, -1], [1, 1, 0]])
    fast, J = s.predict_with_jacobian(st)
    np.testing.assert_allclose(per_vertex(fast).numpy(), expect, atol=1e-14)
    np.testing.assert_allclose(per_vertex(s.predict_torch(st)).detach().numpy(), expect, atol=1e-14)
    # J f over the concatenated forces (finger first, then box) reproduces the prediction
    f = torch.tensor([0.0, 0, -4, 1, 0, 0, 0, 2, 0], dtype=torch.float64)
    np.testing.assert_allclose((J.to_dense() @ f).numpy(), expect.reshape(-1), atol=1e-14)
    # and J is the autograd Jacobian of predict_torch w.r.t. those forces
    fin, box = st.contacts[("punyo", "finger")], st.contacts[("punyo", "box")]

    def torch_of(forces):
        return s.predict_torch(state({("punyo", "finger"): ContactState(fin.points, forces[:3].reshape(1, 3)),
                                      ("punyo", "box"): ContactState(box.points, forces[3:].reshape(2, 3),
                                                                     box.elems1)}))
    J_auto = torch.autograd.functional.jacobian(torch_of, f)
    torch.testing.assert_close(J.to_dense(), J_auto, atol=1e-14, rtol=0)
    assert J.offsets == [0, 1, 3] and len(J.values) == 27 + 9 + 27


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_states_are_computed_in_float64_and_keep_their_dtype(dtype):
    # numpy has no bfloat16: such states are mapped in float64 and cast back.  Hand values (exact
    # in half precision): body rotated by RZ90, local point (0.75, 0.25, 0.5) -> closest point in
    # t0 with weights (0.25, 0.5, 0.25) on v0, v1, v2; world force (-1, 2, -2) reads locally
    # R^T f = (2, 1, -2)
    s = sensor()
    st = state({("punyo", "finger"): cs([[-0.25, 0.75, 0.5]], [[-1.0, 2.0, -2.0]], dtype=dtype)},
               T=T_of(RZ90, dtype=dtype), dtype=dtype)
    out, J = s.predict_with_jacobian(st)
    assert out.dtype == dtype and J.values.dtype == dtype and J.rows.dtype == torch.int64
    expect = np.zeros((4, 3))
    expect[:3] = np.outer([0.25, 0.5, 0.25], [2.0, 1.0, -2.0])
    for got in both_paths(s, st):
        np.testing.assert_array_equal(got, expect)
    assert s.predict_torch(st).dtype == dtype
    f = torch.tensor([-1.0, 2.0, -2.0], dtype=torch.float64)
    np.testing.assert_array_equal((J.to_dense().double() @ f).numpy(), expect.reshape(-1))


@pytest.mark.parametrize("far", [1e155, 1e200])
def test_contact_far_beyond_the_mesh_is_refused_by_every_output_and_leaves_no_trace(far):
    s = sensor()
    # unit square: bound = 1e6 x box diagonal sqrt(2) ~ 1.41e6 m from its centre
    bad = state({("punyo", "box"): cs([[far, 0.0, 0.0]], [[0.0, 0.0, -1.0]])})
    for call in (s.predict, s.predict_torch, s.sparse_force_jacobian, s.predict_with_jacobian):
        with pytest.raises(ValueError):
            call(bad)
    # a contact a million metres off (inside the bound) still splits exactly: (1e6, 0.25, 0) is
    # closest to the edge x = 1 at y = 0.25 -> 0.75 of the force on vertex 1, 0.25 on vertex 2
    out = per_vertex(s.predict(state({("punyo", "box"): cs([[1e6, 0.25, 0.0]], [[0.0, 0.0, -1.0]])})))
    expected = torch.zeros(4, 3, dtype=torch.float64)
    expected[1, 2], expected[2, 2] = -0.75, -0.25
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_scaled_body_rotation_is_rejected_not_read_as_a_doubled_force(dtype):
    # before: with R scaled by 2 a 1 N barycentric contact summed to 2 N over the vertices
    s = sensor()
    T = T_of(dtype=dtype)
    T[:3, :3] *= 2.0
    st = state({("punyo", "box"): cs([[0.2, 0.3, 0.0]], [[0.0, 0.0, -1.0]], dtype=dtype)}, T=T, dtype=dtype)
    for call in (s.predict, s.predict_torch, s.sparse_force_jacobian, s.predict_with_jacobian):
        with pytest.raises(ValueError):                 # the message: test_base_sensor's transform checks
            call(st)
