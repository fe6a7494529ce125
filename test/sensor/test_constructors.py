"""sensor_from_config: type registry, dispatch to Class.from_config, errors naming the value."""
import numpy as np
import pytest

from vsf_sensor_ros.sensor import (BaseSensor, ContactSensor, IsaacContactSensor, PunyoDenseForceSensor,
                                   PunyoPressureSensor, register_sensor_type, sensor_class,
                                   sensor_from_config)
from vsf_sensor_ros.sensor import constructors as config_module
from vsf_sensor_ros.sensor.errors import SettingError


@pytest.mark.parametrize("type_name, cls", [
    ("PunyoPressureSensor", PunyoPressureSensor), ("PunyoDenseForceSensor", PunyoDenseForceSensor),
    ("ContactSensor", ContactSensor), ("IsaacContactSensor", IsaacContactSensor)])
def test_each_registered_type_builds_its_class_with_name_and_attachment(type_name, cls):
    s = sensor_from_config({"name": "s1", "type": type_name, "attachment": "punyo"})
    assert type(s) is cls
    assert (s.name, s.attachModelName) == ("s1", "punyo")
    assert sensor_class(type_name) is cls


def test_registry_entries_are_lazy_module_strings():
    assert config_module.SENSOR_TYPES["ContactSensor"] == \
        "vsf_sensor_ros.sensor.klampt_contact_sensor:ContactSensor"


def test_pressure_specific_keys_reach_the_sensor():
    s = sensor_from_config({"name": "p", "type": "PunyoPressureSensor", "attachment": "punyo",
                            "base_normal_local": [0.0, 0.0, -3.0], "variance": 0.25})
    np.testing.assert_allclose(s.base_normal_local, [0.0, 0.0, -1.0])
    assert s.measurement_errors() == [0.5]


def test_unknown_type_names_it_and_lists_the_known_ones():
    with pytest.raises(SettingError) as err:
        sensor_from_config({"name": "b", "type": "Barometer", "attachment": "punyo"})
    assert (err.value.setting, err.value.value, err.value.reason) == ("type", "Barometer", "unknown_type")
    assert {"IsaacContactSensor", "PunyoPressureSensor"} <= set(err.value.expected)


@pytest.mark.parametrize("cfg, setting, value, reason", [
    ({"type": "PunyoPressureSensor", "attachment": "punyo"}, "name", None, "missing"),
    ({"name": "", "type": "PunyoPressureSensor", "attachment": "punyo"}, "name", "", "missing"),
    ({"name": "p", "attachment": "punyo"}, "type", None, "missing"),
    ({"name": "p", "type": "PunyoPressureSensor", "attachment": "punyo", "varience": 1.0}, "varience", 1.0,
     "unknown_key"),
    ({"name": "p", "type": "PunyoDenseForceSensor"}, "attachment", None, "missing"),
])
def test_bad_configs_raise_naming_the_problem(cfg, setting, value, reason):
    with pytest.raises(SettingError) as err:
        sensor_from_config(cfg)
    assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, reason)


def test_not_a_mapping_is_rejected():
    with pytest.raises(ValueError):
        sensor_from_config(["name", "p"])


def test_register_sensor_type_adds_a_class():
    class Thermometer(BaseSensor):
        type_name = "Thermometer"

        @classmethod
        def from_config(cls, name, config):
            s = cls(name, config["attachment"])
            s.offset = config.get("offset", 0.0)
            return s
    try:
        register_sensor_type("Thermometer", Thermometer)
        s = sensor_from_config({"name": "t", "type": "Thermometer", "attachment": "hand", "offset": 2.0})
        assert isinstance(s, Thermometer) and s.offset == 2.0 and s.attachModelName == "hand"
    finally:
        config_module.SENSOR_TYPES.pop("Thermometer", None)
    with pytest.raises(ValueError):
        register_sensor_type("X", "no_colon_here")
