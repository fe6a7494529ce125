"""The core without ROS: a rig on the embedded world, stepped with hand-made contacts arrays.

Hand-derived numbers: the embedded bubble's base is a 24-gon of radius 0.05 m, area
``A = 0.5 * 24 * 0.05**2 * sin(2*pi/24) = 7.76e-3 m^2``; the Punyo pressure of a force ``F``
pressing along the base normal is ``F / A``.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from vsf_sensor_ros.embedded_world import embedded_world
from vsf_sensor_ros.rig.calibration import (apply_entry, calibrate_gain, calibration_entry, file_text,
                                            parse_file, tare)
from vsf_sensor_ros.rig.contacts import DecodedContacts
from vsf_sensor_ros.rig.rig import Rig
from vsf_sensor_ros.rig.sensors import RigSensor, StepRejected
from vsf_sensor_ros.sensor import ContactState, PunyoPressureSensor

A = 0.5 * 24 * 0.05 ** 2 * math.sin(2 * math.pi / 24)
P0 = 101325.0          # Pa, what a real bubble reads with nothing touching


@dataclass
class _Codec:
    """What the rig reads of a kind's codec (the node hands it ros.messages.readings' codec)."""
    unit: str = "Pa"
    float32_values: bool = False
    per_vertex: bool = False
    plausible: object = None

    def in_contact(self, layout, values, n_contacts):
        return n_contacts > 0


@dataclass
class _Layout:
    frame_id: str
    names: list
    slots: np.ndarray
    vertices: object = None
    codec: _Codec = field(default_factory=_Codec)


@pytest.fixture
def rig():
    world = embedded_world()
    model = PunyoPressureSensor("pressure", "punyo")
    model.attach(world.body_model("punyo"))
    r = Rig(world)
    r.add(RigSensor("pressure", "PunyoPressureSensor", model, _Layout("punyo", ["pressure"], np.array([0])),
                    buffer_size=10, tolerance_ns=1_000_000))
    return r


def _push(world, force: float) -> DecodedContacts:
    """One contact at the bubble's vertex 0, ``force`` N along the base's -z, in world coordinates."""
    if force == 0.0:
        return DecodedContacts({}, {}, 0)
    T = world.body_transform("punyo")
    p = T[:3, :3] @ np.asarray(world.body_mesh("punyo").vertices)[0] + T[:3, 3]
    f = T[:3, :3] @ np.array([0.0, 0.0, -force])
    pair = ("punyo", "object")
    c = ContactState(torch.tensor(p[None]), torch.tensor(f[None]), torch.tensor([0]), torch.tensor([-1]))
    return DecodedContacts({pair: c}, {pair: np.array([0])}, 1)


def _step(rig, decoded: DecodedContacts, stamp_ns: int):
    """The node's order: predict, commit (a stamp going back resets), pair every prediction by stamp;
    ``(step, [(sensor, pair), ...])`` for the pairs made."""
    step = rig.predict(decoded, stamp_ns)
    rig.commit(step, step.jumped_back)
    return step, [(r.handle, p) for r in step.results if (p := rig.pair_prediction(step, r)) is not None]


def test_a_push_predicts_force_over_area_and_a_measured_value_pairs(rig):
    s = rig.sensors["pressure"]
    step, pairs = _step(rig, _push(rig.world, 2.0), 1_000_000_000)
    assert step.results[0].values[0] == pytest.approx(2.0 / A, rel=1e-6)
    assert step.results[0].touched and pairs == []
    pair = rig.pair_measured("pressure", 1_000_000_000, np.array([P0 + 250.0]))
    residual, measured, stamp = s.keep_pair(pair)
    assert stamp == 1_000_000_000 and measured[0] == P0 + 250.0
    assert residual[0] == pytest.approx(P0 + 250.0 - 2.0 / A, rel=1e-9)


def test_a_tare_on_contact_free_pairs_makes_the_residual_zero(rig):
    s = rig.sensors["pressure"]
    for k, measured in enumerate([P0 - 1.0, P0 + 1.0, P0 + 3.0]):   # mean P0 + 1
        stamp = (k + 1) * 10_000_000
        _step(rig, _push(rig.world, 0.0), stamp)
        s.keep_pair(rig.pair_measured("pressure", stamp, np.array([measured])))
    ok, text = tare(s, 3)
    assert ok, text
    assert s.tare_samples_used == 3 and f"{P0 + 1.0:.9g} Pa" in text
    # the tared model reads P0 + 1 + F / A; a measured P0 + 1 + F / A leaves no residual
    step, _ = _step(rig, _push(rig.world, 2.0), 50_000_000)
    assert step.results[0].values[0] == pytest.approx(P0 + 1.0 + 2.0 / A, rel=1e-12)
    residual, _, _ = s.keep_pair(rig.pair_measured("pressure", 50_000_000, np.array([P0 + 1.0 + 2.0 / A])))
    assert abs(residual[0]) < 1e-6
    # the file's format round-trips the offset
    entries = parse_file(file_text({"pressure": calibration_entry(s, "punyo")}))
    s.sensor.set_calibration({})
    assert apply_entry(s, entries["pressure"]) is None
    assert float(s.sensor.get_calibration()["tare"][0]) == pytest.approx(P0 + 1.0)


def test_a_tare_with_only_contact_samples_is_refused_naming_the_sensor(rig):
    s = rig.sensors["pressure"]
    _step(rig, _push(rig.world, 2.0), 10_000_000)
    s.keep_pair(rig.pair_measured("pressure", 10_000_000, np.array([P0])))
    ok, text = tare(s, 3)
    assert not ok and text.startswith("pressure: cannot tare") and "contact" in text
    ok, text = calibrate_gain(s)
    assert not ok and text.startswith("pressure: cannot calibrate gain")


def test_a_stamp_going_back_resets_the_pairing_buffers(rig):
    s = rig.sensors["pressure"]
    _step(rig, _push(rig.world, 0.0), 2_000_000_000)
    s.keep_pair(rig.pair_measured("pressure", 2_000_000_000, np.array([P0])))
    assert len(s.pairs) == 1
    step, _ = _step(rig, _push(rig.world, 0.0), 1_000_000_000)
    assert step.jumped_back and rig.stamp_jumps == 1 and len(s.pairs) == 0
    assert rig.last_stamp_jump == "2.000000000 -> 1.000000000 s"


def test_a_bad_step_is_rejected_whole_and_kept_nowhere(rig):
    _step(rig, _push(rig.world, 0.0), 1_000_000_000)
    with pytest.raises(StepRejected) as exc:
        _step(rig, _push(rig.world, 1e308), 2_000_000_000)     # 1e308 / A overflows float64
    assert exc.value.reason == "non_finite_prediction" and "pressure" in exc.value.detail
    assert rig.last_stamp == 1_000_000_000
