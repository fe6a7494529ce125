"""Where the benchmarks find the Kinova Gen3 + Punyo assets (not part of the repository)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]
BESIDE_CLONE = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"
REQUIRED = ("kinova_gen3.urdf", "punyo_mesh_complete.ply")


def candidates() -> List[Path]:
    """``$VSF_ASSETS`` (as the node, the demo and the launch files read it) when set, then
    ``shared/fixtures/kinova_punyo`` beside the clone."""
    env = os.environ.get("VSF_ASSETS", "").strip()
    return ([Path(env).expanduser()] if env else []) + [BESIDE_CLONE]


def kinova_punyo_dir() -> Optional[Path]:
    """The first of :func:`candidates` holding the Kinova URDF and the Punyo mesh, or None."""
    for d in candidates():
        d = d.resolve()
        if all((d / f).is_file() for f in REQUIRED):
            return d
    return None


def describe() -> str:
    """The places looked at, for a 'skipped' message."""
    return " or ".join(str(d) for d in candidates())
