"""Klampt-style ContactSensor: every expected number below is derived by hand in the test.

Conventions pinned here (seed: Klampt ``ContactSensor`` in ``Cpp/Sensing/ForceSensors.cpp``):
the sensor reads the pairs ``(link, other)`` whose forces act on the link; a contact counts when its
sensor-frame ``x, y`` lie in ``[patchMin, patchMax]`` (inclusive) and ``|z| <= patchTolerance``;
``contact = |F_z| > fSensitivity`` on the weighted, noise-free force; then noise, quantisation
(C ``round``, half away from zero) and saturation, in that order.
"""
import math

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import ContactSensor, ContactState, SimState
from vsf_sensor_ros.sensor.klampt_contact_sensor import format_klampt_float
from vsf_sensor_ros.sensor.errors import InputError, SettingError

F64 = torch.float64


def T(R=None, t=(0.0, 0.0, 0.0), dtype=F64):
    out = torch.eye(4, dtype=dtype)
    if R is not None:
        out[:3, :3] = torch.tensor(R, dtype=dtype)
    out[:3, 3] = torch.tensor(t, dtype=dtype)
    return out


RZ90 = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]   # x -> y, y -> -x
RX180 = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]  # flips y and z


def state_with(points, forces, T_link=None, dtype=F64, pair=("link", "obj"), extra=None):
    contacts = {pair: ContactState(torch.tensor(points, dtype=dtype).reshape(-1, 3),
                                   torch.tensor(forces, dtype=dtype).reshape(-1, 3))}
    if extra:
        contacts.update(extra)
    return SimState({"link": (T_link if T_link is not None else T(dtype=dtype)).to(dtype),
                     "obj": T(dtype=dtype), "other": T(dtype=dtype)}, {}, contacts)


def square_patch_sensor(**kw):
    settings = dict(patchMin=(-0.01, -0.01), patchMax=(0.01, 0.01), patchTolerance=0.001,
                    hasForce=(True, True, True))
    settings.update(kw)
    return ContactSensor("cs", "link", **settings)


# --------------------------------------------------------------------------- names, defaults
def test_defaults_match_klampt_constructor():
    s = ContactSensor("cs", "link")
    assert s.patchMin == (0.0, 0.0) and s.patchMax == (0.0, 0.0)
    assert s.patchTolerance == 0.001
    assert s.hasForce == (False, False, False)
    assert s.fResolution == (0.0, 0.0, 0.0) and s.fVariance == (0.0, 0.0, 0.0)
    assert s.fSensitivity == 0.0
    assert s.fSaturation == (math.inf, math.inf, math.inf)
    assert s.falloffCoefficient == 0.0
    assert s.enabled is True and s.rate == 0.0
    np.testing.assert_array_equal(s.Tsensor, np.eye(4))
    assert s.type_name == "ContactSensor"
    assert s.attachModelName == "link" and s.link == "link"


def test_measurement_names_list_only_axes_with_hasForce_like_klampt():
    # Klampt 0.10.1 reports ('contact',) by default and ('contact', 'force_x', 'force_z') for "1 0 1".
    s = ContactSensor("cs", "link")
    assert s.measurement_names() == ["contact"]
    s.hasForce = (True, False, True)
    assert s.measurement_names() == ["contact", "force_x", "force_z"]
    s.hasForce = (True, True, True)
    assert s.measurement_names() == ["contact", "force_x", "force_y", "force_z"]


# --------------------------------------------------------------------------- patch membership
def test_patch_membership_is_inclusive_on_edges_and_tolerance():
    # Forces -1, -2, -4, -8, -16, -32 N on z: the reading's sum tells which contacts counted.
    pts = [[0.0, 0.0, 0.0],          # centre: in              (1)
           [0.01, 0.01, 0.001],      # corner, z = +tol: in     (2)
           [-0.01, -0.01, -0.001],   # opposite corner, -tol: in (4)
           [0.0101, 0.0, 0.0],       # beyond patchMax.x: out   (8)
           [0.0, 0.0, 0.0011],       # above tolerance: out     (16)
           [0.0, -0.0101, 0.0]]      # below patchMin.y: out    (32)
    frc = [[0.0, 0.0, -(2.0 ** i)] for i in range(6)]
    y = square_patch_sensor().predict(state_with(pts, frc))
    assert y.tolist() == [1.0, 0.0, 0.0, -7.0]


def test_contacts_on_reverse_pairs_are_not_read():
    # Only (link, other) pairs carry forces on the link; (obj, link) is the other body's view.
    extra = {("obj", "link"): ContactState(torch.zeros(1, 3, dtype=F64),
                                           torch.tensor([[0.0, 0.0, 100.0]], dtype=F64))}
    y = square_patch_sensor().predict(state_with([[0, 0, 0]], [[0, 0, -3.0]], extra=extra))
    assert y.tolist() == [1.0, 0.0, 0.0, -3.0]


def test_all_pairs_on_the_link_are_summed():
    extra = {("link", "other"): ContactState(torch.zeros(1, 3, dtype=F64),
                                             torch.tensor([[1.0, 0.0, -2.0]], dtype=F64))}
    s = square_patch_sensor()
    st = state_with([[0, 0, 0]], [[0, 0.5, -3.0]], extra=extra)
    assert s.predict(st).tolist() == [1.0, 1.0, 0.5, -5.0]
    assert s.contact_bodies(st) == [("link", "obj"), ("link", "other")]


