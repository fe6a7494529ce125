"""with_reverse_pairs: contacts reported once per body pair, in either order.

A simulator bridge that writes one row per contact, e.g. only ``(tool, pad)`` with the force
on ``tool``, must still reach a sensor on ``pad`` (force ``-f``, elements swapped); a pair
written in both orders is used as given, never twice.  ``SimState`` itself keeps the seed's
semantics (both orders must be stored).
"""
import numpy as np
import pytest
import torch

from vsf_sensor_ros.sensor import ContactState, PunyoPressureSensor, SimState, with_reverse_pairs
from vsf_sensor_ros.sensor.errors import InputError

# one triangle in the pad's z = 0 plane, area 0.5: pressure = -(1/0.5) * (force on pad) . z
TRI = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
EYE = torch.eye(4, dtype=torch.float64)


def _c(forces, elems1=None, elems2=None):
    f = torch.tensor(forces, dtype=torch.float64)
    return ContactState(torch.zeros_like(f), f,
                        None if elems1 is None else torch.tensor(elems1),
                        None if elems2 is None else torch.tensor(elems2))


def _pad_sensor():
    s = PunyoPressureSensor("pressure", "pad")
    s.attach(TRI)
    return s


def test_one_order_only_reaches_the_other_body_with_minus_f():
    tool_pad = _c([[0.0, 0.0, -3.0]], elems1=[7], elems2=[2])          # force on tool: -3 z
    contacts = {("tool", "pad"): tool_pad}
    T = {"tool": EYE, "pad": EYE}
    # seed semantics: the pad sees nothing
    assert _pad_sensor().predict(SimState(T, {}, contacts)).item() == 0.0
    full = with_reverse_pairs(contacts)
    assert list(full) == [("tool", "pad"), ("pad", "tool")]
    rev = full[("pad", "tool")]
    assert torch.equal(rev.forces, torch.tensor([[0.0, 0.0, 3.0]], dtype=torch.float64))
    assert rev.elems1.tolist() == [2] and rev.elems2.tolist() == [7]  # elements swapped
    assert torch.equal(rev.points, tool_pad.points)
    # force on pad +3 z: p = -(1/0.5) * 3 = -6
    assert _pad_sensor().predict(SimState(T, {}, full)).item() == pytest.approx(-6.0)
    assert contacts == {("tool", "pad"): tool_pad}                      # input untouched


def test_both_orders_present_are_used_as_given_never_twice():
    a = _c([[0.0, 0.0, -3.0]])
    b = _c([[0.0, 0.0, 1.0]])               # deliberately not -a: the caller's values are kept
    contacts = {("tool", "pad"): a, ("pad", "tool"): b}
    full = with_reverse_pairs(contacts)
    assert list(full) == [("tool", "pad"), ("pad", "tool")]
    assert full[("tool", "pad")] is a and full[("pad", "tool")] is b
    st = SimState({"tool": EYE, "pad": EYE}, {}, full)
    assert _pad_sensor().predict(st).item() == pytest.approx(-2.0)     # from b alone: -(1/0.5) * 1


def test_each_implied_pair_follows_its_source_and_self_pairs_stay():
    contacts = {("a", "b"): _c([[1.0, 0, 0]]), ("c", "a"): _c([[0, 2.0, 0]]),
                ("b", "a"): _c([[-1.0, 0, 0]]), ("d", "d"): _c([[0, 0, 5.0]])}
    full = with_reverse_pairs(contacts)
    assert list(full) == [("a", "b"), ("c", "a"), ("a", "c"), ("b", "a"), ("d", "d")]
    assert full[("a", "c")].forces.tolist() == [[0.0, -2.0, 0.0]]
    assert full[("d", "d")] is contacts[("d", "d")]


def test_empty_pairs_and_autograd_survive():
    f = torch.tensor([[0.5, 0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    contacts = {("x", "y"): ContactState(torch.zeros(1, 3, dtype=torch.float64), f),
                ("y", "z"): ContactState(torch.zeros(0, 3, dtype=torch.float64),
                                         torch.zeros(0, 3, dtype=torch.float64))}
    full = with_reverse_pairs(contacts)
    assert len(full[("z", "y")]) == 0
    full[("y", "x")].forces.sum().backward()
    assert f.grad.tolist() == [[-1.0, -1.0, -1.0]]


def test_bad_key_is_rejected_naming_it():
    with pytest.raises(InputError) as err:
        with_reverse_pairs({"toolpad": _c([[0.0, 0, 1]])})
    assert (err.value.argument, err.value.value, err.value.reason) == ("contacts", "toolpad", "not_a_pair")
