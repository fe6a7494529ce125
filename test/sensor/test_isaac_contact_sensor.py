"""Isaac-Sim-style contact (load) sensor: expected numbers are derived by hand in each test.

Seed (Isaac Sim contact sensor extension, ``ContactSensor::processRawContacts``): value =
min(|Σ f_c|, maxThreshold) over the contacts strictly closer than ``radius`` to the sensor position
(radius <= 0: whole body); a value below ``minThreshold`` reads (inContact False, value 0).
"""
import math

import pytest
import torch

from vsf_sensor_ros.sensor import (ContactSensorInterface, ContactState, CsProperties, CsSensorReading,
                                   IsaacContactSensor, SimState)
from vsf_sensor_ros.sensor.base_sensor import BaseSensor
from vsf_sensor_ros.sensor.errors import InputError, SettingError

F64 = torch.float64
RZ90 = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


def T(R=None, t=(0.0, 0.0, 0.0), dtype=F64):
    out = torch.eye(4, dtype=dtype)
    if R is not None:
        out[:3, :3] = torch.tensor(R, dtype=dtype)
    out[:3, 3] = torch.tensor(t, dtype=dtype)
    return out


def state_with(points, forces, T_body=None, dtype=F64, extra=None):
    contacts = {}
    if len(points):
        contacts[("body", "obj")] = ContactState(torch.tensor(points, dtype=dtype).reshape(-1, 3),
                                                 torch.tensor(forces, dtype=dtype).reshape(-1, 3))
    if extra:
        contacts.update(extra)
    return SimState({"body": (T_body if T_body is not None else T(dtype=dtype)).to(dtype),
                     "obj": T(dtype=dtype), "other": T(dtype=dtype)}, {}, contacts)


def force_state(f):
    """One contact at the body origin with force f (N)."""
    return state_with([[0.0, 0.0, 0.0]], [list(f)])


def sensor(**props):
    return IsaacContactSensor("load", "body", CsProperties(**props))


# --------------------------------------------------------------------------- value, thresholds
def test_defaults_and_names():
    p = CsProperties()
    assert (p.radius, p.minThreshold, p.maxThreshold, p.sensorPeriod, tuple(p.position)) == \
        (-1.0, 0.0, math.inf, 0.0, (0.0, 0.0, 0.0))
    s = IsaacContactSensor("load", "body")
    assert s.measurement_names() == ["in_contact", "value"]
    assert s.type_name == "IsaacContactSensor" and s.attachModelName == "body"
    assert s.get_sensor_reading() == CsSensorReading(time=0.0, value=0.0, inContact=False, isValid=False)


def test_value_is_the_magnitude_of_the_net_force_not_the_sum_of_magnitudes():
    # (3,4,0) + (0,0,12) = (3,4,12): |.| = 13
    st = state_with([[0, 0, 0], [0.01, 0, 0]], [[3.0, 4.0, 0.0], [0.0, 0.0, 12.0]])
    assert sensor().predict(st).tolist() == [1.0, 13.0]
    # opposing forces cancel: net 0; with minThreshold 0 the body is still "in contact" (0 >= 0)
    st0 = state_with([[0, 0, 0], [0.01, 0, 0]], [[0.0, 0.0, 5.0], [0.0, 0.0, -5.0]])
    assert sensor().predict(st0).tolist() == [1.0, 0.0]
    assert sensor(minThreshold=0.5).predict(st0).tolist() == [0.0, 0.0]


def test_forces_of_all_pairs_on_the_body_are_summed_and_reverse_pairs_ignored():
    extra = {("body", "other"): ContactState(torch.zeros(1, 3, dtype=F64),
                                             torch.tensor([[0.0, 4.0, 0.0]], dtype=F64)),
             ("obj", "body"): ContactState(torch.zeros(1, 3, dtype=F64),
                                           torch.tensor([[100.0, 0.0, 0.0]], dtype=F64))}
    st = state_with([[0, 0, 0]], [[3.0, 0.0, 0.0]], extra=extra)
    assert sensor().predict(st).tolist() == [1.0, 5.0]


