"""ContactState validation and SimState queries (seed ``SimState`` semantics), by hand."""
import math

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import ContactState, SimState
from vsf_sensor_ros.sensor.base_sensor import rigid_transform
from vsf_sensor_ros.sensor.errors import InputError


def raised(call, *args, **kw):
    """The InputError that ``call(*args, **kw)`` raises."""
    with pytest.raises(InputError) as err:
        call(*args, **kw)
    return err.value


def T_rz(angle, t, dtype=torch.float64):
    c, s = math.cos(angle), math.sin(angle)
    T = torch.eye(4, dtype=dtype)
    T[:3, :3] = torch.tensor([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], dtype=dtype)
    T[:3, 3] = torch.tensor(t, dtype=dtype)
    return T


def cs(points, forces, dtype=torch.float64, **kw):
    return ContactState(torch.tensor(points, dtype=dtype), torch.tensor(forces, dtype=dtype), **kw)


def three_body_state():
    return SimState(
        {"hand": T_rz(math.pi / 2, (1.0, 2.0, 3.0)), "cup": torch.eye(4, dtype=torch.float64),
         "table": torch.eye(4, dtype=torch.float64)},
        {},
        {("hand", "cup"): cs([[1.0, 3.0, 3.0]], [[0.0, 5.0, 0.0]]),
         ("table", "hand"): cs([[0.0, 0.0, 0.0]], [[0.0, 0.0, 9.0]]),
         ("hand", "table"): cs([[2.0, 2.0, 4.0], [1.0, 2.0, 3.0]], [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])})


def test_bodies_in_contact_forward_and_reverse_keep_insertion_order():
    st = three_body_state()
    assert st.bodies_in_contact("hand") == ["cup", "table"]
    assert st.bodies_in_contact("hand", reverse=True) == ["table"]
    states = st.contact_states_on_body("hand")
    assert [len(c) for c in states] == [1, 2]
    assert st.contact_states_on_body("hand", reverse=True)[0].forces[0, 2].item() == 9.0


def test_unknown_body_names_it_and_the_known_ones():
    st = three_body_state()
    for call in (st.bodies_in_contact, st.contact_states_on_body, st.contacts_on_body):
        e = raised(call, "mug")
        assert (e.argument, e.value, e.reason, e.expected) == ("name", "mug", "unknown_body",
                                                               ["cup", "hand", "table"])


def test_contacts_on_body_in_the_rotated_translated_body_frame():
    # hand: R = Rz(90 deg) (body x -> world y, body y -> world -x), origin t = (1, 2, 3).
    # local = R^T (world - t), R^T = [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]
    #   (1, 3, 3) - t = (0, 1, 0)  -> (1, 0, 0)
    #   (2, 2, 4) - t = (1, 0, 1)  -> (0, -1, 1)
    #   (1, 2, 3) - t = 0          -> 0
    # forces: (0, 5, 0) -> (5, 0, 0); (1, 0, 0) -> (0, -1, 0); (0, 0, -1) -> (0, 0, -1)
    st = three_body_state()
    pts, frc = st.contacts_on_body("hand")
    torch.testing.assert_close(pts, torch.tensor([[1.0, 0, 0], [0, -1, 1], [0, 0, 0]], dtype=torch.float64),
                               atol=1e-15, rtol=0)
    torch.testing.assert_close(frc, torch.tensor([[5.0, 0, 0], [0, -1, 0], [0, 0, -1]], dtype=torch.float64),
                               atol=1e-15, rtol=0)
    wpts, wfrc = st.contacts_on_body("hand", local=False)
    assert wpts[0].tolist() == [1.0, 3.0, 3.0] and wfrc[0].tolist() == [0.0, 5.0, 0.0]


def test_body_without_contacts_gives_empty_arrays_of_the_state_dtype():
    st = SimState({"a": torch.eye(4, dtype=torch.float32)}, {}, {})
    pts, frc = st.contacts_on_body("a")
    assert pts.shape == (0, 3) and frc.dtype == torch.float32
    assert st.bodies_in_contact("a") == []


def test_dtype_and_device_follow_the_first_transform_and_default_to_float32_cpu():
    assert SimState().dtype == torch.float32 and SimState().device == torch.device("cpu")
    st = SimState({"a": torch.eye(4, dtype=torch.float64)}, {}, {})
    assert st.dtype == torch.float64 and st.device == torch.device("cpu")


def test_subgraph_keeps_only_contacts_between_kept_bodies():
    sub = three_body_state().subgraph(["hand", "table"])
    assert set(sub.body_transforms) == {"hand", "table"}
    assert set(sub.contacts) == {("table", "hand"), ("hand", "table")}


def test_contact_state_to_keeps_dtype_and_elements():
    c = cs([[0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0]], dtype=torch.float32, elems1=torch.tensor([4]))
    d = c.to("cpu")
    assert d.points.dtype == torch.float32 and d.elems1.tolist() == [4] and d.elems2 is None
    assert len(d) == 1


