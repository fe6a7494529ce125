"""tools/build_interfaces.sh: what it does without a compiler, and when there is nothing to do.

The build itself runs in ``make venv`` (its result is tested over DDS in
test/ros/test_interface_packages.py); here the script runs against a stand-in venv whose
``bin/python`` is a small shell script answering the import probes as told, with a ``PATH``
that holds only the tools named, so a machine without gcc, g++ or cmake is reproduced exactly.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "build_interfaces.sh"
# what the script runs besides the compilers (found on this machine's PATH)
BASICS = ["bash", "cat", "date", "rm", "mkdir", "rmdir", "find", "sort", "xargs", "sha256sum", "cut",
          "tail", "dirname", "env"]


def _stand_in(tmp: Path, imports_ok: bool, tools) -> dict:
    """A venv whose python exits 0 (imports work) or 1 for every -c probe, and a PATH with ``tools``."""
    venv, bin_dir = tmp / "venv", tmp / "bin"
    (venv / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    py = venv / "bin" / "python"
    py.write_text("#!/bin/bash\nexit %d\n" % (0 if imports_ok else 1))
    py.chmod(0o755)
    for name in BASICS + list(tools):
        where = shutil.which(name)
        if where is None:
            pytest.skip(f"{name} is not installed here")
        (bin_dir / name).symlink_to(where)
    return {"venv": venv, "env": {"PATH": str(bin_dir), "HOME": str(tmp)}}


@pytest.mark.parametrize("present, missing", [((), "gcc g++ cmake"), (("gcc", "g++"), "cmake"),
                                              (("cmake",), "gcc g++")])
def test_missing_compilers_fail_with_one_line_naming_them(tmp_path, present, missing):
    s = _stand_in(tmp_path, imports_ok=False, tools=present)
    res = subprocess.run([str(SCRIPT), str(s["venv"]), "requirements-ros-build.txt"], env=s["env"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"needs {missing}:" in lines[0] and "tf2_msgs ros_gz_interfaces" in lines[0], lines[0]
    assert res.stdout == ""
    assert not (s["venv"] / ".interfaces-build").exists()       # nothing started


def test_nothing_to_build_when_both_import_even_without_compilers(tmp_path):
    s = _stand_in(tmp_path, imports_ok=True, tools=())
    res = subprocess.run([str(SCRIPT), str(s["venv"]), "requirements-ros-build.txt"], env=s["env"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "interfaces: tf2_msgs ros_gz_interfaces importable, nothing to build"


def test_a_package_built_here_is_rebuilt_when_its_definitions_change(tmp_path):
    """Importable, but its stamp (the hash of the definitions it was built from) differs: rebuilt;
    without compilers that is the one-line failure, which shows the script chose to build."""
    s = _stand_in(tmp_path, imports_ok=True, tools=())
    stamp = s["venv"] / "share" / "ros_gz_interfaces" / "vsf_interfaces.sha256"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("0" * 64 + "\n")
    res = subprocess.run([str(SCRIPT), str(s["venv"]), "requirements-ros-build.txt"], env=s["env"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "needs gcc g++ cmake" in res.stderr and "ros_gz_interfaces" in res.stderr
    assert "tf2_msgs" not in res.stderr          # no stamp of ours: a sourced ROS 2's is kept
