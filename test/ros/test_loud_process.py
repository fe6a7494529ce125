"""``sensor_node`` as ``ros2 run`` starts it: the command line's parameter files checked, strict keys.

The node runs in a child process through its console entry point; its log (stderr) must carry
the warning or the one ``configuration error:`` line, naming what the test wrote.
"""
from __future__ import annotations

import time

from .node_helpers import NodeProcess, write_params

SENSOR = {"sensors": ["pressure"], "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo"}


def _wait_for(proc: NodeProcess, text: str, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in proc.output():
            return True
        if not proc.alive():
            break
        time.sleep(0.2)
    return text in proc.output()


def test_a_misspelt_node_key_in_the_file_is_a_warning_naming_file_expected_and_found(tmp_path):
    path = write_params(tmp_path / "p.yaml", SENSOR, node_name="sensor_nod")
    proc = NodeProcess(path, tmp_path / "node.log").start()
    try:
        # 10 s from "ready" (start-up itself, imports included, is slower on a loaded machine)
        assert _wait_for(proc, "sensor_node ready", 90.0), proc.output()[-3000:]
        line = f"parameters file {path} has no entry for this node"
        assert _wait_for(proc, line, 10.0), proc.output()[-3000:]
        out = proc.output()
        assert "expected '/sensor_node'" in out and "'sensor_nod'" in out
    finally:
        assert proc.stop() == 0


def test_a_renamed_node_reports_the_file_keyed_by_its_old_name(tmp_path):
    path = write_params(tmp_path / "p.yaml", SENSOR, node_name="sensor_node")
    proc = NodeProcess(path, tmp_path / "node.log", extra_args=["-r", "__node:=left_gripper"]).start()
    try:
        assert _wait_for(proc, "ready", 90.0), proc.output()[-3000:]
        assert _wait_for(proc, "expected '/left_gripper'", 10.0), proc.output()[-3000:]
        assert "'sensor_node'" in proc.output()
    finally:
        assert proc.stop() == 0


def test_strict_parameters_ends_the_start_with_one_configuration_error_line(tmp_path):
    path = write_params(tmp_path / "p.yaml", {**SENSOR, "strict_parameters": True, "tare_sampels": 5})
    proc = NodeProcess(path, tmp_path / "node.log").start()
    code = proc.wait(timeout=120)
    out = proc.output()
    assert code == 2, out[-3000:]
    lines = [line for line in out.splitlines() if "configuration error:" in line]
    assert len(lines) == 1, out[-3000:]
    assert "tare_sampels" in lines[0] and "did you mean 'tare_samples'" in lines[0] and "Traceback" not in out
