"""Synthetic membranes and a synthetic depth camera for the membrane force estimator tests.

A disc mesh (rings of vertices, Delaunay-triangulated in the plane), optionally lifted onto a
spherical cap, and a ray-cast depth image of any displaced copy of it (trimesh ray queries).
"""
from __future__ import annotations

import numpy as np
import trimesh
from scipy.spatial import Delaunay

from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
from vsf_sensor_ros.sensor.membrane_mesh import MembraneMesh


def disc_mesh(radius: float, rings: int, cap_radius: float = 0.0, base_z: float = 0.0) -> MembraneMesh:
    """A disc of ``rings`` rings (6k vertices on ring k), boundary = the outer ring, listed first.

    With ``cap_radius`` > 0 the vertices are lifted onto the sphere of that radius whose
    circle of intersection with the plane ``z = base_z`` is the disc's rim (the dome rises
    toward +z). Triangles are wound so that their normals point toward +z.
    """
    pts = [np.zeros(2)]
    for k in range(1, rings + 1):
        n = 6 * k
        ang = 2 * np.pi * (np.arange(n) + 0.5 * (k % 2)) / n
        pts.extend(np.stack([np.cos(ang), np.sin(ang)], 1) * radius * k / rings)
    xy = np.array(pts)
    n_outer = 6 * rings
    order = np.r_[np.arange(len(xy) - n_outer, len(xy)), np.arange(len(xy) - n_outer)]
    xy = xy[order]
    tri = Delaunay(xy).simplices
    a, b, c = xy[tri[:, 0]], xy[tri[:, 1]], xy[tri[:, 2]]
    flip = ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]) < 0
    tri[flip] = tri[flip][:, [0, 2, 1]]
    z = np.full(len(xy), float(base_z))
    if cap_radius > 0:
        centre_depth = np.sqrt(cap_radius ** 2 - radius ** 2)
        z = base_z + np.sqrt(cap_radius ** 2 - (xy ** 2).sum(1)) - centre_depth
    return MembraneMesh(np.c_[xy, z], tri, np.arange(n_outer))


def camera(width: int = 200, height: int = 160, f: float = 80.0) -> BrownConradyCamera:
    """A distortion-free camera with its principal point at the image centre."""
    return BrownConradyCamera(width, height, f, f, (width - 1) / 2, (height - 1) / 2)


def render_depth(cam: BrownConradyCamera, points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Depth image (m, along z) of a triangle mesh seen from the camera origin; 0 where no hit."""
    v, u = np.mgrid[0:cam.height, 0:cam.width]
    rays = cam.deproject(u, v).reshape(-1, 2)
    dirs = np.c_[rays, np.ones(len(rays))]
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    mesh = trimesh.Trimesh(points, triangles, process=False)
    loc, idx_ray, _ = mesh.ray.intersects_location(np.zeros_like(dirs), dirs, multiple_hits=False)
    depth = np.zeros(len(dirs))
    depth[idx_ray] = loc[:, 2]
    return depth.reshape(cam.height, cam.width)


def cloud_from_depth(cam: BrownConradyCamera, depth: np.ndarray) -> np.ndarray:
    """Organised cloud ``(H, W, 3)`` (m, NaN without reading) of a depth image (m along z; 0 = none)."""
    v, u = np.mgrid[0:cam.height, 0:cam.width]
    z = np.where(depth > 0.0, depth, np.nan)[..., None]
    return np.concatenate([cam.deproject(u, v) * z, z], axis=-1)