def test_min_threshold_is_inclusive_and_max_threshold_clamps():
    s = sensor(minThreshold=2.0, maxThreshold=10.0)
    assert s.predict(force_state((0.0, 0.0, 1.5))).tolist() == [0.0, 0.0]
    assert s.predict(force_state((0.0, 0.0, 2.0))).tolist() == [1.0, 2.0]
    assert s.predict(force_state((0.0, 5.0, 12.0))).tolist() == [1.0, 10.0]   # |(0,5,12)| = 13


def test_no_contacts_reads_not_in_contact():
    st = state_with([], [])
    assert sensor().predict(st).tolist() == [0.0, 0.0]
    assert sensor().measurement_force_jacobian(st) == {}


# --------------------------------------------------------------------------- radius
def test_contact_exactly_on_the_radius_is_outside():
    # body at (1,2,3), sensor 0.5 m along body x -> world (1.5,2,3), radius 0.5.
    # (2,2,3) is exactly 0.5 m away: excluded (seed compares distance < radius).
    # (1.75,2,3) is 0.25 m away: included.
    s = sensor(radius=0.5, position=(0.5, 0.0, 0.0))
    st = state_with([[2.0, 2.0, 3.0], [1.75, 2.0, 3.0]], [[0.0, 0.0, -4.0], [0.0, 3.0, 0.0]],
                    T_body=T(None, (1.0, 2.0, 3.0)))
    assert s.predict(st).tolist() == [1.0, 3.0]
    only_boundary = state_with([[2.0, 2.0, 3.0]], [[0.0, 0.0, -4.0]], T_body=T(None, (1.0, 2.0, 3.0)))
    assert s.predict(only_boundary).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("radius", [-1.0, 0.0])
def test_non_positive_radius_covers_the_whole_body(radius):
    s = sensor(radius=radius, position=(0.5, 0.0, 0.0))
    st = state_with([[2.0, 2.0, 3.0], [-7.0, 0.0, 0.0]], [[0.0, 0.0, -4.0], [0.0, 3.0, 0.0]],
                    T_body=T(None, (1.0, 2.0, 3.0)))
    assert s.predict(st).tolist() == [1.0, 5.0]


def test_position_is_an_offset_in_the_rotated_body_frame():
    # body Rz(90) at (1,0,0); offset (0.2,0,0) in the body frame -> world (1,0.2,0).
    # A at (1,0.21,0): 0.01 m away, inside radius 0.02. B at (1.2,0,0) (where an unrotated
    # offset would be): |(0.2,-0.2,0)| = 0.283 m away, outside.
    s = sensor(radius=0.02, position=(0.2, 0.0, 0.0))
    st = state_with([[1.0, 0.21, 0.0], [1.2, 0.0, 0.0]], [[0.0, 0.0, 2.0], [0.0, 0.0, 50.0]],
                    T_body=T(RZ90, (1.0, 0.0, 0.0)))
    assert s.predict(st).tolist() == pytest.approx([1.0, 2.0], abs=1e-12)


# --------------------------------------------------------------------------- period, buffer
def test_sensor_period_samples_and_buffer_semantics():
    # period 0.1 s, updates at uneven times; a sample at nominal time k*0.1 takes the evaluation
    # (previous update or this one) closer in time to it, stamped with the nominal time.
    s = sensor(sensorPeriod=0.1)
    steps = [(0.00, None, False),          # first update: sample at 0.0 (no contact)
             (0.04, (3, 4, 0), False),     # no sample
             (0.08, (0, 0, 5), False),     # no sample
             (0.11, (0, 0, 7), True),      # crosses 0.1: |0.11-0.1| < |0.08-0.1| -> this one (7)
             (0.15, None, False),          # contact gone: no sample
             (0.19, (0, 2, 0), False),     # no sample
             (0.23, (0, 0, 9), True)]      # crosses 0.2: |0.19-0.2| < |0.23-0.2| -> previous (2)
    produced = []
    for t, f, expect_sample in steps:
        st = state_with([], []) if f is None else force_state(tuple(float(v) for v in f))
        sample = s.update(st, t)
        assert (sample is not None) == (expect_sample or t == 0.0), t
        produced.append(sample)
        if t == 0.15:
            # the current reading follows the latest update (contact ended -> not in contact) ...
            assert s.get_sensor_reading() == CsSensorReading(0.15, 0.0, False, True)
            # ... while the period-sampled reading holds the last sample, as a real 10 Hz sensor would
            assert s.get_sensor_reading(use_latest_data=False) == CsSensorReading(0.1, 7.0, True, True)
    expected = [CsSensorReading(0.0, 0.0, False, True), CsSensorReading(0.1, 7.0, True, True),
                CsSensorReading(0.2, 2.0, True, True)]
    assert [p for p in produced if p is not None] == expected
    assert s.get_sensor_readings() == expected
    assert s.get_sensor_readings() == []                     # reading the buffer clears it
    assert s.get_sensor_reading() == CsSensorReading(0.23, 9.0, True, True)   # not cleared


