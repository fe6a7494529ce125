"""``World.body_transforms(names=...)``: forward kinematics read back only for the bodies asked for.

Checked against a second, independent ``World`` of the same robot that always computes every body,
over random configurations: the subset equals the full computation for the named bodies (attached
bodies included when their parent link is not named), and a later full call is complete again.
"""
import numpy as np
import pytest
import torch

from vsf_sensor_ros.embedded_world import EMBEDDED_JOINTS, embedded_world
from vsf_sensor_ros.sensor.errors import InputError


def test_subset_equals_the_full_computation_over_random_configurations():
    part, full = embedded_world(), embedded_world()
    rng = np.random.default_rng(0)
    subsets = [["punyo"], ["object", "punyo", "table"], ["tool_link"], ["base_link", "punyo"], []]
    for trial in range(40):
        q = rng.uniform(-1.5, 1.5, len(EMBEDDED_JOINTS))
        for w in (part, full):
            w.set_joint_positions(EMBEDDED_JOINTS, q)
        names = subsets[trial % len(subsets)]
        got = part.body_transforms(names=names)
        want = full.body_transforms()
        assert list(got) == names
        for n in names:
            assert torch.equal(got[n], want[n]), (trial, n)
        if trial % 3 == 0:   # a full call after a partial one sees every link of this configuration
            every = part.body_transforms()
            for n, T in want.items():
                assert torch.equal(every[n], T), (trial, n)


def test_attached_body_follows_its_parent_link_even_when_only_it_is_asked_for():
    w = embedded_world()
    parent = w.body_parent("punyo")
    assert parent is not None and parent in w.link_names
    before = w.body_transforms(names=["punyo"])["punyo"].clone()
    w.set_joint_positions(["wrist_pitch"], [0.7])
    after = w.body_transforms(names=["punyo"])["punyo"]
    assert not torch.equal(before, after)
    T_parent = w.body_transform(parent)          # full refresh of that link (numpy, independent)
    T_rel = np.linalg.inv(T_parent) @ after.numpy()
    T_rel0 = np.linalg.inv(embedded_world().body_transform(parent)) @ embedded_world().body_transform("punyo")
    np.testing.assert_allclose(T_rel, T_rel0, atol=1e-12)   # rigidly fixed to its parent


def test_unknown_body_name_is_refused_naming_it():
    w = embedded_world()
    with pytest.raises(InputError) as err:
        w.body_transforms(names=["punyo", "no_such_body"])
    assert (err.value.argument, err.value.value, err.value.reason) == ("name", "no_such_body", "unknown_body")
