"""The replay's out-of-sample gain: fitted on the loading, scored on the unloading it never saw.

A poke built by hand on the embedded world's bubble: the contact force rises 0 -> 6 N over 15
frames (the loading, peak included) and falls back over 12 (the unloading).  The "real" bubble
reads 0.8 of the seed model's change on top of the offset, so a gain fitted on the loading alone
is 0.8, and on the unloading frames the residual after that gain is 0 while the tare-only
residual is (0.8 - 1) x the model's change.
"""
import numpy as np
import pytest
import torch

from vsf_sensor_ros.demo.replay_analysis import out_of_sample_gain
from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.sensor import ContactState, PunyoPressureSensor, SimState

OFFSET = 101325.0
TRUE_GAIN = 0.8


def _poke():
    world = embedded_world()
    T = world.body_transform("punyo")
    forces = np.concatenate([np.linspace(0.0, 6.0, 15), np.linspace(5.5, 0.0, 12)])
    states = []
    for f in forces:
        contacts = {}
        if f > 0:   # along the bubble's -z, into it: the pressure rises
            contacts[("punyo", "object")] = ContactState(
                torch.tensor([T[:3, 3]], dtype=torch.float64),
                torch.tensor([T[:3, :3] @ np.array([0.0, 0.0, -f])], dtype=torch.float64))
        states.append(SimState(world.body_transforms(), {}, contacts))
    return world, states


def _sensor(world):
    s = PunyoPressureSensor("p", "punyo")
    s.attach(world.body_model("punyo"))
    s.set_calibration({"tare": [OFFSET]})
    return s


def test_the_loading_gain_is_scored_on_the_unloading_frames_only():
    world, states = _poke()
    model_dp = np.array([float(_sensor(world).predict(s)[0]) for s in states]) - OFFSET   # the seed's change
    meas = OFFSET + TRUE_GAIN * model_dp
    entry, series = out_of_sample_gain(_sensor(world), states, meas, OFFSET, model_dp, threshold=50.0)
    assert entry["sensor_gain"] == pytest.approx(TRUE_GAIN, rel=1e-9)
    assert entry["fit_contact_samples"] == 14                  # frames 1..14 touch (frame 0: 0 N)
    test = series["oos_test"]
    assert not test[:15].any()                                 # no loading frame is scored
    assert entry["test_frames"] == int(test.sum()) == int((TRUE_GAIN * model_dp[15:] > 50.0).sum())
    assert entry["residual_rms_unloading_after_gain_pa"] == pytest.approx(0.0, abs=1e-6)
    x = model_dp[test]
    assert entry["residual_rms_unloading_after_tare_pa"] == pytest.approx(
        np.sqrt(np.mean(((TRUE_GAIN - 1.0) * x) ** 2)), rel=1e-9)


def test_too_short_a_loading_is_skipped_with_the_reason():
    world, states = _poke()
    model_dp = np.array([float(_sensor(world).predict(s)[0]) for s in states]) - OFFSET
    meas = OFFSET + TRUE_GAIN * model_dp
    short = states[10:]                                        # 5 loading frames: fewer than 10
    entry, series = out_of_sample_gain(_sensor(world), short, meas[10:], OFFSET, model_dp[10:],
                                       threshold=50.0)
    assert series == {} and entry["skipped"].startswith("loading fit refused") and "10" in entry["skipped"]
