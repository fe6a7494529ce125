"""Where a library call's time goes: the Punyo models under cProfile, per call.

``python -m benchmarks.profile_library [--contacts 100] [--mode barycentric] [--calls 500]``

Times ``PunyoDenseForceSensor.predict_with_jacobian`` and the pressure
model's ``predict`` + ``sparse_force_jacobian`` on the real Punyo mesh (the
embedded bubble when the fixture is absent), one torch thread, without the
profiler (min / median per call), then lists the functions with the largest
cumulative and self time per call under cProfile (which inflates small
calls; read the list for proportions).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def _hot(prof: cProfile.Profile, calls: int, top: int) -> List[Dict[str, Any]]:
    rows = []
    for (fname, line, func), (_cc, nc, tt, ct, _callers) in pstats.Stats(prof).stats.items():
        short = fname.split("/site-packages/")[-1].replace(str(ROOT) + "/", "")
        rows.append({"function": f"{short}:{line}({func})", "calls_per_call": nc / calls,
                     "cum_us": 1e6 * ct / calls, "self_us": 1e6 * tt / calls})
    return sorted(rows, key=lambda r: -r["cum_us"])[:top]


def profile_call(fn: Callable[[], Any], calls: int, top: int) -> Dict[str, Any]:
    """``{"min_us", "median_us", "hot": [...]}`` for ``fn``."""
    for _ in range(10):
        fn()
    t = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        fn()
        t[i] = time.perf_counter() - t0
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    return {"min_us": 1e6 * float(t.min()), "median_us": 1e6 * float(np.median(t)),
            "hot": _hot(prof, calls, top)}


def main(argv: Sequence[str] = ()) -> int:
    """CLI: print per-call time and hot spots of both Punyo models."""
    from benchmarks import bench_library as bl
    from benchmarks.library_rows import meshes
    from vsf_sensor_ros.sensor import PunyoDenseForceSensor, PunyoPressureSensor

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contacts", type=int, default=100)
    ap.add_argument("--mode", choices=["barycentric", "per_vertex"], default="barycentric")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args(list(argv) or None)
    torch.set_num_threads(1)
    ms, _ = meshes()
    label = "punyo" if "punyo" in ms else "bubble"
    VF = ms[label]
    state = bl._scenario(VF, args.contacts, args.mode, torch.float64, seed=args.contacts)[-1]
    force = PunyoDenseForceSensor("punyo_force", "punyo")
    force.attach(VF)
    pressure = PunyoPressureSensor("punyo_pressure", "punyo")
    pressure.attach(VF)
    cases = ((f"dense force predict_with_jacobian ({args.mode})", lambda: force.predict_with_jacobian(state)),
             ("pressure predict + sparse_force_jacobian",
              lambda: (pressure.predict(state), pressure.sparse_force_jacobian(state))))
    for title, fn in cases:
        r = profile_call(fn, args.calls, args.top)
        print(f"\n{title}: {label} mesh ({len(VF[0])} vertices), {args.contacts} contacts, 1 thread: "
              f"min {r['min_us']:.0f} us, median {r['median_us']:.0f} us per call")
        print(f"{'cum us':>8} {'self us':>8} {'calls':>6}  function (per call, under cProfile)")
        for h in r["hot"]:
            print(f"{h['cum_us']:8.1f} {h['self_us']:8.1f} {h['calls_per_call']:6.1f}  {h['function']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
