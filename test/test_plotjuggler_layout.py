"""The shipped PlotJuggler layout plots predicted against measured for each demo sensor."""
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _demo_sensors():
    cfg = yaml.safe_load((ROOT / "config" / "sensor_node.yaml").read_text())
    params = next(iter(cfg.values()))["ros__parameters"]
    return params["sensors"], params


def test_layout_is_well_formed_and_names_predicted_and_measured_for_each_scalar_sensor():
    curves = [c.get("name") for c in ET.parse(ROOT / "config" / "plotjuggler_layout.xml").iter("curve")]
    sensors, params = _demo_sensors()
    for s in sensors:
        if params[s]["type"] == "PunyoDenseForceSensor":
            continue  # a per-vertex field: rviz / Foxglove, not a time series
        for kind in ("predicted", "measured"):
            assert any(c.startswith(f"/{s}/{kind}/") for c in curves), (s, kind, curves)


def test_layout_curves_use_the_fields_of_the_sensor_message_types():
    # FluidPressure -> fluid_pressure; WrenchStamped -> wrench/force/{x,y,z}
    fields = {"PunyoPressureSensor": "fluid_pressure", "ContactSensor": "wrench/force/",
              "IsaacContactSensor": "wrench/force/"}
    sensors, params = _demo_sensors()
    curves = [c.get("name") for c in ET.parse(ROOT / "config" / "plotjuggler_layout.xml").iter("curve")]
    for c in curves:
        s = c.split("/")[1]
        assert s in sensors, c
        assert fields[params[s]["type"]] in c, c
