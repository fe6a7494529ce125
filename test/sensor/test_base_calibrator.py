"""TareCalibrator: seed semantics (average until first contact), robustness, re-tare stability.

The simulator here is a small scripted one implementing the TareSimulator protocol: it
replays a list of real SimStates and predicts with the real sensor objects.
"""
import warnings

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import (ContactSensor, ContactState, CsProperties, IsaacContactSensor,
                                   PunyoDenseForceSensor, PunyoPressureSensor, SimState, TareCalibrator,
                                   TareSimulator, calibration_from_config)
from vsf_sensor_ros.sensor.errors import InputError, SettingError

SQ_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
SQ_F = np.array([[0, 1, 2], [0, 2, 3]])


def free_state():
    return SimState({"punyo": torch.eye(4, dtype=torch.float64)}, {}, {})


def contact_state(fz=-1.0):
    c = ContactState(torch.tensor([[0.5, 0.2, 0.0]], dtype=torch.float64),
                     torch.tensor([[0.0, 0.0, fz]], dtype=torch.float64))
    return SimState({"punyo": torch.eye(4, dtype=torch.float64), "finger": torch.eye(4, dtype=torch.float64)},
                    {}, {("punyo", "finger"): c})


class ScriptedSim:
    """Replays states; measurements are the sensors' own predictions."""

    def __init__(self, states, sensors):
        self.states, self.sensors, self.i, self.dts, self.commands = states, sensors, -1, [], []

    def step(self, command, dt):
        self.i += 1
        self.dts.append(dt)
        self.commands.append(command)

    def state(self):
        return self.states[self.i]

    def measurements(self):
        return {s.name: s.predict(self.state()) for s in self.sensors}


def pressure():
    s = PunyoPressureSensor("pressure", "punyo")
    s.attach((SQ_V, SQ_F))                     # A_base = 1 m^2
    return s


def test_scripted_sim_satisfies_the_protocol():
    assert isinstance(ScriptedSim([], []), TareSimulator)


def test_averages_the_first_num_samples_contact_free_observations():
    s = pressure()
    sim = ScriptedSim([free_state()] * 5, [s])
    obs = [{"pressure": np.array([100000.0 + k])} for k in range(5)]
    used = TareCalibrator(num_samples=3).calibrate(s, sim, ["c0", "c1", "c2", "c3", "c4"], obs)
    assert used == 3
    cal = s.get_calibration()
    assert cal["tare"].tolist() == [100001.0]           # (100000 + 100001 + 100002) / 3
    assert cal["tare_sim_avg"].tolist() == [0.0]        # raw model, no contact
    assert sim.dts == [0.1] * 3 and sim.commands == ["c0", "c1", "c2"]
    assert s.predict(free_state()).item() == pytest.approx(100001.0)


def test_stops_before_the_first_sample_with_contact():
    s = pressure()
    sim = ScriptedSim([free_state(), free_state(), contact_state(), free_state()], [s])
    obs = [{"pressure": [10.0]}, {"pressure": [20.0]}, {"pressure": [99.0]}, {"pressure": [99.0]}]
    assert TareCalibrator(num_samples=10).calibrate(s, sim, [None] * 4, obs) == 2
    assert s.get_calibration()["tare"].tolist() == [15.0]


def test_contact_at_the_first_sample_warns_and_uses_it():
    s = pressure()
    # contact force -2 N along -z on a 1 m^2 base: raw model reads +2 Pa
    sim = ScriptedSim([contact_state(-2.0), contact_state(-2.0)], [s])
    obs = [{"pressure": [7.0]}, {"pressure": [8.0]}]
    with pytest.warns(UserWarning):
        used = TareCalibrator().calibrate(s, sim, [None, None], obs)
    assert used == 1
    assert s.get_calibration()["tare"].tolist() == [7.0]
    assert s.get_calibration()["tare_sim_avg"].tolist() == [2.0]


def test_empty_contact_pairs_are_not_contact():
    s = pressure()
    eye = torch.eye(4, dtype=torch.float64)
    none = ContactState(torch.zeros(0, 3, dtype=torch.float64), torch.zeros(0, 3, dtype=torch.float64))
    empty = SimState({"punyo": eye, "finger": eye}, {}, {("punyo", "finger"): none})
    sim = ScriptedSim([empty] * 2, [s])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TareCalibrator().calibrate(s, sim, [None] * 2, [{"pressure": [1.0]}, {"pressure": [3.0]}]) == 2


