"""Import the public Punyo poke's camera frames into the ``camera/`` folder the replay reads.

The public repository ``uiuc-iml/punyo_force_estimation`` keeps the poke of ``demo/0/data.json``
as one file per frame in ``demo/0/expand/``: ``pc_<i>.npy`` (the organised point cloud, 307 200 ×
3 float32, camera optical frame, m, row-major pixel order ``v * 640 + u``; (0, 0, 0) = no
reading), ``rgb_<i>.npy`` (480 × 640 × 3 uint8) and ``pressure_<i>.npy`` (hPa). The replay
(``make demo-real``, ``vsf_replay``) and the benchmarks read instead a ``camera/`` folder beside
``data.json``:

* ``depth.npz``: key ``depth``, ``(N, H, W)`` uint16, depth along z in units of ``depth_unit_m``
  (1e-4 m: every depth of the source is a multiple of 0.1 mm, so nothing is lost);
* ``camera.json``: ``image_size``, ``depth_unit_m``, ``reference_frames`` (0–4, the contact-free
  frames the source's estimator uses) and ``distortion_fit``: the inverse Brown–Conrady camera
  (``fx fy cx cy k1 k2 p1 p2 k3``) fitted to the clouds' rays
  (:meth:`~vsf_sensor_ros.sensor.camera_model.BrownConradyCamera.fit_to_rays`; the source has no
  ``CameraInfo`` of this camera), with its largest ray misfit;
* ``rgb.npz``: key ``rgb``, the colour frames, when the source has them;
* ``membrane_equalized.vtk``: a copy of the membrane mesh, when ``--mesh`` names it
  (``src/punyo_force_estimation/ref_data/equalized.vtk`` of the same repository).

Usage (from the repository root, in the venv)::

    python -m vsf_sensor_ros.demo.camera_import --source /path/to/punyo_force_estimation/demo/0 \\
        --mesh /path/to/punyo_force_estimation/src/punyo_force_estimation/ref_data/equalized.vtk

writes ``<source>/camera/`` (``--out`` elsewhere). Errors (exit 2, one line, nothing written):
no ``pc_0.npy``, frame numbers with a gap, a cloud of another shape, a depth that is no multiple of
the unit, a ray table that differs between frames.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera

WIDTH, HEIGHT = 640, 480
DEPTH_UNIT_M = 1e-4
REFERENCE_FRAMES = [0, 1, 2, 3, 4]
RAY_AGREEMENT = 1e-6
"""Largest spread (x/z, y/z) of one pixel's ray across frames: more is not one camera."""


class CameraImportError(ValueError):
    """The source folder cannot be imported; the message names the file and the value."""


def frame_count(expand: Path) -> int:
    """Number of frames ``pc_0.npy`` … ``pc_<N-1>.npy`` in ``expand``.

    Raises:
        CameraImportError: none, or the numbers have a gap (naming the first missing one).
    """
    numbers = sorted(int(p.stem[3:]) for p in expand.glob("pc_*.npy") if p.stem[3:].isdigit())
    if not numbers:
        raise CameraImportError(f"no pc_<i>.npy frames in {expand}")
    missing = sorted(set(range(numbers[-1] + 1)) - set(numbers))
    if missing:
        raise CameraImportError(f"frames are not numbered 0..{numbers[-1]} in {expand}: "
                                f"pc_{missing[0]}.npy is missing")
    return len(numbers)


def depth_of_cloud(cloud: np.ndarray, name: str) -> np.ndarray:
    """``(H, W)`` uint16 depth (units of 1e-4 m) of one source cloud; 0 where it has no reading.

    Raises:
        CameraImportError: not ``(H·W, 3)``, a depth that is not a multiple of 0.1 mm or beyond uint16.
    """
    cloud = np.asarray(cloud)
    if cloud.shape != (WIDTH * HEIGHT, 3):
        raise CameraImportError(f"{name}: expected a ({WIDTH * HEIGHT}, 3) cloud, got {cloud.shape}")
    z = cloud[:, 2].astype(np.float64).reshape(HEIGHT, WIDTH)
    units = z / DEPTH_UNIT_M
    q = np.rint(units)
    off = np.abs(units - q)
    if not np.isfinite(z).all() or off.max() > 0.01 or q.min() < 0 or q.max() > 65535:
        worst = float(off.max()) if np.isfinite(off).all() else float("nan")
        raise CameraImportError(f"{name}: depths are not whole multiples of {DEPTH_UNIT_M} m within "
                                f"uint16 (largest fraction {worst:.3f}, range {np.nanmin(z):.4f}.."
                                f"{np.nanmax(z):.4f} m)")
    return q.astype(np.uint16)


