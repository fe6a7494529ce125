"""Each shipped PlotJuggler layout overlays predicted and measured in one panel, in one SI unit.

For every scalar sensor of the layout's configuration, one ``<plot>`` holds the predicted curve
and a measured curve of the same field.  The measured curve is ``<s>/measured_si`` (the node's
republished reading, x ``measured_scale`` = SI, stamped with the paired contacts stamp), or the
raw ``<s>/measured`` only where that stream already is SI: ``measured_scale`` 1, the predicted
type, and the default topic.  The real rig's driver publishes hPa (scale 100): its raw topic may
appear, but never in the panel of a predicted curve.
"""
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PREDICTED_TYPE = {"PunyoPressureSensor": "sensor_msgs/msg/FluidPressure",
                  "ContactSensor": "geometry_msgs/msg/WrenchStamped",
                  "IsaacContactSensor": "geometry_msgs/msg/WrenchStamped"}
# layout -> the configuration it is drawn for
LAYOUTS = {"plotjuggler_layout.xml": "sensor_node.yaml",
           "plotjuggler_layout_real.xml": "kinova_punyo_real.yaml"}


def _params(config: str):
    return next(iter(yaml.safe_load((ROOT / "config" / config).read_text()).values()))["ros__parameters"]


def _plots(layout: str):
    root = ET.parse(ROOT / "config" / layout).getroot()
    return [[c.get("name") for c in plot.iter("curve")] for plot in root.iter("plot")]


def _raw_is_si(cfg) -> bool:
    return (float(cfg.get("measured_scale", 1.0)) == 1.0
            and cfg.get("measured_type", "") in ("", PREDICTED_TYPE[cfg["type"]])
            and not cfg.get("measured_topic"))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_predicted_and_an_si_measured_curve_share_one_panel_per_scalar_sensor(layout):
    params = _params(LAYOUTS[layout])
    plots = _plots(layout)
    checked = 0
    for s in params["sensors"]:
        cfg = params[s]
        if cfg["type"] == "PunyoDenseForceSensor":
            continue   # a per-vertex field: rviz / Foxglove
        measured_topics = [f"/{s}/measured_si"] + ([f"/{s}/measured"] if _raw_is_si(cfg) else [])
        for curves in plots:
            for pred in (c for c in curves if c.startswith(f"/{s}/predicted/")):
                field = pred[len(f"/{s}/predicted/"):]
                if any(f"{m}/{field}" in curves for m in measured_topics):
                    checked += 1
                    break
            else:
                continue
            break
        else:
            pytest.fail(f"{layout}: no panel overlays /{s}/predicted with an SI measured curve "
                        f"({' or '.join(measured_topics)})")
    assert checked


def test_the_real_layout_overlays_measured_si_and_keeps_the_raw_hpa_reading_apart():
    params = _params("kinova_punyo_real.yaml")
    cfg = params["punyo_pressure"]
    assert float(cfg["measured_scale"]) == 100.0          # the driver's hPa: its raw stream is not SI
    raw = f"{cfg['measured_topic']}/data"
    plots = _plots("plotjuggler_layout_real.xml")
    together = [c for c in plots if "/punyo_pressure/predicted/fluid_pressure" in c]
    assert together == [["/punyo_pressure/measured_si/fluid_pressure",
                         "/punyo_pressure/predicted/fluid_pressure"]]
    assert [raw] in plots                                # the driver's own reading, its own panel
    subscribed = {t.get("name") for t in ET.parse(ROOT / "config" / "plotjuggler_layout_real.xml")
                  .getroot().iter("topic")}
    assert "/punyo_pressure/measured_si" in subscribed
