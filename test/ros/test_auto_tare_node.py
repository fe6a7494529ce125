"""sensor_node over real DDS: the automatic tare follows a drifting bubble while the simulator sees
no contact.

The pressure sensor is tared by hand first (101320 Pa, ``tare_pressure``), then its measured
pressure drifts up 10 Pa/s (600 Pa/min, so a few seconds of stream show it) over 8 simulated
seconds at 20 Hz of contact-free steps, stamps as data.  With ``pressure.auto_tare`` (window
0.3 s, a try every 0.4 s, steps at most 20 Pa) each tare moves the offset by about 4 Pa, so the
residual stays within the drift of one interval plus the window's lag, 10 Pa/s * (0.4 + 0.15 +
0.05) s = 6 Pa, where it would reach 80 Pa without.  The tares are counted on /diagnostics and
save_calibration writes the offset the model predicts with.
"""
from __future__ import annotations

import pytest
import yaml
from std_srvs.srv import Trigger

from .sensor_node_scene import (diag, empty_cloud, measured_pressure, stamp, start_node, tare_pressure,
                                wait_stamp)

RATE_PA_S = 10.0
DT_NS = 50_000_000
STEPS = 160
T0 = 60          # s, the stream's first stamp
EXTRA = {"pressure.auto_tare": True, "pressure.auto_tare_window": 0.3,
         "pressure.auto_tare_min_interval": 0.4, "pressure.auto_tare_min_samples": 5,
         "pressure.auto_tare_max_step": 20.0}


def test_auto_tare_counts_its_tares_and_keeps_the_residual_small(tmp_path, rclpy_context):
    with start_node(tmp_path, "auto_tare_probe", EXTRA) as (_, probe, cal):
        assert tare_pressure(probe).success
        residuals = []
        for k in range(STEPS):
            ns = k * DT_NS
            t = stamp(T0 + ns // 1_000_000_000, ns % 1_000_000_000)
            probe.send("/contacts", empty_cloud(t))
            probe.send("/pressure/measured", measured_pressure((101320.0 + RATE_PA_S * ns * 1e-9) / 100.0, t))
            residuals.append(wait_stamp(probe, "/pressure/residual", t).fluid_pressure)
        # the first try needs a full window after the manual tare: from 0.5 s on, every residual is small
        late = residuals[10:]
        assert max(abs(r) for r in late) < 10.0, late
        keys = {}
        assert probe.spin_until(lambda: int((keys.update(diag(probe)["/sensor_node: pressure"]) or keys)
                                            .get("auto_tare.applied", "0")) >= 15, 10.0), keys
        assert keys["auto_tare.refused"] == "0" and keys["auto_tare.last_refused"] == "none"
        assert keys["calibration"].startswith("auto-tared"), keys["calibration"]
        offset = float(keys["auto_tare.offset"].split("=")[1].split()[0])
        # the last tare's window ended at most 0.4 s before the last stamp (7.95 s), lagging 0.15 s
        assert 101320.0 + RATE_PA_S * 7.3 < offset < 101320.0 + RATE_PA_S * 7.95
        r = probe.call(Trigger, "/save_calibration", Trigger.Request())
        assert r.success, r.message
        saved = yaml.safe_load(cal.read_text())["sensors"]["pressure"]["calibration"]["tare"][0]
        assert saved == pytest.approx(offset, abs=1e-3)
