"""PunyoPressureSensor on a closed 1 x 2 x 3 box, by hand.

Seen along the base normal z, the box's shadow is the 1 x 2 rectangle: A_base = 2 m^2
(the sum of |projected triangle areas| would be 4: top and bottom both project).
pressure = tare - (1/A_base) * sum_c (R^T f_c) . n
"""
import math

import numpy as np
import pytest
import torch
import trimesh

from vsf_sensor_ros.sensor import ContactState, SimState
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.sensor.punyo_pressure_sensor import PunyoPressureSensor

BOX = trimesh.creation.box(extents=[1.0, 2.0, 3.0])
# rotation +90 deg about x: body y -> world z, body z -> world -y
RX90 = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]


def T_of(R=None, t=(0.0, 0.0, 0.0), dtype=torch.float64):
    T = torch.eye(4, dtype=dtype)
    if R is not None:
        T[:3, :3] = torch.tensor(R, dtype=dtype)
    T[:3, 3] = torch.tensor(t, dtype=dtype)
    return T


def sensor(**kw):
    s = PunyoPressureSensor("punyo_pressure", "punyo", **kw)
    s.attach(BOX)
    return s


def cs(forces, dtype=torch.float64, elems1=None):
    f = torch.tensor(forces, dtype=dtype)
    return ContactState(torch.zeros_like(f), f, None if elems1 is None else torch.tensor(elems1))


def state(contacts, T=None, dtype=torch.float64):
    return SimState({"punyo": T_of(dtype=dtype) if T is None else T, "finger": T_of(dtype=dtype)},
                    {}, contacts)


def test_base_area_is_the_shadow_not_the_sum():
    s = sensor()
    assert s.base_area == pytest.approx(2.0)
    assert sensor(base_normal_local=[1.0, 0.0, 0.0]).base_area == pytest.approx(6.0)   # 2 x 3 face


def test_pushing_down_on_the_membrane_raises_pressure():
    # f = (0, 0, -4) on the body; (R^T f) . n = -4; pressure = 0 - (1/2)(-4) = 2
    s = sensor()
    out = s.predict(state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]])}))
    assert s.measurement_names() == ["pressure"]
    assert out.shape == (1,) and out.item() == pytest.approx(2.0)


def test_rotated_body_reads_the_force_along_its_rotated_normal():
    # R^T (0, -6, 0) = (0, 0, 6) -> pressure = -(1/2) * 6 = -3 (the 5 N along world x is tangent)
    s = sensor()
    st = state({("punyo", "finger"): cs([[5.0, -6.0, 0.0]])}, T=T_of(RX90, (1.0, 2.0, 3.0)))
    assert s.predict(st).item() == pytest.approx(-3.0)
    # Jacobian row -(1/A) R n = -(1/2) (0, -1, 0)
    J = s.measurement_force_jacobian(st)[("punyo", "finger")]
    assert J.shape == (1, 1, 3)
    np.testing.assert_allclose(J.numpy(), [[[0.0, 0.5, 0.0]]], atol=1e-15)


def test_forces_of_all_pairs_sum_and_elements_do_not_matter():
    s = sensor()
    st = SimState({"punyo": T_of(), "finger": T_of(), "box": T_of()}, {},
                  {("punyo", "finger"): cs([[0, 0, -1.0], [0, 0, -1.0]], elems1=[3, -1]),
                   ("punyo", "box"): cs([[0, 0, -2.0]]),
                   ("box", "punyo"): cs([[0, 0, -100.0]])})        # force on the box: ignored
    # -(1/2) * (-1 - 1 - 2) = 2
    assert s.predict(st).item() == pytest.approx(2.0)
    J = s.sparse_force_jacobian(st)
    assert J.shape == (1, 9) and len(J.values) == 9
    np.testing.assert_allclose(J.to_dense().numpy(), [[0, 0, -0.5] * 3], atol=1e-15)


def test_base_normal_is_normalised_and_sign_sets_direction():
    st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]])})
    assert sensor(base_normal_local=[0, 0, 2.0]).predict(st).item() == pytest.approx(2.0)
    assert sensor(base_normal_local=[0, 0, -1.0]).predict(st).item() == pytest.approx(-2.0)


def test_tare_offsets_the_reading_as_the_seed():
    s = sensor()
    s.set_calibration({"tare": np.array([101325.0])})
    st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]])})
    assert s.predict(st).item() == pytest.approx(101327.0)
    np.testing.assert_array_equal(s.get_calibration()["tare"], [101325.0])
    s.set_calibration({"tare": None})
    assert s.get_calibration() == {} and s.predict(st).item() == pytest.approx(2.0)


