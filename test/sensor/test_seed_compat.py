"""Seed code runs after swapping ``vsf.sensor`` for ``vsf_sensor_ros.sensor``.

Written the way OpenVSF's own sensor tests and constructors use the API (their Punyo sensor tests'
scenarios, restated here): seed module paths
(``base_sensor``, ``punyo_pressure_sensor``, ``punyo_dense_force_sensor``, ``constructors``),
keyword arguments, Klampt rigid objects whose mesh is set through ``.vertices``/``.indices``,
a ``SimState()`` filled in after construction or subclassed with its own contact queries, element
indices given as float tensors or Python lists with ``[]`` for "not used", and
the seed's config objects (``SensorConfig``, ``CalibrationConfig(type='tare')``).
Expected values are worked out by hand in the comments.
"""
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from vsf_sensor_ros.sensor import BaseCalibrator, BaseSensor, TareCalibrator
from vsf_sensor_ros.sensor.base_sensor import ContactState, SimState
from vsf_sensor_ros.sensor.constructors import (CalibrationConfig, SensorConfig, calibration_from_config,
                                                sensor_from_config)
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.sensor.punyo_dense_force_sensor import PunyoDenseForceSensor
from vsf_sensor_ros.sensor.punyo_pressure_sensor import PunyoPressureSensor

klampt = pytest.importorskip("klampt")


def _triangle_object(name: str):
    """A Klampt rigid object with the seed tests' one triangle (0,0,0), (1,0,0), (0,1,0): area 0.5."""
    world = klampt.WorldModel()
    obj = world.makeRigidObject(name)
    mesh = klampt.TriangleMesh()
    mesh.vertices = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    mesh.indices = [[0, 1, 2]]
    obj.geometry().setTriangleMesh(mesh)
    return world, obj           # the world owns the object: keep it alive


# ------------------------------------------------------------------ PunyoPressureSensor

def test_pressure_sensor_as_the_seed_builds_and_reads_it():
    sensor = PunyoPressureSensor(name="test_sensor", punyo_link="punyo_link",
                                 base_normal_local=[0.0, 0.0, 1.0])
    assert (sensor.name, sensor.attachModelName, sensor.tare) == ("test_sensor", "punyo_link", None)
    assert sensor.measurement_names() == ["pressure"]
    _world, obj = _triangle_object("punyo_link")
    sensor.attach(obj)
    assert sensor.object == obj
    assert np.isclose(sensor.base_area, 0.5)
    # the seed keeps the normal as a tensor of torch's default dtype
    assert isinstance(sensor.base_normal_local, torch.Tensor)
    assert sensor.base_normal_local.shape == (3,)
    assert torch.allclose(sensor.base_normal_local, torch.tensor([0.0, 0.0, 1.0]))

    state = SimState()
    state.contacts = {("punyo_link", "other_body"): ContactState(
        points=torch.zeros((0, 3)), forces=torch.zeros((0, 3)), elems1=torch.zeros((0,), dtype=torch.int64))}
    state.body_transforms = {"punyo_link": torch.eye(4)}
    state.body_states = {"punyo_link": torch.zeros(6)}
    assert torch.allclose(sensor.predict(state), torch.tensor([0.0]))

    # force (-1, -1, -1) on the membrane: p = -(1/A) f.n = -(1/0.5)(-1) = 2
    state.contacts = {("punyo_link", "other_body"): ContactState(
        points=torch.zeros((1, 3)), forces=-torch.ones((1, 3)), elems1=torch.tensor([0]), elems2=None)}
    assert torch.allclose(sensor.predict(state), torch.tensor([2.0]))
    jac = sensor.measurement_force_jacobian(state)
    assert list(jac) == [("punyo_link", "other_body")]
    assert torch.allclose(jac["punyo_link", "other_body"], torch.tensor([[[0.0, 0.0, -2.0]]]))