def test_re_taring_gives_the_same_calibration_as_the_first_tare():
    s = PunyoDenseForceSensor("force", "punyo")
    s.attach((SQ_V, SQ_F))
    obs = [{"force": np.full(12, 0.25)}, {"force": np.full(12, 0.75)}]
    first = None
    for _ in range(2):
        TareCalibrator(num_samples=2).calibrate(s, ScriptedSim([free_state()] * 2, [s]), [None] * 2, obs)
        cal = s.get_calibration()
        if first is None:
            first = cal
    np.testing.assert_array_equal(cal["tare"], first["tare"])
    np.testing.assert_array_equal(cal["tare_sim_avg"], np.zeros(12))
    # contact-free prediction = the observed average 0.5 on every entry
    np.testing.assert_allclose(s.predict(free_state()).numpy(), np.full(12, 0.5))


def test_zero_samples_returns_zero_and_touches_nothing():
    s = pressure()
    s.set_calibration({"tare": [5.0]})
    sim = ScriptedSim([free_state()], [s])
    assert TareCalibrator(num_samples=0).calibrate(s, sim, [None], [{"pressure": [1.0]}]) == 0
    assert TareCalibrator(num_samples=4).calibrate(s, sim, [], []) == 0
    assert sim.i == -1 and s.get_calibration()["tare"].tolist() == [5.0]


OBS1 = "observation 1 of sensor 'pressure'"


@pytest.mark.parametrize("obs, argument, reason, value, expected", [
    ([{"pressure": [1.0]}, {"pressure": [1.0, 2.0]}], OBS1, "shape", (2,), (1,)),
    ([{"pressure": [1.0]}, {"pressure": [np.nan]}], OBS1, "not_finite", [np.nan], None),
    ([{"pressure": [1.0]}, {"other": [1.0]}], "observation_sequence", "missing_sensor", ["other"],
     "pressure"),
])
def test_bad_observations_raise_before_the_sim_or_sensor_is_touched(obs, argument, reason, value, expected):
    s = pressure()
    s.set_calibration({"tare": [5.0]})
    sim = ScriptedSim([free_state()] * 2, [s])
    with pytest.raises(InputError) as err:
        TareCalibrator().calibrate(s, sim, [None] * 2, obs)
    assert (err.value.argument, err.value.reason, err.value.expected) == (argument, reason, expected)
    np.testing.assert_equal(err.value.value, value)
    assert sim.i == -1 and s.get_calibration() == {"tare": np.array([5.0])}


def test_failure_while_sampling_restores_the_previous_calibration():
    s = pressure()
    s.set_calibration({"tare": [5.0]})

    class BadSim(ScriptedSim):
        def measurements(self):
            return {"pressure": np.zeros(3)}          # wrong size from the simulator
    with pytest.raises(ValueError):
        TareCalibrator().calibrate(s, BadSim([free_state()], [s]), [None], [{"pressure": [1.0]}])
    assert s.get_calibration()["tare"].tolist() == [5.0]


@pytest.mark.parametrize("key", ["bias", "zero", "tare_sim_avg"])
def test_an_output_key_no_sensor_reads_is_rejected_by_the_constructor_naming_it(key):
    # every sensor reads its offset from 'tare'; before, 'zero' was accepted here and only
    # refused by set_calibration after the simulator had been stepped through every sample
    with pytest.raises(SettingError) as err:
        TareCalibrator(output_key=key)
    assert (err.value.setting, err.value.value, err.value.expected) == ("output_key", key, ("tare",))
    assert TareCalibrator(output_key="tare").output_key == "tare"


def test_simulator_measurements_without_the_sensor_name_it_and_the_keys_and_roll_back():
    s = pressure()
    s.set_calibration({"tare": [5.0]})

    class OtherSim(ScriptedSim):
        def measurements(self):
            return {"load": [0.0], "pad": [1.0, 0.0]}
    with pytest.raises(InputError) as err:
        TareCalibrator().calibrate(s, OtherSim([free_state()], [s]), [None], [{"pressure": [1.0]}])
    assert (err.value.value, err.value.reason, err.value.expected) == (["load", "pad"], "missing_sensor",
                                                                       "pressure")
    assert s.get_calibration()["tare"].tolist() == [5.0]


