"""Demo command line, configuration and report helpers (no ROS session needed)."""
import subprocess
import sys
from pathlib import Path

import pytest

from vsf_sensor_ros.demo.demo import build_parser
from vsf_sensor_ros.demo.config import DemoError, SensorInfo, read_params_file, resolve_config
from vsf_sensor_ros.demo.session import sim_command
from vsf_sensor_ros.demo.tare import (TARE_AT_S, offsets_from_calibration, tare_due, tare_outcome,
                                      tare_succeeded)
from vsf_sensor_ros.demo.summary import summary_table

ROOT = Path(__file__).resolve().parents[2]


SENSORS = [SensorInfo("p", "PunyoPressureSensor", "pressure"), SensorInfo("pad", "ContactSensor", "wrench"),
           SensorInfo("d", "PunyoDenseForceSensor", "dense_force")]


def test_tare_outcome_is_read_from_the_saved_calibration_file(tmp_path):
    f = tmp_path / "calibration.yaml"
    # what the node saves: p and pad tared (samples + tare), d absent (its tare failed)
    f.write_text("sensors:\n"
                 "  p: {samples: 10, calibration: {tare: [101320.0], tare_sim_avg: [0.0]}}\n"
                 "  pad: {samples: 9, calibration: {tare: [1.0, 0.05, 0.04, 0.06], "
                 "tare_sim_avg: [1.0, 0.0, 0.0, 0.0]}}\n")
    answer = ("p: tared with 10 of 10 samples; offset pressure=1 Pa\n"     # numbers here are not used
              "pad: tared with 9 of 10 samples; offset force_x=7 N\n"
              "d: cannot tare: no contact-free samples")
    got = tare_outcome(f, SENSORS, answer)
    assert got["p"] == {"tare_status": "tared", "tare_samples": 10, "tare_offset": 101320.0}
    # the pad's contact indicator (entry 0) carries no offset: 0.05, 0.04, 0.06 from the file
    assert got["pad"] == {"tare_status": "tared", "tare_samples": 9,
                          "tare_offset": pytest.approx([0.05, 0.04, 0.06])}
    assert got["d"] == {"tare_status": "failed: not in the saved calibration "
                                       "(node: cannot tare: no contact-free samples)",
                        "tare_samples": None, "tare_offset": None}
    assert not tare_succeeded(True, got)
    assert tare_succeeded(True, {k: got[k] for k in ("p", "pad")})
    assert not tare_succeeded(False, {k: got[k] for k in ("p", "pad")})
    assert not tare_succeeded(True, {})
    # save_calibration failed: the file (possibly from before) does not count
    unsaved = tare_outcome(f, SENSORS, answer, saved=False)
    assert all(e["tare_status"].startswith("failed: the calibration was not saved") for e in unsaved.values())
    # an entry without a sample count was loaded from an older file, not tared now
    f.write_text("sensors:\n  p: {samples: null, calibration: {tare: [101320.0]}}\n")
    assert tare_outcome(f, SENSORS[:1])["p"]["tare_status"] == "failed: not in the saved calibration"
    assert tare_outcome(tmp_path / "absent.yaml", SENSORS[:1])["p"]["tare_samples"] is None


def test_tare_is_due_mid_hold_with_enough_samples_or_at_the_first_touch():
    assert not tare_due(None, [0, 0], 10, False)                       # no contacts yet
    assert not tare_due(TARE_AT_S - 0.02, [60, 60], 10, False)          # too early
    assert not tare_due(TARE_AT_S, [60, 9], 10, False)                 # a sensor lacks samples
    assert tare_due(TARE_AT_S, [10, 10], 10, False)
    assert tare_due(0.1, [2, 2], 10, True)                             # touched: now or never


