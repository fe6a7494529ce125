"""``<s>/calibrate_gain`` over real DDS: the gain fitted from buffered contact samples, refusals,
save and load.

The node runs ``sensor_node_scene``'s four sensors; the Punyo pressure and dense-force sensors take a
gain, the Klampt and Isaac sensors do not.  A
stand-in measured stream is built by hand: after a tare at the ambient pressure ``P0``, each contact
step's measured pressure is ``P0 + K * dp`` with ``dp`` the model's pressure change derived here from
the world's transforms, ``dp = -(1/A) (R^T f_bubble) . n`` (``n = +z`` of the bubble, ``A`` the
area of its 24-gon base).  The least-squares gain through the origin of such data is ``K`` exactly.
The contacts are written once, as ``(object, punyo)`` with the force on the object, so the bubble
receives ``-f`` (the node's contact-row rule).
"""
from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest
import yaml
from std_srvs.srv import Trigger

from vsf_sensor_ros.embedded_world import BUBBLE_RADIUS

from test.ros.node_helpers import Probe
from test.ros.sensor_node_scene import (MEASURED_SCALE, empty_cloud, measured_pressure, posed_world,
                                        rows_to_cloud, send_pose, stamp, start_node, tare_pressure,
                                        wait_stamp)

A = 0.5 * 24 * BUBBLE_RADIUS ** 2 * math.sin(2 * math.pi / 24)
K = 0.8                      # the stand-in sensor's gain: its pressure rises 0.8 x the model's
P0 = 101320.0                # Pa: tare_pressure's contact-free mean
N_CONTACT = 12


@pytest.fixture(scope="module")
def world():
    return posed_world()


def _contact(world, i: int):
    """Contact step ``i``: one row ``(object, punyo)`` at bubble vertex 5, force on the object ``g``;
    the row and the model's pressure change (force on the bubble ``-g``)."""
    Tp = world.body_transform("punyo")
    R = Tp[:3, :3]
    p5 = R @ np.asarray(world.body_mesh("punyo").vertices)[5] + Tp[:3, 3]
    g = np.array([0.1 * i, -0.05, 0.5 + 0.4 * i])            # loads of different sizes
    dp = (R.T @ g)[2] / A                                      # -(1/A) (R^T (-g)) . e_z
    return ("object", "punyo", p5, g, -1, 5), dp


def _send_contacts(probe: Probe, world, first_sec: int, n: int, measured) -> list:
    """``n`` contact steps with measured pressure ``measured(dp, i)`` (Pa); their model changes."""
    dps = []
    for i in range(n):
        t = stamp(first_sec + i)
        row, dp = _contact(world, i)
        probe.send("/contacts", rows_to_cloud([row], t))
        probe.send("/pressure/measured", measured_pressure(measured(dp, i) / MEASURED_SCALE, t))
        wait_stamp(probe, "/pressure/residual", t)
        dps.append(dp)
    return dps


def _predicted_at(probe: Probe, world, sec: int, i: int) -> float:
    t = stamp(sec)
    probe.send("/contacts", rows_to_cloud([_contact(world, i)[0]], t))
    return wait_stamp(probe, "/pressure/predicted", t).fluid_pressure


