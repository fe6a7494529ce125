"""The demo runs the demo tests share: each world's ``vsf_demo`` runs at most once per test session."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINOVA_FIXTURE = ROOT / ".." / "shared" / "fixtures" / "kinova_punyo"
DURATION_S = 6.0
RATE_HZ = 50.0


def run_demo(out: Path, world: str, extra=()) -> subprocess.CompletedProcess:
    """``python -m vsf_sensor_ros.demo.demo`` for :data:`DURATION_S` s at :data:`RATE_HZ`, seed 3."""
    cmd = [sys.executable, "-m", "vsf_sensor_ros.demo.demo", "--world", world, "--out", str(out),
           "--duration", str(DURATION_S), "--rate", str(RATE_HZ), "--seed", "3", *extra]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory):
    """``world -> {"world", "out", "stdout", "wall", "summary"}``: the world's demo, run on first use.

    Skips the kinova world when its assets are absent; fails when the demo exits non-zero."""
    runs = {}

    def get(world: str) -> dict:
        if world not in runs:
            extra = []
            if world == "kinova":
                if not KINOVA_FIXTURE.is_dir():
                    pytest.skip(f"Kinova/Punyo fixture absent: {KINOVA_FIXTURE.resolve()}")
                extra = ["--assets", str(KINOVA_FIXTURE.resolve())]
            out = tmp_path_factory.mktemp(f"demo_{world}")
            t0 = time.monotonic()
            res = run_demo(out, world, extra)
            wall = time.monotonic() - t0
            assert res.returncode == 0, \
                f"demo failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
            runs[world] = {"world": world, "out": out, "stdout": res.stdout, "wall": wall,
                           "summary": json.loads((out / "summary.json").read_text())}
        return runs[world]
    return get
