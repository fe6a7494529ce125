"""The Punyo membrane's triangle mesh with its clamped boundary (read from a VTK file with meshio)."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .errors import InputError

__all__ = ["MembraneMesh", "read_membrane_mesh"]


@dataclass(frozen=True)
class MembraneMesh:
    """A membrane surface (mesh frame): ``points`` ``(V, 3)`` float64 m, ``triangles`` ``(T, 3)`` int64,
    ``boundary`` ``(B,)`` int64 sorted clamped vertices (their forces are support reactions).  InputError
    naming the field: ``'shape'``, ``'not_finite'``, ``'out_of_range'``, ``'count'`` (boundary empty or
    everything), ``'degenerate'`` or ``'in_no_triangle'``."""

    points: np.ndarray
    triangles: np.ndarray
    boundary: np.ndarray

    def __post_init__(self) -> None:
        pts = np.array(self.points, dtype=np.float64)
        tri = np.array(self.triangles, dtype=np.int64)
        bnd = np.unique(np.asarray(self.boundary, dtype=np.int64).ravel())
        if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 3:
            raise InputError(f"membrane points must be (V, 3) with V >= 3, got {pts.shape}",
                             "points", pts.shape, "shape", "(V, 3), V >= 3")
        if not np.isfinite(pts).all():
            rows = np.flatnonzero(~np.isfinite(pts).all(axis=1))[:10].tolist()
            raise InputError(f"membrane points must be finite (rows {rows})", "points", rows, "not_finite")
        if tri.ndim != 2 or tri.shape[1] != 3 or len(tri) == 0:
            raise InputError(f"membrane triangles must be (T, 3) with T >= 1, got {tri.shape}",
                             "triangles", tri.shape, "shape", "(T, 3), T >= 1")
        if bnd.size == 0 or bnd.size >= len(pts):
            raise InputError(f"boundary must name some but not all of the {len(pts)} vertices, "
                             f"got {bnd.size}", "boundary", bnd.size, "count", len(pts))
        for name, idx in (("triangles", tri), ("boundary", bnd)):
            if idx.min() < 0 or idx.max() >= len(pts):
                raise InputError(f"{name} index out of range 0..{len(pts) - 1}: {idx.min()}..{idx.max()}",
                                 name, (int(idx.min()), int(idx.max())), "out_of_range", (0, len(pts) - 1))
        a, b, c = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
        bad = np.flatnonzero(np.linalg.norm(np.cross(b - a, c - a), axis=1) <= 1e-18)[:10].tolist()
        if bad:
            raise InputError(f"degenerate (zero-area) triangle(s): {bad}", "triangles", bad, "degenerate")
        idx = np.setdiff1d(np.arange(len(pts)), np.concatenate([tri.ravel(), bnd]))
        if idx.size:   # a free vertex in no triangle has no stiffness: the membrane cannot be solved
            raise InputError(f"{idx.size} free vertex(es) belong to no triangle: {idx[:10].tolist()}",
                             "points", idx[:10].tolist(), "in_no_triangle")
        for name, arr in (("points", pts), ("triangles", tri), ("boundary", bnd)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def interior(self) -> np.ndarray:
        """``(V − B,)`` int64 indices of the free (non-boundary) vertices, ascending."""
        return np.setdiff1d(np.arange(len(self.points)), self.boundary)


def _meshio_read(path: Path) -> Any:
    """``meshio.read``, its failure an InputError (on a file it cannot parse meshio calls ``sys.exit(1)``)."""
    import meshio  # deferred: only this reader needs it

    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            return meshio.read(str(path))
    except SystemExit:
        words = " ".join(said.getvalue().replace("Error:", "").split())
        raise InputError(f"meshio cannot read {path}: {words or 'unknown format'}", "path", path,
                         "unreadable") from None


def read_membrane_mesh(path: Union[str, Path], boundary: Optional[Sequence[int]] = None) -> MembraneMesh:
    """:class:`MembraneMesh` (file frame, m) of a file meshio reads: its ``triangle`` cells; boundary the
    ``boundary`` argument, else the ``vertex`` cells (the Punyo clamped ring), else the ``line`` cells.
    FileNotFoundError; meshio.ReadError: unknown extension; InputError (``'path'``): ``'unreadable'``,
    ``'no_triangles'``, ``'no_boundary'``, or as :class:`MembraneMesh`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"membrane mesh not found: {path}")
    mesh = _meshio_read(path)
    cells = mesh.cells_dict   # cell type -> its blocks' cells, joined
    if "triangle" not in cells:
        raise InputError(f"{path} has no triangle cells (cell types: {sorted(cells)})", "path", path,
                         "no_triangles", sorted(cells))
    if boundary is None:
        if "vertex" in cells:
            boundary = cells["vertex"].ravel()
        elif "line" in cells:
            boundary = np.unique(cells["line"])
        else:
            raise InputError(f"{path} marks no boundary (no vertex or line cells); pass boundary= "
                             "(Python API), or give a mesh file that holds the clamped ring as vertex "
                             "cells, one per clamped vertex, as the Punyo reference mesh "
                             "equalized.vtk does", "path", path, "no_boundary")
    return MembraneMesh(np.asarray(mesh.points, dtype=np.float64), cells["triangle"], np.asarray(boundary))
