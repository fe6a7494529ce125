"""What the launch files compute before starting anything (rig/launch_support.py), without ``launch``."""
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
import yaml

from vsf_sensor_ros.rig import launch_support as ls

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"

URDF = """<robot name="two">
  <link name="world"/>
  <joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>
  <link name="a"><visual><geometry><mesh filename="meshes/a.stl"/></geometry></visual>
    <collision><geometry><mesh filename="package://some_pkg/meshes/a.stl"/></geometry></collision></link>
  <joint name="J1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="b"/>
  <joint name="J2" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="J1" multiplier="2"/></joint>
  <link name="c"/>
  <transmission name="t1"><joint name="J1"/><actuator name="m1"/></transmission>
</robot>
"""


def _write(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _file_of(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return Path(url2pathname(parsed.path))


# --------------------------------------------------------------------------- parameter files
@pytest.mark.parametrize("key", ["sensor_node", "/sensor_node", "/robot1/sensor_node", "/**/sensor_node",
                                 "/**"])
def test_the_node_section_is_found_under_every_key_ros_accepts(tmp_path, key):
    f = _write(tmp_path / "p.yaml", {"other_node": {"ros__parameters": {"x": 1}},
                                     key: {"ros__parameters": {"world_frame": "map",
                                                               "punyo": {"mesh": "m.ply"}}}})
    assert ls.load_node_parameters(str(f)) == {"world_frame": "map", "punyo": {"mesh": "m.ply"}}


def test_a_file_without_the_node_section_is_refused_naming_its_keys(tmp_path):
    f = _write(tmp_path / "p.yaml", {"other_node": {"ros__parameters": {"x": 1}}})
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.load_node_parameters(str(f))
    assert (info.value.parameter, info.value.value, info.value.reason) == ("config", str(f),
                                                                           "no_node_section")
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.load_node_parameters(str(tmp_path / "absent.yaml"))
    assert (info.value.parameter, info.value.reason) == ("config", "missing")


def test_rekeyed_file_holds_the_same_parameters_for_any_node_and_namespace(tmp_path):
    params = ls.load_node_parameters(str(ROOT / "config" / "sensor_node.yaml"))
    out = ls.write_node_parameters(params, str(tmp_path))
    data = yaml.safe_load(out.read_text())
    assert list(data) == ["/**"]
    assert data["/**"]["ros__parameters"] == params
    # the lists keep one element type each (rcl refuses mixed lists) and infinities survive
    assert data["/**"]["ros__parameters"]["punyo_pad"]["fSaturation"] == [float("inf")] * 3
    assert data["/**"]["ros__parameters"]["punyo_pad"]["patchMin"] == [-0.03, -0.03]


# --------------------------------------------------------------------------- assets_dir
def test_assets_dir_follows_the_nodes_order_env_then_argument_then_file(tmp_path):
    env_dir, arg_dir, file_dir = (tmp_path / n for n in ("env", "arg", "file"))
    for d in (env_dir, arg_dir, file_dir):
        d.mkdir()
    params = {"assets_dir": str(file_dir)}
    assert ls.effective_assets_dir(str(arg_dir), params, {"VSF_ASSETS": str(env_dir)}) == str(env_dir)
    assert ls.effective_assets_dir(str(arg_dir), params, {"VSF_ASSETS": ""}) == str(arg_dir)
    assert ls.effective_assets_dir("", params, {}) == str(file_dir)
    assert ls.effective_assets_dir("", {"assets_dir": ""}, {}) == ""


def test_a_relative_assets_dir_is_made_absolute_against_the_working_directory(tmp_path):
    (tmp_path / "robot" / "files").mkdir(parents=True)
    got = ls.effective_assets_dir("", {"assets_dir": "robot/files"}, {}, cwd=str(tmp_path))
    assert got == str((tmp_path / "robot" / "files").resolve()) and os.path.isabs(got)


@pytest.mark.parametrize("argument, params, environ, source, value", [
    ("nowhere", {}, {}, "argument", "nowhere"),
    ("", {"assets_dir": "../shared/x"}, {}, "file", "../shared/x"),
    ("", {}, {"VSF_ASSETS": "/nonexistent/gone"}, "environment", "/nonexistent/gone"),
])
def test_a_missing_assets_dir_is_refused_naming_where_it_came_from(tmp_path, argument, params, environ,
                                                                   source, value):
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.effective_assets_dir(argument, params, environ, cwd=str(tmp_path))
    e = info.value
    assert (e.parameter, e.value, e.reason, e.source) == ("assets_dir", value, "missing", source)


# --------------------------------------------------------------------------- URDF
def test_the_urdf_is_the_nodes_file_resolved_against_assets_dir(tmp_path):
    (tmp_path / "r.urdf").write_text(URDF)
    assert ls.robot_description_file({"robot_description_path": "r.urdf"}, str(tmp_path)) == \
        (tmp_path / "r.urdf").resolve()
    other = tmp_path / "other.urdf"
    other.write_text(URDF)
    assert ls.robot_description_file({"robot_description_path": "r.urdf"}, str(tmp_path), str(other)) == \
        other.resolve()
    # no URDF configured: the node's embedded arm, shipped in the package
    assert ls.robot_description_file({}, "") == ls.EMBEDDED_URDF and ls.EMBEDDED_URDF.is_file()
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.robot_description_file({"robot_description_path": "x.urdf"}, str(tmp_path))
    assert (info.value.parameter, info.value.value, info.value.reason) == ("robot_description_path", "x.urdf",
                                                                           "missing")
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.robot_description_file({"robot_description": "<robot name='r'/>"}, "")
    assert (info.value.parameter, info.value.reason) == ("robot_description", "text_not_file")


def test_state_publisher_urdf_has_absolute_mesh_uris_and_the_drivers_joint_names(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "a.stl").write_text("solid a\nendsolid a\n")
    (tmp_path / "r.urdf").write_text(URDF)
    text = ls.urdf_for_state_publisher(str(tmp_path / "r.urdf"), ls.parse_joint_name_map(["j1:J1", "j2:J2"]))
    root = ET.fromstring(text)
    meshes = [m.get("filename") for m in root.iter("mesh")]
    assert _file_of(meshes[0]) == (tmp_path / "meshes" / "a.stl").resolve() and _file_of(meshes[0]).is_file()
    assert meshes[1] == "package://some_pkg/meshes/a.stl"
    assert [j.get("name") for j in root.findall("joint")] == ["fix", "j1", "j2"]
    assert root.find("joint[@name='j2']/mimic").get("joint") == "j1"
    assert root.find("transmission/joint").get("name") == "j1"
    # links (the TF frames) are untouched
    assert [lk.get("name") for lk in root.findall("link")] == ["world", "a", "b", "c"]
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.urdf_for_state_publisher(str(tmp_path / "r.urdf"), {"joint_1": "Actuator1"})
    assert (info.value.parameter, info.value.value, info.value.reason) == ("joint_name_map", ["Actuator1"],
                                                                           "unknown_joint")


def test_kinova_urdf_renamed_with_the_real_configs_map_has_every_driver_joint():
    if not (FIXTURES / "kinova_gen3.urdf").is_file():
        pytest.skip(f"Kinova/Punyo fixtures absent at {FIXTURES}")
    params = ls.load_node_parameters(str(ROOT / "config" / "kinova_punyo_real.yaml"))
    name_map = ls.parse_joint_name_map(params["joint_name_map"])
    root = ET.fromstring(ls.urdf_for_state_publisher(str(FIXTURES / "kinova_gen3.urdf"), name_map))
    movable = [j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"]
    assert movable == [f"joint_{i}" for i in range(1, 8)]   # the Kinova Gen3 driver's names, in order
    for m in root.iter("mesh"):
        assert _file_of(m.get("filename")).is_file(), m.get("filename")


def test_joint_name_map_entries_must_be_driver_colon_urdf_pairs():
    assert ls.parse_joint_name_map(["joint_1:Actuator1", " joint_2 : Actuator2 "]) == {
        "joint_1": "Actuator1", "joint_2": "Actuator2"}
    for bad, entry, reason in ((["joint_1"], "joint_1", "format"), (["a:b:c"], "a:b:c", "format"),
                               ([":A"], ":A", "format"), (["a:"], "a:", "format"),
                               (["a:A", "a:B"], "a:B", "driver_twice"), (["a:A", "b:A"], "b:A",
                                                                         "target_twice")):
        with pytest.raises(ls.LaunchConfigError) as info:
            ls.parse_joint_name_map(bad)
        assert (info.value.parameter, info.value.value, info.value.reason) == ("joint_name_map", entry,
                                                                               reason)


# --------------------------------------------------------------------------- rviz, worlds
def test_rviz_topics_move_into_the_namespace_and_tf_stays_global(tmp_path):
    src = tmp_path / "a.rviz"
    src.write_text(yaml.safe_dump({"Visualization Manager": {"Displays": [
        {"Class": "rviz_default_plugins/MarkerArray", "Topic": {"Value": "/punyo_pressure/markers"}},
        {"Class": "rviz_default_plugins/RobotModel", "Description Topic": {"Value": "/robot_description"}},
        {"Class": "x", "Topic": {"Value": "/tf"}},
        {"Class": "y", "Topic": {"Value": "/robot1/already"}}]}}))
    assert ls.rviz_config_in_namespace(str(src), "") == src
    out = yaml.safe_load(ls.rviz_config_in_namespace(str(src), "robot1", str(tmp_path)).read_text())
    displays = out["Visualization Manager"]["Displays"]
    values = [d.get("Topic", d.get("Description Topic"))["Value"] for d in displays]
    assert values == ["/robot1/punyo_pressure/markers", "/robot1/robot_description", "/tf", "/robot1/already"]


def test_each_simulator_world_has_its_shipped_node_config():
    for world in ("embedded", "kinova"):
        cfg = ROOT / "config" / ls.sim_world_config(world)
        assert ls.load_node_parameters(str(cfg))["contact_body_names"] == ["punyo", "object", "table"]
    with pytest.raises(ls.LaunchConfigError) as info:
        ls.sim_world_config("mars")
    assert (info.value.parameter, info.value.value, info.value.reason) == ("world", "mars", "unknown_world")