def test_tare_sim_avg_is_kept_but_does_not_shift_the_reading():
    # The contact-free model reading is exactly 0, so the seed's offset is the tare alone.
    s = sensor()
    s.set_calibration({"tare": [10.0], "tare_sim_avg": [0.5]})
    assert s.predict(state({})).item() == pytest.approx(10.0)
    assert s.get_calibration()["tare_sim_avg"].tolist() == [0.5]


@pytest.mark.parametrize("calib, argument, value, reason", [
    ({"tare": [1.0, 2.0]}, "sensor 'punyo_pressure': calibration 'tare'", (2,), "shape"),   # one reading
    ({"tare": [math.nan]}, "sensor 'punyo_pressure': calibration 'tare'", [math.nan], "not_finite"),
    ({"offset": [1.0]}, "calib", "offset", "unknown_key")])
def test_bad_calibration_is_rejected_and_the_old_one_kept(calib, argument, value, reason):
    s = sensor()
    s.set_calibration({"tare": [7.0]})
    with pytest.raises(InputError) as err:
        s.set_calibration(calib)
    assert (err.value.argument, err.value.reason) == (argument, reason)
    np.testing.assert_equal(err.value.value, value)
    assert s.get_calibration()["tare"].tolist() == [7.0]


def test_measurement_errors_are_the_standard_deviation_of_the_variance():
    assert sensor(variance=4.0).measurement_errors() == [2.0]
    assert sensor().measurement_errors() == [0.0]
    with pytest.raises(SettingError) as err:
        PunyoPressureSensor("p", "punyo", variance=-1.0)
    assert (err.value.setting, err.value.value) == ("variance", -1.0)


@pytest.mark.parametrize("normal", [[0, 0, 0], [0, 0, math.inf], [1, 2]])
def test_bad_base_normal_is_rejected(normal):
    with pytest.raises(SettingError) as err:
        PunyoPressureSensor("p", "punyo", base_normal_local=normal)
    assert err.value.setting == "base_normal_local"


def test_dtype_follows_the_state():
    s = sensor()
    for dt in (torch.float32, torch.float64):
        st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]], dtype=dt)}, dtype=dt)
        assert s.predict(st).dtype == dt
        assert s.predict_torch(st).dtype == dt
        assert s.sparse_force_jacobian(st).values.dtype == dt


def test_contacts_of_another_dtype_are_rejected():
    s = sensor()
    st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]], dtype=torch.float32)})
    with pytest.raises(ValueError):
        s.predict(st)


def test_predict_torch_is_differentiable_in_the_forces():
    s = sensor()
    f = torch.tensor([[1.0, 2.0, -4.0]], dtype=torch.float64, requires_grad=True)
    st = state({("punyo", "finger"): ContactState(torch.zeros(1, 3, dtype=torch.float64), f)},
               T=T_of(RX90))
    s.predict_torch(st).sum().backward()
    np.testing.assert_allclose(f.grad.numpy(), [[0.0, 0.5, 0.0]], atol=1e-15)


def test_attach_errors_leave_the_sensor_unchanged():
    klampt = pytest.importorskip("klampt")
    s = sensor()
    world = klampt.WorldModel()
    with pytest.raises(ValueError):
        s.attach(world.makeRigidObject("punyo"))              # no geometry
    # another body's name only warns (as the seed attaches it); its missing geometry is the error
    with pytest.warns(UserWarning), pytest.raises(ValueError):
        s.attach(world.makeRigidObject("elsewhere"))
    assert s.base_area == pytest.approx(2.0)


def test_predict_before_attach_says_so():
    with pytest.raises(RuntimeError):
        PunyoPressureSensor("p", "punyo").predict(state({}))


def test_from_config_reads_every_key():
    s = PunyoPressureSensor.from_config("pp", {"type": "PunyoPressureSensor", "attachment": "punyo",
                                               "base_normal_local": [0, 1, 0], "variance": 9.0})
    assert (s.name, s.attachModelName) == ("pp", "punyo")
    assert s.base_normal_local.tolist() == [0.0, 1.0, 0.0]
    assert s.measurement_errors() == [3.0]


@pytest.mark.parametrize("cfg, word", [({}, "attachment"), ({"attachment": "p", "colour": 1}, "colour"),
                                       ({"attachment": "p", "type": "ContactSensor"}, "type"),
                                       ({"attachment": "p", "variance": "loud"}, "variance")])
