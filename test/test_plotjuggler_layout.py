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


LAYOUTS = ("plotjuggler_layout.xml", "plotjuggler_layout_real.xml")


def test_layouts_autoscale_their_axes():
    # PlotJuggler applies a saved <range> as a fixed zoom; without one each plot fits its data,
    # and a <limitY/> without min/max sets no limit.
    for name in LAYOUTS:
        root = ET.parse(ROOT / "config" / name).getroot()
        plots = list(root.iter("plot"))
        assert plots, name
        for plot in plots:
            assert plot.find("range") is None, name
            limit = plot.find("limitY")
            assert limit is None or not ({"min", "max"} & set(limit.attrib)), name


def _real_sensor():
    cfg = yaml.safe_load((ROOT / "config" / "kinova_punyo_real.yaml").read_text())
    return next(iter(cfg.values()))["ros__parameters"]


def test_real_layout_plots_prediction_measured_si_residual_and_the_drivers_own_reading():
    params = _real_sensor()
    root = ET.parse(ROOT / "config" / "plotjuggler_layout_real.xml").getroot()
    curves = [c.get("name") for c in root.iter("curve")]
    subscribed = {t.get("name") for t in root.iter("topic")}
    pressure = [s for s in params["sensors"] if params[s]["type"] == "PunyoPressureSensor"]
    assert pressure == ["punyo_pressure"]
    s = pressure[0]
    # the driver's std_msgs/Float32 has one field, `data`, under its own topic
    assert params[s]["measured_type"] == "std_msgs/msg/Float32"
    driver = params[s]["measured_topic"]
    assert sorted(curves) == sorted([f"/{s}/predicted/fluid_pressure", f"/{s}/measured_si/fluid_pressure",
                                     f"/{s}/residual/fluid_pressure", f"{driver}/data"])
    for c in curves:   # every curve comes from a subscribed topic
        assert any(c.startswith(t + "/") for t in subscribed), c
    # header-less driver messages: all curves on receive time
    assert root.find(".//plugin[@ID='ROS2 Topic Subscriber']/use_header_stamp").get("value") == "false"
