"""Style problems fail CI like any other defect (flake8 over the package, tests and tools)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_flake8_clean():
    if shutil.which("flake8") is None and subprocess.run(
            [sys.executable, "-m", "flake8", "--version"], capture_output=True).returncode != 0:
        pytest.skip("flake8 is not installed (make test installs it)")
    res = subprocess.run([sys.executable, "-m", "flake8", "vsf_sensor_ros", "test", "benchmarks",
                          "launch"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
