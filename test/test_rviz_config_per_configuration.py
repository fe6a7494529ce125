"""One rviz configuration per shipped sensor_node configuration, listing only what it publishes.

The topics a configuration publishes are derived here from its YAML, as the node names them:
every sensor ``<s>`` of ``sensors`` gets ``<s>/predicted``, ``<s>/residual`` and
``<s>/measured_si``, plus ``<s>/jacobian`` and ``<s>/markers`` unless ``publish_jacobian`` /
``publish_markers`` is false (both default true); names are relative, so with no namespace they
are ``/<s>/...``.  ``/robot_description`` comes from robot_state_publisher, started beside the
node by the launch files.
"""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# shipped sensor_node configuration -> the rviz configuration drawn for it
RVIZ_FOR = {"sensor_node.yaml": "sensor_node.rviz", "kinova_punyo.yaml": "sensor_node.rviz",
            "kinova_punyo_real.yaml": "kinova_punyo_real.rviz"}
KIND = {"PunyoPressureSensor": "FluidPressure", "PunyoDenseForceSensor": "PointCloud2",
        "ContactSensor": "WrenchStamped", "IsaacContactSensor": "WrenchStamped"}
DISPLAY_TYPE = {"rviz_default_plugins/MarkerArray": "MarkerArray",
                "rviz_default_plugins/PointCloud2": "PointCloud2",
                "rviz_default_plugins/RobotModel": "robot_description"}


def _params(config: str):
    return yaml.safe_load((ROOT / "config" / config).read_text())["sensor_node"]["ros__parameters"]


def _published(params):
    topics = {"/robot_description": "robot_description"}
    for s in params["sensors"]:
        cfg = params[s]
        for out in ("predicted", "residual", "measured_si"):
            topics[f"/{s}/{out}"] = KIND[cfg["type"]]
        if cfg.get("publish_jacobian", True):
            topics[f"/{s}/jacobian"] = "PointCloud2"
        if cfg.get("publish_markers", True):
            topics[f"/{s}/markers"] = "MarkerArray"
    return topics


def _displays(rviz: str):
    data = yaml.safe_load((ROOT / "config" / rviz).read_text())
    return data, data["Visualization Manager"]["Displays"]


def _topic(d):
    t = d.get("Description Topic") or d.get("Topic")
    return None if t is None else t["Value"]


def test_every_shipped_sensor_node_configuration_has_its_rviz_configuration():
    shipped = {p.name for p in (ROOT / "config").glob("*.yaml")
               if "sensor_node" in (yaml.safe_load(p.read_text()) or {})}
    assert shipped == set(RVIZ_FOR)
    for rviz in RVIZ_FOR.values():
        assert (ROOT / "config" / rviz).is_file(), rviz


@pytest.mark.parametrize("config", sorted(RVIZ_FOR))
def test_every_display_topic_is_published_by_the_configuration_with_its_type(config):
    params = _params(config)
    published = _published(params)
    data, displays = _displays(RVIZ_FOR[config])
    assert data["Visualization Manager"]["Global Options"]["Fixed Frame"] == params["world_frame"]
    for d in displays:
        topic = _topic(d)
        if topic is None:
            continue
        assert topic in published, f"{RVIZ_FOR[config]}: {d['Name']} shows {topic}, which {config} " \
                                   "never publishes"
        assert DISPLAY_TYPE[d["Class"]] == published[topic], (d["Name"], topic)


@pytest.mark.parametrize("config", sorted(RVIZ_FOR))
def test_every_sensors_markers_and_predicted_dense_force_are_shown(config):
    params = _params(config)
    _, displays = _displays(RVIZ_FOR[config])
    shown = {(d["Class"], _topic(d)) for d in displays if _topic(d) and d.get("Enabled")}
    for s in params["sensors"]:
        if params[s].get("publish_markers", True):
            assert ("rviz_default_plugins/MarkerArray", f"/{s}/markers") in shown, s
        if params[s]["type"] == "PunyoDenseForceSensor":
            assert ("rviz_default_plugins/PointCloud2", f"/{s}/predicted") in shown, s


def test_the_real_rvizs_displays_are_exactly_the_real_configurations_outputs():
    params = _params("kinova_punyo_real.yaml")
    _, displays = _displays("kinova_punyo_real.rviz")
    topics = sorted(t for t in map(_topic, displays) if t)
    # two sensors, markers each, plus the dense field and the robot: no Klampt pad or load cell
    assert params["sensors"] == ["punyo_pressure", "punyo_force"]
    assert topics == ["/punyo_force/markers", "/punyo_force/predicted", "/punyo_pressure/markers",
                      "/robot_description"]


def test_the_real_launch_files_default_rviz_is_the_real_configurations():
    text = (ROOT / "launch" / "real_punyo.launch.py").read_text()
    assert re.search(r'"config", default_value=_share\("config", "kinova_punyo_real.yaml"\)', text)
    assert re.search(r'"rviz_config", default_value=_share\("config", "kinova_punyo_real.rviz"\)', text)
