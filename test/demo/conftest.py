"""The demo runs the demo tests share: each world's ``vsf_demo`` runs at most once per test session."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

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

    Under ``pytest -n N`` (``make test``) the first worker to ask runs it and the others wait for it and
    read its files (one run per session).  Skips the kinova world when its assets are absent; fails
    when the demo exits non-zero."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent        # the session's folder, above every worker's own
    runs = {}

    def get(world: str) -> dict:
        if world not in runs:
            extra = []
            if world == "kinova":
                if not KINOVA_FIXTURE.is_dir():
                    pytest.skip(f"Kinova/Punyo fixture absent: {KINOVA_FIXTURE.resolve()}")
                extra = ["--assets", str(KINOVA_FIXTURE.resolve())]
            out, record = shared / f"demo_{world}", shared / f"demo_{world}.json"
            with FileLock(f"{record}.lock"):
                if not record.exists():
                    out.mkdir()
                    t0 = time.monotonic()
                    res = run_demo(out, world, extra)
                    record.write_text(json.dumps({"returncode": res.returncode, "stdout": res.stdout,
                                                  "stderr": res.stderr, "wall": time.monotonic() - t0}))
            res = json.loads(record.read_text())
            assert res["returncode"] == 0, \
                f"demo failed ({res['returncode']}):\n{res['stdout'][-4000:]}\n{res['stderr'][-4000:]}"
            runs[world] = {"world": world, "out": out, "stdout": res["stdout"], "wall": res["wall"],
                           "summary": json.loads((out / "summary.json").read_text())}
        return runs[world]
    return get
