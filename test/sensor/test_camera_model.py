"""RealSense camera model: the inverse Brown-Conrady deprojection by hand, its inverse, CameraInfo."""
import json
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
from vsf_sensor_ros.sensor.errors import InputError, SettingError

CAMERA = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "camera"


def test_radial_term_by_hand():
    cam = BrownConradyCamera(640, 480, 400.0, 400.0, 320.0, 240.0, (0.1, 0.0, 0.0, 0.0, 0.0))
    # u = 420: xn = 0.25, r^2 = 0.0625, f = 1 + 0.1 * 0.0625 = 1.00625
    assert cam.deproject(420.0, 240.0) == pytest.approx([0.25 * 1.00625, 0.0], abs=1e-15)


def test_tangential_terms_by_hand():
    cam = BrownConradyCamera(640, 480, 400.0, 200.0, 320.0, 240.0, (0.0, 0.0, 0.01, 0.02, 0.0))
    # xn = yn = 0.25, r^2 = 0.125: x = 0.25 + 2*0.01*0.0625 + 0.02*(0.125 + 0.125) = 0.25625
    #                              y = 0.25 + 2*0.02*0.0625 + 0.01*(0.125 + 0.125) = 0.255
    assert cam.deproject(420.0, 290.0) == pytest.approx([0.25625, 0.255], abs=1e-15)


def test_project_inverts_deproject_to_a_nanopixel():
    coeffs = (-0.0568, 0.0607, 0.00076, 0.00099, -0.0202)
    cam = BrownConradyCamera(640, 480, 429.5, 428.9, 313.8, 247.7, coeffs)
    v, u = np.mgrid[0:480:13, 0:640:17].astype(float)
    rays = cam.deproject(u, v)
    pts = np.concatenate([rays, np.ones(rays.shape[:-1] + (1,))], axis=-1) * 0.08
    uv = cam.project(pts)
    assert np.abs(uv[..., 0] - u).max() < 1e-9 and np.abs(uv[..., 1] - v).max() < 1e-9


def test_from_camera_info_reads_k_and_d():
    k = [429.5, 0.0, 313.8, 0.0, 428.9, 247.7, 0.0, 0.0, 1.0]
    cam = BrownConradyCamera.from_camera_info(640, 480, k, [-0.05, 0.06, 0.001, 0.002])
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == (429.5, 428.9, 313.8, 247.7)
    assert cam.coeffs == (-0.05, 0.06, 0.001, 0.002, 0.0)


def test_matches_the_recorded_per_pixel_rays():
    if not (CAMERA / "rays.npy").exists():
        pytest.skip(f"shared fixture {CAMERA} absent (user clone)")
    d = json.loads((CAMERA / "camera.json").read_text())["distortion_fit"]
    cam = BrownConradyCamera(640, 480, d["fx"], d["fy"], d["cx"], d["cy"],
                             (d["k1"], d["k2"], d["p1"], d["p2"], d["k3"]))
    rays = np.load(CAMERA / "rays.npy")
    known = np.isfinite(rays[..., 0])
    v, u = np.mgrid[0:480, 0:640]
    assert np.abs(cam.deproject(u, v)[known] - rays[known]).max() < 1e-6


def test_fit_to_rays_recovers_a_known_camera_from_its_own_rays():
    true = BrownConradyCamera(320, 240, 210.0, 205.0, 161.5, 118.25, (-0.05, 0.06, 0.001, -0.0008, -0.02))
    v, u = np.mgrid[0:240:4, 0:320:4]
    cam, misfit = BrownConradyCamera.fit_to_rays(320, 240, u, v, true.deproject(u, v))
    assert misfit < 1e-12
    assert [cam.fx, cam.fy, cam.cx, cam.cy] == pytest.approx([210.0, 205.0, 161.5, 118.25], abs=1e-7)
    assert cam.coeffs == pytest.approx(true.coeffs, abs=1e-9)


_CAM = BrownConradyCamera(4, 3, 2.0, 2.0, 1.5, 1.0)
_K = [429.5, 0.0, 313.8, 0.0, 428.9, 247.7, 0.0, 0.0, 1.0]
_NAN_RAY = np.zeros((20, 2))
_NAN_RAY[3, 1] = np.nan


@pytest.mark.parametrize("call, kind, field, value, reason", [
    (lambda: _CAM.project(np.array([[0.0, 0.0, -1.0]])), InputError, "points", 1, "not_in_front"),
    (lambda: BrownConradyCamera(4, 3, 0.0, 2.0, 1.5, 1.0), SettingError, "fx", 0.0, "not_positive"),
    (lambda: BrownConradyCamera(4, 3, 2.0, 2.0, 1.5, 1.0, (0.0, 0.0)), SettingError, "coeffs", (0.0, 0.0),
     "invalid"),
    (lambda: BrownConradyCamera.from_camera_info(640, 480, _K[:8]), InputError, "k", _K[:8], "size"),
    (lambda: BrownConradyCamera.from_camera_info(640, 480, _K, [0.0] * 5 + [0.1, 0.0, 0.0]), InputError, "d",
     [0.0] * 5 + [0.1, 0.0, 0.0], "too_many"),
    (lambda: BrownConradyCamera.fit_to_rays(640, 480, np.arange(8), np.arange(8), np.zeros((8, 2))),
     InputError, "slopes", (8, 8, 8), "count"),
    # every ray the same: no focal length follows (pinhole slopes 0 per px)
    (lambda: BrownConradyCamera.fit_to_rays(640, 480, np.arange(20), np.arange(20), np.zeros((20, 2))),
     InputError, "slopes", pytest.approx((0.0, 0.0), abs=1e-12), "not_growing"),
    (lambda: BrownConradyCamera.fit_to_rays(640, 480, np.arange(20), np.arange(20), _NAN_RAY), InputError,
     "slopes", [3], "not_finite"),
])
def test_bad_input_is_an_error_naming_it(call, kind, field, value, reason):
    with pytest.raises(kind) as err:
        call()
    named = err.value.argument if kind is InputError else err.value.setting
    assert (named, err.value.reason) == (field, reason)
    assert err.value.value == value


def test_fit_to_the_recorded_rays_gives_the_fixtures_own_coefficients():
    """The recording's per-pixel rays, fitted: the coefficients its README gives (found there by its
    authors, rounded to 7 significant digits), to float32 rounding."""
    if not (CAMERA / "rays.npy").exists():
        pytest.skip(f"shared fixture {CAMERA} absent (user clone)")
    rays = np.load(CAMERA / "rays.npy")
    known = np.isfinite(rays).all(axis=-1)
    v, u = np.nonzero(known)
    cam, misfit = BrownConradyCamera.fit_to_rays(640, 480, u, v, rays[known])
    assert misfit < 3e-7                          # the README: 2.8e-7 with its rounded values
    assert [cam.fx, cam.fy, cam.cx, cam.cy] == pytest.approx([429.5102, 428.9313, 313.7689, 247.6749],
                                                             abs=2e-4)
    assert cam.coeffs == pytest.approx((-0.0567814, 0.0607156, 0.00075751, 0.000989167, -0.0202404), abs=2e-7)