def rays_of_cloud(cloud: np.ndarray) -> np.ndarray:
    """``(H, W, 2)`` ray slopes ``x/z, y/z`` of one cloud; NaN where it has no reading."""
    c = np.asarray(cloud, dtype=np.float64).reshape(HEIGHT, WIDTH, 3)
    z = np.where(c[..., 2] > 0.0, c[..., 2], np.nan)
    return np.stack([c[..., 0] / z, c[..., 1] / z], axis=-1)


def import_camera(source: Path, out: Path, mesh: Optional[Path] = None) -> Dict[str, Any]:
    """Read ``source/expand/`` and write the ``camera/`` folder ``out``; its ``camera.json`` dict.

    Raises:
        CameraImportError: see the module text; ``out`` is not touched then.
    """
    expand = source / "expand"
    n = frame_count(expand)
    depth = np.zeros((n, HEIGHT, WIDTH), dtype=np.uint16)
    rays = np.full((HEIGHT, WIDTH, 2), np.nan)
    for i in range(n):
        cloud = np.load(expand / f"pc_{i}.npy")
        depth[i] = depth_of_cloud(cloud, f"pc_{i}.npy")
        r = rays_of_cloud(cloud)
        both = np.isfinite(r[..., 0]) & np.isfinite(rays[..., 0])
        spread = float(np.abs(r[both] - rays[both]).max(initial=0.0))
        if spread > RAY_AGREEMENT:
            raise CameraImportError(f"pc_{i}.npy: its rays differ from the earlier frames' by "
                                    f"{spread:.2e} (more than {RAY_AGREEMENT:g}): not one camera")
        rays = np.where(np.isfinite(rays), rays, r)
    seen = np.isfinite(rays).all(axis=-1)
    v, u = np.nonzero(seen)
    cam, misfit = BrownConradyCamera.fit_to_rays(WIDTH, HEIGHT, u, v, rays[seen])
    rgb = colour_frames(expand, n)
    if mesh is not None and not mesh.is_file():
        raise CameraImportError(f"--mesh {mesh}: no such file")
    info = camera_json(source, n, cam, misfit, int(seen.sum()))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "depth.npz", depth=depth)
    if rgb is not None:
        np.savez_compressed(out / "rgb.npz", rgb=rgb)
    if mesh is not None:
        shutil.copyfile(mesh, out / "membrane_equalized.vtk")
    (out / "camera.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def colour_frames(expand: Path, n: int) -> Optional[np.ndarray]:
    """``(n, H, W, 3)`` uint8 from ``rgb_0.npy`` … when every one is there, else None.

    Raises:
        CameraImportError: one of another shape or type (naming it).
    """
    files = [expand / f"rgb_{i}.npy" for i in range(n)]
    if not all(f.is_file() for f in files):
        return None
    rgb = np.zeros((n, HEIGHT, WIDTH, 3), dtype=np.uint8)
    for i, f in enumerate(files):
        img = np.load(f)
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
        "frames": n, "reference_frames": REFERENCE_FRAMES,
        "image_size": {"height": HEIGHT, "width": WIDTH},
        "camera_frame": "optical: x toward increasing u, y toward increasing v, z along the view; metres",
        "depth_unit_m": DEPTH_UNIT_M,
        "distortion_fit": {"model": "inverse Brown-Conrady (librealsense), fitted to the clouds' rays",
                           "fx": cam.fx, "fy": cam.fy, "cx": cam.cx, "cy": cam.cy,
                           "k1": k1, "k2": k2, "p1": p1, "p2": p2, "k3": k3,
                           "residual_ray_max": misfit, "pixels": pixels},
    }


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m vsf_sensor_ros.demo.camera_import",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, required=True,
                    help="the folder holding data.json and expand/ (the public repository's demo/0)")
    ap.add_argument("--out", type=Path, default=None,
                    help="the camera folder to write (default: <source>/camera)")
    ap.add_argument("--mesh", type=Path, default=None, help="equalized.vtk, copied as membrane_equalized.vtk")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out if args.out is not None else args.source / "camera"
    try:
        info = import_camera(args.source, out, args.mesh)
    except CameraImportError as exc:
        print(f"camera_import: {exc}", file=sys.stderr)
        return 2
    f = info["distortion_fit"]
    lines: List[str] = [f"wrote {out}: {info['frames']} frames",
                        f"camera fitted to {f['pixels']} rays: fx {f['fx']:.4f} fy {f['fy']:.4f} "
                        f"cx {f['cx']:.4f} cy {f['cy']:.4f} px, largest ray misfit "
                        f"{f['residual_ray_max']:.1e}"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
