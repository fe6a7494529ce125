"""Mesh files: finding them (``package://``, ``file://``, relative) and reading them with the file's vertices,
in its order and count (the rule per format: docs/decisions.md).
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import urllib.parse
import warnings
from pathlib import Path
from typing import List, Optional, Tuple, Union

import klampt
import numpy as np
import trimesh

from .sensor.errors import InputError

__all__ = ["MeshLike", "MeshNotFoundError", "file_uri_path", "load_mesh", "read_collada_geometry",
           "read_obj_geometry", "resolve_uri", "trimesh_to_klampt"]

MeshLike = Union[str, os.PathLike, trimesh.Trimesh]


class MeshNotFoundError(FileNotFoundError):
    """A mesh reference that names no existing file.  Attributes: ``uri`` as written, ``tried`` the paths
    looked at (list of ``Path``)."""

    def __init__(self, message: str, uri: str, tried: List[Path]) -> None:
        super().__init__(message)
        self.uri, self.tried = uri, tried


def resolve_uri(uri: str, base_dir: Optional[Union[str, os.PathLike]] = None) -> Path:
    """Resolve a mesh reference (``package://``, a ``file:`` URI, an absolute path or a path relative to
    ``base_dir``) to an existing file.  ``package://pkg`` tries the ament index, the Python package ``pkg``,
    then ``base_dir/pkg``, ``base_dir/../pkg``, ``base_dir/../../pkg`` and ``base_dir``.

    Raises:
        MeshNotFoundError: no candidate exists (a ``FileNotFoundError``; lists those tried).
        InputError: ``argument`` ``'uri'``, ``value`` the URI; ``reason`` ``'malformed'``,
            ``'needs_base_dir'`` (a relative path, or a ``package://`` found nowhere, without ``base_dir``),
            or as :func:`file_uri_path`.
    """
    uri = uri.strip()
    tried: List[Path] = []
    base = Path(base_dir).resolve() if base_dir is not None else None
    if uri.startswith("package://"):
        pkg, _, rel = uri[len("package://"):].partition("/")
        if not pkg or not rel:
            raise InputError(f"malformed package URI {uri!r}", "uri", uri, "malformed")
        with contextlib.suppress(Exception):  # no ament index, or the package is not in it
            from ament_index_python.packages import get_package_share_directory
            tried.append(Path(get_package_share_directory(pkg)) / rel)
        spec = None
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(pkg)
        if spec is not None and spec.submodule_search_locations:
            tried += [Path(p) / rel for p in spec.submodule_search_locations]
        if base is not None:
            tried += [d / pkg / rel for d in (base, base.parent, base.parent.parent)] + [base / rel]
        elif not tried:
            raise InputError(f"cannot resolve {uri!r}: package {pkg!r} not found and no base_dir given",
                             "uri", uri, "needs_base_dir")
    else:
        p = file_uri_path(uri) if uri[:5].lower() == "file:" else Path(uri).expanduser()
        if p.is_absolute():
            tried.append(p)
        elif base is not None:
            tried.append(base / p)
        else:
            raise InputError(f"relative mesh path {uri!r} needs base_dir (URDF given as text)", "uri", uri,
                             "needs_base_dir")
    for c in tried:
        if c.is_file():
            return c
    raise MeshNotFoundError(f"mesh {uri!r} not found; tried: {', '.join(str(c) for c in tried)}", uri, tried)


def file_uri_path(uri: str) -> Path:
    """The local path a ``file:`` URI names (RFC 8089), percent-decoded as UTF-8: ``file:///p``,
    ``file://localhost/p`` and ``file:/p`` name ``/p``; an encoded ``%23`` is part of the name.

    Raises:
        InputError: ``argument`` ``'uri'``; ``reason`` ``'not_file_uri'``, ``'remote_host'`` (``value`` the
            host), ``'not_utf8'`` or ``'relative'`` (``value`` the URI).
    """
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise InputError(f"{uri!r} is not a file: URI", "uri", uri, "not_file_uri")
    host = parts.netloc
    if host and host.lower() != "localhost":
        raise InputError(f"file URI {uri!r} names host {host!r}; only local files "
                         f"(file:///path or file://localhost/path) can be read", "uri", host, "remote_host",
                         "localhost")
    try:
        path = urllib.parse.unquote(parts.path, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise InputError(f"file URI {uri!r}: its percent-encoded bytes are not UTF-8", "uri", uri,
                         "not_utf8") from None
    if not path.startswith("/"):
        raise InputError(f"file URI {uri!r} does not name an absolute path (use file:///abs/path)", "uri",
                         uri, "relative")
    return Path(path)


def read_obj_geometry(path: Union[str, os.PathLike]) -> Tuple[np.ndarray, np.ndarray]:
    """``(V (V, 3) float64, F (T, 3) int64)`` of a Wavefront OBJ file in the file's vertex order: ``v``
    and ``f`` lines (any index form, negative = relative), polygons fanned; other statements ignored.

    Raises:
        InputError: ``argument`` ``'<path>:<line>'``; ``reason`` ``'bad_vertex'``, ``'bad_corner'``,
            ``'too_few_corners'`` (``value`` the text) or ``'index_out_of_range'`` (``value`` the index as
            written, ``expected`` the vertices defined so far).
    """
    verts: List[Tuple[float, float, float]] = []
    faces: List[Tuple[int, int, int]] = []
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        text = fh.read().replace("\\\n", " ")           # line continuation
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        if parts[0] == "v":
            try:
                x, y, z = (float(v) for v in parts[1:4])
            except ValueError:
                raise InputError(f"{path}:{lineno}: bad vertex line {line.strip()!r}", f"{path}:{lineno}",
                                 line.strip(), "bad_vertex") from None
            verts.append((x, y, z))
        elif parts[0] == "f":
            idx = []
            for corner in parts[1:]:
                try:
                    i = int(corner.split("/", 1)[0])
                except ValueError:
                    raise InputError(f"{path}:{lineno}: bad face corner {corner!r} in {line.strip()!r}",
                                     f"{path}:{lineno}", corner, "bad_corner") from None
                j = i - 1 if i > 0 else len(verts) + i
                if i == 0 or not 0 <= j < len(verts):
                    raise InputError(f"{path}:{lineno}: face index {i} is outside the {len(verts)} "
                                     f"vertices defined so far: {line.strip()!r}", f"{path}:{lineno}", i,
                                     "index_out_of_range", len(verts))
                idx.append(j)
            if len(idx) < 3:
                raise InputError(f"{path}:{lineno}: a face needs 3 or more corners: {line.strip()!r}",
                                 f"{path}:{lineno}", line.strip(), "too_few_corners")
            faces += [(idx[0], idx[k], idx[k + 1]) for k in range(1, len(idx) - 1)]
    return (np.array(verts, dtype=np.float64).reshape(-1, 3),
            np.array(faces, dtype=np.int64).reshape(-1, 3))


def read_collada_geometry(path: Union[str, os.PathLike]) -> Tuple[np.ndarray, np.ndarray]:
    """``(V (V, 3) float64 m, F (T, 3) int64)`` of a Collada file, placed as rviz2 (Assimp) shows it.

    Every ``<instance_geometry>`` in document order, scaled by ``<unit meter>`` and its nodes' transforms,
    with no Y-up rotation; each ``POSITION`` array once, as stored (float32, as Assimp); polygons fanned,
    lines skipped.

    Raises:
        ValueError: a file pycollada cannot parse, a ``<unit meter>`` not a positive length, or no triangles
            (names the file).
    """
    import collada                                  # pycollada: only Collada files need it
    with warnings.catch_warnings():                 # pycollada still builds numpy.matrix objects
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        try:
            doc = collada.Collada(str(path), ignore=[collada.common.DaeUnsupportedError])
        except Exception as exc:  # noqa: BLE001 - pycollada and its XML parser raise many types
            raise ValueError(f"cannot read Collada file {str(path)!r}: {type(exc).__name__}: {exc}") from None
        node = doc.xmlnode.getroot().find(".//{*}asset/{*}unit")   # <unit meter>: 1 when absent, as Assimp
        written = None if node is None else node.get("meter")
        try:
            unit = 1.0 if written is None else float(written)
        except ValueError:
            unit = math.nan
        if not (math.isfinite(unit) and unit > 0):
            raise ValueError(f"Collada file {str(path)!r}: <unit meter={written!r}> is not a positive length "
                             "in metres")
        verts: List[np.ndarray] = []
        faces: List[np.ndarray] = []
        n = 0
        for geom in (doc.scene.objects("geometry") if doc.scene is not None else ()):
            first: dict = {}                        # POSITION source id -> its first vertex index
            for prim in geom.primitives():
                if isinstance(prim, collada.polylist.BoundPolylist):      # also <polygons>
                    prim = prim.triangleset()
                if not isinstance(prim, collada.triangleset.BoundTriangleSet) or prim.vertex is None:
                    continue
                source = prim.original.sources["VERTEX"][0][2]
                if source not in first:
                    first[source] = n
                    verts.append(np.asarray(prim.vertex, dtype=np.float64) * unit)
                    n += len(verts[-1])
                faces.append(np.asarray(prim.vertex_index, dtype=np.int64).reshape(-1, 3) + first[source])
    if not faces:
        raise ValueError(f"Collada file {str(path)!r}: its scene instantiates no triangles")
    return np.vstack(verts), np.vstack(faces)


_OWN_READERS = {".obj": read_obj_geometry, ".dae": read_collada_geometry}
"""Formats whose vertex table trimesh's loaders do not keep (docs/decisions.md)."""


def load_mesh(mesh: MeshLike, base_dir: Optional[Union[str, os.PathLike]] = None) -> trimesh.Trimesh:
    """A ``trimesh.Trimesh`` (``process=False``, float64 m, int64 faces) with the file's vertices in order
    and count, from a path / URI relative to ``base_dir`` or a Trimesh (copied); per-format rules in
    docs/decisions.md.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: no triangles or unparsable (names the file).
    """
    if isinstance(mesh, trimesh.Trimesh):
        m = mesh.copy()
    else:
        path = resolve_uri(os.fspath(mesh), Path.cwd() if base_dir is None else base_dir)
        suffix = path.suffix.lower()
        if suffix in _OWN_READERS:
            V, F = _OWN_READERS[suffix](path)
            m = trimesh.Trimesh(V, F, process=False)
        else:
            try:
                m = trimesh.load(str(path), process=False, force="mesh")
            except Exception as exc:  # noqa: BLE001 - trimesh raises many types for a bad file
                raise ValueError(f"cannot read mesh {str(path)!r}: {type(exc).__name__}: {exc}") from None
            if not isinstance(m, trimesh.Trimesh):
                raise ValueError(f"{path} holds no triangle mesh")
            if suffix == ".stl" and len(m.faces):   # merge equal vertices, numbered by first appearance
                V = np.asarray(m.vertices, dtype=np.float64)
                _, first, inverse = np.unique(V, axis=0, return_index=True, return_inverse=True)
                rank = np.argsort(np.argsort(first))    # unique rows -> first-appearance rank
                m = trimesh.Trimesh(V[np.sort(first)], rank[inverse.reshape(-1)][m.faces], process=False)
    if len(m.faces) == 0:
        raise ValueError(f"mesh {mesh!r} has no triangles")
    return m


def trimesh_to_klampt(mesh: trimesh.Trimesh) -> klampt.TriangleMesh:
    """Copy a ``trimesh.Trimesh`` into a Klampt ``TriangleMesh`` (same vertex order)."""
    tm = klampt.TriangleMesh()
    tm.setVertices(np.ascontiguousarray(mesh.vertices, dtype=np.float64))
    tm.setIndices(np.ascontiguousarray(mesh.faces, dtype=np.int32))
    return tm
