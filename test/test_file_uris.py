"""Mesh paths written as ``file:`` URIs (RFC 8089): percent-decoded, ``localhost`` and the minimal form.

The encoded names are written out by hand (a space is ``%20``; ``é`` is U+00E9, UTF-8
``C3 A9``; ``%`` itself is ``%25``) and, as a second encoder, by ``pathlib``'s
``as_uri`` (what a launch file writing absolute URIs produces).
"""
import urllib.parse
import warnings
from pathlib import Path

import numpy as np
import pytest

from vsf_sensor_ros.mesh_io import MeshNotFoundError, file_uri_path, load_mesh, resolve_uri
from vsf_sensor_ros.sensor.errors import InputError
from vsf_sensor_ros.world import World

TRIANGLE_OBJ = "v 0 0 0\nv 0.2 0 0\nv 0 0.1 0\nf 1 2 3\n"


@pytest.fixture
def mesh(tmp_path):
    d = tmp_path / "my meshes"
    d.mkdir()
    p = d / "bubble é.obj"
    p.write_text(TRIANGLE_OBJ)
    # the test's own directory encoded as pathlib does; the rest by hand
    base = urllib.parse.quote(str(tmp_path))
    return p, base + "/my%20meshes/bubble%20%C3%A9.obj"


def test_percent_encoded_file_uri_finds_the_file(mesh):
    path, encoded = mesh
    assert resolve_uri("file://" + encoded) == path
    assert resolve_uri("file://localhost" + encoded) == path       # RFC 8089: the local host
    assert resolve_uri("file://LOCALHOST" + encoded) == path
    assert resolve_uri("file:" + encoded) == path                  # minimal form, no authority
    assert resolve_uri("FILE://" + encoded) == path                # the scheme is case-insensitive
    assert resolve_uri(path.as_uri()) == path                      # pathlib's own encoding


def test_an_encoded_percent_sign_and_hash_are_part_of_a_name(tmp_path):
    p = tmp_path / "100%.obj"
    p.write_text(TRIANGLE_OBJ)
    assert resolve_uri(f"file://{urllib.parse.quote(str(tmp_path))}/100%25.obj") == p
    assert str(file_uri_path("file:///a/b%23c.obj")) == "/a/b#c.obj"        # an unencoded '#' ends the path
    assert str(file_uri_path("file:///a/b#c.obj")) == "/a/b"


def test_a_plain_path_is_taken_as_written(tmp_path):
    p = tmp_path / "a%20b.obj"                  # a literal "%20" in a file name
    p.write_text(TRIANGLE_OBJ)
    assert resolve_uri(str(p)) == p
    assert resolve_uri("a%20b.obj", tmp_path) == p


@pytest.mark.parametrize("uri, value, reason", [
    ("file://robot-pc/home/meshes/pad.stl", "robot-pc", "remote_host"),
    ("file:pad.stl", "file:pad.stl", "relative"),
    ("file:///meshes/pad%FF.stl", "file:///meshes/pad%FF.stl", "not_utf8"),
])
def test_other_hosts_and_relative_file_uris_are_refused(uri, value, reason):
    with pytest.raises(InputError) as err:
        resolve_uri(uri)
    assert (err.value.argument, err.value.value, err.value.reason) == ("uri", value, reason)


def test_missing_file_names_the_decoded_path():
    with pytest.raises(MeshNotFoundError) as err:
        resolve_uri("file:///no%20such%20dir/pad%20%C3%A9.stl")
    assert err.value.tried == [Path("/no such dir/pad é.stl")]


def test_load_mesh_and_a_urdf_read_meshes_through_encoded_uris(mesh):
    path, encoded = mesh
    m = load_mesh("file://" + encoded)
    np.testing.assert_array_equal(m.vertices, [[0, 0, 0], [0.2, 0, 0], [0, 0.1, 0]])
    urdf = f"""<robot name="r"><link name="base"/>
  <link name="pad"><collision><geometry>
    <mesh filename="file://localhost{encoded}"/></geometry></collision></link>
  <joint name="j" type="fixed"><parent link="base"/><child link="pad"/></joint></robot>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = World.from_urdf(urdf)
    # the triangle's area, 0.2 * 0.1 / 2 (Klampt reads link meshes in single precision)
    assert float(w.body_mesh("pad").area) == pytest.approx(0.01, rel=1e-7)
