"""tools/build_interfaces.sh stops with one line, before any build, naming what is wrong.

Fake tools (shell scripts) stand in for the venv's Python and for cmake; a fake Python that exits
1 imports nothing, so both packages are to be built.  The real gcc and g++ are used (the script
only checks that they exist).
"""
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


NEEDS_GCC = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                               reason="needs gcc and g++")


def _run(venv: Path, path_first: Path) -> subprocess.CompletedProcess:
    """The script on ``venv`` with ``path_first`` first on PATH."""
    env = dict(os.environ, PATH=f"{path_first}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", str(ROOT / "tools" / "build_interfaces.sh"), str(venv), "unused.txt"],
                          env=env, capture_output=True, text=True, timeout=60)


def _venv(tmp_path: Path, python: str = "#!/bin/sh\nexit 1\n") -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    _exe(venv / "bin" / "python", python)
    return venv


@NEEDS_GCC
def test_an_old_cmake_is_named_before_any_build(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    _exe(venv / "bin" / "python", "#!/bin/sh\nexit 1\n")   # nothing importable: both packages to build
    tools = tmp_path / "tools"
    tools.mkdir()
    _exe(tools / "cmake", "#!/bin/sh\necho 'cmake version 3.18.4'\necho\n")
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    run = subprocess.run(["bash", str(ROOT / "tools" / "build_interfaces.sh"), str(venv), "unused.txt"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    err = run.stderr.strip().splitlines()
    assert len(err) == 1, run.stderr
    assert "3.18.4" in err[0] and str(tools / "cmake") in err[0], err[0]   # the version found, and where
    assert not (venv / "share").exists()   # nothing built or stamped


@NEEDS_GCC
def test_the_venvs_own_cmake_is_preferred_and_the_advice_names_the_venvs_pip(tmp_path):
    venv = _venv(tmp_path)
    _exe(venv / "bin" / "cmake", "#!/bin/sh\necho 'cmake version 3.20.1'\n")   # the venv's: too old
    tools = tmp_path / "tools"
    tools.mkdir()
    _exe(tools / "cmake", "#!/bin/sh\necho 'cmake version 3.28.3'\n")          # first on PATH: recent
    run = _run(venv, tools)
    assert run.returncode == 1
    err = run.stderr.strip().splitlines()
    assert len(err) == 1, run.stderr
    assert "3.20.1" in err[0] and f"{venv}/bin/cmake" in err[0] and f"{venv}/bin/pip" in err[0], err[0]


@NEEDS_GCC
def test_a_cmake_that_fails_to_report_its_version_is_named_in_one_line(tmp_path):
    venv = _venv(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    _exe(tools / "cmake", "#!/bin/sh\necho 'cmake: error while loading shared libraries: libuv.so.1' >&2\n"
                          "exit 127\n")
    run = _run(venv, tools)
    assert run.returncode == 1
    err = run.stderr.strip().splitlines()
    assert len(err) == 1, run.stderr
    assert f"{tools}/cmake" in err[0] and "127" in err[0] and "libuv.so.1" in err[0], err[0]   # what it said
    assert not (venv / "share").exists()


@NEEDS_GCC
def test_a_venv_without_rclpy_is_one_line_not_a_traceback(tmp_path):
    # a Python that runs but has no rclpy (nor the interface packages)
    venv = _venv(tmp_path, "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                           "echo \"ModuleNotFoundError: No module named 'rclpy'\" >&2\nexit 1\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    _exe(tools / "cmake", "#!/bin/sh\necho 'cmake version 3.28.3'\n")
    run = _run(venv, tools)
    assert run.returncode == 1
    err = run.stderr.strip().splitlines()
    assert err == [f"error: rclpy is not importable with {venv}/bin/python: run make venv"], run.stderr
    assert not (venv / "share").exists()
