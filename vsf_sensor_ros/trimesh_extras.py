"""Keep trimesh's optional dependencies the sensor node never uses out of its process.

trimesh needs only numpy; everything else it uses when installed ("soft"
dependencies) and otherwise replaces a feature by an error raised when that
feature is called.  Importing ``trimesh`` loads every soft dependency it
finds, among them networkx (graph algorithms), rtree (spatial index) and
``scipy.optimize`` / ``scipy.ndimage`` / ``scipy.fft`` (sphere fits, voxels).
Those five are ~23 MB of the sensor node's resident memory (``import trimesh``
after numpy, scipy.spatial, torch and numba: +38 MB with them, +15 MB without;
idle RSS 463 -> 440 MB between two full benchmark runs), and the node reads
meshes with ``process=False`` only (:mod:`vsf_sensor_ros.mesh_io`), which needs
none of them.  Pillow stays (trimesh's PLY loader builds a texture material
for a file with texture coordinates, and copies it; without Pillow that copy
fails), and so does shapely (the Punyo pressure sensor's projected area uses it).

:func:`skip_trimesh_extras` marks those modules as absent *before* trimesh is
imported, exactly as if they were not installed, so trimesh runs without
them.  Only process entry points call it (``sensor_node``'s ``main``): a
library import never changes what the importing process can load.  Set
``VSF_TRIMESH_EXTRAS=1`` to load them anyway, for a mesh format whose trimesh
loader needs one of them: such a load fails with ``import of <module> halted;
None in sys.modules``, and :func:`skipped_extra_hint` adds the remedy to the
error the node reports.
"""
from __future__ import annotations

import os
import sys
from typing import List, Mapping, Optional

TRIMESH_EXTRAS = ("networkx", "rtree", "scipy.optimize", "scipy.ndimage", "scipy.fft")
"""Soft dependencies of trimesh that the sensor node does not load (see the module docstring)."""

ENV_LOAD_EXTRAS = "VSF_TRIMESH_EXTRAS"
"""Environment variable: ``1`` (or ``true``, ``yes``, ``on``) loads :data:`TRIMESH_EXTRAS` as usual."""

_TRUE = ("1", "true", "yes", "on")


def skip_trimesh_extras(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """Mark :data:`TRIMESH_EXTRAS` absent in this process, unless trimesh is already imported.

    Args:
        environ: the environment to read :data:`ENV_LOAD_EXTRAS` from (``os.environ``
            when None).

    Returns:
        The module names marked absent now (none when ``VSF_TRIMESH_EXTRAS=1``,
        when trimesh is already imported -- it has loaded what it found -- or
        for a module some code imported earlier).
    """
    env = os.environ if environ is None else environ
    if env.get(ENV_LOAD_EXTRAS, "").strip().lower() in _TRUE or "trimesh" in sys.modules:
        return []
    skipped = []
    for name in TRIMESH_EXTRAS:
        if name not in sys.modules:
            sys.modules[name] = None   # type: ignore[assignment]  # import raises ImportError
            skipped.append(name)
    return skipped


def skipped_extra_hint(exc: BaseException) -> str:
    """The remedy for an error raised because a skipped module is absent, else ``""``.

    Args:
        exc: an exception from a trimesh call (its cause and context are searched too).

    Returns:
        ``" (the sensor node leaves trimesh's optional dependency <m> out; start it with
        VSF_TRIMESH_EXTRAS=1 to load it)"`` when ``exc`` comes from importing a module of
        :data:`TRIMESH_EXTRAS` that :func:`skip_trimesh_extras` marked absent.
    """
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = str(e)
        for name in TRIMESH_EXTRAS:
            if f"import of {name} halted" in text and sys.modules.get(name, "") is None:
                return (f" (the sensor node leaves trimesh's optional dependency {name} out; start it with "
                        f"{ENV_LOAD_EXTRAS}=1 to load it)")
        e = e.__cause__ or e.__context__
    return ""


__all__ = ["ENV_LOAD_EXTRAS", "TRIMESH_EXTRAS", "skip_trimesh_extras", "skipped_extra_hint"]