def test_offsets_from_calibration_file_scalar_short_and_long_vectors(tmp_path):
    f = tmp_path / "calibration.yaml"
    f.write_text("sensors:\n"
                 "  p: {samples: 10, calibration: {tare: [101320.0], tare_sim_avg: [0.0]}}\n"
                 "  w: {samples: 9, calibration: {tare: [0.0, 0.05, 0.04, 0.06]}}\n"
                 "  d: {samples: 10, calibration: {tare: [0.001, -0.003, 0.002, 0.0, 0.0, 0.0, 0.004]}}\n")
    got = offsets_from_calibration(f, ["p", "w", "d", "absent"])
    assert got["p"] == {"tare_samples": 10, "tare_offset": 101320.0}
    assert got["w"] == {"tare_samples": 9, "tare_offset": [0.0, 0.05, 0.04, 0.06]}
    # with kinds: the pad's and the load's contact indicator (entry 0) carries no offset, and the
    # offset is tare − tare_sim_avg: 0.06 − 0.01 = 0.05
    f.write_text("sensors:\n"
                 "  w: {samples: 9, calibration: {tare: [1.0, 0.05, 0.04, 0.06], "
                 "tare_sim_avg: [1.0, 0.0, 0.0, 0.0]}}\n"
                 "  l: {samples: 10, calibration: {tare: [0.0, 0.06], tare_sim_avg: [0.0, 0.01]}}\n")
    got = offsets_from_calibration(f, ["w", "l"], {"w": "wrench", "l": "load"})
    assert got["w"] == {"tare_samples": 9, "tare_offset": pytest.approx([0.05, 0.04, 0.06])}
    assert got["l"] == {"tare_samples": 10, "tare_offset": pytest.approx(0.05)}
    f.write_text("sensors:\n"
                 "  p: {samples: 10, calibration: {tare: [101320.0], tare_sim_avg: [0.0]}}\n"
                 "  d: {samples: 10, calibration: {tare: [0.001, -0.003, 0.002, 0.0, 0.0, 0.0, 0.004]}}\n")
    got = offsets_from_calibration(f, ["p", "d", "absent"])
    # 7 entries: mean = 0.004 / 7, max |.| = 0.004.
    assert got["d"]["tare_offset"]["entries"] == 7
    assert got["d"]["tare_offset"]["mean"] == pytest.approx(0.004 / 7)
    assert got["d"]["tare_offset"]["max_abs"] == pytest.approx(0.004)
    assert set(got) == {"p", "d"}
    with pytest.raises(DemoError) as info:
        offsets_from_calibration(tmp_path / "nope.yaml", ["p"])
    assert (info.value.reason, info.value.path) == ("unreadable", tmp_path / "nope.yaml")


