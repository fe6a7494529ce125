"""Import the public Punyo poke's camera frames (``demo/0/expand/`` of ``uiuc-iml/punyo_force_estimation``)
into the replay's ``camera/`` folder: depth.npz, camera.json (the camera fitted to the clouds' rays), rgb.npz
and the mesh; docs/demo.md.  A bad source exits 2 with one line and writes nothing."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera

WIDTH, HEIGHT = 640, 480
DEPTH_UNIT_M = 1e-4
REFERENCE_FRAMES = 5     # the contact-free reference frames 0-4 (those the source's estimator uses)
RAY_AGREEMENT = 1e-6     # largest spread (x/z, y/z) of a pixel's ray across frames: more is not one camera
MAX_RAY_MISFIT = 1e-4    # largest misfit of the fitted camera (a RealSense stream: ~2e-7)
MIN_READINGS = 1000      # fewest pixels with a reading, over all frames, to fit the camera from
OUTPUT_FILES = ("depth.npz", "rgb.npz", "camera.json", "membrane_equalized.vtk")
_FRAME_NAME = re.compile(r"pc_(0|[1-9][0-9]{0,5})\.npy", re.ASCII)


class CameraImportError(ValueError):
    """The source folder cannot be imported; the message names the file and the value."""


def frame_count(expand: Path) -> int:
    """Number of frames ``pc_0.npy`` … in ``expand``.  Raises CameraImportError: no folder or frame, an odd
    name, or a gap (naming it)."""
    if not expand.is_dir():
        raise CameraImportError(f"{expand}: no such folder (the source must hold expand/pc_<i>.npy)")
    names = sorted(p.name for p in expand.glob("pc_*.npy"))
    odd = [n for n in names if not _FRAME_NAME.fullmatch(n)]
    if odd:
        raise CameraImportError(f"{expand / odd[0]}: not a frame name (pc_0.npy, pc_1.npy, ...)")
    numbers = sorted(int(n[3:-4]) for n in names)
    if not numbers:
        raise CameraImportError(f"no pc_<i>.npy frames in {expand}")
    gap = next((k for k, n in enumerate(numbers) if n != k), None)
    if gap is not None:
        raise CameraImportError(f"frames are not numbered 0..{numbers[-1]} in {expand}: "
                                f"pc_{gap}.npy is missing")
    return len(numbers)


def load_array(path: Path) -> np.ndarray:
    """``np.load`` of one ``.npy`` (no pickles); CameraImportError naming it when it is not one."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CameraImportError(f"{path}: not a readable .npy array ({type(exc).__name__}: {exc})") from None
    if not isinstance(arr, np.ndarray):
        raise CameraImportError(f"{path}: an .npz archive, not one .npy array")
    return arr


def depth_of_cloud(cloud: np.ndarray, name: str) -> np.ndarray:
    """``(H, W)`` uint16 depth (1e-4 m) of a ``(H·W, 3)`` float cloud, 0: no reading.  Raises
    CameraImportError: shape or dtype, a depth non-finite, out of range or fractional, x or y non-finite."""
    cloud = np.asarray(cloud)
    if cloud.shape != (WIDTH * HEIGHT, 3):
        raise CameraImportError(f"{name}: expected a ({WIDTH * HEIGHT}, 3) cloud, got {cloud.shape}")
    if cloud.dtype.kind != "f":
        raise CameraImportError(f"{name}: expected float32 or float64 points, got {cloud.dtype}")
    z = cloud[:, 2].astype(np.float64).reshape(HEIGHT, WIDTH)
    bad = int((~np.isfinite(z)).sum())
    if bad:
        raise CameraImportError(f"{name}: {bad} depth(s) are NaN or infinite")
    if z.min() < 0.0 or z.max() > 65535 * DEPTH_UNIT_M:
        raise CameraImportError(f"{name}: depths must lie in 0..{65535 * DEPTH_UNIT_M:.4f} m, got "
                                f"{z.min():.4f}..{z.max():.4f} m")
    units = z / DEPTH_UNIT_M
    q = np.rint(units)
    off = float(np.abs(units - q).max())
    if off > 0.01:
        raise CameraImportError(f"{name}: depths are not whole multiples of {DEPTH_UNIT_M} m (largest "
                                f"fraction of a unit {off:.3f})")
    xy_bad = int(((q > 0) & ~np.isfinite(cloud[:, :2].reshape(HEIGHT, WIDTH, 2)).all(axis=-1)).sum())
    if xy_bad:
        raise CameraImportError(f"{name}: {xy_bad} point(s) with a depth have a non-finite x or y")
    return q.astype(np.uint16)