@pytest.mark.parametrize("kw, field, value, reason", [
    (dict(points=torch.zeros(2, 2), forces=torch.zeros(2, 2)), "points", (2, 2), "shape"),
    (dict(points=torch.zeros(2, 3), forces=torch.zeros(3, 3)), "forces", 3, "count"),     # 2 points, 3 forces
    (dict(points=torch.tensor([[0.0, math.nan, 0.0]]), forces=torch.zeros(1, 3)),
     "points", [0.0, math.nan, 0.0], "not_finite"),
    (dict(points=torch.zeros(1, 3), forces=torch.tensor([[math.inf, 0.0, 0.0]])),
     "forces", [math.inf, 0.0, 0.0], "not_finite"),
    (dict(points=torch.zeros(1, 3), forces=torch.zeros(1, 3, dtype=torch.float64)), "forces",
     (torch.float64, torch.device("cpu")), "dtype"),
    (dict(points=torch.zeros(2, 3), forces=torch.zeros(2, 3), elems1=torch.tensor([1])),
     "elems1", (1,), "shape"),
    (dict(points=torch.zeros(1, 3), forces=torch.zeros(1, 3), elems2=torch.tensor([0.5])), "elems2", 0.5,
     "not_integer"),
    (dict(points=torch.zeros(1, 3, dtype=torch.int64), forces=torch.zeros(1, 3)),
     "points", torch.int64, "dtype"),
    (dict(points=[[0.0, 0.0, 0.0]], forces=torch.zeros(1, 3)), "points", "list", "type"),
])
def test_contact_state_rejects_bad_input_naming_it(kw, field, value, reason):
    e = raised(ContactState, **kw)
    assert (e.argument, e.reason) == (field, reason) and isinstance(e, ValueError)
    np.testing.assert_equal(e.value, value)


# ----------------------------------------------------------------------------------------------
# rigid_transform: the one check of a body transform that every sensor uses
# ----------------------------------------------------------------------------------------------
def _state_T(T):
    return SimState({"pad": T, "obj": torch.eye(4, dtype=torch.float64)})


def test_rigid_transform_returns_rotation_and_translation_views():
    T = T_rz(math.pi / 2, (1.0, 2.0, 3.0))
    R, t = rigid_transform(_state_T(T), "pad")
    # Rz(90 deg) = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    torch.testing.assert_close(R, torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
                                               dtype=torch.float64), atol=1e-15, rtol=0)
    assert t.tolist() == [1.0, 2.0, 3.0]


def _scaled(k):
    T = torch.eye(4, dtype=torch.float64)
    T[:3, :3] *= k
    return T


def _sheared():
    T = torch.eye(4, dtype=torch.float64)
    T[0, 1] = 0.1
    return T


def _reflected():
    T = torch.eye(4, dtype=torch.float64)
    T[2, 2] = -1.0                                       # orthonormal, det = -1
    return T


def _bottom():
    T = torch.eye(4, dtype=torch.float64)
    T[3, 0] = 0.5
    return T


def _nan():
    T = torch.eye(4, dtype=torch.float64)
    T[0, 3] = math.nan
    return T


@pytest.mark.parametrize("T, reason, value", [
    (_nan(), "not_finite", _nan().tolist()),
    (torch.eye(3, dtype=torch.float64), "shape", (3, 3)),
    (np.eye(4), "type", "ndarray"),
    (torch.eye(4, dtype=torch.int64), "dtype", torch.int64),
    (_scaled(2.0), "not_orthonormal", pytest.approx(3.0)),            # |R R^T - I| = 4 - 1 = 3
    (_scaled(1.0 + 1e-4), "not_orthonormal", pytest.approx(2.0001e-4)),  # (1 + 1e-4)^2 - 1
    (_sheared(), "not_orthonormal", pytest.approx(0.1)),              # row 0 . row 1 = 0.1
    (_reflected(), "reflection", -1.0),
    (_bottom(), "bottom_row", [0.5, 0.0, 0.0, 1.0]),
])
def test_rigid_transform_rejects_bad_transforms_naming_body_and_value(T, reason, value):
    e = raised(rigid_transform, _state_T(T), "pad")
    assert (e.argument, e.reason) == ("pad", reason)
    if reason == "not_finite":
        np.testing.assert_equal(e.value, value)
    else:
        assert e.value == value


def test_rigid_transform_tolerates_rounding_below_1e5_and_names_unknown_bodies():
    # scale 1 + 2e-6: |R R^T - I| = 4e-6 < 1e-5, accepted; float32 rotation of 30 deg too
    rigid_transform(_state_T(_scaled(1.0 + 2e-6)), "pad")
    rigid_transform(_state_T(T_rz(math.pi / 6, (0.0, 0.0, 0.0), dtype=torch.float32)), "pad")
    e = raised(rigid_transform, _state_T(torch.eye(4, dtype=torch.float64)), "nope")
    assert (e.argument, e.value, e.reason, e.expected) == ("name", "nope", "unknown_body", ["obj", "pad"])


@pytest.mark.parametrize("key", ["punyo", ("punyo",), ("a", "b", "c")])
def test_contact_keys_that_are_not_body_pairs_are_rejected_naming_the_key(key):
    c = cs([[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]])
    e = raised(SimState, {"punyo": torch.eye(4, dtype=torch.float64)}, {}, {key: c})
    assert (e.argument, e.value, e.reason) == ("contacts", key, "not_a_pair")


def test_contacts_on_body_with_a_numpy_transform_says_it_must_be_a_tensor():
    st = SimState({"a": np.eye(4)})
    for local in (True, False):
        with pytest.raises(ValueError):          # the message: test_rigid_transform_rejects_bad_...
            st.contacts_on_body("a", local=local)
