"""The public poke's per-frame clouds into the replay's camera/ folder.

The source layout is rebuilt here from the recording's own files, exactly as its README says the
public repository stores it (z = float32(depth) x float32(1e-4), x = z x ray_x, y = z x ray_y, all
float32; (0, 0, 0) without a reading); the import must give back the recording's depth images bit
for bit and the camera coefficients its README lists.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.demo.camera_import import depth_of_cloud, main

CAMERA = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "camera"
FRAMES = (0, 80, 149)      # contact-free, pressed, released


def _cloud(depth_u16: np.ndarray, rays: np.ndarray) -> np.ndarray:
    z = depth_u16.astype(np.float32) * np.float32(1e-4)
    rx = np.nan_to_num(rays[..., 0]).astype(np.float32)
    ry = np.nan_to_num(rays[..., 1]).astype(np.float32)
    pc = np.stack([z * rx, z * ry, z], axis=-1)
    pc[z == 0] = 0.0
    return pc.reshape(-1, 3)


@pytest.fixture(scope="module")
def recorded():
    if not (CAMERA / "rays.npy").is_file():
        pytest.skip(f"shared fixture {CAMERA} absent (user clone)")
    depth = np.load(CAMERA / "depth.npz")["depth"]
    rgb = np.load(CAMERA / "rgb.npz")["rgb"]
    return depth[list(FRAMES)], rgb[list(FRAMES)], np.load(CAMERA / "rays.npy")


def _source(tmp: Path, depth: np.ndarray, rgb: np.ndarray, rays: np.ndarray) -> Path:
    expand = tmp / "demo0" / "expand"
    expand.mkdir(parents=True)
    for i in range(len(depth)):
        np.save(expand / f"pc_{i}.npy", _cloud(depth[i], rays))
        np.save(expand / f"rgb_{i}.npy", rgb[i])
    return tmp / "demo0"


def test_the_import_gives_back_the_recordings_depth_colour_and_camera(tmp_path, recorded, capsys):
    depth, rgb, rays = recorded
    src = _source(tmp_path, depth, rgb, rays)
    mesh = CAMERA / "membrane_equalized.vtk"
    assert main(["--source", str(src), "--mesh", str(mesh)]) == 0
    out = src / "camera"
    assert np.array_equal(np.load(out / "depth.npz")["depth"], depth)
    assert np.array_equal(np.load(out / "rgb.npz")["rgb"], rgb)
    assert (out / "membrane_equalized.vtk").read_bytes() == mesh.read_bytes()
    info = json.loads((out / "camera.json").read_text())
    ref = json.loads((CAMERA / "camera.json").read_text())
    assert info["image_size"] == ref["image_size"] and info["depth_unit_m"] == ref["depth_unit_m"]
    assert info["frames"] == 3 and info["reference_frames"] == [0, 1, 2, 3, 4]
    f, g = info["distortion_fit"], ref["distortion_fit"]
    for k in ("fx", "fy", "cx", "cy"):
        assert f[k] == pytest.approx(g[k], abs=2e-3), k
    for k in ("k1", "k2", "p1", "p2", "k3"):
        assert f[k] == pytest.approx(g[k], abs=2e-6), k
    assert f["residual_ray_max"] < 3e-7
    assert "wrote" in capsys.readouterr().out


def test_a_depth_off_the_unit_and_a_gap_in_the_numbers_are_refused_and_nothing_is_written(tmp_path, capsys):
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    pc = np.zeros((480 * 640, 3), dtype=np.float32)
    pc[:, 2] = 0.08
    pc[5, 2] = 0.08003                          # not a whole 0.1 mm
    np.save(expand / "pc_0.npy", pc)
    assert main(["--source", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err
    assert "pc_0.npy: depths are not whole multiples of 0.0001 m" in err and "largest fraction 0.300" in err
    assert not (tmp_path / "src" / "camera").exists()
    np.save(expand / "pc_2.npy", pc)
    assert main(["--source", str(tmp_path / "src")]) == 2
    assert "pc_1.npy is missing" in capsys.readouterr().err
    (expand / "pc_0.npy").unlink()
    (expand / "pc_2.npy").unlink()
    assert main(["--source", str(tmp_path / "src")]) == 2
    assert "no pc_<i>.npy frames" in capsys.readouterr().err


def test_clouds_of_two_cameras_or_of_another_shape_are_refused(tmp_path, capsys):
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    v, u = np.mgrid[0:480, 0:640]
    for i, f in enumerate((400.0, 430.0)):       # the same pixels, other focal lengths
        z = np.full((480, 640), 0.08, dtype=np.float32)
        pc = np.stack([z * (u - 320) / f, z * (v - 240) / f, z], axis=-1).astype(np.float32)
        np.save(expand / f"pc_{i}.npy", pc.reshape(-1, 3))
    assert main(["--source", str(tmp_path / "src")]) == 2
    assert "pc_1.npy: its rays differ from the earlier frames'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"expected a \(307200, 3\) cloud, got \(10, 3\)"):
        depth_of_cloud(np.zeros((10, 3)), "pc_7.npy")
