"""The node's parameter schema agrees with the sensor library, and file parameters resolve."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.ros.kinds import sensor_kinds
from vsf_sensor_ros.ros.parameter_table import (BODY_SPECS, NODE_SPECS, SENSOR_COMMON_SPECS, ConfigError,
                                                check_value, sensor_specs)
from vsf_sensor_ros.ros.parameters import SensorParameters
from vsf_sensor_ros.ros.scene import effective_assets_dir, transform_from_params
from vsf_sensor_ros.sensor import sensor_from_config

from test.ros.node_helpers import FIXTURES


@pytest.mark.parametrize("type_name", sorted(sensor_kinds()))
def test_every_declared_setting_default_is_accepted_by_the_library(type_name):
    values = {s.key: s.default for s in sensor_specs(type_name)}
    values["attachment"] = "body"
    sensor = sensor_from_config(SensorParameters("s", type_name, values).model_config())
    assert sensor.type_name == type_name and sensor.attachModelName == "body"


def test_klampt_defaults_are_the_klampt_constructor_values():
    s = sensor_from_config({"name": "c", "type": "ContactSensor", "attachment": "link"})
    defaults = {sp.key: sp.default for sp in sensor_kinds()["ContactSensor"].settings}
    assert np.asarray(s.Tsensor).reshape(-1).tolist() == defaults["Tsensor"]
    for key in ("patchMin", "patchMax", "hasForce", "fResolution", "fVariance", "fSaturation"):
        assert list(getattr(s, key)) == defaults[key], key
    for key in ("patchTolerance", "fSensitivity", "falloffCoefficient", "enabled", "rate"):
        assert getattr(s, key) == defaults[key], key


def test_isaac_defaults_are_the_library_defaults():
    s = sensor_from_config({"name": "l", "type": "IsaacContactSensor", "attachment": "obj"})
    d = {sp.key: sp.default for sp in sensor_kinds()["IsaacContactSensor"].settings}
    p = s.properties
    assert (p.radius, p.minThreshold, p.maxThreshold, p.sensorPeriod, list(p.position)) == \
        (d["radius"], d["minThreshold"], d["maxThreshold"], d["sensorPeriod"], d["position"])
    assert math.isinf(d["maxThreshold"])


def test_check_value_names_the_parameter_and_value():
    spec = next(s for s in sensor_kinds()["ContactSensor"].settings if s.key == "fSaturation")
    check_value("p.fSaturation", spec, [1.0, math.inf, 0.0])
    for bad in ([1.0, -1.0, 0.0], [1.0]):          # a negative entry; too few entries
        with pytest.raises(ConfigError) as err:
            check_value("p.fSaturation", spec, bad)
        assert (err.value.parameter, err.value.value) == ("p.fSaturation", bad)


def test_transform_file_key_reads_the_punyo_mount():
    if not (FIXTURES / "punyo2end_effector_transform.json").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    T = transform_from_params("punyo", [], "punyo2end_effector_transform.json", "punyo2ee", str(FIXTURES))
    # the numbers as written in the fixture file
    assert T.tolist() == [[0.0, -1.0, 0.0, 0.0], [0.34202014, 0.0, -0.93969262, 0.02111],
                          [0.93969262, 0.0, 0.34202014, 0.096142], [0.0, 0.0, 0.0, 1.0]]
    with pytest.raises(ConfigError) as err:
        transform_from_params("punyo", [], "punyo2end_effector_transform.json", "nope", str(FIXTURES))
    assert (err.value.parameter, err.value.value) == ("punyo.transform_key", "nope")


def test_row_major_transform():
    T = transform_from_params("b", [1, 0, 0, 0.1, 0, 1, 0, 0.2, 0, 0, 1, 0.3, 0, 0, 0, 1], "", "", "")
    assert T[:3, 3].tolist() == [0.1, 0.2, 0.3]


def test_vsf_assets_environment_wins_over_the_parameter(monkeypatch):
    monkeypatch.setenv("VSF_ASSETS", "/from/env")
    assert effective_assets_dir("/from/param") == "/from/env"
    monkeypatch.delenv("VSF_ASSETS")
    assert effective_assets_dir("/from/param") == "/from/param"


def _doc_parameter_rows():
    """``(names, live column)`` of each row of docs/parameters.md's tables (read from the committed file)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "parameters.md").read_text()
    rows = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        names = re.findall(r"`([^`]+)`", cells[0])
        rows.append((names, cells[3]))
    return rows


def test_the_live_column_of_the_documented_parameters_matches_the_specs():
    # the committed reference, read as a reader sees it: each name's live column must say what its
    # Spec's read_only says, and every Spec has a row
    specs = {s.key: s for s in NODE_SPECS}
    specs.update({f"<b>.{s.key}": s for s in BODY_SPECS})
    specs.update({f"<s>.{s.key}": s for s in SENSOR_COMMON_SPECS})
    for kind in sensor_kinds().values():
        specs.update({f"<s>.{s.key}": s for s in kind.settings})
    documented = set()
    for names, live in _doc_parameter_rows():
        for name in names:
            if name == "use_sim_time":   # ROS's own parameter, not the package's
                continue
            assert name in specs, f"docs/parameters.md documents {name}, which is no parameter"
            expected = "no" if specs[name].read_only else "yes"
            assert live == expected, f"docs/parameters.md: {name} live {live!r}, its Spec says {expected!r}"
            documented.add(name)
    assert not set(specs) - documented, f"not in docs/parameters.md: {sorted(set(specs) - documented)}"