def test_no_contacts_reads_zero():
    st = SimState({"link": T()}, {}, {})
    y = square_patch_sensor().predict(st)
    assert y.tolist() == [0.0, 0.0, 0.0, 0.0]
    jac = square_patch_sensor().measurement_force_jacobian(st)
    assert jac == {}


# --------------------------------------------------------------------------- falloff
def test_falloff_weight_off_centre_patch():
    # patch x in [0, 0.04], y in [0, 0.02]: centre (0.02, 0.01), xsize*ysize = 8e-4.
    # point (0.03, 0.015): offsets (0.01, 0.005): 4*0.01*0.005/8e-4 = 0.25 -> w = 0.75^2 = 0.5625
    s = square_patch_sensor(patchMin=(0.0, 0.0), patchMax=(0.04, 0.02), falloffCoefficient=2.0)
    y = s.predict(state_with([[0.03, 0.015, 0.0]], [[0.0, 0.0, -8.0]]))
    assert y[3].item() == pytest.approx(-8.0 * 0.5625, rel=1e-12)


def test_falloff_zero_is_a_rigid_strain_gauge_and_one_kills_corners():
    corner = state_with([[0.01, -0.01, 0.0]], [[0.0, 0.0, -2.0]])
    assert square_patch_sensor(falloffCoefficient=0.0).predict(corner)[3].item() == -2.0
    # at a corner 4|x||y| = xsize*ysize, so the weight is 0 for any positive coefficient
    y = square_patch_sensor(falloffCoefficient=1.0).predict(corner)
    assert y.tolist() == [0.0, 0.0, 0.0, 0.0]
    # on an axis through the centre (x = 0) the weight is 1 whatever the coefficient
    axis = state_with([[0.0, 0.009, 0.0]], [[0.0, 0.0, -2.0]])
    assert square_patch_sensor(falloffCoefficient=3.0).predict(axis)[3].item() == -2.0


def test_falloff_on_a_degenerate_patch_is_one_not_nan():
    # zero-area patch (the Klampt default): 4|x||y| and xsize*ysize are both 0 -> weight 1
    s = square_patch_sensor(patchMin=(0.0, -0.01), patchMax=(0.0, 0.01), falloffCoefficient=2.0)
    y = s.predict(state_with([[0.0, 0.005, 0.0]], [[0.0, 0.0, -4.0]]))
    assert y.tolist() == [1.0, 0.0, 0.0, -4.0]


# ------------------------------------------------------------- sensitivity, saturation, resolution
def test_sensitivity_is_a_strict_threshold_on_abs_normal_force():
    s = square_patch_sensor(fSensitivity=2.0)
    assert s.predict(state_with([[0, 0, 0]], [[0, 0, -2.0]]))[0].item() == 0.0
    assert s.predict(state_with([[0, 0, 0]], [[0, 0, -2.5]]))[0].item() == 1.0
    assert s.predict(state_with([[0, 0, 0]], [[0, 0, 3.0]]))[0].item() == 1.0
    # tangential force alone never registers contact, even with zero sensitivity
    assert square_patch_sensor().predict(state_with([[0, 0, 0]], [[5.0, 0, 0]]))[0].item() == 0.0


def test_contact_is_decided_before_saturation():
    s = square_patch_sensor(fSensitivity=2.0, fSaturation=(math.inf, math.inf, 1.0))
    assert s.predict(state_with([[0, 0, 0]], [[0, 0, -3.0]])).tolist() == [1.0, 0.0, 0.0, -1.0]


def test_saturation_clamps_each_axis_symmetrically():
    s = square_patch_sensor(fSaturation=(1.0, 2.0, math.inf))
    y = s.predict(state_with([[0, 0, 0]], [[3.0, -5.0, 7.0]]))
    assert y.tolist() == [1.0, 1.0, -2.0, 7.0]


def test_quantisation_rounds_half_away_from_zero_like_c_round():
    s = square_patch_sensor(fResolution=(0.5, 0.5, 0.5))
    # 0.25/0.5 = 0.5 -> 1 -> 0.5 ; -0.25 -> -0.5 ; 0.74/0.5 = 1.48 -> 1 -> 0.5
    assert s.predict(state_with([[0, 0, 0]], [[0.25, -0.25, 0.74]])).tolist() == [1.0, 0.5, -0.5, 0.5]
    # 0.76/0.5 = 1.52 -> 2 -> 1.0 ; 1.25/0.5 = 2.5 -> 3 -> 1.5 (torch.round would give 2 -> 1.0)
    assert s.predict(state_with([[0, 0, 0]], [[0.76, 1.25, 0.0]])).tolist() == [0.0, 1.0, 1.5, 0.0]


def test_quantisation_happens_before_saturation():
    s = square_patch_sensor(fResolution=(0.4, 0.4, 0.0), fSaturation=(1.0, 1.0, math.inf))
    # x: 1.1/0.4 = 2.75 -> 3 -> 1.2 -> clamped to 1.0 ; y: 0.9/0.4 = 2.25 -> 2 -> 0.8 (not clamped)
    y = s.predict(state_with([[0, 0, 0]], [[1.1, 0.9, -1.0]]))
    assert y[1].item() == 1.0
    assert y[2].item() == pytest.approx(0.8, abs=1e-15)


