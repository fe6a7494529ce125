"""The Python API document's example runs as written and prints what its comments say."""
import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python_api_block() -> str:
    section = (ROOT / "docs" / "python_api.md").read_text()
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "docs/python_api.md has no python block"
    return block.group(1)


def test_readme_python_example_runs_and_matches_hand_values():
    pytest.importorskip("klampt")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_python_api_block(), "docs/python_api.md", "exec"), {})
    lines = out.getvalue().splitlines()
    # Base area of the 24-gon of radius 0.05 m: 1/2 * 24 * 0.05^2 * sin(15 deg) = 7.7646e-3 m^2;
    # 4 N pushing into the upside-down dome: pressure = +4 / A = 515.16 Pa.
    assert "515.16" in lines[0]
    assert re.search(r"0\.,\s+0\.,\s+-4\.", lines[1])   # the 4 N, bubble frame (R = diag(1,-1,-1))
    assert lines[2].startswith("27 (942, 3)")             # 3 vertices x 9; 314 vertices x 3 rows
    assert "128.79" in lines[3]                           # -(1/A) R n = (0, 0, 1/A)
