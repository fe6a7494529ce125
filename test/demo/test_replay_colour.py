"""The real poke's replay with its colour frames (``vsf_replay --camera-colour``).

Off by default (``make demo-real`` stays depth-only): without the flag nothing about colour is
loaded, configured or published.  With it the colour frames go out beside their depth frames
(``rgb8``, the same stamp, the recording's one pixel grid), ``membrane_force_node`` takes them
with its reference, and its forces equal the replay's own estimator run on the same depth and
colour arrays (a second path in another process).
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "data.json"
RGB = RECORDING.parent / "camera" / "rgb.npz"
PLY = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo" / "punyo_mesh_complete.ply"
NEEDS = pytest.mark.skipif(not (RGB.is_file() and PLY.is_file()),
                           reason=f"colour frames of the poke or the Punyo mesh absent: {RGB.resolve()}")


@NEEDS
def test_colour_is_loaded_configured_and_published_only_when_asked(tmp_path):
    from vsf_sensor_ros.demo import replay_camera as rc
    from vsf_sensor_ros.ros.messages.camera import colour_from_image
    from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
    plain = rc.load_camera(RECORDING, (80, 86))
    assert plain is not None and plain.rgb is None
    params = yaml.safe_load(rc.membrane_node_params(plain, tmp_path).read_text())
    assert params["membrane_force_node"]["ros__parameters"].get("colour_topic") is None
    with pytest.raises(ValueError):
        rc.image_msg(plain, 0, ns_to_stamp(1), colour=True)
    cam = rc.load_camera(RECORDING, (80, 86), colour=True)
    assert cam.rgb.shape == (6, 480, 640, 3) and cam.rgb.dtype == np.uint8
    p = yaml.safe_load(rc.membrane_node_params(cam, tmp_path).read_text())["membrane_force_node"][
        "ros__parameters"]
    assert p["colour_topic"] == rc.COLOUR_TOPIC and p["colour_tolerance"] == 0.0   # stamped alike
    msg = rc.image_msg(cam, 4, ns_to_stamp(123), colour=True)
    assert msg.encoding == "rgb8" and msg.header.stamp.nanosec == 123
    assert (colour_from_image(msg) == np.load(RGB)["rgb"][84]).all()            # frame 80 + 4


@NEEDS
def test_replay_with_colour_frames_estimates_with_the_sliding(tmp_path):
    cmd = [sys.executable, "-m", "vsf_sensor_ros.demo.replay", "--recording", str(RECORDING), "--out",
           str(tmp_path), "--speed", "0.5", "--camera-colour"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"replay failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    log = (tmp_path / "logs" / "membrane_force_node.log").read_text()
    assert "reference set from 5 frames with colour" in log and "depth alone" not in log \
        and "colour image rejected" not in log, log[-3000:]
    m = json.loads((tmp_path / "summary.json").read_text())["membrane_force"]
    assert m["frames_measured_by_node"] >= 140
    # the replay's estimator ran with the colour frames too: the node used them, frame for frame
    assert m["frames_node_equals_library"] >= 0.9 * m["frames_measured_by_node"]
    assert m["correlation"] >= 0.98 and 0.6 <= m["ratio_at_peak"] <= 1.2
    # and the field is not the depth-only one: tangential forces appear where the membrane slid
    from vsf_sensor_ros.demo import replay_camera as rc
    from vsf_sensor_ros.demo.replay_analysis import load_recording
    cam = rc.load_camera(RECORDING)
    depth_only = rc.library_run(cam, load_recording(RECORDING))
    z = np.load(tmp_path / "membrane_force.npz")
    assert np.abs(z["force"] - depth_only.forces).max() > 0.1