# --------------------------------------------------------------------------- frames
def test_rotated_translated_link_and_tsensor():
    # link: Rz(90), t=(1,2,3). Tsensor: Rx(180), origin (0,0,0.05) in the link frame.
    # Patch x in [-0.01,0.01], y in [-0.004,0.004].
    # Sensor-frame point (0.008,-0.002,0) -> link (0.008,0.002,0.05) -> world (0.998,2.008,3.05).
    # Sensor-frame force (1,2,-5) -> link (1,-2,5) -> world (2,1,5).
    s = square_patch_sensor(Tsensor=T(RX180, (0.0, 0.0, 0.05)).numpy(),
                            patchMin=(-0.01, -0.004), patchMax=(0.01, 0.004))
    st = state_with([[0.998, 2.008, 3.05]], [[2.0, 1.0, 5.0]], T_link=T(RZ90, (1.0, 2.0, 3.0)))
    y = s.predict(st)
    assert y.tolist() == pytest.approx([1.0, 1.0, 2.0, -5.0], abs=1e-12)
    # with the link unrotated the same world point is at sensor (-0.002,-0.008,0): outside in y
    st2 = state_with([[0.998, 2.008, 3.05]], [[2.0, 1.0, 5.0]], T_link=T(None, (1.0, 2.0, 3.0)))
    assert s.predict(st2).tolist() == [0.0, 0.0, 0.0, 0.0]
    # sensor -> world transform exposed for markers: origin at world (1,2,3.05)
    Tw = s.sensor_transform(st)
    assert Tw[:3, 3].tolist() == pytest.approx([1.0, 2.0, 3.05], abs=1e-15)


def test_weight_of_an_object_on_an_upward_patch_reads_negative_force_z():
    # A 1 kg block resting on the patch pushes the link down: force on the link = (0,0,-9.81).
    y = square_patch_sensor().predict(state_with([[0, 0, 0]], [[0.0, 0.0, -9.81]]))
    assert y.tolist() == [1.0, 0.0, 0.0, -9.81]


# --------------------------------------------------------------------------- dtype / device
def test_output_follows_state_dtype_and_mismatch_is_rejected():
    s = square_patch_sensor()
    y32 = s.predict(state_with([[0, 0, 0]], [[0, 0, -1.0]], dtype=torch.float32))
    assert y32.dtype == torch.float32
    bad = SimState({"link": T(), "obj": T()},
                   {}, {("link", "obj"): ContactState(torch.zeros(1, 3), torch.zeros(1, 3))})
    with pytest.raises(ValueError):
        s.predict(bad)


def test_unknown_link_in_state_raises_naming_it():
    st = SimState({"obj": T()}, {}, {})
    with pytest.raises(InputError) as err:
        square_patch_sensor().predict(st)
    assert (err.value.argument, err.value.value, err.value.reason) == ("name", "link", "unknown_body")
    assert err.value.expected == ["obj"]


# --------------------------------------------------------------------------- settings as strings
def test_setting_strings_have_klampt_layout():
    s = ContactSensor("cs", "link")
    # strings produced by Klampt 0.10.1's own ContactSensor defaults
    assert s.getSetting("Tsensor") == "1 0 0\n0 1 0\n0 0 1\n0 0 0"
    assert s.getSetting("patchMin") == "0 0"
    assert s.getSetting("patchTolerance") == "0.001"
    assert s.getSetting("hasForce") == "0 0 0 "
    assert s.getSetting("fSaturation") == "inf inf inf"
    assert s.getSetting("enabled") == "1"
    assert s.getSetting("rate") == "0"
    assert s.getSetting("link") == "link"
    assert sorted(s.settings()) == sorted(
        ["Tsensor", "enabled", "fResolution", "fSaturation", "fSensitivity", "fVariance",
         "falloffCoefficient", "hasForce", "link", "patchMax", "patchMin", "patchTolerance", "rate"])


def test_tsensor_string_is_rotation_rows_then_translation():
    s = ContactSensor("cs", "link")
    s.setSetting("Tsensor", "0 -1 0\n1 0 0\n0 0 1\n0.1 0.2 0.3")
    np.testing.assert_array_equal(s.Tsensor[:3, :3], np.array(RZ90))
    np.testing.assert_array_equal(s.Tsensor[:3, 3], [0.1, 0.2, 0.3])
    assert s.getSetting("Tsensor") == "0 -1 0\n1 0 0\n0 0 1\n0.1 0.2 0.3"


def test_float_format_is_klampt_six_digits_when_lossless_else_shortest_exact():
    assert format_klampt_float(1e6) == "1e+06"
    assert format_klampt_float(1e-9) == "1e-09"
    assert format_klampt_float(0.001) == "0.001"
    assert format_klampt_float(100.0) == "100"
    assert format_klampt_float(-math.inf) == "-inf"
    # Klampt would print 1.23457e+06 and lose digits; we keep the value exact
    assert format_klampt_float(1234567.125) == "1234567.125"
    assert float(format_klampt_float(0.1 + 0.2)) == 0.1 + 0.2


def test_string_round_trip_of_every_setting_is_exact():
    s = ContactSensor("cs", "link", Tsensor=T(RX180, (0.01, -0.02, 0.3)).numpy(),
                      patchMin=(-0.013, -0.017), patchMax=(0.011, 0.019), patchTolerance=0.0021,
                      hasForce=(True, False, True), fResolution=(0.1, 0.0, 1 / 3),
                      fVariance=(0.01, 0.02, 0.03), fSensitivity=0.7, fSaturation=(10.0, math.inf, 20.0),
                      falloffCoefficient=1.5, enabled=False, rate=250.0)
    strings = s.settings()
    t = ContactSensor("other", "elsewhere")
    for k in ["Tsensor", "patchMin", "patchMax", "patchTolerance", "hasForce", "fResolution",
              "fVariance", "fSensitivity", "fSaturation", "falloffCoefficient", "enabled", "rate", "link"]:
        t.setSetting(k, strings[k])
    assert t.settings() == strings
    assert t.fResolution == (0.1, 0.0, 1 / 3) and t.link == "link" and t.enabled is False
    np.testing.assert_array_equal(t.Tsensor, s.Tsensor)


