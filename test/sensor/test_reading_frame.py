"""BaseSensor.reading_frame: the frame a model's values are in (sensor -> body), per model."""
import numpy as np

from vsf_sensor_ros.sensor import BaseSensor, PunyoPressureSensor
from vsf_sensor_ros.sensor.isaac_contact_sensor import CsProperties, IsaacContactSensor
from vsf_sensor_ros.sensor.klampt_contact_sensor import ContactSensor
from vsf_sensor_ros.ros.frames import sensor_frame_transform


def test_each_model_names_the_frame_its_values_are_in():
    # Klampt pad: Tsensor itself (a rotation of 90 deg about z and an offset, written out by hand)
    T = np.array([[0.0, -1.0, 0.0, 0.01], [1.0, 0.0, 0.0, 0.02], [0.0, 0.0, 1.0, 0.05], [0.0, 0.0, 0.0, 1.0]])
    pad = ContactSensor("pad", "link")
    pad.setSetting("Tsensor", " ".join(str(v) for v in list(T[:3, :3].ravel()) + list(T[:3, 3])))
    np.testing.assert_allclose(pad.reading_frame(), T, atol=1e-12)
    # Isaac: a translation by its position
    load = IsaacContactSensor("load", "box", CsProperties(position=(0.0, 0.0, 0.02)))
    expected = np.eye(4)
    expected[2, 3] = 0.02
    np.testing.assert_array_equal(load.reading_frame(), expected)
    # the Punyo models and a model of a user's own: the body frame
    assert PunyoPressureSensor("p", "punyo").reading_frame() is None

    class Mine(BaseSensor):
        pass
    assert Mine("m", "body").reading_frame() is None
    # what the nodes stamp with: the same, and None for an object without the method
    np.testing.assert_array_equal(sensor_frame_transform(load), expected)
    assert sensor_frame_transform(object()) is None