def test_too_few_commands_is_an_error():
    s = pressure()
    with pytest.raises(ValueError):
        TareCalibrator().calibrate(s, ScriptedSim([free_state()] * 2, [s]), [None],
                                   [{"pressure": [1.0]}, {"pressure": [1.0]}])


@pytest.mark.parametrize("kw", [{"num_samples": -1}, {"num_samples": 2.5}, {"output_key": ""}])
def test_constructor_rejects_bad_settings(kw):
    with pytest.raises(ValueError):
        TareCalibrator(**kw)


def test_calibration_from_config():
    c = calibration_from_config({"type": "TareCalibrator", "num_samples": 4, "output_key": "tare"})
    assert isinstance(c, TareCalibrator) and (c.num_samples, c.output_key) == (4, "tare")
    assert calibration_from_config({"type": "TareCalibrator"}).num_samples == 10


@pytest.mark.parametrize("config, setting, value, reason", [
    ({"type": "Nope"}, "type", "Nope", "unknown_type"),
    ({"type": "TareCalibrator", "samples": 3}, "samples", 3, "unknown_key")])
def test_calibration_from_config_names_an_unknown_type_or_key(config, setting, value, reason):
    with pytest.raises(SettingError) as err:
        calibration_from_config(config)
    assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, reason)


# --------------------------------------------------------------------------- pad and load sensors
EYE = torch.eye(4, dtype=torch.float64)


def box_on_table(top_force=None):
    """A 6 x 6 x 4 cm box (frame at its centre) resting on a table with 2.94 N spread over two
    bottom contacts (z = -0.02); optionally a press on the top face centre (z = +0.02)."""
    contacts = {("box", "table"): ContactState(torch.tensor([[0.02, 0.0, -0.02], [-0.02, 0.0, -0.02]],
                                                            dtype=torch.float64),
                                               torch.tensor([[0.0, 0.0, 1.47], [0.0, 0.0, 1.47]],
                                                            dtype=torch.float64))}
    if top_force is not None:
        contacts[("box", "bubble")] = ContactState(torch.tensor([[0.0, 0.0, 0.02]], dtype=torch.float64),
                                                   torch.tensor([[0.0, 0.0, top_force]], dtype=torch.float64))
    return SimState({"box": EYE, "table": EYE, "bubble": EYE}, {}, contacts)


def load_cell():
    # radius 3 cm around the top face centre: the table contacts, 4.5 cm away, are outside
    return IsaacContactSensor("load", "box", CsProperties(radius=0.03, position=(0.0, 0.0, 0.02)))


def test_tare_stops_at_the_table_contact_under_the_box():
    # The seed's rule: the table under the box is contact at every sample, wherever the sensor sits.
    s = load_cell()
    sim = ScriptedSim([box_on_table()] * 3, [s])
    with pytest.warns(UserWarning):
        used = TareCalibrator(num_samples=3).calibrate(s, sim, [None] * 3, [{"load": [0.0, 0.05]}] * 3)
    assert used == 1


def test_pad_sensor_tare_offsets_the_forces_and_not_the_contact_flag():
    # Pad: 2 x 2 cm patch at the link origin, all axes; nothing touches it while taring.
    pad = ContactSensor("pad", "box", patchMin=(-0.01, -0.01), patchMax=(0.01, 0.01),
                        hasForce=(True, True, True))
    sim = ScriptedSim([SimState({"box": EYE}, {}, {})] * 2, [pad])
    obs = [{"pad": [0.0, 0.04, -0.02, 0.10]}, {"pad": [0.0, 0.06, 0.00, 0.20]}]
    assert TareCalibrator(num_samples=2).calibrate(pad, sim, [None] * 2, obs) == 2
    assert pad.get_calibration()["tare"].tolist() == pytest.approx([0.0, 0.05, -0.01, 0.15])
    assert pad.get_calibration()["tare_sim_avg"].tolist() == [0.0, 0.0, 0.0, 0.0]
    # A centre press of -3 N on z: raw (1, 0, 0, -3) + offset (0, 0.05, -0.01, 0.15)
    pressed = SimState({"box": EYE, "bubble": EYE}, {}, {("box", "bubble"): ContactState(
        torch.zeros(1, 3, dtype=torch.float64), torch.tensor([[0.0, 0.0, -3.0]], dtype=torch.float64))})
    assert pad.predict(pressed).tolist() == pytest.approx([1.0, 0.05, -0.01, -2.85])