def test_zero_period_samples_every_update():
    s = sensor(sensorPeriod=0.0)
    for t, fz in [(0.0, 1.0), (0.001, 2.0), (0.001, 3.0)]:
        s.update(force_state((0.0, 0.0, fz)), t)
    assert [(r.time, r.value) for r in s.get_sensor_readings()] == [(0.0, 1.0), (0.001, 2.0), (0.001, 3.0)]


def test_steps_longer_than_the_period_sample_every_step():
    # the sensor cannot run faster than the simulator: each 0.25 s step yields one sample at its time
    s = sensor(sensorPeriod=0.1)
    for t in (0.0, 0.25, 0.5, 0.55, 0.61):
        s.update(force_state((0.0, 0.0, 1.0)), t)
    # 0.55: 0.05 s step and 0.55 < 0.5 + 0.1 -> none; 0.61 >= 0.6 -> sample stamped 0.6
    assert [r.time for r in s.get_sensor_readings()] == [0.0, 0.25, 0.5, pytest.approx(0.6)]


def test_time_going_backwards_restarts_the_sampling_clock():
    s = sensor(sensorPeriod=0.1)
    s.update(force_state((0.0, 0.0, 1.0)), 5.0)
    s.update(force_state((0.0, 0.0, 2.0)), 5.05)
    r = s.update(force_state((0.0, 0.0, 3.0)), 0.0)     # simulator reset
    assert r == CsSensorReading(0.0, 3.0, True, True)
    assert s.update(force_state((0.0, 0.0, 4.0)), 0.05) is None
    assert [x.time for x in s.get_sensor_readings()] == [5.0, 0.0]


def test_buffer_keeps_the_newest_max_buffer_readings_and_reset_clears():
    s = IsaacContactSensor("load", "body", CsProperties(), max_buffer=2)
    for t in (0.0, 0.1, 0.2):
        s.update(force_state((0.0, 0.0, 1.0)), t)
    assert [r.time for r in s.get_sensor_readings()] == [0.1, 0.2]
    s.update(force_state((0.0, 0.0, 1.0)), 0.3)
    s.reset()
    assert s.get_sensor_readings() == []
    assert s.get_sensor_reading().isValid is False


def test_update_rejects_bad_time():
    s = sensor()
    for bad in (float("nan"), float("inf"), None):
        with pytest.raises(ValueError):
            s.update(force_state((0.0, 0.0, 1.0)), bad)


def test_internal_state_round_trip():
    s = sensor(sensorPeriod=0.1)
    s.update(force_state((0.0, 0.0, 1.0)), 0.0)
    s.update(force_state((0.0, 0.0, 2.0)), 0.05)
    saved = s.get_internal_state()
    s2 = sensor(sensorPeriod=0.1)
    s2.set_internal_state(saved)
    for x in (s, s2):
        x.update(force_state((0.0, 0.0, 3.0)), 0.12)
    assert s.get_sensor_readings() == s2.get_sensor_readings()


# --------------------------------------------------------------------------- properties, config
def test_bad_properties_raise_naming_them_and_change_nothing():
    s = sensor(radius=0.1, minThreshold=1.0, maxThreshold=5.0)
    before = s.properties
    bad = [dict(maxThreshold=0.5), dict(minThreshold=-1.0), dict(sensorPeriod=-0.01),
           dict(radius=float("nan")), dict(position=(0.0, 1.0)), dict(position=(0.0, float("nan"), 0.0)),
           dict(minThreshold=float("inf")), dict(sensorPeriod=float("inf"))]
    for kw in bad:
        key = next(iter(kw))
        with pytest.raises(SettingError) as err:
            s.set_properties(CsProperties(**{**before.__dict__, **kw}))
        assert err.value.setting == key
        with pytest.raises(SettingError) as err:
            setattr(s, key, kw[key])
        assert (err.value.setting, err.value.value) == (key, kw[key])
        assert s.properties == before


