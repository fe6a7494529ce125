"""The Punyo membrane's triangle mesh with its clamped boundary (read from a VTK file with meshio)."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

__all__ = ["MembraneMesh", "read_membrane_mesh"]


@dataclass(frozen=True)
class MembraneMesh:
    """A membrane surface (mesh frame): ``points`` ``(V, 3)`` float64 m, ``triangles`` ``(T, 3)`` int64,
    ``boundary`` ``(B,)`` int64 sorted clamped vertices (their forces are support reactions).

    Raises:
        ValueError: wrong shapes, non-finite points, an index out of range, a boundary empty or covering every
            vertex, a free vertex in no triangle, or a degenerate triangle.
    """

    points: np.ndarray
    triangles: np.ndarray
    boundary: np.ndarray

    def __post_init__(self) -> None:
        pts = np.array(self.points, dtype=np.float64)
        tri = np.array(self.triangles, dtype=np.int64)
        bnd = np.unique(np.asarray(self.boundary, dtype=np.int64).ravel())
        if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 3:
            raise ValueError(f"membrane points must be (V, 3) with V >= 3, got {pts.shape}")
        if not np.isfinite(pts).all():
            raise ValueError("membrane points must be finite")
        if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
            raise ValueError(f"membrane triangles must be (T, 3) with T >= 1, got {tri.shape}")
        if tri.min() < 0 or tri.max() >= len(pts):
            raise ValueError(f"triangle index out of range 0..{len(pts) - 1}: {tri.min()}..{tri.max()}")
        if bnd.size == 0 or bnd.size >= len(pts):
            raise ValueError(f"boundary must name some but not all of the {len(pts)} vertices, "
                             f"got {bnd.size}")
        if bnd.min() < 0 or bnd.max() >= len(pts):
            raise ValueError(f"boundary index out of range 0..{len(pts) - 1}: {bnd.min()}..{bnd.max()}")
        edge1, edge2 = pts[tri[:, 1]] - pts[tri[:, 0]], pts[tri[:, 2]] - pts[tri[:, 0]]
        area2 = np.linalg.norm(np.cross(edge1, edge2), axis=1)
        if (area2 <= 1e-18).any():
            bad = np.flatnonzero(area2 <= 1e-18)[:10].tolist()
            raise ValueError(f"degenerate (zero-area) triangle(s): {bad}")
        loose = np.ones(len(pts), dtype=bool)
        loose[tri.ravel()] = False
        loose[bnd] = False
        if loose.any():   # a free vertex in no triangle has no stiffness: the membrane cannot be solved
            idx = np.flatnonzero(loose)
            raise ValueError(f"{idx.size} free vertex(es) belong to no triangle: {idx[:10].tolist()}")
        for name, arr in (("points", pts), ("triangles", tri), ("boundary", bnd)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def interior(self) -> np.ndarray:
        """``(V − B,)`` int64 indices of the free (non-boundary) vertices, ascending."""
        mask = np.ones(len(self.points), dtype=bool)
        mask[self.boundary] = False
        return np.flatnonzero(mask)


def _meshio_read(path: Path) -> Any:
    """``meshio.read``, with its failure a ValueError: for a file it cannot parse meshio prints why and calls
    ``sys.exit(1)``, which would end the caller's process."""
    import meshio  # deferred: only this reader needs it

    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            return meshio.read(str(path))
    except SystemExit:
        words = " ".join(said.getvalue().replace("Error:", "").split())
        raise ValueError(f"meshio cannot read {path}: {words or 'unknown format'}") from None


def read_membrane_mesh(path: Union[str, Path], boundary: Optional[Sequence[int]] = None) -> MembraneMesh:
    """Read a membrane mesh (legacy or XML VTK, or any format meshio reads).

    The triangles are the file's ``triangle`` cells. The boundary is, in this order of preference, the
    ``boundary`` argument, the file's ``vertex`` cells (how the Punyo reference mesh marks its clamped
    ring), or the vertices of the file's ``line`` cells.

    Args:
        path: mesh file; coordinates in metres.
        boundary: optional explicit boundary vertex indices.

    Returns:
        :class:`MembraneMesh` (points as float64, in the file's frame).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file meshio cannot parse (its own words), no triangles, no boundary information, or an
            invalid mesh.
        meshio.ReadError: an extension meshio does not know; a format reader's own exception passes through
            too.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"membrane mesh not found: {path}")
    mesh = _meshio_read(path)
    cells = {}
    for block in mesh.cells:
        cells.setdefault(block.type, []).append(np.asarray(block.data))
    if "triangle" not in cells:
        raise ValueError(f"{path} has no triangle cells (cell types: {sorted(cells)})")
    triangles = np.concatenate(cells["triangle"])
    if boundary is None:
        if "vertex" in cells:
            boundary = np.concatenate(cells["vertex"]).ravel()
        elif "line" in cells:
            boundary = np.unique(np.concatenate(cells["line"]).ravel())
        else:
            raise ValueError(f"{path} marks no boundary (no vertex or line cells); pass boundary= "
                             "(Python API), or give a mesh file that holds the clamped ring as vertex "
                             "cells, one per clamped vertex, as the Punyo reference mesh "
                             "equalized.vtk does")
    return MembraneMesh(np.asarray(mesh.points, dtype=np.float64), triangles, np.asarray(boundary))