def test_from_config_rejects_bad_keys(cfg, word):
    with pytest.raises(SettingError) as err:
        PunyoPressureSensor.from_config("pp", cfg)
    assert (err.value.setting, err.value.value) == (word, cfg.get(word))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_predict_with_jacobian_is_predict_and_sparse_jacobian_in_one_call(dtype):
    # RX90 takes body z to world -y: R n = (0, -1, 0), and (R^T f) . n = f . (R n) = -f_y.
    # Two pairs, f1 = (0, -4, 0) and f2 = (1, 2, 0): -f_y = 4 and -2, so with tare 1.5 and A = 2:
    # p = 1.5 - (4 - 2) / 2 = 0.5
    s = sensor()
    s.set_calibration({"tare": 1.5})
    st = state({("punyo", "finger"): cs([[0.0, -4.0, 0.0]], dtype=dtype),
                ("punyo", "box"): cs([[1.0, 2.0, 0.0]], dtype=dtype)},
               T=T_of(RX90, dtype=dtype), dtype=dtype)
    st.body_transforms["box"] = T_of(dtype=dtype)
    p, J = s.predict_with_jacobian(st)
    assert p.dtype == dtype and J.values.dtype == dtype
    assert p.item() == pytest.approx(0.5, abs=1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6)
    torch.testing.assert_close(p, s.predict(st))
    # every contact's row is -(1/A) R n = -(0, -1, 0) / 2 = (0, 0.5, 0)
    np.testing.assert_allclose(J.to_dense().float().numpy(), [[0, 0.5, 0, 0, 0.5, 0]], atol=1e-7)
    assert J.offsets == [0, 1, 2] and J.pairs == [("punyo", "finger"), ("punyo", "box")]
    torch.testing.assert_close(J.to_dense(), s.sparse_force_jacobian(st).to_dense())


def test_pose_check_rejects_nan_and_inf_but_not_huge_finite_entries():
    # numpy_pose tests finiteness by the sum of the 16 entries, falling back to the element-wise
    # test when the sum overflows: 1e308 + 1e308 = inf, yet both entries are finite
    from vsf_sensor_ros.sensor._punyo_common import numpy_pose
    for bad in (float("nan"), float("inf"), -float("inf")):
        T = T_of()
        T[1, 3] = bad
        with pytest.raises(ValueError):
            numpy_pose(state({}, T=T), "punyo")
    T = T_of(t=(1e308, 1e308, 0.0))
    R, t, _ = numpy_pose(state({}, T=T), "punyo")
    np.testing.assert_array_equal(t, [1e308, 1e308, 0.0])
    np.testing.assert_array_equal(R, np.eye(3))
    assert numpy_pose(state({}, T=T_of(dtype=torch.float16), dtype=torch.float16), "punyo") is None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_scaled_or_reflected_body_rotation_is_rejected_not_read_as_a_larger_force(dtype):
    # before: a rotation scaled by 2 read a 1 N push as 2 N; now every output refuses it
    s = sensor()
    scaled, mirrored = T_of(dtype=dtype), T_of(dtype=dtype)
    scaled[:3, :3] *= 2.0
    mirrored[2, 2] = -1.0
    for T in (scaled, mirrored):           # the messages: test_base_sensor's transform checks
        st = state({("punyo", "finger"): cs([[0.0, 0.0, -1.0]], dtype=dtype)}, T=T, dtype=dtype)
        for call in (s.predict, s.predict_torch, s.sparse_force_jacobian, s.predict_with_jacobian):
            with pytest.raises(ValueError):
                call(st)


@pytest.mark.parametrize("value", ["up", [0.0, "x", 1.0], [[0.0, 1.0], [1.0]]])
def test_from_config_with_a_non_numeric_base_normal_names_the_key_and_value(value):
    with pytest.raises(SettingError) as err:
        PunyoPressureSensor.from_config("pp", {"attachment": "punyo", "base_normal_local": value})
    assert (err.value.setting, err.value.value) == ("base_normal_local", value)


def test_inference_mode_states_and_a_pose_changed_in_place_between_calls():
    # f = (0, 0, -4): 2 Pa and dp/df = (0, 0, -1/2) per contact, as test_pushing_down_on_the_membrane
    s = sensor()
    with torch.inference_mode():                 # its tensors have no version counter
        st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]])})
        assert s.predict(st).item() == pytest.approx(2.0)
        assert s.sparse_force_jacobian(st).values.tolist() == pytest.approx([0.0, 0.0, -0.5])
    st = state({("punyo", "finger"): cs([[0.0, 0.0, -4.0]])})
    assert s.predict(st).item() == pytest.approx(2.0)
    st.body_transforms["punyo"].numpy()[:3, :3] *= 2.0    # in place, torch does not see it
    for call in (s.predict, s.sparse_force_jacobian, s.predict_with_jacobian):
        with pytest.raises(ValueError):
            call(st)
