"""No remote file writes: the calibration file is fixed at start and ``save_calibration`` writes only it.

Over real DDS, each test with a node process of its own (the four-sensor configuration of
``sensor_node_scene``): a remote caller cannot move ``calibration_file``, a save never replaces a
file this package did not write, never creates a directory unless ``calibration_create_dirs`` was set
at start, and a legitimate save still replaces the configured file atomically.  After
every refusal the file system is as it was and the node keeps answering.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from std_srvs.srv import Trigger

from vsf_sensor_ros.rig.calibration import HEADER

from .node_helpers import NodeProcess, Probe
from .sensor_node_scene import empty_cloud, stamp, start_node, tare_pressure, wait_stamp


def _tree(root: Path) -> dict:
    """Every path under ``root`` with its bytes (directories map to None); the node's own log aside."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*")) if p.name != "node.log"}


def _still_serving(proc: NodeProcess, probe: Probe, sec: int) -> None:
    """The node process runs and still predicts."""
    assert proc.alive()
    probe.send("/contacts", empty_cloud(stamp(sec)))
    assert wait_stamp(probe, "/pressure/predicted", stamp(sec))


def _save(probe: Probe) -> Trigger.Response:
    return probe.call(Trigger, "/save_calibration", Trigger.Request())


def test_calibration_file_cannot_be_set_live_and_nothing_is_written_there(tmp_path, rclpy_context):
    node_dir, elsewhere = tmp_path / "node", tmp_path / "elsewhere"
    node_dir.mkdir()
    with start_node(node_dir, "cal_security_probe") as (proc, probe, cal):
        target = elsewhere / "deep" / "owned.conf"
        res = probe.set_params({"calibration_file": str(target)})[0]
        assert not res.successful
        assert "calibration_file" in res.reason and "read-only" in res.reason.lower()
        assert tare_pressure(probe).success
        r = _save(probe)
        # the save goes to the file fixed at start, never to the requested path
        assert r.success is True, r.message
        assert str(cal) in r.message and str(target) not in r.message
        assert not elsewhere.exists()
        _still_serving(proc, probe, 70)


def test_save_over_a_foreign_file_is_refused_and_the_file_is_unchanged(tmp_path, rclpy_context):
    foreign = tmp_path / "robot_setup.yaml"
    foreign.write_text("robot: {joints: 6}\nsensors: {}\n")      # YAML, but not written by this package
    extra = {"calibration_file": str(foreign)}
    with start_node(tmp_path, "cal_security_probe", extra=extra) as (proc, probe, _):
        assert tare_pressure(probe).success
        before = _tree(tmp_path)
        r = _save(probe)
        assert r.success is False
        assert "not a calibration file" in r.message and str(foreign) in r.message, r.message
        assert _tree(tmp_path) == before
        _still_serving(proc, probe, 70)


def test_save_into_a_missing_directory_is_refused_and_nothing_is_created(tmp_path, rclpy_context):
    target = tmp_path / "missing" / "sub" / "calibration.yaml"
    extra = {"calibration_file": str(target)}
    with start_node(tmp_path, "cal_security_probe", extra=extra) as (proc, probe, _):
        assert tare_pressure(probe).success
        before = _tree(tmp_path)
        r = _save(probe)
        assert r.success is False
        assert "does not exist" in r.message and "calibration_create_dirs" in r.message
        assert not (tmp_path / "missing").exists()
        assert _tree(tmp_path) == before
        _still_serving(proc, probe, 70)


def test_missing_directories_are_created_only_when_allowed_at_start(tmp_path, rclpy_context):
    target = tmp_path / "new" / "calibration.yaml"
    extra = {"calibration_file": str(target), "calibration_create_dirs": True}
    with start_node(tmp_path, "cal_security_probe", extra=extra) as (proc, probe, _):
        res = probe.set_params({"calibration_create_dirs": False})[0]
        assert not res.successful and "read-only" in res.reason.lower()
        assert tare_pressure(probe).success
        r = _save(probe)
        assert r.success is True, r.message
        assert target.read_text().split("\n", 1)[0] == HEADER


def test_a_legitimate_save_replaces_the_configured_file_atomically(tmp_path, rclpy_context):
    with start_node(tmp_path, "cal_security_probe") as (proc, probe, cal):
        old = cal.read_bytes()
        # a second name for the file as it was: an in-place write would change what it reads,
        # a new file renamed over the path does not
        link = tmp_path / "old_link.yaml"
        os.link(cal, link)
        inode = cal.stat().st_ino
        assert tare_pressure(probe).success
        r = _save(probe)
        assert r.success is True, r.message
        assert link.read_bytes() == old
        assert cal.stat().st_ino != inode
        data = yaml.safe_load(cal.read_text())
        assert data["sensors"]["pressure"]["calibration"]["tare"] == pytest.approx([101320.0], rel=1e-12)
        # no temporary file is left beside it
        assert sorted(p.name for p in tmp_path.iterdir()) == ["calibration.yaml", "node.log", "old_link.yaml",
                                                              "params.yaml"]
        # saving again replaces the node's own file (its header marks it)
        assert _save(probe).success