def test_pressure_normal_assigned_as_a_tensor_is_used():
    sensor = PunyoPressureSensor("s", "punyo_link")
    sensor.base_normal_local = torch.tensor([0.0, 2.0, 0.0])           # normalised to +y
    assert torch.equal(sensor.base_normal_local, torch.tensor([0.0, 1.0, 0.0]))
    # triangle in the x-z plane: its shadow along y has area 0.5
    sensor.attach((np.array([[0.0, 0, 0], [1, 0, 0], [0, 0, 1]]), np.array([[0, 1, 2]])))
    st = SimState({"punyo_link": torch.eye(4, dtype=torch.float64)}, {}, {("punyo_link", "o"): ContactState(
        torch.zeros(1, 3, dtype=torch.float64), torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64))})
    assert sensor.predict(st).item() == pytest.approx(-2.0)          # -(1/0.5) * 1
    with pytest.raises(SettingError) as err:
        sensor.base_normal_local = torch.zeros(3)
    assert err.value.setting == "base_normal_local"


@pytest.mark.parametrize("num_contacts", [1, 11, 51, 91])
def test_pressure_float_element_tensor_and_jacobian_agree_as_the_seed_checks(num_contacts):
    sensor = PunyoPressureSensor(name="test_sensor", punyo_link="punyo_link",
                                 base_normal_local=[0.0, 0.0, 1.0])
    _world, obj = _triangle_object("punyo_link")
    sensor.attach(obj)
    torch.manual_seed(num_contacts)
    H = torch.eye(4)
    H[:3, :3] = torch.tensor(Rotation.random(random_state=num_contacts).as_matrix(), dtype=torch.float32)
    H[:3, 3] = torch.rand(3)
    forces = torch.rand((num_contacts, 3))
    state = SimState()
    state.contacts = {("punyo_link", "other_body"): ContactState(
        points=torch.rand((num_contacts, 3)), forces=forces,
        elems1=torch.zeros((num_contacts,)), elems2=None)}                # float zeros, as the seed writes it
    state.body_transforms = {"punyo_link": H}
    measurement = sensor.predict(state)
    jacobian = sensor.measurement_force_jacobian(state)[("punyo_link", "other_body")]
    assert torch.allclose(torch.einsum("opc,pc->o", jacobian, forces), measurement, atol=1e-5)
    # by hand: -(1/A) sum_i f_i . (R n), R n = third column of R
    by_hand = -(forces.double() @ H[:3, 2].double()).sum() / 0.5
    assert measurement.item() == pytest.approx(by_hand.item(), rel=1e-5, abs=1e-5)


# ------------------------------------------------------------------ PunyoDenseForceSensor

def test_dense_sensor_attaches_to_a_rigid_object_of_another_name_with_a_warning():
    _world, obj = _triangle_object("test_rigid_obj")
    sensor = PunyoDenseForceSensor("punyo_sensor", "link0")            # the seed's test names
    with pytest.warns(UserWarning):
        sensor.attach(obj)
    mesh = obj.geometry().getTriangleMesh()
    np.testing.assert_allclose(sensor.vertices, mesh.getVertices())
    np.testing.assert_array_equal(sensor.triangles, mesh.getIndices())
    assert len(sensor.measurement_names()) == 3 * 3

    # per-vertex contact on vertex 1 with force (0, 0, 2), elements as a float tensor
    state = SimState({"link0": torch.eye(4)}, {}, {("link0", "some_other_body"): ContactState(
        torch.zeros(1, 3), torch.tensor([[0.0, 0.0, 2.0]]), elems1=torch.tensor([1.0]))})
    out = sensor.predict_torch(state).reshape(3, 3)
    np.testing.assert_allclose(out.numpy(), [[0, 0, 0], [0, 0, 2], [0, 0, 0]], atol=1e-6)
    J = sensor.measurement_force_jacobian(state)[("link0", "some_other_body")]
    assert J.shape == (9, 1, 3)
    np.testing.assert_allclose(J[3:6, 0, :].numpy(), np.eye(3), atol=1e-6)