def test_bad_setting_strings_raise_and_leave_the_sensor_unchanged():
    s = square_patch_sensor(fSaturation=(5.0, 5.0, 5.0))
    before = s.settings()
    bad = [("patchTolerance", "abc"), ("patchTolerance", "-0.1"), ("patchTolerance", "0.1 junk"),
           ("hasForce", "1 0"), ("hasForce", "2 0 1"), ("hasForce", "true false true"),
           ("fSaturation", "1 2"), ("fSaturation", "nan 1 1"), ("fSaturation", "-1 1 1"),
           ("fVariance", "1 -1 1"), ("fResolution", "1_0 0 0"), ("fSensitivity", "inf"),
           ("patchMin", "0.02 0"),            # patchMin.x > patchMax.x = 0.01
           ("Tsensor", "1 0 0\n0 1 0\n0 0 2\n0 0 0"),   # not a rotation
           ("Tsensor", "1 0 0 0 1 0 0 0 1"),            # 9 numbers, needs 12
           ("Tsensor", "1 0 0\n0 -1 0\n0 0 1\n0 0 0"),  # reflection, det = -1
           ("enabled", "yes"), ("rate", "-5"), ("link", "  "), ("falloffCoefficient", "-1")]
    for name, value in bad:
        with pytest.raises(SettingError) as err:
            s.setSetting(name, value)
        assert (err.value.setting, err.value.value) == (name, value)
        assert s.settings() == before
    for call in (lambda: s.setSetting("notASetting", "1"), lambda: s.getSetting("notASetting")):
        with pytest.raises(SettingError) as err:
            call()
        assert err.value.setting == "notASetting"


def test_inf_saturation_string_is_accepted_back():
    # Klampt prints "inf" but its own parser rejects it; ours reads back what it writes.
    s = square_patch_sensor()
    s.setSetting("fSaturation", "inf 2 inf")
    assert s.fSaturation == (math.inf, 2.0, math.inf)


def test_typed_attribute_errors_name_the_setting_and_leave_sensor_unchanged():
    s = square_patch_sensor()
    before = s.settings()
    with pytest.raises(SettingError) as err:
        s.patchMax = (-0.02, 0.01)       # below patchMin.x
    assert err.value.setting == "patchMax"
    with pytest.raises(SettingError) as err:
        s.hasForce = (True, False)
    assert err.value.setting == "hasForce"
    with pytest.raises(SettingError) as err:
        s.configure(fSaturation=(1.0, 1.0, 1.0), fVariance=(float("nan"), 0.0, 0.0))
    assert err.value.setting == "fVariance"
    assert s.settings() == before       # the valid fSaturation of the failed call was not applied
    # moving the whole patch at once is fine even if either corner alone would cross the old one
    s.configure(patchMin=(0.5, 0.5), patchMax=(0.6, 0.6))
    assert s.patchMin == (0.5, 0.5) and s.patchMax == (0.6, 0.6)


def test_matches_klampts_own_setting_strings_when_klampt_is_installed():
    klampt = pytest.importorskip("klampt")
    w = klampt.WorldModel()
    ks = w.makeRobot("r").addSensor("cs", "ContactSensor")
    values = {"Tsensor": "0 -1 0\n1 0 0\n0 0 1\n0.1 0.2 0.3", "patchMin": "-0.01 -0.02",
              "patchMax": "0.025 1e-05", "patchTolerance": "0.002", "hasForce": "1 0 1 ",
              "fResolution": "0.5 0.25 0", "fVariance": "0.01 0.2 3", "fSensitivity": "1e-09",
              "fSaturation": "1e+06 2 3", "falloffCoefficient": "2.5", "rate": "100", "enabled": "0"}
    ours = ContactSensor("cs", "link")
    for k, v in values.items():
        ks.setSetting(k, v)
        ours.setSetting(k, v)
        assert ours.getSetting(k) == ks.getSetting(k) == v, k
    assert tuple(ours.measurement_names()) == tuple(ks.measurementNames())


# --------------------------------------------------------------------------- from_config
def test_from_config_typed_values():
    cfg = {"type": "ContactSensor", "attachment": "link",
           "Tsensor": [0.0, -1.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.2, 0.0, 0.0, 1.0, 0.3, 0.0, 0.0, 0.0, 1.0],
           "patchMin": [-0.01, -0.02], "patchMax": [0.01, 0.02], "patchTolerance": 0.002,
           "hasForce": [False, True, True], "fResolution": [0.0, 0.1, 0.1], "fVariance": [0.0, 0.04, 0.09],
           "fSensitivity": 0.5, "fSaturation": [1.0, 2.0, 3.0], "falloffCoefficient": 1.0,
           "enabled": True, "rate": 50.0}
    s = ContactSensor.from_config("cs", cfg)
    assert s.name == "cs" and s.link == "link"
    np.testing.assert_array_equal(s.Tsensor[:3, :3], np.array(RZ90))
    np.testing.assert_array_equal(s.Tsensor[:3, 3], [0.1, 0.2, 0.3])
    assert s.measurement_names() == ["contact", "force_y", "force_z"]
    assert s.measurement_errors() == pytest.approx([0.0, 0.2, 0.3])
    assert s.fSaturation == (1.0, 2.0, 3.0) and s.rate == 50.0


