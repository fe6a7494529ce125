"""``-h`` / ``--help`` of every console script: usage, defaults, an example, exit 0, no ROS participant.

Each script of ``setup.py`` runs in a child process (its entry function, with ``sys.argv`` as the
console script would have it) while a listener node on the same ``ROS_DOMAIN_ID`` watches the
graph and the topics a node would publish first; the listener must see no new node and no message.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = re.findall(r'"(\w+) = ([\w.]+):(\w+)"', (ROOT / "setup.py").read_text())
# what each usage must mention: a default it lists (read from the source's own tables by hand)
EXPECTED = {
    "sensor_node": ["tare_samples (default: 10, live)", "strict_parameters (default: False)",
                    "<s>.measured_scale (default: 1.0, live)", "examples:"],
    "contact_sim_node": ["duration_s (default: 12.0)", "rate_hz (default: 100.0)", "examples:"],
    "wrench_contact_node": ["bias_samples (default: 10)", "robot_description (default: '')", "examples:"],
    "vsf_demo": ["--duration", "(default: 10)", "examples:"],
    "vsf_replay": ["--recording", "(required)", "example:"],
    "mujoco_contact_node": ["duration_s (default: 12.0)", "rate_hz (default: 100.0)", "examples:"],
    "link_frames_node": ["frame_prefix (default: '')", "robot_description (default: '')", "examples:"],
    "membrane_force_node": ["depth_unit (default: 0.001)", "reference_frames (default: 10)", "examples:",
                            "scale_min_frames (default: 10)", "(2..100000)", "~/calibrate_scale"],
}


def test_every_console_script_is_checked():
    assert sorted(name for name, _, _ in SCRIPTS) == sorted(EXPECTED)


def _start(module: str, func: str, flag: str) -> subprocess.Popen:
    code = f"import sys; from {module} import {func}; sys.exit({func}())"
    return subprocess.Popen([sys.executable, "-c", code, flag], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_help_prints_usage_exits_0_and_creates_no_participant(rclpy_context):
    import rclpy
    from sensor_msgs.msg import JointState, PointCloud2
    listener = rclpy.create_node("help_listener")
    seen = []
    subs = [listener.create_subscription(t, topic, seen.append, 10)
            for t, topic in ((JointState, "/joint_states"), (PointCloud2, "/contacts"))]
    # --help only: -h reaches the same answer (test_parameter_usage_lists_each_parameter_with_its_default
    # and argparse's own -h); one process per script keeps a loaded 2-core machine inside the timeout
    procs = {(name, "--help"): _start(module, func, "--help") for name, module, func in SCRIPTS}
    # the control: a participant that lives until it is seen (or the deadline), or the listener proves
    # nothing; it is stopped below, so a slow start on a loaded machine cannot let it end unseen
    control = subprocess.Popen([sys.executable, "-c", "import time, rclpy; rclpy.init(); "
                                "n = rclpy.create_node('help_control'); time.sleep(300.0)"], cwd=ROOT)
    nodes = set()
    try:
        end = time.monotonic() + 300       # ends once every script has answered and the control was seen
        while ((any(p.poll() is None for p in procs.values()) or "help_control" not in nodes)
               and time.monotonic() < end):
            rclpy.spin_once(listener, timeout_sec=0.05)
            nodes.update(n for n, _ in listener.get_node_names_and_namespaces() if n != "help_listener")
        for _ in range(20):   # a participant seen late in discovery
            rclpy.spin_once(listener, timeout_sec=0.05)
            nodes.update(n for n, _ in listener.get_node_names_and_namespaces() if n != "help_listener")
    finally:
        for s in subs:
            listener.destroy_subscription(s)
        listener.destroy_node()
        for p in list(procs.values()) + [control]:
            if p.poll() is None:
                p.kill()
        control.wait(timeout=10)
    for (name, flag), p in procs.items():
        out, err = p.communicate(timeout=10)
        assert p.returncode == 0, f"{name} {flag}: exit {p.returncode}\n{out}\n{err}"
        assert out.lstrip().startswith("usage:"), f"{name} {flag}:\n{out}\n{err}"
        for text in EXPECTED[name]:
            assert text in out, f"{name} {flag}: {text!r} missing from\n{out}"
    assert nodes == {"help_control"}, f"nodes on the graph during --help (and the control): {sorted(nodes)}"
    assert seen == []


def test_vsf_replay_without_recording_prints_usage_and_one_error_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "vsf_sensor_ros.demo.replay"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("usage: vsf_replay")
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "--recording" in errors[0], p.stderr
    assert list(tmp_path.iterdir()) == []   # nothing written into the current directory


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_parameter_usage_lists_each_parameter_with_its_default(flag):
    from vsf_sensor_ros.ros.main import answer_help, parameter_usage
    params = [("rate", 2.5, "how often"), ("names", ["a", "b"], "which"),
              ("none_yet", [""], "an empty string array, declared as ROS declares one")]
    parser = parameter_usage("x_node", "does x", params, ["x_node --ros-args -p rate:=1.0"])
    text = parser.format_help()
    parts = ("rate (default: 2.5)\n      how often", "names (default: ['a', 'b'])", "none_yet (default: [])",
             "examples:\n  x_node --ros-args -p rate:=1.0")
    assert all(part in text for part in parts), text
    with pytest.raises(SystemExit) as exc:
        answer_help(["x_node", flag], parser)
    assert exc.value.code == 0
    answer_help(["x_node", "--ros-args", "-p", "rate:=1.0"], parser)   # no help asked: returns