def rays_of_cloud(cloud: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """``(H, W, 2)`` ray slopes ``x/z, y/z`` of a cloud where ``depth`` has a reading, NaN elsewhere."""
    c = np.asarray(cloud, dtype=np.float64).reshape(HEIGHT, WIDTH, 3)
    z = np.where(depth > 0, c[..., 2], np.nan)
    return np.stack([c[..., 0] / z, c[..., 1] / z], axis=-1)


def read_frames(expand: Path) -> Tuple[np.ndarray, np.ndarray]:
    """Depth ``(N, H, W)`` uint16 and rays ``(H, W, 2)`` (NaN: never read).  Raises CameraImportError: a
    bad frame, or rays unlike the earlier frames'."""
    n = frame_count(expand)
    depth = np.zeros((n, HEIGHT, WIDTH), dtype=np.uint16)
    rays = np.full((HEIGHT, WIDTH, 2), np.nan)
    for i in range(n):
        cloud = load_array(expand / f"pc_{i}.npy")
        depth[i] = depth_of_cloud(cloud, f"pc_{i}.npy")
        r = rays_of_cloud(cloud, depth[i])
        both = np.isfinite(r[..., 0]) & np.isfinite(rays[..., 0])
        spread = float(np.abs(r[both] - rays[both]).max(initial=0.0))
        if spread > RAY_AGREEMENT:
            raise CameraImportError(f"pc_{i}.npy: its rays differ from the earlier frames' by "
                                    f"{spread:.2e} (more than {RAY_AGREEMENT:g}): not one camera")
        rays = np.where(np.isfinite(rays), rays, r)
    return depth, rays


def fit_camera(rays: np.ndarray) -> Tuple[BrownConradyCamera, float, int]:
    """The camera fitted to the rays, its largest misfit, the pixels used.  Raises CameraImportError."""
    seen = np.isfinite(rays).all(axis=-1)
    if seen.sum() < MIN_READINGS:
        raise CameraImportError(f"only {int(seen.sum())} pixels have a reading in any frame (need "
                                f"{MIN_READINGS} to fit the camera)")
    v, u = np.nonzero(seen)
    try:
        cam, misfit = BrownConradyCamera.fit_to_rays(WIDTH, HEIGHT, u, v, rays[seen])
    except ValueError as exc:   # a degenerate fit (e.g. a negative focal length)
        raise CameraImportError(f"the clouds' rays determine no camera: {exc}") from None
    if not misfit <= MAX_RAY_MISFIT:
        raise CameraImportError(f"the clouds' rays do not follow the inverse Brown-Conrady lens model "
                                f"(largest misfit {misfit:.2e}, more than {MAX_RAY_MISFIT:g})")
    return cam, misfit, int(seen.sum())


def check_output(out: Path) -> None:
    """Raise CameraImportError unless ``out`` is missing or a folder of an earlier import's files only."""
    if out.exists() and not out.is_dir():
        raise CameraImportError(f"--out {out}: exists and is not a folder")
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in OUTPUT_FILES)
        if other:
            raise CameraImportError(f"--out {out}: holds other files ({other[0]}, ...): give a new or "
                                    "empty folder, or an earlier import's")


def import_camera(source: Path, out: Path, mesh: Path) -> Dict[str, Any]:
    """Check ``source/expand/``, then write ``out`` whole (replacing an earlier import); its camera.json
    dict.  CameraImportError leaves ``out`` untouched."""
    out = out.resolve()      # a symlinked folder: write where it points, keep the link
    if not mesh.is_file():
        raise CameraImportError(f"--mesh {mesh}: not a file")
    check_output(out)
    expand = source / "expand"
    depth, rays = read_frames(expand)
    cam, misfit, pixels = fit_camera(rays)
    rgb = colour_frames(expand, len(depth))
    info = camera_json(source, len(depth), cam, misfit, pixels)
    try:
        write_folder(out, depth, rgb, mesh, info)
    except OSError as exc:
        raise CameraImportError(f"--out {out}: cannot write ({type(exc).__name__}: {exc})") from None
    return info


