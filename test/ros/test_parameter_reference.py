"""docs/parameters.md is generated from the parameter table and must not go stale."""
from pathlib import Path

from vsf_sensor_ros.ros import parameter_reference
from vsf_sensor_ros.ros.kinds import sensor_kinds
from vsf_sensor_ros.ros.parameter_table import NODE_SPECS

ROOT = Path(__file__).resolve().parents[2]


def test_committed_parameter_reference_is_current():
    committed = (ROOT / "docs" / "parameters.md").read_text()
    assert committed == parameter_reference.render(), (
        "docs/parameters.md is stale: run python -m vsf_sensor_ros.ros.parameter_reference")


def test_every_parameter_of_the_table_has_a_row():
    text = parameter_reference.render()
    for spec in NODE_SPECS:
        assert f"| `{spec.key}` |" in text, spec.key
    for name, kind in sensor_kinds().items():
        assert f"`{name}` settings" in text
        for spec in kind.settings:
            assert f"| `<s>.{spec.key}` |" in text, (name, spec.key)


def test_a_row_states_default_range_and_liveness_as_the_table_does():
    rows = {line.split("|")[1].strip(): line for line in parameter_reference.render().splitlines()
            if line.startswith("| `")}
    # tare_samples: Spec(10, lo=1, hi=100000), live
    assert rows["`tare_samples`"].split("|")[2:5] == [" `10` ", " 1 … 100000 ", " yes "]
    # calibration_file: read-only, empty default
    assert rows["`calibration_file`"].split("|")[2:5] == [' `""` ', "  ", " no "]
    # fSaturation: three infinite clamps, lower bound 0
    assert rows["`<s>.fSaturation`"].split("|")[2] == " `[.inf, .inf, .inf]` "