def test_from_config():
    s = IsaacContactSensor.from_config("load", {"type": "IsaacContactSensor", "attachment": "body",
                                                "radius": 0.05, "minThreshold": 0.1, "maxThreshold": 100.0,
                                                "sensorPeriod": 0.01, "position": [0.0, 0.0, 0.02]})
    assert s.attachModelName == "body"
    assert s.properties == CsProperties(0.05, 0.1, 100.0, 0.01, (0.0, 0.0, 0.02))
    for cfg, key in [({"radius": 1.0}, "attachment"),
                     ({"attachment": "b", "maxThreshold": 1.0, "minThreshold": 2.0}, "maxThreshold"),
                     ({"attachment": "b", "sensorPeriod": -1.0}, "sensorPeriod"),
                     ({"attachment": "b", "radius": float("nan")}, "radius"),
                     ({"attachment": "b", "colour": 1}, "colour"),
                     ({"attachment": "b", "type": "ContactSensor"}, "type")]:
        with pytest.raises(SettingError) as err:
            IsaacContactSensor.from_config("load", cfg)
        assert err.value.setting == key
        assert err.value.value == cfg.get(key) or math.isnan(cfg.get(key))


# --------------------------------------------------------------------------- interface (registry)
def test_interface_add_list_remove_at_run_time():
    cs = ContactSensorInterface()
    h1 = cs.add_sensor_on_body("body", CsProperties(radius=-1.0))
    h2 = cs.add_sensor_on_body("body", CsProperties(radius=0.01, position=(5.0, 0.0, 0.0)))
    h3 = cs.add_sensor_on_body("obj", CsProperties())
    assert len({h1, h2, h3}) == 3
    assert cs.get_sensors_on_body("body") == [h1, h2]
    assert cs.get_num_sensors_on_body("body") == 2 and cs.get_num_sensors_on_body("nothing") == 0
    assert cs.get_sensors_on_body("nothing") == []

    st = state_with([[0.0, 0.0, 0.0]], [[0.0, 0.0, 6.0]])
    cs.update(st, 0.5)
    assert cs.get_sensor_reading(h1) == CsSensorReading(0.5, 6.0, True, True)
    assert cs.get_sensor_reading(h2) == CsSensorReading(0.5, 0.0, False, True)   # contact 5 m away
    assert cs.get_sensor_reading(h3) == CsSensorReading(0.5, 0.0, False, True)   # no (obj, *) pairs
    assert cs.get_sensor_readings(h1) == [CsSensorReading(0.5, 6.0, True, True)]
    assert cs.get_sensor_readings(h1) == []

    cs.remove_sensor(h1)
    assert cs.get_sensors_on_body("body") == [h2] and cs.get_num_sensors_on_body("body") == 1
    h4 = cs.add_sensor_on_body("body", CsProperties())
    assert h4 not in (h1, h2, h3)                       # handles are never reused
    for call in (lambda: cs.remove_sensor(h1), lambda: cs.get_sensor_reading(h1),
                 lambda: cs.get_sensor_readings(h1)):
        with pytest.raises(InputError) as err:
            call()
        assert (err.value.argument, err.value.value, err.value.reason) == ("handle", h1, "unknown_handle")
        assert err.value.expected == [h2, h3, h4]


def test_interface_rejects_bad_properties_without_adding():
    cs = ContactSensorInterface()
    with pytest.raises(SettingError) as err:
        cs.add_sensor_on_body("body", CsProperties(minThreshold=2.0, maxThreshold=1.0))
    assert err.value.setting == "maxThreshold"
    assert cs.get_num_sensors_on_body("body") == 0


def test_interface_update_with_a_body_missing_from_the_state_names_it():
    cs = ContactSensorInterface()
    cs.add_sensor_on_body("gripper", CsProperties())
    with pytest.raises(ValueError):
        cs.update(state_with([], []), 0.0)


