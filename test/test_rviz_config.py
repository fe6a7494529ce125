"""config/sensor_node.rviz shows the Kinova world's robot, markers and predicted dense force.

The topics the node publishes are derived here from config/kinova_punyo.yaml as the node names
them: every sensor ``<s>`` of ``sensors`` gets ``<s>/predicted`` and ``<s>/residual``, plus
``<s>/jacobian`` and ``<s>/markers`` unless ``publish_jacobian`` / ``publish_markers`` is false
(both default true); names are relative, so with no namespace they are ``/<s>/...``.
"""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RVIZ = ROOT / "config" / "sensor_node.rviz"


def _params(name: str = "kinova_punyo.yaml"):
    return yaml.safe_load((ROOT / "config" / name).read_text())["sensor_node"]["ros__parameters"]


def _node_topics(params):
    topics = {}
    for s in params["sensors"]:
        cfg = params[s]
        kind = {"PunyoPressureSensor": "FluidPressure", "PunyoDenseForceSensor": "PointCloud2",
                "ContactSensor": "WrenchStamped", "IsaacContactSensor": "WrenchStamped"}[cfg["type"]]
        topics[f"/{s}/predicted"] = topics[f"/{s}/residual"] = kind
        if cfg.get("publish_jacobian", True):
            topics[f"/{s}/jacobian"] = "PointCloud2"
        if cfg.get("publish_markers", True):
            topics[f"/{s}/markers"] = "MarkerArray"
    return topics


def _displays():
    data = yaml.safe_load(RVIZ.read_text())
    return data, data["Visualization Manager"]["Displays"]


def test_rviz_config_is_yaml_with_the_configs_world_frame_as_fixed_frame():
    data, displays = _displays()
    fixed = data["Visualization Manager"]["Global Options"]["Fixed Frame"]
    assert fixed == _params()["world_frame"] == "world"
    assert all("Class" in d and "Name" in d for d in displays)


def test_robot_model_reads_robot_description_as_latched_by_robot_state_publisher():
    _, displays = _displays()
    robot = [d for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"]
    assert len(robot) == 1 and robot[0]["Enabled"]
    assert robot[0]["Description Source"] == "Topic"
    topic = robot[0]["Description Topic"]
    assert topic["Value"] == "/robot_description"
    assert topic["Durability Policy"] == "Transient Local"   # published once, transient local


def test_every_topic_is_one_the_node_publishes_with_the_display_for_its_type():
    published = _node_topics(_params())
    display_type = {"rviz_default_plugins/MarkerArray": "MarkerArray",
                    "rviz_default_plugins/PointCloud2": "PointCloud2"}
    _, displays = _displays()
    named = [d for d in displays if "Topic" in d]
    assert named
    for d in named:
        topic = d["Topic"]["Value"]
        assert topic in published, f"{d['Name']}: {topic} is not published with kinova_punyo.yaml"
        assert display_type[d["Class"]] == published[topic], (d["Name"], topic)


def test_every_sensors_markers_and_the_predicted_dense_force_are_shown():
    params = _params()
    _, displays = _displays()
    shown = {(d["Class"], d["Topic"]["Value"]) for d in displays if "Topic" in d and d.get("Enabled")}
    for s in params["sensors"]:
        assert ("rviz_default_plugins/MarkerArray", f"/{s}/markers") in shown, s
        if params[s]["type"] == "PunyoDenseForceSensor":
            assert ("rviz_default_plugins/PointCloud2", f"/{s}/predicted") in shown, s
    cloud = next(d for d in displays if d["Class"] == "rviz_default_plugins/PointCloud2")
    # coloured by a field the predicted cloud carries (x y z fx fy fz)
    assert cloud["Color Transformer"] == "Intensity" and cloud["Channel Name"] in ("fx", "fy", "fz")


def test_the_real_configuration_shows_a_subset_of_the_same_topics():
    real = _node_topics(_params("kinova_punyo_real.yaml"))
    assert _params("kinova_punyo_real.yaml")["world_frame"] == "world"
    _, displays = _displays()
    named = {d["Topic"]["Value"] for d in displays if "Topic" in d}
    # the real setup's sensors all appear; the simulator-only ones (Klampt pad, load cell) stay empty
    assert {t for t, kind in real.items() if t.endswith("/markers")} <= named


def test_the_tf_display_is_on_so_every_announced_frame_shows():
    """The node announces its frames on /tf_static and /tf; rviz places every display through TF."""
    cfg = yaml.safe_load(RVIZ.read_text())
    displays = cfg["Visualization Manager"]["Displays"]
    (tf,) = [d for d in displays if d["Class"] == "rviz_default_plugins/TF"]
    assert tf["Enabled"] is True and tf["Value"] is True
