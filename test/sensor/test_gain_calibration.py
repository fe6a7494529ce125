"""GainCalibrator: least-squares gain on the contact term, on top of the tare (hand-derived cases).

The sensor is a Punyo pressure sensor on a 0.1 m x 0.1 m flat square (A_base = 0.01 m^2, base
normal +z, body at the world origin): a contact force (0, 0, -F) on the body raises the raw model
by F / A = 100 F Pa.
"""
import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import (ContactState, GainCalibrator, PunyoDenseForceSensor, PunyoPressureSensor,
                                   SimState)
from vsf_sensor_ros.sensor.errors import InputError, SettingError

SQ_V = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.1, 0.1, 0.0], [0.0, 0.1, 0.0]])
SQ_F = np.array([[0, 1, 2], [0, 2, 3]])
TARE = 1000.0


def state(fz):
    """Body 'punyo' at the origin; one contact pushing with (0, 0, fz) N, none when fz is None."""
    T = {"punyo": torch.eye(4, dtype=torch.float64), "finger": torch.eye(4, dtype=torch.float64)}
    if fz is None:
        return SimState(T, {}, {})
    c = ContactState(torch.tensor([[0.05, 0.05, 0.0]], dtype=torch.float64),
                     torch.tensor([[0.0, 0.0, fz]], dtype=torch.float64))
    return SimState(T, {}, {("punyo", "finger"): c})


def tared_sensor():
    s = PunyoPressureSensor("p", "punyo")
    s.attach((SQ_V, SQ_F))
    s.set_calibration({"tare": [TARE]})
    return s


def test_recovers_a_known_gain_from_synthetic_pairs():
    s = tared_sensor()
    forces = [float(f) for f in range(1, 13)]            # 1..12 N pressing into the base (-z)
    states = [state(None)] * 5 + [state(-f) for f in forces]
    # The real bubble shows 0.8 of the model's 100 F Pa, on top of the 1000 Pa offset.
    obs = [TARE + 3.0] * 5 + [TARE + 0.8 * 100.0 * f for f in forces]
    cal = GainCalibrator(min_samples=10)
    used = cal.fit(s, states, obs)
    assert used == 12                                      # contact samples only
    assert s.get_calibration()["gain"] == pytest.approx([0.8], rel=1e-12)
    assert s.get_calibration()["tare"] == pytest.approx([TARE])        # tare untouched
    # The sensor applies it: 1000 + 0.8 * 100 * 5 = 1400 Pa; Jacobian -(0.8 / 0.01) n = (0, 0, -80).
    assert float(s.predict(state(-5.0))[0]) == pytest.approx(1400.0, rel=1e-12)
    J = s.measurement_force_jacobian(state(-5.0))[("punyo", "finger")]
    assert J[0, 0].tolist() == pytest.approx([0.0, 0.0, -80.0])
    assert cal.last_fit.rms_after == pytest.approx(0.0, abs=1e-9)
    # before: residual 0.2 * 100 F, RMS over F = 1..12 -> 20 * sqrt(mean(F^2)) = 20 * sqrt(650 / 12)
    assert cal.last_fit.rms_before == pytest.approx(20.0 * np.sqrt(650.0 / 12.0), rel=1e-12)


def test_least_squares_with_noise_matches_the_closed_form():
    s = tared_sensor()
    forces = np.array([2.0, 4.0, 6.0, 8.0])
    noise = np.array([5.0, -5.0, 5.0, -5.0])
    obs = TARE + 50.0 * forces + noise                      # true gain 0.5, x = 100 F
    cal = GainCalibrator(min_samples=4)
    cal.fit(s, [state(-f) for f in forces], [{"p": o} for o in obs])
    x = 100.0 * forces
    # k = sum x (y - tare) / sum x^2 = (sum 5000 F^2 + sum 100 F noise) / (10^4 sum F^2)
    k = (5000.0 * 120.0 + 100.0 * (10 - 20 + 30 - 40)) / (1e4 * 120.0)
    assert s.get_calibration()["gain"][0] == pytest.approx(k, rel=1e-12)
    assert np.allclose(k, (x @ (obs - TARE)) / (x @ x))


def test_refuses_with_too_few_contact_samples_and_keeps_the_calibration():
    s = tared_sensor()
    states = [state(None)] * 10 + [state(-1.0)] * 5
    obs = [TARE] * 10 + [TARE + 80.0] * 5
    with pytest.raises(InputError) as err:
        GainCalibrator(min_samples=10).fit(s, states, obs)
    assert (err.value.argument, err.value.value, err.value.reason) == ("states", 5, "too_few_contacts")
    assert err.value.expected == 10
    assert set(s.get_calibration()) == {"tare"}
    assert float(s.predict(state(-1.0))[0]) == pytest.approx(TARE + 100.0)