def test_params_file_is_flattened_from_nested_or_dotted_yaml(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("sensor_node:\n  ros__parameters:\n    sensors: [a]\n"
                 "    a:\n      type: PunyoPressureSensor\n      measured_scale: 100.0\n"
                 "    b.type: ContactSensor\n")
    key, params = read_params_file(f)
    assert key == "sensor_node"
    assert params == {"sensors": ["a"], "a.type": "PunyoPressureSensor", "a.measured_scale": 100.0,
                      "b.type": "ContactSensor"}
    f.write_text("just: text\n")
    with pytest.raises(DemoError) as info:
        read_params_file(f)
    assert (info.value.reason, info.value.path) == ("no_parameters", f)


def sim_params(cmd):
    """The simulator's ``-p name:=value`` arguments of an argv, as a dict of strings."""
    return dict(cmd[i + 1].split(":=", 1) for i in range(len(cmd) - 1) if cmd[i] == "-p")


def write_params(tmp_path, sensors_yaml):
    f = tmp_path / "node.yaml"
    f.write_text("/**:\n  ros__parameters:\n" + sensors_yaml)
    return f


def test_resolve_config_reads_sensor_kinds_and_rejects_bad_numbers(tmp_path):
    f = write_params(tmp_path, "    sensors: [p, pad]\n    p.type: PunyoPressureSensor\n"
                               "    p.measured_scale: 100.0\n    pad.type: ContactSensor\n"
                               "    tare_samples: 7\n")
    args = build_parser().parse_args(["--params-file", str(f), "--out", str(tmp_path / "o"),
                                      "--rate", "40"])
    cfg = resolve_config(args)
    assert [(s.name, s.kind, s.measured_scale) for s in cfg.sensors] == [("p", "pressure", 100.0),
                                                                         ("pad", "wrench", 1.0)]
    assert cfg.tare_samples == 7 and cfg.node_name == "sensor_node"
    # Real-time simulation: 40 steps per second of 1/40 = 0.025 simulated seconds.
    p = sim_params(sim_command(cfg))
    assert (p["rate_hz"], p["sim_dt"], p["duration_s"]) == ("40.0", "0.025", "10.0")
    for bad, text in (("--duration=-1", "--duration"), ("--rate=0", "--rate"), ("--rate=nan", "--rate"),
                      ("--seed=-3", "--seed")):
        with pytest.raises(ValueError, match=text):
            resolve_config(build_parser().parse_args(["--params-file", str(f), bad]))
    unknown = write_params(tmp_path, "    sensors: [x]\n    x.type: Thermometer\n")
    with pytest.raises(DemoError) as info:
        resolve_config(build_parser().parse_args(["--params-file", str(unknown)]))
    assert (info.value.reason, info.value.value) == ("unknown_type", "Thermometer")


def test_kinova_world_without_assets_exits_2_with_a_clear_message(tmp_path):
    f = write_params(tmp_path, "    sensors: [p]\n    p.type: PunyoPressureSensor\n")
    res = subprocess.run([sys.executable, "-m", "vsf_sensor_ros.demo.demo", "--world", "kinova",
                          "--assets", str(tmp_path / "missing"), "--params-file", str(f),
                          "--out", str(tmp_path / "o")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "--assets" in res.stderr and "missing" in res.stderr
    assert not (tmp_path / "o").exists()  # nothing started, nothing written


def test_summary_table_has_a_row_per_sensor_with_dashes_for_missing_numbers():
    summary = {"world": "embedded", "steps": 1000, "sim_rate_hz": 100.0, "achieved_rate_hz": 99.5,
               "duration_s": 10.0, "wall_time_s": 25.0,
               "tare": {"success": True, "sim_time_s": 0.2},
               "sensors": {"punyo_pressure": {"measured_source": "synthetic-model", "published": 1000,
                                              "latency_ms_p50": 3.21,
                                              "latency_ms_p99": 9.9,
                                              "residual_rms_contact_free_before_tare": 101325.0,
                                              "residual_rms_contact_free_after_tare": 5.1,
                                              "residual_rms_in_contact_after_tare": 6.2,
                                              "tare_offset": 101325.2,
                                              "tare_samples": 10},
                           "object_load": {"measured_source": None, "published": 0, "latency_ms_p50": None,
                                           "latency_ms_p99": None,
                                           "residual_rms_contact_free_before_tare": None,
                                           "residual_rms_contact_free_after_tare": None,
                                           "residual_rms_in_contact_after_tare": None,
                                           "tare_offset": [0.0, 0.05], "tare_samples": None}}}
    lines = summary_table(summary).splitlines()
    assert "1000 steps at 100 Hz" in lines[0] and "tare ok" in lines[0]
    row = next(line for line in lines if line.startswith("punyo_pressure"))
    assert row.split() == ["punyo_pressure", "synthetic-model", "1000/1000", "3.21", "9.9", "1.01e+05", "5.1",
                           "6.2", "1.01e+05", "10"]
    row = next(line for line in lines if line.startswith("object_load"))
    assert row.split() == ["object_load", "-", "0/1000", "-", "-", "-", "-", "-", "[2", "values]", "-"]
    assert not any("Klampt" in line for line in lines)   # no pad_vs_klampt_native entry: no such lines


def test_shipped_parameter_files_pair_with_the_simulator(tmp_path):
    # Same body table as contact_sim_node publishes, the simulator's demo sensors with its settings,
    # and SI measured streams (measured_scale 1.0).
    from vsf_sensor_ros.contact_sources.contact_sim_node import PARAMS as SIM_PARAMS
    from vsf_sensor_ros.demo.config import check_pairing
    worlds = ["embedded"]
    fixture = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"
    if fixture.is_dir():
        worlds.append("kinova")
    for world in worlds:
        extra = ["--assets", str(fixture.resolve())] if world == "kinova" else []
        cfg = resolve_config(build_parser().parse_args(["--world", world, "--out", str(tmp_path), *extra]))
        sim_bodies = list(SIM_PARAMS["contact_body_names"][0])
        assert cfg.contact_body_names == sim_bodies == ["punyo", "object", "table"]
        assert [s.name for s in cfg.sensors] == ["punyo_pressure", "punyo_force", "punyo_pad", "object_load"]
        assert check_pairing(cfg) == [], world
        assert sim_params(sim_command(cfg))["contact_body_names"] == "[punyo,object,table]"


def test_measured_streams_are_labelled_by_where_the_simulator_takes_them_from(tmp_path):
    labels = {"punyo_pressure": "synthetic-model", "punyo_force": "synthetic-model",
              "punyo_pad": "klampt-native-contact-sensor", "object_load": "simulator-contact-forces"}
    cfg = resolve_config(build_parser().parse_args(["--world", "embedded", "--out", str(tmp_path)]))
    assert cfg.measured_source == "independent"
    assert {s.name: s.measured_source for s in cfg.sensors} == labels
    assert sim_params(sim_command(cfg))["measured_source"] == "independent"
    # Every stream from the package's models: all synthetic, and the simulator is told so.
    cfg = resolve_config(build_parser().parse_args(["--world", "embedded", "--out", str(tmp_path),
                                                    "--measured-source", "model"]))
    assert {s.measured_source for s in cfg.sensors} == {"synthetic-model"}
    assert sim_params(sim_command(cfg))["measured_source"] == "model"
    # A sensor the simulator does not measure has no source; without the bubble in the body
    # table the load cell has no simulator force to read and stays synthetic.
    f = write_params(tmp_path, "    sensors: [object_load, extra]\n    object_load.type: IsaacContactSensor\n"
                               "    object_load.attachment: object\n    extra.type: ContactSensor\n"
                               "    extra.attachment: punyo\n    contact_body_names: [object, table]\n")
    cfg = resolve_config(build_parser().parse_args(["--params-file", str(f), "--out", str(tmp_path)]))
    got = {s.name: s.measured_source for s in cfg.sensors}
    assert got == {"object_load": "synthetic-model", "extra": None}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--measured-source", "guess"])


def test_a_parameter_file_that_differs_from_the_simulator_is_reported(tmp_path):
    from vsf_sensor_ros.demo.config import check_pairing
    text = (ROOT / "config" / "sensor_node.yaml").read_text()
    text = text.replace("radius: 0.03 ", "radius: 0.05 ").replace(
        "measured_scale: 1.0              # the simulator publishes Pa",
        "measured_scale: 100.0            # hPa, but the simulator publishes Pa")
    f = tmp_path / "p.yaml"
    f.write_text(text)
    cfg = resolve_config(build_parser().parse_args(["--params-file", str(f), "--out", str(tmp_path)]))
    problems = check_pairing(cfg)
    assert len(problems) == 2, problems
    assert any("object_load.radius is 0.05" in p for p in problems)
    assert any("punyo_pressure.measured_scale is 100.0" in p for p in problems)
    f.write_text(text.replace("contact_body_names: [punyo, object, table]", "contact_body_names: []"))
    cfg = resolve_config(build_parser().parse_args(["--params-file", str(f), "--out", str(tmp_path)]))
    with pytest.raises(DemoError) as info:
        check_pairing(cfg)
    assert (info.value.reason, info.value.path) == ("no_contact_bodies", f.resolve())


def test_each_world_writes_its_own_output_folder_by_default():
    cfg = resolve_config(build_parser().parse_args(["--world", "embedded"]))
    assert cfg.out == Path("demo_out") / "embedded"
    fixture = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"
    if fixture.is_dir():
        cfg = resolve_config(build_parser().parse_args(["--world", "kinova", "--assets", str(fixture)]))
        assert cfg.out == Path("demo_out") / "kinova"