def test_from_config_accepts_klampt_strings_and_link_key():
    s = ContactSensor.from_config("cs", {"link": "finger", "hasForce": "0 0 1", "fSaturation": "inf inf 4"})
    assert s.link == "finger" and s.fSaturation == (math.inf, math.inf, 4.0)


@pytest.mark.parametrize("config, key", [
    ({"attachment": "link", "patchSize": 1.0}, "patchSize"),
    ({"patchTolerance": 0.001}, "attachment"),
    ({"attachment": "link", "Tsensor": [1.0] * 15}, "Tsensor"),
    ({"attachment": "link", "type": "IsaacContactSensor"}, "type"),
    ({"attachment": "a", "link": "b"}, "link"),
])
def test_from_config_errors_name_the_key(config, key):
    with pytest.raises(SettingError) as err:
        ContactSensor.from_config("cs", config)
    assert (err.value.setting, err.value.value) == (key, config.get(key))


# --------------------------------------------------------------------------- noise
def test_predict_is_deterministic_by_default_even_with_variance():
    s = square_patch_sensor(fVariance=(1.0, 1.0, 1.0))
    st = state_with([[0, 0, 0]], [[0.3, 0.2, -1.0]])
    assert s.predict(st).tolist() == [1.0, 0.3, 0.2, -1.0]
    assert s.predict(st).tolist() == [1.0, 0.3, 0.2, -1.0]


