"""Keep trimesh's optional dependencies the sensor node never uses out of its process.

trimesh needs only numpy; everything else it uses when installed ("soft"
dependencies) and otherwise replaces a feature by an error raised when that
feature is called.  Importing ``trimesh`` loads every soft dependency it
finds: networkx (graph algorithms), rtree (spatial index), Pillow (textures),
``scipy.optimize`` (sphere fits), ``scipy.ndimage`` / ``scipy.fft`` (voxels).
Together they are ~27 MB of the sensor node's resident memory (measured:
idle RSS 462 -> 436 MB on the Kinova + Punyo benchmark configuration), and
the node reads meshes with ``process=False`` only (:mod:`vsf_sensor_ros.mesh_io`):
it calls none of the features that need them.  shapely stays (the Punyo
pressure sensor's projected area uses it).

:func:`skip_trimesh_extras` marks those modules as absent *before* trimesh is
imported, exactly as if they were not installed, so trimesh runs as its
minimal install.  Only process entry points call it (``sensor_node``'s
``main``): a library import never changes what the importing process can
load.  Set ``VSF_TRIMESH_EXTRAS=1`` to load them anyway (e.g. for a mesh
format whose trimesh loader needs one of them; such a loader otherwise
fails with ``ImportError: import of <module> halted; None in sys.modules``).
"""
from __future__ import annotations

import os
import sys
from typing import List, Mapping, Optional

TRIMESH_EXTRAS = ("networkx", "rtree", "PIL", "scipy.optimize", "scipy.ndimage", "scipy.fft")
"""Soft dependencies of trimesh that the sensor node does not load (see the module docstring)."""

ENV_LOAD_EXTRAS = "VSF_TRIMESH_EXTRAS"
"""Environment variable: ``1`` loads :data:`TRIMESH_EXTRAS` as usual."""


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
    if env.get(ENV_LOAD_EXTRAS, "").strip() == "1" or "trimesh" in sys.modules:
        return []
    skipped = []
    for name in TRIMESH_EXTRAS:
        if name not in sys.modules:
            sys.modules[name] = None   # type: ignore[assignment]  # import raises ImportError
            skipped.append(name)
    return skipped


__all__ = ["ENV_LOAD_EXTRAS", "TRIMESH_EXTRAS", "skip_trimesh_extras"]
