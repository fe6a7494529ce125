"""The demo's per-kind decisions, asked of the reading codecs: which bodies count as "pressed"."""
import dataclasses

import pytest

from vsf_sensor_ros.demo.config import SensorInfo, press_body_indices


def _embedded(tmp_path):
    from vsf_sensor_ros.demo.config import resolve_config
    from vsf_sensor_ros.demo.demo import build_parser
    return resolve_config(build_parser().parse_args(["--world", "embedded", "--out", str(tmp_path)]))


def test_pressed_bodies_are_the_punyo_sensors_bodies(tmp_path):
    cfg = _embedded(tmp_path)
    # the embedded demo: Punyo pressure + dense force on the bubble, a pad on it, a load cell on the box
    assert cfg.contact_body_names == ["punyo", "object", "table"]
    assert press_body_indices(cfg) == [0]
    # without a membrane sensor nothing is singled out (any contact counts), even with a pad on the bubble
    others = [s for s in cfg.sensors if not s.type_name.startswith("Punyo")]
    assert {s.attachment for s in others} == {"punyo", "object"}
    assert press_body_indices(dataclasses.replace(cfg, sensors=others)) == []
    # a Punyo pressure sensor alone on the box makes the box the pressed body
    box = SensorInfo("p", "PunyoPressureSensor", "pressure", attachment="object")
    assert press_body_indices(dataclasses.replace(cfg, sensors=[box])) == [1]


def test_sensor_info_codec_of_an_unknown_kind_names_it():
    with pytest.raises(KeyError, match="torque"):
        SensorInfo("s", "X", "torque").codec  # noqa: B018 (the property raises)
