"""The cold-message transient: how much slower is the first call after an idle pause, and why.

``python -m benchmarks.cold_message [--idle 2] [--trials 15] [--contacts 100]``

Runs the per-message library work of the node (Punyo dense force
``predict_with_jacobian`` + pressure ``predict`` + ``sparse_force_jacobian``
on the real Punyo mesh, the embedded bubble when the fixture is absent) and
two stand-ins without torch (a pure-Python loop, a numpy expression), each
timed

* warm: the median of back-to-back calls;
* after ``--idle`` seconds asleep (``time.sleep``): the core may enter a deep
  idle state, lower its clock, or run other processes that evict its caches;
* after ``--idle`` seconds of busy-waiting on a few bytes (the core stays in
  C0 at full clock, the working set of the workload is not touched but not
  evicted by a sleeping core's neighbours either);
* after ``--idle`` seconds asleep, then a *primer*: one call of the workload
  on throw-away inputs just before the timed call (what a node could do on a
  timer, or on the joint state that precedes each contacts message);
* with no pause at all, right after writing a 64 MB array (more than the
  last-level cache): the caches emptied by this process itself;
* after ``--idle`` seconds during which the workload itself ran every 5 ms
  (a keep-warm timer, which the node once had), the call
  coming 5 ms after the last run (its worst case).

Each variant reports the median cold/warm ratio over ``--trials`` pauses.
The torch thread count and ``OMP_WAIT_POLICY`` are taken from the
environment, so thread-pool effects are compared by running it twice.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from typing import Callable, Dict, List, Sequence

import numpy as np
import torch


VARIANTS = ("sleep", "busy", "primed", "thrash", "keepwarm")
KEEP_WARM_PERIOD = 0.005      # the keep-warm period measured
THRASH_BYTES = 64 * 2**20     # more than the last-level cache: writing it evicts everything else


def _workloads(contacts: int) -> Dict[str, Callable[[], object]]:
    from benchmarks import bench_library as bl
    from benchmarks.library_rows import meshes
    from vsf_sensor_ros.sensor import PunyoDenseForceSensor, PunyoPressureSensor
    ms, _ = meshes()
    VF = ms["punyo" if "punyo" in ms else "bubble"]
    state = bl._scenario(VF, contacts, "barycentric", torch.float64, seed=contacts)[-1]
    force = PunyoDenseForceSensor("punyo_force", "punyo")
    force.attach(VF)
    pressure = PunyoPressureSensor("punyo_pressure", "punyo")
    pressure.attach(VF)
    a = np.random.default_rng(0).standard_normal((300, 3))

    def python_loop() -> int:
        s = 0
        for i in range(20000):
            s += i * i
        return s

    return {
        "python loop (20k iterations)": python_loop,
        "numpy (300x3 expression)": lambda: float(np.sqrt((a * a).sum(axis=1)).sum()
                                                  + np.isfinite(a).all()),
        "dense force predict_with_jacobian": lambda: force.predict_with_jacobian(state),
        "pressure predict + sparse J": lambda: (pressure.predict(state),
                                                pressure.sparse_force_jacobian(state)),
    }


def _time(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def measure(idle: float, trials: int, contacts: int) -> Dict[str, Dict[str, float]]:
    """``{workload: {"warm_us", "sleep_x", "busy_x", "primed_x"}}`` (ratios = cold median / warm median)."""
    work = _workloads(contacts)
    fns = list(work.values())
    out: Dict[str, Dict[str, float]] = {}
    for f in fns:
        for _ in range(20):
            f()
    warm = {name: float(np.median([_time(f) for _ in range(60)])) for name, f in work.items()}
    cold: Dict[str, Dict[str, List[float]]] = {n: {v: [] for v in VARIANTS} for n in work}
    junk = np.ones(THRASH_BYTES // 8)
    # busy-wait pauses split by whether the kernel preempted this process during the pause
    # (another process ran on the core): None = not preempted, True = preempted
    by_preempt: Dict[str, Dict[bool, List[float]]] = {n: {False: [], True: []} for n in work}
    for _ in range(trials):
        for variant in VARIANTS:
            for name, f in work.items():
                if variant == "thrash":        # no pause: evict the caches ourselves, then call
                    junk += 1.0
                    cold[name][variant].append(_time(f))
                    continue
                if variant == "keepwarm":     # the pause spent as KeepWarm would: work every 5 ms
                    end = time.perf_counter() + idle
                    while time.perf_counter() < end:
                        time.sleep(KEEP_WARM_PERIOD)
                        f()
                    time.sleep(KEEP_WARM_PERIOD)   # the message arrives just before the next tick
                    cold[name][variant].append(_time(f))
                    continue
                if variant == "busy":
                    before = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
                    _busy_wait(idle)
                    preempted = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw > before
                    dt = _time(f)
                    cold[name][variant].append(dt)
                    by_preempt[name][preempted].append(dt)
                    continue
                time.sleep(idle)
                if variant == "primed":
                    for g in fns:          # the whole pipeline once, as a wake-up call would
                        g()
                cold[name][variant].append(_time(f))
    for name in work:
        out[name] = {"warm_us": 1e6 * warm[name]}
        for variant, vals in cold[name].items():
            out[name][f"{variant}_x"] = float(np.median(vals)) / warm[name]
            out[name][f"{variant}_max_x"] = float(np.max(vals)) / warm[name]
        for flag, key in ((False, "busy_alone"), (True, "busy_preempted")):
            vals = by_preempt[name][flag]
            out[name][f"{key}_n"] = len(vals)
            out[name][f"{key}_x"] = float(np.median(vals)) / warm[name] if vals else float("nan")
    return out


def main(argv: Sequence[str] = ()) -> int:
    """CLI: print the table (and JSON with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--idle", type=float, default=2.0, help="pause before each cold call (s)")
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--contacts", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(list(argv) or None)
    res = measure(args.idle, args.trials, args.contacts)
    head = (f"torch threads {torch.get_num_threads()}, OMP_WAIT_POLICY "
            f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')}, idle {args.idle:g} s, {args.trials} trials, "
            f"load avg {os.getloadavg()[0]:.1f}")
    print(head)
    print(f"{'workload':<36} {'warm us':>8} {'sleep x':>8} {'max':>6} {'busy x':>7} {'max':>6} "
          f"{'primed x':>8} {'max':>6} {'thrash x':>8} {'kw5ms x':>7}  busy, alone / preempted (n)")
    for name, r in res.items():
        print(f"{name:<36} {r['warm_us']:8.0f} {r['sleep_x']:8.1f} {r['sleep_max_x']:6.1f} "
              f"{r['busy_x']:7.1f} {r['busy_max_x']:6.1f} {r['primed_x']:8.1f} {r['primed_max_x']:6.1f} "
              f"{r['thrash_x']:8.1f} {r['keepwarm_x']:7.1f}  "
              f"{r['busy_alone_x']:.1f} ({r['busy_alone_n']}) / {r['busy_preempted_x']:.1f} "
              f"({r['busy_preempted_n']})")
    if args.json:
        print(json.dumps({"settings": head, "rows": res}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