def test_noise_is_reproducible_with_a_seed_and_has_the_configured_spread():
    s = square_patch_sensor(fVariance=(4.0, 0.0, 0.25))
    st = state_with([[0, 0, 0]], [[0.0, 0.0, -10.0]])
    a = s.predict(st, noise=True, generator=torch.Generator().manual_seed(7))
    b = s.predict(st, noise=True, generator=torch.Generator().manual_seed(7))
    c = s.predict(st, noise=True, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a[2].item() == 0.0                      # zero variance on y: no noise at all
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([s.sample_noise(g) for _ in range(4000)])
    assert draws.dtype == F64
    std = draws.std(dim=0)
    assert std[0].item() == pytest.approx(2.0, rel=0.06)   # sqrt(4)
    assert std[1].item() == 0.0
    assert std[2].item() == pytest.approx(0.5, rel=0.06)   # sqrt(0.25)
    assert s.measurement_errors() == [0.0, 2.0, 0.0, 0.5]


def test_noise_is_added_before_quantisation_and_needs_a_generator():
    s = square_patch_sensor(fVariance=(1e-6, 1e-6, 1e-6), fResolution=(1.0, 1.0, 1.0))
    st = state_with([[0, 0, 0]], [[0.2, 2.9, -4.1]])
    y = s.predict(st, noise=True, generator=torch.Generator().manual_seed(3))
    assert y.tolist() == [1.0, 0.0, 3.0, -4.0]     # noise of ~1e-3 N cannot cross a 1 N step here
    with pytest.raises(ValueError):
        s.predict(st, noise=True)


# --------------------------------------------------------------------------- Jacobians
def random_state(dtype, seed, n_in=4, n_out=3):
    g = torch.Generator().manual_seed(seed)
    # sensor-frame points: n_in inside the patch [-0.01,0.01]^2 (|z| < tol), n_out outside
    inside = torch.cat([(torch.rand(n_in, 2, generator=g, dtype=F64) - 0.5) * 0.018,
                        (torch.rand(n_in, 1, generator=g, dtype=F64) - 0.5) * 0.0018], dim=1)
    outside = torch.tensor([[0.02, 0.0, 0.0], [0.0, 0.0, 0.01], [0.0, -0.03, 0.0]], dtype=F64)[:n_out]
    p_sensor = torch.cat([inside, outside])
    T_link = T(RZ90, (0.3, -0.2, 0.5))
    T_s = T(RX180, (0.0, 0.01, 0.02))
    Tw = T_link @ T_s
    p_world = p_sensor @ Tw[:3, :3].T + Tw[:3, 3]
    f = torch.randn(len(p_sensor), 3, generator=g, dtype=F64)
    split = 3
    contacts = {("link", "obj"): ContactState(p_world[:split].to(dtype), f[:split].to(dtype)),
                ("link", "other"): ContactState(p_world[split:].to(dtype), f[split:].to(dtype))}
    st = SimState({"link": T_link.to(dtype), "obj": T(dtype=dtype), "other": T(dtype=dtype)}, {}, contacts)
    return st, T_s.numpy(), n_in


def autograd_jacobian(sensor, st):
    pairs = sensor.contact_bodies(st)
    forces = [st.contacts[p].forces.clone().requires_grad_(True) for p in pairs]
    contacts = dict(st.contacts)
    for p, f in zip(pairs, forces):
        contacts[p] = ContactState(st.contacts[p].points, f)
    st2 = SimState(st.body_transforms, st.body_states, contacts)
    y = sensor.predict_torch(st2)
    rows = []
    for i in range(len(y)):
        grads = torch.autograd.grad(y[i], forces, retain_graph=True, allow_unused=True)
        rows.append([torch.zeros_like(f) if gr is None else gr for gr, f in zip(grads, forces)])
    return {p: torch.stack([rows[i][j] for i in range(len(y))]) for j, p in enumerate(pairs)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jacobian_matches_autograd_and_sparse_form(dtype):
    for seed in range(3):
        st, Ts, n_in = random_state(dtype, seed)
        s = square_patch_sensor(Tsensor=Ts, falloffCoefficient=1.5, fResolution=(0.0, 0.05, 0.0))
        J = s.measurement_force_jacobian(st)
        A = autograd_jacobian(s, st)
        assert list(J) == s.contact_bodies(st)
        for p in J:
            assert J[p].dtype == dtype and J[p].shape == (4, len(st.contacts[p]), 3)
            torch.testing.assert_close(J[p], A[p])
        sp = s.sparse_force_jacobian(st)
        assert sp.shape == (4, 3 * 7) and sp.pairs == list(J) and sp.offsets == [0, 3, 7]
        assert bool((sp.values != 0).all())
        dense = torch.cat([J[p].reshape(4, -1) for p in J], dim=1)
        torch.testing.assert_close(sp.to_dense(), dense)


def test_jacobian_matches_finite_differences_float64():
    st, Ts, n_in = random_state(F64, 11)
    s = square_patch_sensor(Tsensor=Ts, falloffCoefficient=2.0)
    J = s.sparse_force_jacobian(st).to_dense()
    pairs = s.contact_bodies(st)
    base = torch.cat([st.contacts[p].forces for p in pairs])
    h = 1e-6
    fd = torch.zeros_like(J)
    for col in range(base.numel()):
        for sign in (1.0, -1.0):
            f = base.clone().reshape(-1)
            f[col] += sign * h
            f = f.reshape(-1, 3)
            contacts, o = {}, 0
            for p in pairs:
                n = len(st.contacts[p])
                contacts[p] = ContactState(st.contacts[p].points, f[o:o + n])
                o += n
            y = s.predict(SimState(st.body_transforms, {}, contacts))
            fd[:, col] += sign * y / (2 * h)
    fd[0] = 0.0   # the contact indicator is a step: its derivative is defined as zero
    torch.testing.assert_close(J, fd, atol=1e-7, rtol=1e-6)
    # outside contacts (the last three) have all-zero columns
    assert bool((J[:, 3 * n_in:] == 0).all())


def test_jacobian_rows_by_hand_with_rotation_saturation_and_quantisation():
    # Sensor frame = link Rz(90): f_s = R^T f_w, so d force_x/d f_w = column 0 of R = (0,1,0),
    # d force_y/d f_w = column 1 = (-1,0,0), d force_z/d f_w = (0,0,1).
    # falloff 1 at sensor point (0.005,0.005): w = 1 - 4*0.005*0.005/4e-4 = 0.75.
    # y saturates (|f_y| = 3 > 1): zero row. Quantised x is straight-through: slope w.
    s = square_patch_sensor(falloffCoefficient=1.0, fSaturation=(math.inf, 1.0, math.inf),
                            fResolution=(0.5, 0.0, 0.0))
    # sensor point (0.005,0.005,0) -> world (-0.005,0.005,0); world force (-4,0,-2) -> sensor (0,4,-2)
    st = state_with([[-0.005, 0.005, 0.0]], [[-4.0, 0.0, -2.0]], T_link=T(RZ90))
    assert s.predict(st).tolist() == pytest.approx([1.0, 0.0, 1.0, -1.5])
    J = s.measurement_force_jacobian(st)[("link", "obj")]
    expected = torch.tensor([[[0.0, 0.0, 0.0]],
                             [[0.0, 0.75, 0.0]],
                             [[0.0, 0.0, 0.0]],
                             [[0.0, 0.0, 0.75]]], dtype=F64)
    torch.testing.assert_close(J, expected, atol=1e-15, rtol=0)
    sp = s.sparse_force_jacobian(st)
    assert sorted(zip(sp.rows.tolist(), sp.cols.tolist())) == [(1, 1), (3, 2)]


def test_jacobian_rows_follow_hasForce():
    s = square_patch_sensor(hasForce=(False, False, True))
    J = s.measurement_force_jacobian(state_with([[0, 0, 0]], [[0, 0, -1.0]]))[("link", "obj")]
    assert J.shape == (2, 1, 3)
    assert J.tolist() == [[[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]]]


# --------------------------------------------------------------------------- against Klampt's simulator
PAD_URDF = """<?xml version="1.0"?>
<robot name="pad">
  <link name="world"/>
  <joint name="fix" type="fixed"><parent link="world"/><child link="base"/><origin xyz="0 0 0"/></joint>
  <link name="base">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="weld" type="fixed"><parent link="base"/><child link="pad"/><origin xyz="0 0 0"/></joint>
  <link name="pad">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><origin xyz="0 0 -0.05"/><geometry><box size="0.4 0.4 0.1"/></geometry></collision>
  </link>
</robot>
"""


def test_agrees_with_klampts_own_sensor_for_a_block_resting_on_a_pad(tmp_path):
    # A 1 kg block rests on a fixed pad in Klampt's ODE simulator.  Klampt's own ContactSensor
    # (patch 0.4 m square, tolerance 1 cm) reads force_z ~ -9.75 N: the weight pushes the link down.
    # Our model, given the simulator's contact points and the forces *on the link*
    # (sim.getContactForces(block, link)), must agree with it.
    klampt = pytest.importorskip("klampt")
    from klampt.model.create import primitives
    urdf = tmp_path / "pad.urdf"
    urdf.write_text(PAD_URDF)
    w = klampt.WorldModel()
    assert w.loadElement(str(urdf)) >= 0
    robot = w.robot(0)
    block = w.makeRigidObject("block")
    block.geometry().set(primitives.box(0.1, 0.1, 0.1, center=(0, 0, 0)))
    mass = block.getMass()
    mass.setMass(1.0)
    block.setMass(mass)
    block.setTransform([1, 0, 0, 0, 1, 0, 0, 0, 1], [0.03, -0.02, 0.06])
    sim = klampt.Simulator(w)
    sim.setGravity([0, 0, -9.8])
    ctrl = sim.controller(0)
    settings = {"link": str(robot.link("pad").getIndex()), "patchMin": "-0.2 -0.2", "patchMax": "0.2 0.2",
                "patchTolerance": "0.01", "hasForce": "1 1 1 "}
    ks = ctrl.addSensor("cs", "ContactSensor")
    for k, v in settings.items():
        ks.setSetting(k, v)
    ours = ContactSensor("cs", "pad")
    for k, v in settings.items():
        if k != "link":             # Klampt's setting is the link index
            ours.setSetting(k, v)
    lid, bid = robot.link("pad").getID(), block.getID()
    sim.enableContactFeedback(lid, bid)
    ours_z, klampt_z = [], []
    for step in range(300):
        sim.simulate(0.01)
        if step < 150:
            continue
        pts = np.array(sim.getContacts(lid, bid)).reshape(-1, 7)[:, :3]
        on_link = np.array(sim.getContactForces(bid, lid)).reshape(-1, 3)
        R, t = robot.link("pad").getTransform()
        T_pad = np.eye(4)
        T_pad[:3, :3] = np.array(R).reshape(3, 3).T      # Klampt so3 lists are column-major
        T_pad[:3, 3] = t
        st = SimState({"pad": torch.tensor(T_pad), "block": torch.eye(4, dtype=F64)}, {},
                      {("pad", "block"): ContactState(torch.tensor(pts), torch.tensor(on_link))})
        y = ours.predict(st)
        k = ctrl.sensor("cs").getMeasurements()
        assert y[0].item() == k[0] == 1.0
        ours_z.append(y[3].item())
        klampt_z.append(k[3])
    # ODE contacts chatter, so single steps differ by up to ~2 N between the two samplings; over
    # 150 steps the support force of a resting block averages to its weight m*g in both.
    assert len(ours_z) == 150
    assert np.mean(ours_z) == pytest.approx(np.mean(klampt_z), abs=0.05)
    assert np.mean(ours_z) == pytest.approx(-9.8, abs=0.1)


# --------------------------------------------------------------------------- tare calibration
def test_uncalibrated_sensor_reports_an_empty_calibration():
    assert square_patch_sensor().get_calibration() == {}


def test_tare_offset_is_added_to_the_force_entries_only():
    # tare − tare_sim_avg = [1-0, 0.5-0.25, -0.25-0, 2-1] -> force offset (0.25, -0.25, 1); contact keeps 0.
    s = square_patch_sensor()
    s.set_calibration({"tare": [1.0, 0.5, -0.25, 2.0], "tare_sim_avg": [0.0, 0.25, 0.0, 1.0]})
    free = state_with(np.zeros((0, 3)), np.zeros((0, 3)))
    assert s.predict(free).tolist() == [0.0, 0.25, -0.25, 1.0]
    # one centre contact pushing -3 N on z (sensor frame = link frame): raw (1, 0, 0, -3) + offset
    pressed = state_with([[0.0, 0.0, 0.0]], [[0.0, 0.0, -3.0]])
    assert s.predict(pressed).tolist() == [1.0, 0.25, -0.25, -2.0]
    cal = s.get_calibration()
    assert sorted(cal) == ["tare", "tare_sim_avg"] and cal["tare"].tolist() == [1.0, 0.5, -0.25, 2.0]
    assert s.calibration_offset().tolist() == [0.0, 0.25, -0.25, 1.0]


def test_tare_offset_comes_after_saturation_and_quantisation_and_does_not_touch_contact():
    # Raw F_z = -2.37 N; resolution 0.5 -> -2.5; saturation 2 -> -2; then + offset 0.1 -> -1.9.
    # fSensitivity 2.4: |F_z| = 2.37 is below it, so contact = 0 despite the offset.
    s = square_patch_sensor(fResolution=(0.0, 0.0, 0.5), fSaturation=(math.inf, math.inf, 2.0),
                            fSensitivity=2.4, hasForce=(False, False, True))
    s.set_calibration({"tare": [0.7, 0.1]})                 # no tare_sim_avg: offset = tare
    y = s.predict(state_with([[0.0, 0.0, 0.0]], [[0.0, 0.0, -2.37]]))
    assert y.tolist() == pytest.approx([0.0, -1.9], abs=1e-12)


def test_tare_offset_leaves_the_jacobian_equal_to_autograd():
    st, Ts, _ = random_state(F64, 5)
    s = square_patch_sensor(Tsensor=Ts)
    J0 = s.measurement_force_jacobian(st)
    s.set_calibration({"tare": [0.0, 1.0, 2.0, 3.0], "tare_sim_avg": [0.0, 0.5, 0.5, 0.5]})
    J = s.measurement_force_jacobian(st)
    A = autograd_jacobian(s, st)
    for p in J:
        torch.testing.assert_close(J[p], J0[p])
        torch.testing.assert_close(J[p], A[p])


@pytest.mark.parametrize("bad", [{"tare": [1.0, 2.0]},                       # wrong length (4 entries)
                                 {"tare": [0.0, 1.0, float("nan"), 0.0]},     # non-finite
                                 {"tare_sim_avg": [0.0] * 4},                 # average without tare
                                 {"offset": [0.0] * 4},                       # unknown key
                                 [0.0] * 4])                                  # not a dict
def test_bad_calibration_raises_and_keeps_the_previous_one(bad):
    s = square_patch_sensor()
    s.set_calibration({"tare": [0.0, 0.1, 0.2, 0.3]})
    with pytest.raises(ValueError):
        s.set_calibration(bad)
    assert s.get_calibration()["tare"].tolist() == [0.0, 0.1, 0.2, 0.3]
    assert set(s.get_calibration()) == {"tare"}


def test_empty_calibration_clears_the_offset():
    s = square_patch_sensor()
    s.set_calibration({"tare": [0.0, 1.0, 1.0, 1.0]})
    s.set_calibration({})
    assert s.get_calibration() == {} and s.calibration_offset() is None
    assert s.predict(state_with(np.zeros((0, 3)), np.zeros((0, 3)))).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_a_hasForce_change_drops_the_calibration_other_settings_keep_it():
    s = square_patch_sensor()
    s.set_calibration({"tare": [0.0, 1.0, 1.0, 1.0]})
    s.fSaturation = (5.0, 5.0, 5.0)                 # same layout: kept
    assert s.get_calibration()["tare"].tolist() == [0.0, 1.0, 1.0, 1.0]
    s.hasForce = (False, False, True)               # 2 entries now: the 4-entry tare no longer lines up
    assert s.get_calibration() == {}
    assert s.predict(state_with(np.zeros((0, 3)), np.zeros((0, 3)))).tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- contact for a tare
def test_in_contact_counts_only_contacts_inside_the_patch_whatever_their_force():
    s = square_patch_sensor(fSensitivity=5.0)
    # (0.02, 0, 0) is outside the 2 x 2 cm patch; (0, 0, 0.01) is beyond the 1 mm tolerance
    outside = state_with([[0.02, 0.0, 0.0], [0.0, 0.0, 0.01]], [[0.0, 0.0, -9.0], [0.0, 0.0, -9.0]])
    assert s.in_contact(outside) is False
    # a 0.1 N contact on the patch edge: below fSensitivity (contact reads 0) but touching the pad
    light = state_with([[0.01, 0.0, 0.0]], [[0.0, 0.0, -0.1]])
    assert s.predict(light)[0].item() == 0.0 and s.in_contact(light) is True
    # no pair at all on the link, and a pair acting on another body only
    assert s.in_contact(state_with(np.zeros((0, 3)), np.zeros((0, 3)))) is False
    with pytest.raises(ValueError):
        ContactSensor("cs", "nolink").in_contact(light)


def _bad_transforms():
    nan = torch.eye(4, dtype=F64)
    nan[0, 3] = math.nan
    scaled = torch.eye(4, dtype=F64)
    scaled[:3, :3] *= 2.0
    return [nan, torch.eye(3, dtype=F64), scaled]


@pytest.mark.parametrize("which", range(3))
def test_bad_link_transform_is_rejected_by_every_output(which):
    """The messages: test_base_sensor's transform checks (the one check every sensor uses)."""
    T_bad = _bad_transforms()[which]
    s = square_patch_sensor()
    st = state_with([[0.0, 0.0, 0.0]], [[0.0, 0.0, -1.0]], T_link=T_bad)
    for call in (s.predict, s.predict_torch, s.in_contact, s.sparse_force_jacobian,
                 s.measurement_force_jacobian, s.sensor_transform):
        with pytest.raises(ValueError):
            call(st)


@pytest.mark.parametrize("model", [None, "link", 3])
def test_attach_without_a_named_model_is_a_value_error_and_keeps_the_link(model):
    s = square_patch_sensor()
    with pytest.raises(InputError) as err:
        s.attach(model)
    assert (err.value.argument, err.value.value, err.value.reason) == ("model", model, "no_getName")
    assert s.link == "link"

    class Link:
        def getName(self):
            return "wrist"
    s.attach(Link())
    assert s.link == "wrist"


@pytest.mark.parametrize("value", ["\u0661 0", "0 \u0968", "\uff11 0", "1\u00b2 0"])
def test_setting_numbers_must_be_ascii_digits(value):
    # Arabic-Indic one, Devanagari two, full-width one, superscript two: Python's float()
    # reads the first three as digits; a Klampt (C++ stream) setting string would not
    s = square_patch_sensor(patchMin=(-0.01, -0.01), patchMax=(5.0, 5.0))
    before = s.settings()
    bad = value.split()[0] if not value.split()[0].isascii() else value.split()[1]
    with pytest.raises(SettingError) as err:
        s.setSetting("patchMin", value)
    assert (err.value.setting, err.value.value) == ("patchMin", value)
    assert err.value.reason == f"{bad!r} is not a number"       # the one character at fault
    assert s.settings() == before
    s.setSetting("patchMin", "1 0")                  # the ASCII spelling is accepted
    assert s.patchMin == (1.0, 0.0)


@pytest.mark.parametrize("name, value, reason", [
    ("fSaturation", "nan 1 2", "NaN"),
    ("falloffCoefficient", "-1", "must be finite and >= 0"),
    ("patchMin", "0.02 0", "patchMin (0.02, 0.0) exceeds patchMax (0.01, 0.01) on axis x"),
])
def test_a_rejected_setting_string_gives_one_message_naming_setting_and_string(name, value, reason):
    s = square_patch_sensor()
    with pytest.raises(ValueError) as err:
        s.setSetting(name, value)
    assert str(err.value) == f"ContactSensor setting {name!r}: value {value!r} rejected: {reason}"