def test_refuses_an_ill_conditioned_fit():
    s = tared_sensor()
    forces = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # the measured change ignores the load: alternating +-300 Pa around the tare
    obs = [TARE + (300.0 if i % 2 else -300.0) + 1.0 for i in range(len(forces))]
    with pytest.raises(ValueError):
        GainCalibrator(min_samples=4).fit(s, [state(-f) for f in forces], obs)
    obs = [TARE + 100.0 * f * 0.5 + (120.0 if i % 2 else -120.0) for i, f in enumerate(forces)]
    with pytest.raises(ValueError):
        GainCalibrator(min_samples=4, max_relative_error=0.05).fit(s, [state(-f) for f in forces], obs)
    assert s.get_calibration() == {"tare": pytest.approx(np.array([TARE]))}


def test_compatibility_and_bad_gain_values():
    assert GainCalibrator().compatible(tared_sensor())
    assert GainCalibrator().compatible(PunyoDenseForceSensor("f", "punyo"))
    s = tared_sensor()
    with pytest.raises(ValueError):
        s.set_calibration({"tare": [0.0], "gain": [0.0]})
    with pytest.raises(SettingError) as err:
        GainCalibrator(min_samples=1)
    assert (err.value.setting, err.value.value) == ("min_samples", 1)


def test_a_re_tare_keeps_the_gain():
    from vsf_sensor_ros.sensor import TareCalibrator

    class Replay:
        """Steps through recorded contact-free states; measurements are the sensor's own."""

        def __init__(self, states, sensor):
            self.states, self.sensor, self.i = states, sensor, -1

        def step(self, command, dt):
            self.i += 1

        def state(self):
            return self.states[self.i]

        def measurements(self):
            return {"p": self.sensor.predict(self.states[self.i])}

    s = tared_sensor()
    s.set_calibration({"tare": [TARE], "gain": [0.8]})
    obs = [{"p": 1010.0}, {"p": 1012.0}, {"p": 1014.0}]
    used = TareCalibrator(num_samples=3).calibrate(s, Replay([state(None)] * 3, s), [None] * 3, obs)
    assert used == 3
    cal = s.get_calibration()
    assert cal["tare"] == pytest.approx([1012.0]) and cal["gain"] == pytest.approx([0.8])
    assert float(s.predict(state(-1.0))[0]) == pytest.approx(1012.0 + 80.0)


def test_dense_force_gain_shared_and_per_entry():
    # Per-vertex contacts (elems1) on the square: vertex 1 gets (0, 0, -F) -> entries p1_z = -F.
    def vstate(f1, f2):
        c = ContactState(torch.tensor([[0.1, 0.0, 0.0], [0.1, 0.1, 0.0]], dtype=torch.float64),
                         torch.tensor([[0.0, 0.0, -f1], [0.0, 0.0, -f2]], dtype=torch.float64),
                         elems1=torch.tensor([1, 2]))
        eye = torch.eye(4, dtype=torch.float64)
        return SimState({"punyo": eye, "finger": eye}, {}, {("punyo", "finger"): c})

    def obs(f1, f2, g1, g2):                        # the real field: vertex 1 at gain g1, vertex 2 at g2
        o = np.zeros(12)
        o[5], o[8] = -g1 * f1, -g2 * f2            # p1_z = 3*1+2, p2_z = 3*2+2
        return o

    loads = [(1.0, 2.0), (2.0, 1.0), (3.0, 3.0), (4.0, 2.0)]
    s = PunyoDenseForceSensor("f", "punyo")
    s.attach((SQ_V, SQ_F))
    assert GainCalibrator().compatible(s)
    states = [vstate(a, b) for a, b in loads]
    # shared gain, both vertices at 0.5: k = 0.5 on every entry
    GainCalibrator(min_samples=4).fit(s, states, [obs(a, b, 0.5, 0.5) for a, b in loads])
    assert s.get_calibration()["gain"] == pytest.approx(np.full(12, 0.5))
    # per entry, vertex 1 at 0.5 and vertex 2 at 0.9; unexcited entries keep their previous gain
    per_entry = GainCalibrator(min_samples=4, per_measurement=True)
    per_entry.fit(s, states, [obs(a, b, 0.5, 0.9) for a, b in loads])
    g = s.get_calibration()["gain"]
    assert g[5] == pytest.approx(0.5) and g[8] == pytest.approx(0.9)
    assert np.delete(g, [5, 8]) == pytest.approx(np.full(10, 0.5))        # from the shared fit
    s.set_calibration({})
    per_entry.fit(s, states, [obs(a, b, 0.5, 0.9) for a, b in loads])
    assert np.delete(s.get_calibration()["gain"], [5, 8]) == pytest.approx(np.ones(10))   # default 1
    assert s.predict(vstate(2.0, 2.0)).numpy()[[5, 8]] == pytest.approx([-1.0, -1.8])
    J = s.sparse_force_jacobian(vstate(2.0, 2.0)).to_dense().numpy()
    assert J[5, 2] == pytest.approx(0.5) and J[8, 5] == pytest.approx(0.9)   # d p1_z/d f1_z, d p2_z/d f2_z
    assert s.predict_torch(vstate(2.0, 2.0)).detach().numpy()[[5, 8]] == pytest.approx([-1.0, -1.8])
