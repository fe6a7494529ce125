"""Unknown parameter keys and parameters files keyed for another node, found with rcl's rules."""
from vsf_sensor_ros.ros import parameters as pc

NODE = {"tare_samples", "calibration_file", "qos.inputs.depth", "world_frame"}
PRESSURE = {"type", "attachment", "measured_scale", "measured_topic", "base_normal_local", "variance"}
BODY = {"mesh", "parent_link", "transform"}


def _unknown(names):
    return pc.unknown_keys(names, NODE, {"punyo_pressure": PRESSURE}, {"punyo": BODY})


def test_misspelt_sensor_key_is_named_with_the_closest_known_key():
    (u,) = _unknown(["punyo_pressure.measured_scael"])
    assert (u.name, u.suggestion, u.where) == ("punyo_pressure.measured_scael",
                                               "punyo_pressure.measured_scale", "sensor punyo_pressure")
    assert "did you mean 'punyo_pressure.measured_scale'" in u.message()
    (t,) = _unknown(["punyo_pressure.measured_topik"])
    assert t.suggestion == "punyo_pressure.measured_topic"


def test_misspelt_top_level_and_body_keys():
    u, b = _unknown(["tare_sampels", "punyo.parent_lnk"])
    assert u.suggestion == "tare_samples" and u.where == "node"
    assert b.suggestion == "punyo.parent_link" and b.where == "body punyo"


def test_known_keys_and_rclpy_keys_are_not_reported():
    assert _unknown(["tare_samples", "qos.inputs.depth", "punyo_pressure.variance", "punyo.mesh",
                     "use_sim_time", "qos_overrides./contacts.subscription.depth"]) == []


def test_a_misspelt_section_is_reported_although_its_keys_are_valid():
    (u,) = _unknown(["punyo_presure.measured_scale"])
    assert u.suggestion == "punyo_pressure.measured_scale"


def test_nothing_close_gives_no_suggestion():
    (u,) = _unknown(["zzzz"])
    assert u.suggestion is None and "did you mean" not in u.message()


def test_params_files_are_read_from_ros_args_sections_only():
    argv = ["sensor_node", "--params-file", "not_ros.yaml", "--ros-args", "-p", "a:=1",
            "--params-file", "a.yaml", "--", "--ros-args", "--params-file", "b.yaml"]
    assert pc.params_files(argv) == ["a.yaml", "b.yaml"]


def test_node_key_matching_follows_rcl():
    assert pc.node_key_matches("sensor_node", "/sensor_node")
    assert pc.node_key_matches("/sensor_node", "/sensor_node")
    assert not pc.node_key_matches("sensor_nod", "/sensor_node")
    assert not pc.node_key_matches("sensor_node", "/left/sensor_node")
    assert pc.node_key_matches("/**", "/left/sensor_node")
    assert pc.node_key_matches("/**/sensor_node", "/sensor_node")
    assert pc.node_key_matches("/**/sensor_node", "/left/sensor_node")
    assert pc.node_key_matches("/*/sensor_node", "/left/sensor_node")
    assert not pc.node_key_matches("/*/sensor_node", "/sensor_node")
    assert pc.node_key_matches("left/sensor_*", "/left/sensor_node")


def test_unmatched_file_is_named_with_what_it_is_keyed_by(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sensor_nod:\n  ros__parameters:\n    tare_samples: 5\n")
    nested = tmp_path / "nested.yaml"
    nested.write_text("left:\n  sensor_node:\n    ros__parameters:\n      tare_samples: 5\n")
    argv = ["x", "--ros-args", "--params-file", str(bad), "--params-file", str(nested)]
    (left,) = pc.unmatched_params_files(argv, "/left/sensor_node")
    assert str(bad) in left and "'sensor_nod'" in left and "'/left/sensor_node'" in left
    first, second = pc.unmatched_params_files(argv, "/sensor_node")
    assert str(bad) in first and "'sensor_nod'" in first
    assert str(nested) in second and "'left/sensor_node'" in second
