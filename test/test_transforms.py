"""transforms: scipy-backed quaternion (ROS x, y, z, w) and URDF roll-pitch-yaw conversions,
checked against matrices written out by hand."""
import math

import numpy as np
import pytest

from vsf_sensor_ros.sensor.errors import InputError
from vsf_sensor_ros.transforms import (rpy_from_matrix, rpy_matrix, transform_from_xyz_quat,
                                       xyz_quat_from_transform)


def _by_hand(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx                                   # URDF: fixed axes x, then y, then z


@pytest.mark.parametrize("rpy", [(0.3, -0.7, 2.0), (-2.5, 0.2, -0.4), (0.0, math.pi / 2, 0.5),
                                 (1.0, -math.pi / 2, -0.3)])
def test_rpy_matrix_is_the_urdf_convention_and_rpy_from_matrix_inverts_it(rpy):
    R = rpy_matrix(rpy)
    np.testing.assert_allclose(R, _by_hand(*rpy), atol=1e-15)
    np.testing.assert_allclose(rpy_matrix(rpy_from_matrix(R)), R, atol=1e-12)   # also at gimbal lock


def test_rpy_rejects_non_finite_or_wrong_length():
    for bad, reason in (([0.0, float("nan"), 0.0], "not_finite"), ([0.0, 0.0], "shape")):
        with pytest.raises(InputError) as err:
            rpy_matrix(bad)
        assert (err.value.argument, err.value.reason) == ("rpy", reason)
        np.testing.assert_equal(err.value.value, bad)


def test_quaternion_is_read_in_ros_order():
    s = math.sqrt(0.5)
    T = transform_from_xyz_quat([1, 2, 3], [0, 0, s, s])             # 90 deg about z, (x, y, z, w)
    np.testing.assert_allclose(T[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    np.testing.assert_allclose(T[:3, 3], [1, 2, 3])
    # not normalised on input: the same rotation
    T2 = transform_from_xyz_quat([0, 0, 0], [0, 0, 2, 2])
    np.testing.assert_allclose(T2[:3, :3], T[:3, :3], atol=1e-15)


def test_quaternion_out_has_w_non_negative():
    T = np.eye(4)
    T[:3, :3] = _by_hand(0.0, 0.0, 3.0)                                # yaw 3 rad
    _, q = xyz_quat_from_transform(T)
    np.testing.assert_allclose(q, [0, 0, math.sin(1.5), math.cos(1.5)], atol=1e-15)
    T[:3, :3] = _by_hand(0.0, 0.0, -3.5)                               # q with w < 0 flipped
    _, q = xyz_quat_from_transform(T)
    assert q[3] >= 0
    np.testing.assert_allclose(q, -np.array([0, 0, math.sin(-1.75), math.cos(-1.75)]), atol=1e-15)