def test_gain_is_fitted_kept_by_a_tare_saved_and_loaded_at_start(tmp_path, rclpy_context, world):
    (tmp_path / "a").mkdir()
    with start_node(tmp_path / "a", "gain_probe_a") as (_, probe, cal):
        send_pose(probe)
        assert tare_pressure(probe).success                      # offset P0 (see tare_pressure)
        # only the sensors with a gain (the Punyo pressure and dense-force models) offer the service
        names = {n for n, _ in probe.get_service_names_and_types()}
        assert {"/pressure/calibrate_gain", "/force/calibrate_gain"} <= names
        assert not {"/patch/calibrate_gain", "/load/calibrate_gain"} & names

        dps = _send_contacts(probe, world, 60, N_CONTACT, lambda dp, i: P0 + K * dp)
        assert min(abs(d) for d in dps) > 10.0                   # every step is a real load (Pa)
        r = probe.call(Trigger, "/pressure/calibrate_gain", Trigger.Request())
        assert r.success is True, r.message
        m = re.search(r"gain ([0-9.eE+-]+) from (\d+) contact samples "
                      r"\(relative standard error ([0-9.eE+-]+)\)", r.message)
        assert m, r.message
        assert float(m.group(1)) == pytest.approx(K, rel=1e-9)
        assert int(m.group(2)) == N_CONTACT
        assert float(m.group(3)) < 1e-6                           # noiseless data: an exact fit
        report = probe.diagnostics()["/sensor_node: pressure"]["calibration"]
        assert report.startswith("tared with 3 samples") and f"; gain {m.group(1)} from 12" in report, report
        # the prediction scales: P0 + K * dp
        _, dp3 = _contact(world, 3)
        assert _predicted_at(probe, world, 80, 3) == pytest.approx(P0 + K * dp3, rel=1e-12)

        # a tare moves the offset, not the gain: contact-free at 1014 hPa -> offset 101400 Pa
        for k in range(3):
            t = stamp(90 + k)
            probe.send("/contacts", empty_cloud(t))
            probe.send("/pressure/measured", measured_pressure(1014.0, t))
            wait_stamp(probe, "/pressure/residual", t)
        assert probe.call(Trigger, "/pressure/tare", Trigger.Request()).success
        assert _predicted_at(probe, world, 95, 3) == pytest.approx(101400.0 + K * dp3, rel=1e-12)

        r = probe.call(Trigger, "/save_calibration", Trigger.Request())
        assert r.success, r.message
        saved = yaml.safe_load(cal.read_text())["sensors"]["pressure"]["calibration"]
        assert saved["gain"] == pytest.approx([K], rel=1e-9)
        assert saved["tare"] == pytest.approx([101400.0], rel=1e-12)
        kept = shutil.copy(cal, tmp_path / "saved.yaml")

    # a restart loads the gain with the tare
    (tmp_path / "b").mkdir()
    with start_node(tmp_path / "b", "gain_probe_b", extra={"calibration_file": str(kept)}) as (_, probe, _):
        send_pose(probe)
        _, dp5 = _contact(world, 5)
        assert _predicted_at(probe, world, 10, 5) == pytest.approx(101400.0 + K * dp5, rel=1e-9)


def test_gain_refused_with_too_few_contact_samples_or_an_ill_conditioned_fit(tmp_path, rclpy_context, world):
    with start_node(tmp_path, "gain_probe_refusals") as (_, probe, cal):
        send_pose(probe)
        r = probe.call(Trigger, "/pressure/calibrate_gain", Trigger.Request())
        assert r.success is False and "has 0 contact samples" in r.message, r.message

        assert tare_pressure(probe).success
        _send_contacts(probe, world, 60, 3, lambda dp, i: P0 + K * dp)
        r = probe.call(Trigger, "/pressure/calibrate_gain", Trigger.Request())
        assert r.success is False, r.message
        assert "has 3 contact samples" in r.message and "at least 10" in r.message, r.message

        # measured changes unrelated to the model's (alternating +-5000 Pa around P0): the fitted gain's
        # relative standard error is far above 0.2 (or the gain is not positive) -> refused
        _send_contacts(probe, world, 70, N_CONTACT, lambda dp, i: P0 + 5000.0 * (-1) ** i)
        r = probe.call(Trigger, "/pressure/calibrate_gain", Trigger.Request())
        assert r.success is False, r.message

        # nothing changed: the prediction is still the tare plus the model's change (gain 1)
        _, dp2 = _contact(world, 2)
        assert _predicted_at(probe, world, 90, 2) == pytest.approx(P0 + dp2, rel=1e-12)
        assert probe.call(Trigger, "/save_calibration", Trigger.Request()).success
        assert yaml.safe_load(cal.read_text())["sensors"]["pressure"]["calibration"].get("gain") is None
