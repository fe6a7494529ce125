"""Hypothesis settings profiles of the fuzz targets, and a tally of what they ran.

The profile is chosen by the environment variable ``HYPOTHESIS_PROFILE``:

``ci`` (default; ``make test``)
    :data:`CI_EXAMPLES` examples per target, derandomised: every run draws the
    same examples, so a CI failure reproduces.
``fuzz`` (``make fuzz``)
    :data:`FUZZ_EXAMPLES` examples per target, fresh random examples on every
    run; a failing example is kept in ``.hypothesis/`` and replayed first on
    the next run.
``dev``
    200 examples per target, for editing a target.

Every profile has no per-example deadline (the machine is shared; speed
targets live in the benchmarks) and accepts slow data generation.
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Dict, Tuple

from hypothesis import HealthCheck, settings

CI_EXAMPLES = 2_000
FUZZ_EXAMPLES = 15_000
DEFAULT_PROFILE = "ci"

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, database=None,
                          print_blob=True, **_COMMON)
settings.register_profile("fuzz", max_examples=FUZZ_EXAMPLES, derandomize=False, print_blob=True,
                          **_COMMON)
settings.register_profile("dev", max_examples=200, derandomize=False, **_COMMON)


def load_profile() -> str:
    """Load the profile named by ``HYPOTHESIS_PROFILE`` (default ``ci``) and return its name."""
    name = os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE)
    settings.load_profile(name)
    return name


TALLY: Counter = Counter()
"""``(target, outcome) -> examples``; outcome is ``accepted`` or ``rejected:<reason>``."""


def record(target: str, outcome: str) -> None:
    """Count one example run by ``target`` with its ``outcome``."""
    TALLY[(target, outcome)] += 1


def summary() -> Tuple[int, Dict[str, Counter]]:
    """Total examples and, per target, the count of each outcome."""
    per: Dict[str, Counter] = {}
    for (target, outcome), n in TALLY.items():
        per.setdefault(target, Counter())[outcome] += n
    return sum(TALLY.values()), per