def test_matching_name_attaches_without_warning():
    _world, obj = _triangle_object("link0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PunyoDenseForceSensor("punyo_sensor", "link0").attach(obj)
        PunyoPressureSensor("p", "link0").attach(obj)


# rotation about z by +90 degrees: R^T maps world x to local -y
RZ90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


class _SeedStyleContacts:
    """A contact set written as seed code writes one: Python lists of elements, ``[]`` for "not used"."""

    def __init__(self, forces, elems1, elems2, points):
        self.elems1, self.elems2 = elems1, elems2
        self.points = torch.tensor(points, dtype=torch.float32)
        self.forces = torch.tensor(forces, dtype=torch.float32)


class _SeedStyleState(SimState):
    """A ``SimState`` subclass that skips ``SimState.__init__`` and answers the two contact queries
    itself, for one body touching ``some_other_body``, as seed code builds one."""

    def __init__(self, body, contacts, rotation=None):
        T = torch.eye(4)
        if rotation is not None:
            T[:3, :3] = torch.tensor(rotation, dtype=torch.float32)
        self.body_transforms = {body: T}
        self._body, self._contacts = body, contacts

    def bodies_in_contact(self, name, reverse=False):
        return ["some_other_body"] if name == self._body else []

    def contact_states_on_body(self, name, reverse=False):
        return [self._contacts] if name == self._body else []


def _dense_on_triangle():
    _world, obj = _triangle_object("link0")
    sensor = PunyoDenseForceSensor("punyo_sensor", "link0")
    sensor.attach(obj)
    return _world, sensor


def test_dense_per_vertex_with_element_lists_and_an_empty_list_for_not_used():
    _world, sensor = _dense_on_triangle()
    # vertex 1, force (0, 0, 2), identity pose; elems2 = [] means "not used"
    state = _SeedStyleState("link0", _SeedStyleContacts([[0.0, 0.0, 2.0]], [1], [], [[0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(sensor.predict_torch(state).reshape(3, 3).numpy(),
                               [[0, 0, 0], [0, 0, 2], [0, 0, 0]], atol=1e-6)
    # vertex 0, force (1, 0, 0), body turned +90 degrees about z: local force R^T f = (0, -1, 0)
    state = _SeedStyleState("link0", _SeedStyleContacts([[1.0, 0.0, 0.0]], [0], [], [[0.0, 0.0, 0.0]]), RZ90)
    np.testing.assert_allclose(sensor.predict(state).reshape(3, 3).numpy(),
                               [[0, -1, 0], [0, 0, 0], [0, 0, 0]], atol=1e-6)
    # the Jacobian: the block of vertex 0 is R^T, the others zero
    J = sensor.measurement_force_jacobian(state)[("link0", "some_other_body")]
    assert J.shape == (9, 1, 3)
    np.testing.assert_allclose(J[0:3, 0].numpy(), RZ90.T, atol=1e-6)
    np.testing.assert_allclose(J[3:, 0].numpy(), 0.0, atol=1e-6)


@pytest.mark.parametrize("elems1", [None, [], ()])
def test_dense_surface_point_when_elems1_is_empty_and_elems2_names_other_elements(elems1):
    _world, sensor = _dense_on_triangle()
    # a point at (0.5, 0.5, 0), the middle of edge v1-v2: weights (0, 1/2, 1/2); force (1, 0, 0)
    state = _SeedStyleState("link0", _SeedStyleContacts([[1.0, 0.0, 0.0]], elems1, [0], [[0.5, 0.5, 0.0]]))
    np.testing.assert_allclose(sensor.predict_torch(state).reshape(3, 3).numpy(),
                               [[0, 0, 0], [0.5, 0, 0], [0.5, 0, 0]], atol=1e-6)
    J = sensor.measurement_force_jacobian(state)[("link0", "some_other_body")]
    np.testing.assert_allclose(J[0:3, 0].numpy(), 0.0, atol=1e-6)
    np.testing.assert_allclose(J[3:6, 0].numpy(), 0.5 * np.eye(3), atol=1e-6)
    np.testing.assert_allclose(J[6:9, 0].numpy(), 0.5 * np.eye(3), atol=1e-6)
    # turned +90 degrees about z, the world point (-0.5, 0.5, 0) is local R^T p = (0.5, 0.5, 0):
    # the same weights, each block 1/2 R^T
    state = _SeedStyleState("link0", _SeedStyleContacts([[0.0, 0.0, 1.0]], elems1, [0], [[-0.5, 0.5, 0.0]]),
                            RZ90)
    J = sensor.measurement_force_jacobian(state)[("link0", "some_other_body")]
    np.testing.assert_allclose(J[0:3, 0].numpy(), 0.0, atol=1e-6)
    np.testing.assert_allclose(J[3:6, 0].numpy(), 0.5 * RZ90.T, atol=1e-6)
    np.testing.assert_allclose(J[6:9, 0].numpy(), 0.5 * RZ90.T, atol=1e-6)


def test_pressure_with_seed_style_contacts_and_empty_element_lists():
    sensor = PunyoPressureSensor(name="p", punyo_link="link0", base_normal_local=[0.0, 0.0, 1.0])
    _world, obj = _triangle_object("link0")
    sensor.attach(obj)
    # two contacts, forces (0, 0, -1) and (0.5, 0, -3): p = -(1/0.5) (-1 - 3) = 8
    state = _SeedStyleState("link0", _SeedStyleContacts([[0.0, 0.0, -1.0], [0.5, 0.0, -3.0]], [], [],
                                                        [[0.1, 0.1, 0.0], [0.2, 0.2, 0.0]]))
    assert sensor.predict(state).item() == pytest.approx(8.0)
    J = sensor.measurement_force_jacobian(state)[("link0", "some_other_body")]
    np.testing.assert_allclose(J.numpy(), [[[0.0, 0.0, -2.0], [0.0, 0.0, -2.0]]], atol=1e-6)


def test_barycentric_weights_as_the_seed_exports_them():
    from vsf_sensor_ros.sensor.punyo_dense_force_sensor import barycentric_weights
    V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    F = np.array([[0, 1, 2]])
    # the corners: one-hot; (0.3, 0.3, 0) = 0.4 v0 + 0.3 v1 + 0.3 v2; (0.5, 0.5, 0): edge v1-v2;
    # (0.2, 0.3, 1) is above (0.2, 0.3, 0) = 0.5 v0 + 0.2 v1 + 0.3 v2
    P = np.array([V[0], V[1], V[2], [0.3, 0.3, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 1.0]])
    np.testing.assert_allclose(barycentric_weights(V, F, P),
                               [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.4, 0.3, 0.3], [0, 0.5, 0.5],
                                [0.5, 0.2, 0.3]], atol=1e-12)
    # a second triangle: its vertex 3 gets weight only from points on it
    V4 = np.vstack([V, [[1.0, 1.0, 0.0]]])
    W = barycentric_weights(V4, np.array([[0, 1, 2], [1, 3, 2]]), np.array([[0.75, 0.75, 0.0]]))
    # (0.75, 0.75) on triangle (v1, v3, v2): 0.5 v3 + 0.25 v1 + 0.25 v2
    np.testing.assert_allclose(W, [[0.0, 0.25, 0.25, 0.5]], atol=1e-12)


# ------------------------------------------------------------------ ContactState elements

def test_float_elements_of_integral_value_become_int64():
    c = ContactState(torch.zeros(3, 3), torch.zeros(3, 3), elems1=torch.tensor([0.0, 2.0, -1.0]),
                     elems2=torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64))
    assert c.elems1.dtype == torch.int64 and c.elems1.tolist() == [0, 2, -1]
    assert c.elems2.dtype == torch.int64 and c.elems2.tolist() == [4, 5, 6]


@pytest.mark.parametrize("empty", [[], (), np.zeros(0), torch.zeros(0), torch.zeros(0, dtype=torch.int64)])
def test_an_empty_element_list_is_absent_whatever_the_number_of_contacts(empty):
    for n in (0, 2):
        c = ContactState(torch.zeros(n, 3), torch.zeros(n, 3), elems1=empty, elems2=empty)
        assert c.elems1 is None and c.elems2 is None
    # a list of element indices is an int64 tensor; a list of non-numbers is refused, naming the field
    c = ContactState(torch.zeros(2, 3), torch.zeros(2, 3), elems1=[3, -1], elems2=np.array([1.0, 2.0]))
    assert c.elems1.dtype == torch.int64 and c.elems1.tolist() == [3, -1] and c.elems2.tolist() == [1, 2]
    with pytest.raises(InputError) as err:
        ContactState(torch.zeros(1, 3), torch.zeros(1, 3), elems2=["a"])
    assert (err.value.argument, err.value.value, err.value.reason) == ("elems2", ["a"], "not_integer")
    with pytest.raises(InputError) as err:
        ContactState(torch.zeros(2, 3), torch.zeros(2, 3), elems1=[4])
    assert (err.value.argument, err.value.value, err.value.reason, err.value.expected) == (
        "elems1", (1,), "shape", (2,))


@pytest.mark.parametrize("bad", [[0.0, 1.5], [float("nan")], [2.0, float("inf")]])
def test_non_integral_float_elements_are_rejected_naming_the_value(bad):
    n = len(bad)
    with pytest.raises(InputError) as err:
        ContactState(torch.zeros(n, 3), torch.zeros(n, 3), elems2=torch.tensor(bad))
    assert (err.value.argument, err.value.reason) == ("elems2", "not_integer")
    np.testing.assert_equal(err.value.value, bad[n - 1])          # the last row's value, the first bad one


# ------------------------------------------------------------------ the seed's config objects

@pytest.mark.parametrize("type_name, cls", [("PunyoPressureSensor", PunyoPressureSensor),
                                            ("PunyoDenseForceSensor", PunyoDenseForceSensor)])
def test_sensor_from_the_seeds_config_object(type_name, cls):
    s = sensor_from_config(SensorConfig(name="punyo", type=type_name, attachment_name="bubble"))
    assert type(s) is cls and isinstance(s, BaseSensor)
    assert (s.name, s.attachModelName) == ("punyo", "bubble")
    # the same fields as a plain dict (e.g. read from the seed's YAML)
    s = sensor_from_config({"name": "punyo", "type": type_name, "attachment_name": "bubble",
                            "link_names": None})
    assert (type(s), s.attachModelName) == (cls, "bubble")


def test_seed_keyword_names_of_the_constructors():
    d = PunyoDenseForceSensor(sensor_name="punyo_sensor", attachModelName="link0")
    p = PunyoPressureSensor(name="p", punyo_link="link0", base_normal_local=[0.0, 0.0, 1.0])
    t = TareCalibrator(num_samples=5, output_key="tare")
    assert (d.name, d.attachModelName, p.attachModelName) == ("punyo_sensor", "link0", "link0")
    assert (t.num_samples, t.output_key) == (5, "tare")


def test_sensor_config_with_both_attachment_spellings_that_disagree_is_rejected():
    with pytest.raises(SettingError) as err:
        sensor_from_config({"name": "s", "type": "PunyoPressureSensor", "attachment": "a",
                            "attachment_name": "b"})
    e = err.value
    assert (e.setting, e.value, e.reason, e.expected) == ("attachment_name", "b", "conflict", "a")


def test_tare_calibrator_from_the_seeds_config_object_and_type_name():
    c = calibration_from_config(CalibrationConfig(type="tare"))
    assert type(c) is TareCalibrator and isinstance(c, BaseCalibrator)
    assert (c.num_samples, c.output_key) == (10, "tare")
    c = calibration_from_config({"type": "tare", "num_samples": 3})
    assert c.num_samples == 3


def test_the_seeds_string_default_for_num_samples_is_read():
    @dataclass
    class SeedCalibrationConfig:           # the seed declares num_samples: int = '10'
        type: str
        num_samples: int = "10"
        output_key: str = "tare"

    assert calibration_from_config(SeedCalibrationConfig(type="tare")).num_samples == 10


def test_unknown_calibrator_type_lists_the_seed_alias():
    with pytest.raises(SettingError) as err:
        calibration_from_config(CalibrationConfig(type="scale"))
    assert (err.value.setting, err.value.value, err.value.reason) == ("type", "scale", "unknown_type")
    assert {"TareCalibrator", "tare"} <= set(err.value.expected)


class _ContactFreeSim:
    """A stand-in for the seed's simulator: no contact, the sensor's raw prediction."""

    def __init__(self, sensor):
        self.sensor = sensor
        self._state = SimState({"punyo_link": torch.eye(4)}, {}, {})

    def step(self, command, dt):
        assert dt == 0.1

    def state(self):
        return self._state

    def measurements(self):
        return {self.sensor.name: self.sensor.predict(self._state)}


def test_tare_as_the_seed_runs_it():
    sensor = PunyoPressureSensor("p", "punyo_link")
    _world, obj = _triangle_object("punyo_link")
    sensor.attach(obj)
    calib = calibration_from_config(CalibrationConfig(type="tare", num_samples=2))
    obs = [{"p": np.array([3.0])}, {"p": np.array([5.0])}, {"p": np.array([100.0])}]
    used = calib.calibrate(sensor, _ContactFreeSim(sensor), [{}, {}, {}], obs)
    assert used == 2
    np.testing.assert_allclose(sensor.get_calibration()["tare"], [4.0])        # (3 + 5) / 2