# --------------------------------------------------------------------------- Jacobians
def test_jacobian_by_hand():
    # inside: (3,0,4) -> d|F|/dF = F/|F| = (0.6,0,0.8); outside contact: zero row block
    s = sensor(radius=0.1)
    st = state_with([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [[3.0, 0.0, 4.0], [0.0, 7.0, 0.0]])
    J = s.measurement_force_jacobian(st)[("body", "obj")]
    assert J.shape == (2, 2, 3)
    assert J.tolist() == [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
                          [[0.6, 0.0, 0.8], [0.0, 0.0, 0.0]]]
    sp = s.sparse_force_jacobian(st)
    assert sp.rows.tolist() == [1, 1] and sp.cols.tolist() == [0, 2]
    assert sp.values.tolist() == pytest.approx([0.6, 0.8])


def test_jacobian_is_zero_when_clamped_or_below_threshold_or_zero_force():
    s = sensor(minThreshold=2.0, maxThreshold=5.0)
    assert not s.measurement_force_jacobian(force_state((0.0, 6.0, 8.0)))[("body", "obj")].any()  # 10 > 5
    assert not s.measurement_force_jacobian(force_state((0.0, 1.0, 0.0)))[("body", "obj")].any()  # 1 < 2
    assert not sensor().measurement_force_jacobian(force_state((0.0, 0.0, 0.0)))[("body", "obj")].any()
    # exactly at maxThreshold the value is not clamped: slope F/|F|
    J = s.measurement_force_jacobian(force_state((3.0, 4.0, 0.0)))[("body", "obj")]
    assert J[1, 0].tolist() == pytest.approx([0.6, 0.8, 0.0])


def random_state(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    pts = (torch.rand(7, 3, generator=g, dtype=F64) - 0.5) * 0.2          # within 0.173 m of origin
    pts[5:] += torch.tensor([1.0, 0.0, 0.0], dtype=F64)                   # two far away
    f = torch.randn(7, 3, generator=g, dtype=F64) * 3
    T_body = T(RZ90, (0.1, 0.2, 0.3))
    pw = pts @ T_body[:3, :3].T + T_body[:3, 3]
    contacts = {("body", "obj"): ContactState(pw[:4].to(dtype), f[:4].to(dtype)),
                ("body", "other"): ContactState(pw[4:].to(dtype), f[4:].to(dtype))}
    return SimState({"body": T_body.to(dtype), "obj": T(dtype=dtype), "other": T(dtype=dtype)}, {}, contacts)


def autograd_jacobian(s, st):
    pairs = s.contact_bodies(st)
    forces = [st.contacts[p].forces.clone().requires_grad_(True) for p in pairs]
    contacts = {p: ContactState(st.contacts[p].points, f) for p, f in zip(pairs, forces)}
    y = s.predict_torch(SimState(st.body_transforms, {}, contacts))
    out = {p: torch.zeros(2, len(f), 3, dtype=f.dtype) for p, f in zip(pairs, forces)}
    for i in range(2):
        if not y[i].requires_grad:
            continue
        grads = torch.autograd.grad(y[i], forces, retain_graph=True, allow_unused=True)
        for p, gr in zip(pairs, grads):
            if gr is not None:
                out[p][i] = gr
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jacobian_matches_autograd_and_sparse(dtype):
    for seed in range(4):
        st = random_state(dtype, seed)
        s = sensor(radius=0.5, position=(0.0, 0.0, 0.0))
        J = s.measurement_force_jacobian(st)
        A = autograd_jacobian(s, st)
        for p in J:
            assert J[p].dtype == dtype
            torch.testing.assert_close(J[p], A[p])
        sp = s.sparse_force_jacobian(st)
        assert sp.offsets == [0, 4, 7] and sp.shape == (2, 21)
        torch.testing.assert_close(sp.to_dense(), torch.cat([J[p].reshape(2, -1) for p in J], dim=1))
        assert bool((J[("body", "other")][:, 1:] == 0).all())   # the two far contacts


def test_jacobian_matches_finite_differences_float64():
    st = random_state(F64, 9)
    s = sensor(radius=0.5)
    J = s.sparse_force_jacobian(st).to_dense()
    pairs = s.contact_bodies(st)
    base = torch.cat([st.contacts[p].forces for p in pairs]).reshape(-1)
    h = 1e-6
    fd = torch.zeros_like(J)
    for col in range(base.numel()):
        for sign in (1.0, -1.0):
            f = base.clone()
            f[col] += sign * h
            f = f.reshape(-1, 3)
            contacts = {pairs[0]: ContactState(st.contacts[pairs[0]].points, f[:4]),
                        pairs[1]: ContactState(st.contacts[pairs[1]].points, f[4:])}
            fd[:, col] += sign * s.predict(SimState(st.body_transforms, {}, contacts)) / (2 * h)
    torch.testing.assert_close(J, fd, atol=1e-7, rtol=1e-6)


def test_dtype_follows_state_and_mismatch_is_rejected():
    y = sensor().predict(state_with([[0, 0, 0]], [[0, 0, 1.0]], dtype=torch.float32))
    assert y.dtype == torch.float32
    bad = SimState({"body": T(), "obj": T()}, {},
                   {("body", "obj"): ContactState(torch.zeros(1, 3), torch.ones(1, 3))})
    with pytest.raises(ValueError):
        sensor().predict(bad)


def test_raw_data_lists_contacts_with_their_radius_membership():
    cs = ContactSensorInterface()
    h = cs.add_sensor_on_body("body", CsProperties(radius=0.1))
    extra = {("body", "other"): ContactState(torch.tensor([[0.05, 0.0, 0.0]], dtype=F64),
                                             torch.tensor([[0.0, 1.0, 0.0]], dtype=F64))}
    st = state_with([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]], [[0.0, 0.0, 2.0], [0.0, 0.0, 3.0]], extra=extra)
    raw = cs.get_contact_sensor_raw_data(h, st)
    assert raw.body0 == ["body"] * 3 and raw.body1 == ["obj", "obj", "other"]
    assert raw.in_radius.tolist() == [True, False, True]       # 0, 0.2 and 0.05 m from the origin
    assert raw.force.tolist() == [[0.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 1.0, 0.0]]
    assert raw.position[1].tolist() == [0.2, 0.0, 0.0]


# --------------------------------------------------------------------------- tare calibration
def test_uncalibrated_sensor_reports_an_empty_calibration():
    assert sensor().get_calibration() == {}


def test_tare_offset_is_added_to_value_only_even_when_not_in_contact():
    # tare − tare_sim_avg = (1 - 0, 0.3 - 0.1): value offset 0.2 N; in_contact keeps offset 0.
    s = sensor()
    s.set_calibration({"tare": [1.0, 0.3], "tare_sim_avg": [0.0, 0.1]})
    assert s.predict(state_with([], [])).tolist() == pytest.approx([0.0, 0.2])   # unloaded: the zero error
    assert s.predict(force_state((3.0, 4.0, 0.0))).tolist() == pytest.approx([1.0, 5.2])
    assert s.calibration_offset().tolist() == pytest.approx([0.0, 0.2])
    assert s.get_calibration()["tare"].tolist() == [1.0, 0.3]


def test_tare_offset_comes_after_the_clamp_and_the_min_threshold():
    # |F| = 13 N clamped to maxThreshold 10, + 0.5 -> 10.5; |F| = 1 N below minThreshold 2 -> 0 + 0.5.
    s = sensor(minThreshold=2.0, maxThreshold=10.0)
    s.set_calibration({"tare": [0.0, 0.5]})
    assert s.predict(force_state((3.0, 4.0, 12.0))).tolist() == pytest.approx([1.0, 10.5])
    assert s.predict(force_state((0.0, 1.0, 0.0))).tolist() == pytest.approx([0.0, 0.5])


def test_readings_taken_by_update_include_the_offset():
    s = sensor()
    s.set_calibration({"tare": [0.0, 0.25]})
    r = s.update(force_state((0.0, 0.0, 2.0)), 0.1)
    assert (r.value, r.inContact) == (pytest.approx(2.25), True)


def test_tare_offset_leaves_the_jacobian_equal_to_autograd():
    st = random_state(F64, 2)
    s = sensor(radius=0.5, position=(0.0, 0.0, 0.0))
    J0 = s.measurement_force_jacobian(st)
    s.set_calibration({"tare": [1.0, 3.0], "tare_sim_avg": [0.0, 1.0]})
    J, A = s.measurement_force_jacobian(st), autograd_jacobian(s, st)
    for p in J:
        torch.testing.assert_close(J[p], J0[p])
        torch.testing.assert_close(J[p], A[p])


@pytest.mark.parametrize("bad", [{"tare": [1.0]}, {"tare": [0.0, float("inf")]},
                                 {"tare_sim_avg": [0.0, 0.0]}, {"zero": [0.0, 0.0]}, "tare"])
def test_bad_calibration_raises_and_keeps_the_previous_one(bad):
    s = sensor()
    s.set_calibration({"tare": [0.0, 0.4]})
    with pytest.raises(ValueError):
        s.set_calibration(bad)
    assert s.get_calibration()["tare"].tolist() == [0.0, 0.4]
    s.set_calibration({})
    assert s.get_calibration() == {} and s.predict(state_with([], [])).tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- contact for a tare
def test_in_contact_counts_contacts_inside_the_radius_whatever_their_force():
    # Sensor 3 cm around (0, 0, 0.02) on the body (a box's top face); the table touches the bottom face
    # at z = -0.02, 4 cm away: outside, so the box resting on the table is contact-free for a tare.
    s = sensor(radius=0.03, position=(0.0, 0.0, 0.02), minThreshold=1.0)
    table = {("body", "other"): ContactState(
        torch.tensor([[0.01, 0.0, -0.02], [-0.01, 0.0, -0.02]], dtype=F64),
        torch.tensor([[0.0, 0.0, 1.5], [0.0, 0.0, 1.5]], dtype=F64))}
    resting = state_with([], [], extra=table)
    assert s.in_contact(resting) is False
    assert BaseSensor.in_contact(s, resting) is True          # the body itself is touched
    # a 0.1 N touch 1 cm from the sensor point: below minThreshold (in_contact entry 0) but inside
    touched = state_with([[0.0, 0.01, 0.02]], [[0.0, 0.0, -0.1]], extra=table)
    assert s.predict(touched)[0].item() == 0.0 and s.in_contact(touched) is True
    # whole body (radius <= 0): the table contact counts
    assert sensor(radius=-1.0).in_contact(resting) is True
    assert sensor(radius=0.0).in_contact(state_with([], [])) is False


def _bad_transforms():
    nan = T()
    nan[0, 3] = math.nan
    scaled = T()
    scaled[:3, :3] *= 2.0
    return [nan, torch.eye(3, dtype=F64), scaled]


@pytest.mark.parametrize("which", range(3))
@pytest.mark.parametrize("radius", [0.05, 0.0])
def test_bad_body_transform_is_rejected_by_every_output(which, radius):
    """The messages: test_base_sensor's transform checks (the one check every sensor uses)."""
    T_bad = _bad_transforms()[which]
    s = sensor(radius=radius)
    st = state_with([[0.0, 0.0, 0.0]], [[0.0, 0.0, -1.0]], T_body=T_bad)
    for call in (s.predict, s.predict_torch, s.in_contact, s.sparse_force_jacobian,
                 s.measurement_force_jacobian, s.get_contact_sensor_raw_data):
        with pytest.raises(ValueError):
            call(st)


def test_set_properties_accepts_a_dict_of_fields_and_defaults_the_rest():
    s = sensor(radius=0.5, minThreshold=1.0)
    s.set_properties({"radius": 0.05, "maxThreshold": 10.0})
    # all replaced: minThreshold back to its default 0, position the origin
    assert s.properties == CsProperties(radius=0.05, minThreshold=0.0, maxThreshold=10.0,
                                        sensorPeriod=0.0, position=(0.0, 0.0, 0.0))
    # 1 N at 0.04 m from the origin: inside 0.05 -> value 1 N
    assert s.predict(state_with([[0.04, 0.0, 0.0]], [[0.0, 0.0, 1.0]])).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("props, setting, value, reason", [
    ({"radius": 1.0, "colour": 2}, "colour", 2, "unknown_key"),
    ({"radius": "wide"}, "radius", "wide", None),
    ([("radius", 1.0)], "properties", [("radius", 1.0)], "type"),
    (None, "properties", None, "type"),
])
def test_set_properties_rejects_other_types_and_bad_fields_and_keeps_the_old_ones(
        props, setting, value, reason):
    s = sensor(radius=0.5)
    with pytest.raises(SettingError) as err:
        s.set_properties(props)
    assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, reason)
    assert s.properties == CsProperties(radius=0.5)
