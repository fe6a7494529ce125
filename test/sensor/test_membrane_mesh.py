"""Membrane mesh reading (meshio) and validation."""
from pathlib import Path

import meshio
import numpy as np
import pytest

from vsf_sensor_ros.sensor.errors import InputError
from vsf_sensor_ros.sensor.membrane_mesh import MembraneMesh, read_membrane_mesh

VTK = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "punyo_poke_ur5e" / "camera" \
    / "membrane_equalized.vtk"

SQUARE = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.1]])
TRIS = np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]])


def test_boundary_from_vertex_cells_then_line_cells(tmp_path):
    path = tmp_path / "m.vtk"
    meshio.write(str(path), meshio.Mesh(SQUARE, [("triangle", TRIS), ("vertex", np.arange(4)[:, None])]),
                 binary=True)
    m = read_membrane_mesh(path)
    assert m.boundary.tolist() == [0, 1, 2, 3] and m.interior.tolist() == [4]
    assert m.points.dtype == np.float64 and m.triangles.shape == (4, 3)
    path2 = tmp_path / "l.vtk"
    lines = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    meshio.write(str(path2), meshio.Mesh(SQUARE, [("triangle", TRIS), ("line", lines)]))
    assert read_membrane_mesh(path2).boundary.tolist() == [0, 1, 2, 3]
    path3 = tmp_path / "n.vtk"
    meshio.write(str(path3), meshio.Mesh(SQUARE, [("triangle", TRIS)]))
    with pytest.raises(ValueError):                # no boundary: the message is checked below
        read_membrane_mesh(path3)
    assert read_membrane_mesh(path3, boundary=[0, 1, 2, 3]).interior.tolist() == [4]
    with pytest.raises(FileNotFoundError):
        read_membrane_mesh(tmp_path / "missing.vtk")


@pytest.mark.parametrize("points, triangles, boundary, argument, value, reason", [
    (SQUARE, [[0, 1, 7]], [0], "triangles", (0, 7), "out_of_range"),
    (SQUARE, [[0, 1, 1]], [0], "triangles", [0], "degenerate"),
    (SQUARE, TRIS, np.arange(5), "boundary", 5, "count"),
    (np.where(SQUARE == 0.1, np.nan, SQUARE), TRIS, [0], "points", [4], "not_finite"),
    # the square's points, one more in no triangle: it would have no stiffness (a singular solve)
    (np.vstack([SQUARE, [[0.5, 0.5, 0.1]]]), TRIS, [0], "points", [len(SQUARE)], "in_no_triangle"),
])
def test_invalid_meshes_are_named(points, triangles, boundary, argument, value, reason):
    with pytest.raises(InputError) as err:
        MembraneMesh(points, triangles, boundary)
    assert (err.value.argument, err.value.value, err.value.reason) == (argument, value, reason)


def test_reads_the_punyo_reference_mesh():
    if not VTK.exists():
        pytest.skip(f"shared fixture {VTK} absent (user clone)")
    m = read_membrane_mesh(VTK)
    assert m.points.shape == (390, 3) and m.triangles.shape == (714, 3)
    assert m.boundary.tolist() == list(range(64))
    assert m.points[m.boundary, 2] == pytest.approx(np.full(64, 0.054), abs=1e-6)


def test_a_mesh_file_without_a_boundary_says_what_the_file_must_hold(tmp_path):
    # a PLY of triangles only (the format of many scans): nothing marks the clamped ring
    path = tmp_path / "membrane.ply"
    meshio.write(str(path), meshio.Mesh(SQUARE, [("triangle", TRIS)]))
    with pytest.raises(InputError) as err:
        read_membrane_mesh(path)
    assert (err.value.argument, err.value.value, err.value.reason) == ("path", path, "no_boundary")


def test_a_file_meshio_cannot_parse_is_a_value_error_naming_it_not_an_exit(tmp_path, capsys):
    # meshio prints why and calls sys.exit(1) for a file it cannot parse: that ended the process
    bad = tmp_path / "garbage.vtk"
    bad.write_text("not a mesh\n")
    with pytest.raises(InputError) as err:
        read_membrane_mesh(bad)
    assert (err.value.argument, err.value.value, err.value.reason) == ("path", bad, "unreadable")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""     # its words are in the error, not on the terminal