def write_folder(out: Path, depth: np.ndarray, rgb: Optional[np.ndarray], mesh: Path,
                 info: Dict[str, Any]) -> None:
    """Write a fresh folder beside ``out``, then put it in its place; on an error the earlier stays."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)        # mkdtemp's 0700 would hide the folder from other users
    old = None
    try:
        np.savez_compressed(tmp / "depth.npz", depth=depth)
        if rgb is not None:
            np.savez_compressed(tmp / "rgb.npz", rgb=rgb)
        try:
            shutil.copyfile(mesh, tmp / "membrane_equalized.vtk")
        except OSError as exc:
            raise CameraImportError(f"--mesh {mesh}: cannot read ({type(exc).__name__}: {exc})") from None
        (tmp / "camera.json").write_text(json.dumps(info, indent=1) + "\n")
        if out.exists():     # an earlier import (check_output): moved aside, removed once replaced
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
        os.replace(tmp, out)
    except BaseException:
        if old is not None and (old / out.name).exists() and not out.exists():
            os.replace(old / out.name, out)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def colour_frames(expand: Path, n: int) -> Optional[np.ndarray]:
    """``(n, H, W, 3)`` uint8 from ``rgb_<i>.npy``; None without any.  Raises CameraImportError: some
    missing, unreadable, or of another shape or type (naming it)."""
    files = [expand / f"rgb_{i}.npy" for i in range(n)]
    there = [f.is_file() for f in files]
    if not any(there):
        return None
    if not all(there):
        missing = files[there.index(False)]
        raise CameraImportError(f"{missing}: missing (or not a file) while other rgb_<i>.npy are there: "
                                "give every colour frame or none")
    rgb = np.zeros((n, HEIGHT, WIDTH, 3), dtype=np.uint8)
    for i, f in enumerate(files):
        img = load_array(f)
        if img.shape != (HEIGHT, WIDTH, 3) or img.dtype != np.uint8:
            raise CameraImportError(f"{f.name}: expected a ({HEIGHT}, {WIDTH}, 3) uint8 image, got "
                                    f"{img.shape} {img.dtype}")
        rgb[i] = img
    return rgb


def camera_json(source: Path, n: int, cam: BrownConradyCamera, misfit: float,
                pixels: int) -> Dict[str, Any]:
    """The ``camera.json`` content (the keys the replay and the benchmarks read, and provenance)."""
    k1, k2, p1, p2, k3 = cam.coeffs
    return {
        "source": f"{source} (expand/pc_<i>.npy, rgb_<i>.npy), imported by "
                  "vsf_sensor_ros.demo.camera_import",
        "frames": n, "reference_frames": list(range(min(REFERENCE_FRAMES, n))),
        "image_size": {"height": HEIGHT, "width": WIDTH},
        "camera_frame": "optical: x toward increasing u, y toward increasing v, z along the view; metres",
        "depth_unit_m": DEPTH_UNIT_M,
        "distortion_fit": {"model": "inverse Brown-Conrady (librealsense), fitted to the clouds' rays",
                           "fx": cam.fx, "fy": cam.fy, "cx": cam.cx, "cy": cam.cy,
                           "k1": k1, "k2": k2, "p1": p1, "p2": p2, "k3": k3,
                           "residual_ray_max": misfit, "pixels": pixels},
    }


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``--source`` (required), ``--mesh`` (required), ``--out``."""
    ap = argparse.ArgumentParser(prog="python -m vsf_sensor_ros.demo.camera_import",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, required=True,
                    help="the folder holding data.json and expand/ (the public repository's demo/0)")
    ap.add_argument("--out", type=Path, default=None,
                    help="the camera folder to write (default: <source>/camera)")
    ap.add_argument("--mesh", type=Path, required=True,
                    help="equalized.vtk of the same repository, copied as membrane_equalized.vtk (the replay "
                         "needs it)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the import: 0 and two lines on stdout, or 2 and one ``camera_import:`` line on stderr."""
    args = build_parser().parse_args(argv)
    out = args.out if args.out is not None else args.source / "camera"
    try:
        info = import_camera(args.source, out, args.mesh)
    except (CameraImportError, OSError) as exc:   # OSError: an unreadable folder on the way (it names it)
        print(f"camera_import: {exc}", file=sys.stderr)
        return 2
    f = info["distortion_fit"]
    print(f"wrote {out}: {info['frames']} frames\ncamera fitted to {f['pixels']} rays: fx {f['fx']:.4f} "
          f"fy {f['fy']:.4f} cx {f['cx']:.4f} cy {f['cy']:.4f} px, largest ray misfit "
          f"{f['residual_ray_max']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
