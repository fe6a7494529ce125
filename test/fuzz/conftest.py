"""Fuzz targets: load the Hypothesis profile and print what the targets ran."""
from __future__ import annotations

from test.fuzz.profiles import load_profile, summary

PROFILE = load_profile()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line per target (examples, accepted, rejected by reason) and the total."""
    total, per = summary()
    if not total:
        return
    # only the fuzz targets' own failures (the session may hold others)
    failed = sum(1 for r in terminalreporter.stats.get("failed", []) if "test/fuzz/" in r.nodeid)
    tr = terminalreporter
    tr.section(f"fuzz targets (profile {PROFILE})")
    for target in sorted(per):
        c = per[target]
        acc = c.get("accepted", 0)
        rej = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(c.items()) if k != "accepted")
        tr.write_line(f"{target}: {sum(c.values())} examples, {acc} accepted; rejected: {rej or 'none'}")
    tr.write_line(f"fuzz total: {total} examples in {len(per)} targets; failed targets "
                  f"(escaped exception or mismatch): {failed}")
