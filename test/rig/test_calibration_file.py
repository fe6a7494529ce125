"""The calibration file guard, without ROS: what a save may replace, create and leave behind."""
from __future__ import annotations

import os

import pytest
import yaml

from vsf_sensor_ros.rig.calibration import HEADER
from vsf_sensor_ros.rig.calibration_file import CalibrationStore, SaveRefused, foreign_reason

ENTRY = {"pressure": {"type": "PunyoPressureSensor", "attachment": "punyo", "samples": 3,
                      "calibration": {"tare": [101320.0]}}}


def test_a_save_writes_the_header_then_the_entries_and_loads_back(tmp_path):
    store = CalibrationStore(tmp_path / "cal.yaml")
    assert store.save(ENTRY) == f"wrote calibration of 1 sensors to {tmp_path / 'cal.yaml'}"
    text = (tmp_path / "cal.yaml").read_text()
    assert text.split("\n", 1)[0] == HEADER
    assert yaml.safe_load(text) == {"sensors": ENTRY}
    assert store.load() == ENTRY
    assert store.save(ENTRY)                      # its own file may be replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.yaml"]    # no temporary file left


@pytest.mark.parametrize("content, why", [
    ("robot: {joints: 6}\n", "first line is not"),
    ("sensors: {}\n", "first line is not"),                       # hand-written, no header
    (HEADER + "\nsensors: [1, 2]\n", "no 'sensors' mapping"),
    (HEADER + "\n: : [\n", "not valid YAML"),
])
def test_a_file_without_the_header_and_structure_is_foreign(tmp_path, content, why):
    f = tmp_path / "cal.yaml"
    f.write_text(content)
    assert why in foreign_reason(f, f.stat().st_size)
    with pytest.raises(SaveRefused):
        CalibrationStore(f).save(ENTRY)
    assert f.read_text() == content


def test_binary_and_oversized_files_are_foreign(tmp_path):
    f = tmp_path / "blob"
    f.write_bytes(b"\xff\xfe\x00binary")
    assert "unreadable" in foreign_reason(f, f.stat().st_size) and "larger" in foreign_reason(f, 10 ** 9)


def test_something_other_than_a_regular_file_is_never_replaced(tmp_path):
    d = tmp_path / "cal.yaml"
    d.mkdir()
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)                                # reading it would block: it must not be opened
    for target in (d, fifo):
        with pytest.raises(SaveRefused):
            CalibrationStore(target).save(ENTRY)
    assert d.is_dir() and not any(d.iterdir())


def test_missing_directories_only_with_create_dirs(tmp_path):
    target = tmp_path / "a" / "b" / "cal.yaml"
    with pytest.raises(SaveRefused):
        CalibrationStore(target).save(ENTRY)
    assert not (tmp_path / "a").exists()
    CalibrationStore(target, create_dirs=True).save(ENTRY)
    assert target.read_text().startswith(HEADER + "\n")


def test_nothing_to_write_or_no_path_is_refused(tmp_path):
    f = tmp_path / "cal.yaml"
    with pytest.raises(SaveRefused):
        CalibrationStore(f).save({})
    assert not f.exists()
    with pytest.raises(SaveRefused):
        CalibrationStore(None).save(ENTRY)


def test_loading_accepts_a_hand_written_file_and_refuses_an_unreadable_one(tmp_path):
    f = tmp_path / "cal.yaml"
    f.write_text("sensors:\n  pressure: {calibration: {tare: [5.0]}}\n")
    assert CalibrationStore(f).load() == {"pressure": {"calibration": {"tare": [5.0]}}}
    assert CalibrationStore(tmp_path / "missing.yaml").load() == {}
    f.write_text("sensors: [1]\n")
    with pytest.raises(ValueError, match="'sensors' must be a mapping"):
        CalibrationStore(f).load()
    with pytest.raises(ValueError, match="is a directory"):
        CalibrationStore(tmp_path).load()
