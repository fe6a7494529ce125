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


def _mesh(tmp: Path) -> Path:
    """A stand-in for the membrane mesh (the import copies it byte for byte)."""
    (tmp / "mesh.vtk").write_bytes(b"# vtk DataFile Version 5.1\n")
    return tmp / "mesh.vtk"


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
    assert info["frames"] == 3 and info["reference_frames"] == [0, 1, 2]   # the first 5, of 3
    f, g = info["distortion_fit"], ref["distortion_fit"]
    for k in ("fx", "fy", "cx", "cy"):
        assert f[k] == pytest.approx(g[k], abs=2e-3), k
    for k in ("k1", "k2", "p1", "p2", "k3"):
        assert f[k] == pytest.approx(g[k], abs=2e-6), k
    assert f["residual_ray_max"] < 3e-7


def test_a_depth_off_the_unit_and_a_gap_in_the_numbers_are_refused_writing_nothing(tmp_path, capsys):
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    pc = np.zeros((480 * 640, 3), dtype=np.float32)
    pc[:, 2] = 0.08
    pc[5, 2] = 0.08003                          # not a whole 0.1 mm
    np.save(expand / "pc_0.npy", pc)
    assert main(["--source", str(tmp_path / "src"), "--mesh", str(_mesh(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "pc_0.npy" in err and "0.300" in err, err      # 0.08003 m = 800.3 units of 0.1 mm
    assert not (tmp_path / "src" / "camera").exists()
    np.save(expand / "pc_2.npy", pc)
    assert main(["--source", str(tmp_path / "src"), "--mesh", str(_mesh(tmp_path))]) == 2
    assert "pc_1.npy is missing" in capsys.readouterr().err
    (expand / "pc_0.npy").unlink()
    (expand / "pc_2.npy").unlink()
    assert main(["--source", str(tmp_path / "src"), "--mesh", str(_mesh(tmp_path))]) == 2


def test_clouds_of_two_cameras_or_of_another_shape_are_refused(tmp_path, capsys):
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    v, u = np.mgrid[0:480, 0:640]
    for i, f in enumerate((400.0, 430.0)):       # the same pixels, other focal lengths
        z = np.full((480, 640), 0.08, dtype=np.float32)
        pc = np.stack([z * (u - 320) / f, z * (v - 240) / f, z], axis=-1).astype(np.float32)
        np.save(expand / f"pc_{i}.npy", pc.reshape(-1, 3))
    assert main(["--source", str(tmp_path / "src"), "--mesh", str(_mesh(tmp_path))]) == 2
    assert "pc_1.npy" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"expected a \(307200, 3\) cloud, got \(10, 3\)"):
        depth_of_cloud(np.zeros((10, 3)), "pc_7.npy")


def _flat_cloud(f: float = 430.0, z: float = 0.08) -> np.ndarray:
    """A pinhole camera (focal length ``f`` px, centre (320, 240)) seeing a plane at ``z`` m."""
    v, u = np.mgrid[0:480, 0:640]
    zz = np.full((480, 640), z, dtype=np.float32)
    return np.stack([zz * (u - 320) / f, zz * (v - 240) / f, zz], axis=-1).astype(np.float32).reshape(-1, 3)


def _run(src: Path, capsys, *extra: str):
    mesh = () if "--mesh" in extra else ("--mesh", str(_mesh(src.parent)))
    code = main(["--source", str(src), *mesh, *extra])
    return code, capsys.readouterr()


@pytest.mark.parametrize("case, words", [
    ("text", "pc_1.npy: not a readable .npy array"),
    ("pickle", "pc_1.npy: not a readable .npy array"),
    ("leading_zero", "pc_01.npy: not a frame name"),
    ("no_readings", "only 0 pixels have a reading in any frame"),
    ("nan_x", "pc_1.npy: 1 point(s) with a depth have a non-finite x or y"),
    ("nan_z", "pc_1.npy: 307200 depth(s) are NaN or infinite"),
    ("complex", "pc_1.npy: expected float32 or float64 points, got complex64"),
    ("far", "pc_1.npy: depths must lie in 0..6.5535 m, got 0.0800..7.0000 m"),
    ("partial_rgb", "rgb_1.npy: missing (or not a file) while other rgb_<i>.npy are there"),
    ("bent_ray", "do not follow the inverse Brown-Conrady lens model"),
])
def test_bad_sources_give_one_line_and_write_nothing(tmp_path, capsys, case, words):
    """Found by trying to break it: each used to end in a traceback, or to pass silently."""
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    good = _flat_cloud()
    np.save(expand / "pc_0.npy", good)
    bad = good.copy()
    if case == "text":
        (expand / "pc_1.npy").write_text("hello")
    elif case == "pickle":
        np.save(expand / "pc_1.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif case == "leading_zero":
        np.save(expand / "pc_01.npy", good)
    elif case == "no_readings":
        np.save(expand / "pc_0.npy", np.zeros_like(good))
    else:
        if case == "nan_x":
            bad[1000, 0] = np.nan
        elif case == "nan_z":
            bad[:, 2] = np.nan
        elif case == "complex":
            bad = bad.astype(np.complex64)
        elif case == "far":
            bad[7, 2] = 7.0
        elif case == "partial_rgb":
            np.save(expand / "rgb_0.npy", np.zeros((480, 640, 3), dtype=np.uint8))
        elif case == "bent_ray":
            np.save(expand / "pc_0.npy", np.zeros_like(good))
            bad[1000, 0] += 0.01           # one ray off the lens model (one frame: no other to compare)
        np.save(expand / "pc_1.npy", bad)
    code, out = _run(tmp_path / "src", capsys)
    assert code == 2, out
    assert len(out.err.strip().splitlines()) == 1 and words in out.err and "Traceback" not in out.err, out.err
    assert not (tmp_path / "src" / "camera").exists()


def _umask() -> int:
    import os
    m = os.umask(0)
    os.umask(m)
    return m


def test_a_new_import_replaces_an_earlier_one_whole_and_other_folders_are_refused(tmp_path, capsys):
    expand = tmp_path / "src" / "expand"
    expand.mkdir(parents=True)
    np.save(expand / "pc_0.npy", _flat_cloud())
    np.save(expand / "rgb_0.npy", np.full((480, 640, 3), 7, dtype=np.uint8))
    out = tmp_path / "cam"
    assert _run(tmp_path / "src", capsys, "--out", str(out))[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["camera.json", "depth.npz", "membrane_equalized.vtk",
                                                     "rgb.npz"]
    assert out.stat().st_mode & 0o777 == 0o777 & ~_umask()      # not mkdtemp's 0700
    f = json.loads((out / "camera.json").read_text())["distortion_fit"]
    assert (f["fx"], f["fy"], f["cx"], f["cy"]) == pytest.approx((430.0, 430.0, 320.0, 240.0), abs=1e-4)
    (expand / "rgb_0.npy").unlink()                 # the colour is gone from the source ...
    assert _run(tmp_path / "src", capsys, "--out", str(out))[0] == 0
    assert not (out / "rgb.npz").exists()                         # ... and from the import
    link = tmp_path / "link"
    link.symlink_to(out)                            # a symlinked folder is written where it points
    assert _run(tmp_path / "src", capsys, "--out", str(link))[0] == 0
    assert link.is_symlink() and (out / "depth.npz").is_file()
    (out / "notes.txt").write_text("mine")
    code, res = _run(tmp_path / "src", capsys, "--out", str(out))
    assert code == 2 and "holds other files (notes.txt, ...)" in res.err
    assert (out / "notes.txt").read_text() == "mine" and (out / "depth.npz").is_file()
    code, res = _run(tmp_path / "src", capsys, "--out", str(expand))
    assert code == 2 and "holds other files (pc_0.npy, ...)" in res.err
    code, res = _run(tmp_path / "src", capsys, "--out", str(out / "notes.txt"))
    assert code == 2 and "exists and is not a folder" in res.err
    code, res = _run(tmp_path / "src", capsys, "--mesh", str(tmp_path))
    assert code == 2 and "not a file" in res.err
    assert not list(tmp_path.glob(".cam.*"))        # no temporary folder left behind
