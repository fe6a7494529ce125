"""The models take any object offering the seed's documented state interface (duck typing).

The seed documents ``SimState`` by what a sensor calls on it: ``body_transforms`` (body name ->
4x4 body -> world transform), ``bodies_in_contact(name, reverse=False)`` and
``contact_states_on_body(name, reverse=False)``; a contact state by its attributes ``points``,
``forces``, ``elems1``, ``elems2``.  The classes below offer exactly that and nothing more: no
``contacts`` dict, no ``len()``, plain lists where the seed's users write lists.  Expected values
are worked out by hand in the comments.
"""

import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import (ContactSensor, CsProperties, IsaacContactSensor, PunyoDenseForceSensor,
                                   PunyoPressureSensor, SimState, TareCalibrator)
from vsf_sensor_ros.sensor.base_sensor import as_contact_state, as_sim_state
from vsf_sensor_ros.sensor.errors import InputError

# the seed tests' triangle (0,0,0), (1,0,0), (0,1,0): area 0.5, normal +z
TRIANGLE = (np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), np.array([[0, 1, 2]]))


class Contacts:
    """A contact state with the seed's four attributes only (lists allowed, no ``__len__``)."""

    def __init__(self, points, forces, elems1=None, elems2=None):
        self.points, self.forces, self.elems1, self.elems2 = points, forces, elems1, elems2


class State:
    """A simulation state with the seed's documented interface only (no ``contacts`` attribute)."""

    def __init__(self, transforms, pairs):
        self.body_transforms = transforms
        self._pairs = pairs               # [((body1, body2), Contacts)], insertion order

    def bodies_in_contact(self, name, reverse=False):
        return [a if reverse else b for (a, b), _ in self._pairs if (b if reverse else a) == name]

    def contact_states_on_body(self, name, reverse=False):
        return [c for (a, b), c in self._pairs if (b if reverse else a) == name]


def _eye():
    return torch.eye(4, dtype=torch.float64)


def test_pressure_from_a_duck_state_with_list_contacts():
    sensor = PunyoPressureSensor("p", "punyo")
    sensor.attach(TRIANGLE)
    st = State({"punyo": _eye(), "finger": _eye()},
               [(("punyo", "finger"), Contacts([[0.1, 0.1, 0.0]], [[-1.0, -1.0, -1.0]], [0]))])
    # p = -(1/A) f.n = -(1/0.5)(-1) = 2
    assert sensor.predict(st).tolist() == pytest.approx([2.0])
    jac = sensor.measurement_force_jacobian(st)
    assert list(jac) == [("punyo", "finger")]
    # d p / d f = -(1/A) n = (0, 0, -2) for the one contact
    np.testing.assert_allclose(jac["punyo", "finger"].numpy(), [[[0.0, 0.0, -2.0]]])
    sparse = sensor.sparse_force_jacobian(st)
    assert sparse.pairs == [("punyo", "finger")]
    assert sensor.in_contact(st)
    assert sensor.contact_bodies(st) == [("punyo", "finger")]


def test_pairs_of_other_bodies_and_reversed_pairs_are_not_the_sensor_s():
    sensor = PunyoPressureSensor("p", "punyo")
    sensor.attach(TRIANGLE)
    st = State({"punyo": _eye(), "finger": _eye()},
               [(("finger", "punyo"), Contacts([[0.0, 0.0, 0.0]], [[0.0, 0.0, -7.0]])),
                (("punyo", "finger"), Contacts([[0.0, 0.0, 0.0]], [[0.0, 0.0, -3.0]]))])
    # only (punyo, finger) acts on the sensor: -(1/0.5)(-3) = 6
    assert sensor.predict(st).tolist() == pytest.approx([6.0])


def test_empty_list_contacts_are_no_contact():
    sensor = PunyoPressureSensor("p", "punyo")
    sensor.attach(TRIANGLE)
    st = State({"punyo": _eye()}, [(("punyo", "box"), Contacts([], [], []))])
    assert sensor.predict(st).tolist() == [0.0]
    assert not sensor.in_contact(st)


