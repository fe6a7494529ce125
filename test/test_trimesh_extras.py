"""The sensor node's process runs trimesh as its minimal install: same meshes, same world.

A child interpreter calls ``skip_trimesh_extras`` first (as ``sensor_node.main`` does), then
loads meshes of every format the package reads and the Kinova + Punyo world; this process
loads the same with every soft dependency of trimesh.  Vertices, faces and transforms must be
identical, and the child must not have loaded any skipped module.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.mesh_io import load_mesh
from vsf_sensor_ros.trimesh_extras import ENV_LOAD_EXTRAS, TRIMESH_EXTRAS, skip_trimesh_extras

ROOT = Path(__file__).resolve().parents[1]
KINOVA = ROOT.parent / "shared" / "fixtures" / "kinova_punyo"

CHILD = r"""
import json, sys
from vsf_sensor_ros.trimesh_extras import TRIMESH_EXTRAS, skip_trimesh_extras
skipped = skip_trimesh_extras()
from vsf_sensor_ros.mesh_io import load_mesh
out = {"skipped": skipped, "meshes": {}}
for path in sys.argv[2:]:
    m = load_mesh(path)
    out["meshes"][path] = [m.vertices.tolist(), m.faces.tolist()]
if sys.argv[1]:
    from benchmarks.bench_publisher import world_and_joints
    world, names, q = world_and_joints("kinova", sys.argv[1])
    out["punyo"] = world.body_mesh("punyo").vertices.tolist()
    out["T"] = {k: v.tolist() for k, v in world.body_transforms().items()}
out["absent"] = [n for n in TRIMESH_EXTRAS if sys.modules.get(n, "missing") is None]
from vsf_sensor_ros.trimesh_extras import skipped_extra_hint
try:
    try:
        import networkx  # noqa: F401
    except ImportError as exc:
        raise ValueError("a loader failed") from exc
    out["hint"] = ""
except ValueError as exc:
    out["hint"] = skipped_extra_hint(exc)
out["loaded"] = sorted({m.split(".")[0] for m in sys.modules if sys.modules[m] is not None}
                       & {"networkx", "rtree"})
print(json.dumps(out))
"""


def _write_meshes(d: Path):
    (d / "quad.obj").write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nf 1/1 2/1 3/1 4/1\n")
    (d / "tet.off").write_text("OFF\n4 4 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n")
    (d / "tri.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                               "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                               "end_header\n0 0 1\n0 1 0\n1 0 0\n3 2 1 0\n")
    (d / "two.stl").write_text("solid t\n" + "".join(
        f"facet normal 0 0 1\nouter loop\n{''.join(f'vertex {p}' + chr(10) for p in tri)}endloop\nendfacet\n"
        for tri in (("0 0 0", "1 0 0", "0 1 0"), ("1 0 0", "1 1 0", "0 1 0"))) + "endsolid t\n")
    # a PLY with texture coordinates, as Blender and MeshLab export it: trimesh builds a texture
    # material for it (Pillow must stay loaded)
    (d / "uv.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                              "property float z\nproperty float s\nproperty float t\nelement face 1\n"
                              "property list uchar uint vertex_indices\nend_header\n"
                              "0 0 0 0 0\n1 0 0 1 0\n0 1 0 0 1\n3 0 1 2\n")
    return [str(d / n) for n in ("quad.obj", "tet.off", "tri.ply", "two.stl", "uv.ply")]


def _child(args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != ENV_LOAD_EXTRAS}
    env.update({"PYTHONPATH": str(ROOT), **(env_extra or {})})
    out = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_minimal_trimesh_loads_the_same_meshes_and_skips_its_extras(tmp_path):
    files = _write_meshes(tmp_path)
    got = _child(["", *files])
    assert got["skipped"] == list(TRIMESH_EXTRAS)
    assert got["absent"] == list(TRIMESH_EXTRAS) and got["loaded"] == []
    for path in files:
        m = load_mesh(path)
        v, f = got["meshes"][path]
        np.testing.assert_array_equal(np.array(v), m.vertices, err_msg=path)
        np.testing.assert_array_equal(np.array(f), m.faces, err_msg=path)
    # the file's own vertex counts (mesh_io's rule), independent of either process
    assert [len(got["meshes"][p][0]) for p in files] == [4, 4, 3, 4, 3]
    # an error caused by a skipped module names the remedy
    assert "optional dependency networkx" in got["hint"] and "VSF_TRIMESH_EXTRAS=1" in got["hint"]


@pytest.mark.skipif(not KINOVA.is_dir(), reason=f"fixture {KINOVA} absent")
def test_minimal_trimesh_builds_the_same_kinova_punyo_world():
    from benchmarks.bench_publisher import world_and_joints
    got = _child([str(KINOVA)])
    world, _, _ = world_and_joints("kinova", str(KINOVA))
    np.testing.assert_array_equal(np.array(got["punyo"]), world.body_mesh("punyo").vertices)
    want = {k: v.numpy() for k, v in world.body_transforms().items()}
    assert set(got["T"]) == set(want)
    for k, T in want.items():
        np.testing.assert_array_equal(np.array(got["T"][k]), T, err_msg=k)


def test_extras_load_when_asked_or_when_trimesh_is_already_imported():
    for value in ("1", "true", "Yes"):
        got = _child([""], {ENV_LOAD_EXTRAS: value})
        assert got["skipped"] == [] and got["absent"] == [] and "networkx" in got["loaded"], value
        assert got["hint"] == ""
    # this test process imported trimesh above: nothing is marked absent here
    assert skip_trimesh_extras({}) == []
