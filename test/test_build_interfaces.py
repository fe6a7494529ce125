"""tools/build_interfaces.sh stops with one line naming a cmake too old for ament_cmake (< 3.21)."""
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


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="needs gcc and g++")
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
    assert "needs cmake >= 3.21, found 3.18.4" in err[0]
    assert str(tools / "cmake") in err[0]
    assert "tf2_msgs" in err[0] and "ros_gz_interfaces" in err[0]
    assert not (venv / "share").exists()   # nothing built or stamped