def test_dense_force_per_vertex_from_a_duck_state():
    sensor = PunyoDenseForceSensor("f", "punyo")
    sensor.attach(TRIANGLE)
    st = State({"punyo": _eye(), "finger": _eye()},
               [(("punyo", "finger"), Contacts([[5.0, 5.0, 5.0], [0.0, 0.0, 0.0]],
                                               [[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]], elems1=[2, 2]))])
    # both contacts name vertex 2 (identity pose): (1, 2, 3) + (0, 0, 4) = (1, 2, 7) on vertex 2
    out = sensor.predict(st).reshape(-1, 3).numpy()
    np.testing.assert_allclose(out, [[0, 0, 0], [0, 0, 0], [1, 2, 7]])
    values, jac = sensor.predict_with_jacobian(st)
    np.testing.assert_allclose(values.reshape(-1, 3).numpy(), out)
    assert jac.pairs == [("punyo", "finger")]


def test_isaac_load_from_a_duck_state():
    sensor = IsaacContactSensor("load", "body", CsProperties())
    st = State({"body": _eye(), "obj": _eye()},
               [(("body", "obj"), Contacts([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0]],
                                           [[3.0, 4.0, 0.0], [0.0, 0.0, 12.0]]))])
    # net force (3, 4, 12): |.| = 13, in contact
    assert sensor.predict(st).tolist() == pytest.approx([1.0, 13.0])


def test_klampt_patch_from_a_duck_state_matches_the_same_simstate():
    sensor = ContactSensor("cs", "link")
    pts, frc = [[0.0, 0.0, 0.0]], [[0.5, -0.25, 2.0]]
    duck = State({"link": _eye(), "o": _eye()}, [(("link", "o"), Contacts(pts, frc))])
    plain = SimState({"link": _eye(), "o": _eye()}, {}, {("link", "o"): as_contact_state(
        Contacts(torch.tensor(pts, dtype=torch.float64), torch.tensor(frc, dtype=torch.float64)))})
    # lists take the dtype of the state's transforms (float64 here): the same numbers
    np.testing.assert_allclose(sensor.predict(duck).numpy(), sensor.predict(plain).numpy(), rtol=1e-15)
    assert sensor.predict(duck).dtype == torch.float64


def test_tare_with_duck_states_from_the_simulator():
    sensor = PunyoPressureSensor("p", "punyo")
    sensor.attach(TRIANGLE)

    class Sim:
        def reset(self, *a, **k):
            pass

        def step(self, *a, **k):
            pass

        def state(self):
            return State({"punyo": _eye()}, [])

        def measurements(self):
            return {"p": np.array([0.0])}

    used = TareCalibrator(num_samples=3).calibrate(
        sensor, Sim(), [{}] * 3, [{"p": np.array([101325.0])}] * 3)
    assert used == 3
    # contact-free prediction 0: the tare is the mean observation, 101325 Pa
    assert sensor.get_calibration()["tare"].tolist() == pytest.approx([101325.0])


def test_a_simstate_holding_contact_like_objects_is_converted():
    st = SimState({"punyo": _eye()}, {}, {("punyo", "b"): Contacts([[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]])})
    conv = as_sim_state(st)
    assert conv is not st and conv.contacts["punyo", "b"].forces.tolist() == [[0.0, 0.0, 1.0]]
    same = as_sim_state(conv)
    assert same is conv                 # a state of ContactState objects passes unchanged


class _Uneven(State):
    """Says a body is in contact but gives no contact states for it."""

    def contact_states_on_body(self, name, reverse=False):
        return []


@pytest.mark.parametrize("call, argument, value, reason", [
    (lambda: as_contact_state({"points": [], "forces": []}), "c", "dict", "type"),
    (lambda: as_sim_state([]), "state", "list", "type"),
    (lambda: as_contact_state(Contacts([[0.0, 0.0, 0.0]], [[1.0, 2.0]])), "forces", (1, 2), "shape"),
    (lambda: as_sim_state(_Uneven({"punyo": _eye()}, [(("punyo", "b"), Contacts([], []))])),
     "contact_states_on_body", 0, "count"),                     # one body in contact, no states
    (lambda: as_contact_state(Contacts([[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]], [0.5])), "elems1", 0.5,
     "not_integer"),
])
def test_bad_duck_objects_are_named(call, argument, value, reason):
    with pytest.raises(InputError) as err:
        call()
    assert (err.value.argument, err.value.value, err.value.reason) == (argument, value, reason)
