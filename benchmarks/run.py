"""Run every benchmark, print the table, write ``results.json`` and ``scaling.png``.

``python -m benchmarks.run [--quick] [--out benchmarks/results.json]`` (``make bench``).

Sections (each can be chosen with ``--sections``):

* ``library`` -- predict + sparse Jacobian of the Punyo dense force (barycentric
  and per-vertex) and pressure models on the real Punyo mesh and the embedded
  bubble, 10 / 100 / 1000 contacts, one torch thread, median and p90 of
  individual calls, beside the dense reference timed in the same run;
* ``node`` -- ``sensor_node`` end to end over DDS at 100 / 500 / 1000 Hz, and
  (full run only, like the rest of this item) 10 messages 2 s apart (the cold-message case) and 60 s at
  1 kHz for memory flatness; its start-up time and idle RSS; then the same
  phases (without the 60 s) through ``benchmarks.relay_node``, a bare rclpy
  relay of the same messages in the node's place: the transport floor, with
  the node's latency reported as a ratio to it; then the rate phases again with
  ``<s>.jacobian_decimation: 10`` (a step counts when its predictions arrive);
* ``scaling`` -- latency vs contacts and vs mesh size, plotted to ``scaling.png``;
* ``cuda`` -- the library rows on CUDA when ``torch.cuda.is_available()``.

``--quick`` is a small smoke run of every section: fewer repetitions, one node process (no
transport floor, no decimated variant), the membrane estimator without the colour pass and its
node path on every tenth frame of the poke.

Targets are reported, never asserted: the table marks each met / missed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results.json"
SECTIONS = ("library", "node", "scaling", "cuda")
TEN_MINUTES_S = 600.0


# Node variants run after the node and its transport floor: (results key, title, node parameters,
# output kinds completing a step, most messages per rate).
VARIANTS = (
    ("decimated", "jacobian_decimation: 10 (both sensors; a step counts when its predictions arrive)",
     {"punyo_pressure.jacobian_decimation": 10, "punyo_force.jacobian_decimation": 10}, ("predicted",),
     10**9),
)


def settings(quick: bool, node_count: Optional[int]) -> Dict[str, Any]:
    """Counts, repeats and budgets of a full or ``--quick`` run."""
    if quick:
        s = {"lib_counts": [10, 100], "repeats": 30, "budget_s": 0.15,
             "node_rates": [100, 500, 1000], "node_count": 200, "node_warmup": 50, "memory_s": 0,
             "idle_phase": False, "node_extras": False, "membrane_flow": False, "membrane_stride": 10,
             "scale_counts": [10, 100], "scale_subdiv": [0, 1]}
    else:
        s = {"lib_counts": [10, 100, 1000], "repeats": 300, "budget_s": 1.0,
             "node_rates": [100, 500, 1000], "node_count": 2000, "node_warmup": 200, "memory_s": 60,
             "idle_phase": True, "node_extras": True, "membrane_flow": True, "membrane_stride": 1,
             "scale_counts": [10, 100, 1000, 5000], "scale_subdiv": [0, 1, 2]}
    if node_count is not None:
        s["node_count"] = int(node_count)
        s["node_warmup"] = min(s["node_warmup"], int(node_count))
    return s


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def meta(quick: bool) -> Dict[str, Any]:
    """Host and software description stored with the results."""
    import numpy
    import torch
    return {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": quick,
            "git_commit": _git_commit(), "python": platform.python_version(), "torch": torch.__version__,
            "numpy": numpy.__version__, "cpu_model": _cpu_model(), "cpu_count": os.cpu_count(),
            "load_avg_start": list(os.getloadavg())}


# ---------------------------------------------------------------------------------------- targets
def _lib_row(rows: List[Dict[str, Any]], mesh: str, sensor: str, mode: str, n: int) -> Optional[Dict]:
    for r in rows:
        if (r["mesh"], r["sensor"], r["mode"], r["contacts"]) == (mesh, sensor, mode, n):
            return r
    return None


def evaluate_targets(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Each target with its measured value and met / missed / not measured (``met`` None)."""
    out: List[Dict[str, Any]] = []

    def add(name: str, value: Optional[float], limit: str, met: Optional[bool], unit: str = "",
            note: str = "") -> None:
        out.append({"target": name, "value": value, "unit": unit, "limit": limit, "met": met, "note": note})

    lib = results.get("library", {}).get("rows", [])
    r = _lib_row(lib, "punyo", "dense_force", "barycentric", 100) or \
        _lib_row(lib, "bubble", "dense_force", "barycentric", 100)
    if r is not None:
        note = f"{r['mesh']} mesh, predict_with_jacobian, 1 thread"
        add("library: dense force, 100 barycentric contacts, median", 1e3 * r["library"]["median_s"],
            "< 0.3 ms", r["library"]["median_s"] < 0.3e-3, "ms", note)
        ratio = r.get("ratio")
        add("library vs dense reference (same case)", ratio, ">= 10x",
            None if ratio is None else ratio >= 10.0, "x",
            f"{note}; ratio of fastest calls {r.get('ratio_min', float('nan')):.1f}x")
    else:
        add("library: dense force, 100 barycentric contacts, median", None, "< 0.3 ms", None, "ms",
            "library section not run")
    pr = _lib_row(lib, "punyo", "pressure", "any", 100) or _lib_row(lib, "bubble", "pressure", "any", 100)
    if pr is not None:
        add("library: pressure, 100 contacts, median", 1e3 * pr["library"]["median_s"], "< 0.3 ms",
            pr["library"]["median_s"] < 0.3e-3, "ms", f"{pr['mesh']} mesh, predict + sparse J")

    mfe = results.get("library", {}).get("membrane")
    if mfe and not mfe.get("skipped"):
        ctx = f"real Punyo poke, {mfe['frames']} frames x {mfe['passes']}"
        add("membrane force: estimate per frame, median", mfe["median_ms"], "<= 10 ms",
            mfe["median_ms"] <= 10.0, "ms", f"{ctx}; p99 {mfe['p99_ms']:.1f} ms; reference estimator 810 ms")
        add("membrane force: start-up (assembly + factorisation)", mfe["startup_s"], "<= 5 s",
            mfe["startup_s"] <= 5.0, "s", ctx)
        add("membrane force: correlation with the arm F/T", mfe["correlation"], ">= 0.98",
            mfe["correlation"] >= 0.98, "", f"lag {mfe['lag']} frame(s); reference estimator 0.99")
        add("membrane force: ratio at the F/T peak", mfe["ratio_at_peak"], "0.8 - 1.2",
            0.8 <= mfe["ratio_at_peak"] <= 1.2, "", "no parameter fitted; reference estimator 0.59")
        add("membrane force: RMS of the magnitude error", mfe["rms_error_n"], "<= 0.6 N",
            mfe["rms_error_n"] <= 0.6, "N", "reference estimator 1.37 N")
        add("membrane force: peak from the deepest indentation", mfe["peak_distance_mm"], "<= 3 mm",
            mfe["peak_distance_mm"] <= 3.0, "mm", "frames 78-101, worst frame")
    elif mfe is not None:
        add("membrane force: estimate per frame, median", None, "<= 10 ms", None, "ms", mfe["skipped"])
    node = results.get("node", {})
    ph = next((p for p in node.get("phases", []) if p["name"] == "rate_1000"), None)
    world = node.get("world", "?")
    if ph is not None:
        ctx = f"{world} world, pressure + dense force + Jacobians, {ph['sent']} msgs"
        add("node 1 kHz: messages lost", ph["lost"], "0", ph["lost"] == 0, "msgs", ctx)
        p99 = ph["latency_ms"]["p99"]
        add("node 1 kHz: latency p99", p99, "<= 20 ms", p99 is not None and p99 <= 20.0, "ms", ctx)
        add("node 1 kHz: latency p99, long-term goal", p99, "<= 2 ms", p99 is not None and p99 <= 2.0,
            "ms", ctx)
        cpu = ph.get("cpu_ms_per_msg")
        add("node 1 kHz: CPU per message", cpu, "<= 0.7 ms", None if cpu is None else cpu <= 0.7, "ms",
            ctx)
        p5 = next((p for p in node.get("phases", []) if p["name"] == "rate_500"), None)
        if p5 is not None:
            v = p5["latency_ms"]["p99"]
            add("node 500 Hz: latency p99", v, "<= 5 ms", v is not None and v <= 5.0, "ms", ctx)
        need = ph.get("cores_needed_at_rate")
        share = f"{ph.get('cpu_ms_per_msg', float('nan')):.2f} ms CPU/msg; measured share " \
                f"{ph['cpu_cores']:.2f} of {ph.get('host_busy_cores', float('nan')):.2f} busy host cores"
        add("node 1 kHz: CPU (node CPU per msg x 1000/s)", need, "< 1 core",
            None if need is None else need < 1.0, "cores", share)
    else:
        why = node.get("skipped", "node section not run")
        for name, lim in (("node 1 kHz: messages lost", "0"), ("node 1 kHz: latency p99", "<= 20 ms"),
                          ("node 1 kHz: CPU", "< 1 core")):
            add(name, None, lim, None, "", why.splitlines()[0] if why else "")
    rss, start = node.get("node_rss_idle_mb"), node.get("node_start_s")
    how = f"{world} world, pressure + dense force + Jacobians; under the run's load"
    add("node idle RSS", rss, "<= 450 MB", None if rss is None or rss != rss else rss <= 450.0, "MB", how)
    add("node start-up (exec to all outputs advertised)", start, "<= 3 s",
        None if start is None else start <= 3.0, "s", how)
    ratio = floor_ratios(node).get("rate_1000", {}).get("p99")
    add("node 1 kHz p99 / transport floor p99", ratio, "reported", None, "x",
        "bare rclpy relay of the same messages in the same run")
    idle = next((p for p in node.get("phases", []) if p["name"] == "idle_2s"), None)
    warm = next((p for p in node.get("phases", []) if p["name"] == "rate_100"), None)
    if idle is not None and warm is not None:
        a, b = idle["latency_ms"]["p50"], warm["latency_ms"]["p50"]
        cold = a / b if a is not None and b and math.isfinite(a) and math.isfinite(b) else None
        add("node message after 2 s idle: p50 latency / 100 Hz p50", cold, "<= 3x",
            None if cold is None else cold <= 3.0, "x", f"{idle['received_complete']} idle messages")
    else:
        add("node message after 2 s idle: p50 latency / 100 Hz p50", None, "<= 3x", None, "x",
            "full run only" if results["meta"]["quick"] else node.get("skipped", "node section not run"))
    mem = next((p for p in node.get("phases", []) if p["name"] == "memory_1000"), None)
    if mem is not None:
        g = mem.get("rss_growth_pct")
        add(f"memory growth over {mem['duration_s']:.0f} s at 1 kHz", g, "< 5 %",
            g is not None and g < 5.0, "%", f"RSS {mem['rss_start_mb']:.0f} -> {mem['rss_end_mb']:.0f} MB")
    else:
        add("memory growth over 60 s at 1 kHz", None, "< 5 %", None, "%",
            "full run only" if results["meta"]["quick"] else node.get("skipped", "node section not run"))
    total = results.get("total_seconds")
    add("whole benchmark wall time", total, "< 600 s", total is not None and total < TEN_MINUTES_S, "s",
        "quick run" if results["meta"]["quick"] else "full run")
    return out


def floor_ratios(node: Dict[str, Any]) -> Dict[str, Dict[str, Optional[float]]]:
    """Per rate phase: node latency p50/p99 and CPU per message over the transport floor's."""
    out: Dict[str, Dict[str, Optional[float]]] = {}
    floor = {p["name"]: p for p in (node.get("floor") or {}).get("phases", [])}
    for p in node.get("phases", []):
        f = floor.get(p["name"])
        if f is None:
            continue
        r: Dict[str, Optional[float]] = {}
        for key in ("p50", "p99"):
            a, b = p["latency_ms"].get(key), f["latency_ms"].get(key)
            r[key] = a / b if a is not None and b and math.isfinite(a) and math.isfinite(b) else None
        a, b = p.get("cpu_ms_per_msg"), f.get("cpu_ms_per_msg")
        r["cpu_ms_per_msg"] = a / b if a is not None and b else None
        out[p["name"]] = r
    return out


# ---------------------------------------------------------------------------------------- printing
def _f(x: Any, fmt: str = "{:.3f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return fmt.format(x)


def _cols(cells: Sequence[Any], widths: Sequence[int]) -> str:
    """Cells padded to ``widths`` (negative = left aligned), prefixed by two spaces."""
    return "  " + " ".join(f"{str(c):<{-w}}" if w < 0 else f"{str(c):>{w}}" for c, w in zip(cells, widths))


LIB_HEAD = ("mesh", "V", "sensor", "mode", "N", "lib med ms", "p90", "min", "ref med ms", "p90", "ref/lib",
            "sparse kB", "dense kB")
LIB_W = (-6, 4, -11, -11, 4, 10, 7, 7, 10, 8, 7, 9, 9)
NODE_HEAD = ("phase", "rate Hz", "sent", "recv", "lost", "p50 ms", "p99 ms", "max ms", "node CPU", "ms/msg",
             "harness", "host busy", "RSS MB", "end", "growth %")
NODE_W = (-11, 7, 6, 6, 5, 7, 7, 7, 8, 6, 7, 9, 7, 5, 8)


def _phase_row(label: str, p: Dict[str, Any], growth: str) -> str:
    """One node-phase line of the printed table (``growth``: the RSS growth column's text)."""
    lat = p["latency_ms"]
    return _cols((label, f"{p['rate_hz']:.0f}", p["sent"], p["received_complete"], p["lost"],
                  _f(lat["p50"], "{:.2f}"), _f(lat["p99"], "{:.2f}"), _f(lat["max"], "{:.1f}"),
                  _f(p["cpu_cores"], "{:.2f}"), _f(p.get("cpu_ms_per_msg"), "{:.2f}"),
                  _f(p.get("harness_cores"), "{:.2f}"), _f(p.get("host_busy_cores"), "{:.2f}"),
                  _f(p["rss_start_mb"], "{:.0f}"), _f(p["rss_end_mb"], "{:.0f}"), growth), NODE_W)


def format_table(results: Dict[str, Any]) -> str:
    """The human-readable report (also what the README's Performance section quotes)."""
    L: List[str] = []
    m = results["meta"]
    L.append(f"vsf_sensor_ros benchmarks  {m['date_utc']}  commit {m['git_commit']}  "
             f"{'QUICK' if m['quick'] else 'full'} run")
    L.append(f"host: {m['cpu_count']} x {m['cpu_model']}; python {m['python']}, torch {m['torch']}; "
             f"load avg at start {m['load_avg_start'][0]:.2f}")
    for title, key in (("Library (CPU, torch 1 thread)", "library"), ("Library (CUDA)", "cuda")):
        sec = results.get(key)
        if not sec:
            continue
        L.append(f"\n== {title} ==")
        L.extend(f"  skipped: {s}" for s in sec.get("skipped", []))
        if sec.get("rows"):
            L.append(_cols(LIB_HEAD, LIB_W))
        for r in sec.get("rows", []):
            lib, ref = r["library"], r.get("reference") or {}
            L.append(_cols((r["mesh"], r["vertices"], r["sensor"], r["mode"], r["contacts"],
                            _f(1e3 * lib["median_s"]), _f(1e3 * lib["p90_s"]), _f(1e3 * lib["min_s"]),
                            _f(1e3 * ref["median_s"] if ref else None),
                            _f(1e3 * ref["p90_s"] if ref else None),
                            _f(r.get("ratio"), "{:.1f}"), _f(r["sparse_bytes"] / 1e3, "{:.1f}"),
                            _f(r["dense_bytes"] / 1e3, "{:.1f}")), LIB_W))
        if sec.get("membrane"):
            from benchmarks.bench_membrane import format_rows
            L.extend(format_rows(sec["membrane"]))
        if sec.get("membrane_node"):
            from benchmarks.bench_membrane_node import format_rows as node_rows
            L.extend(node_rows(sec["membrane_node"]))
    node = results.get("node")
    if node:
        L.append("\n== Node end to end over DDS (sensor_node child process) ==")
        if node.get("skipped"):
            L.append(f"  skipped: {node['skipped']}")
        if node.get("phases"):
            L.append(f"  world {node['world']}; sensors {', '.join(node['sensors'])} with Jacobians; "
                     f"markers {node['markers']}; {node['contacts_per_message']} {node['contacts_mode']} "
                     "contacts/msg")
            L.append(f"  QoS {node['qos']}")
            L.append(f"  node start {node.get('node_start_s', float('nan')):.1f} s, idle RSS "
                     f"{node.get('node_rss_idle_mb', float('nan')):.0f} MB")
            L.append(_cols(NODE_HEAD, NODE_W))
            for p in node["phases"]:
                L.append(_phase_row(p["name"], p, _f(p.get("rss_growth_pct"), "{:.2f}")))
            floor = node.get("floor") or {}
            if floor.get("phases"):
                L.append("  transport floor (bare rclpy relay, same messages, same run):")
                for p in floor["phases"]:
                    L.append(_phase_row(f"floor {p['name'].split('_')[-1]}", p, "-"))
                for name, r in floor_ratios(node).items():
                    L.append(f"  node / floor at {name}: p50 {_f(r['p50'], '{:.1f}')}x, "
                             f"p99 {_f(r['p99'], '{:.1f}')}x, CPU/msg {_f(r['cpu_ms_per_msg'], '{:.1f}')}x")
            elif floor.get("skipped"):
                L.append(f"  transport floor skipped: {floor['skipped'].splitlines()[0]}")
            for key in [v[0] for v in VARIANTS]:
                var = node.get(key) or {}
                if var.get("skipped"):
                    L.append(f"  {key} skipped: {var['skipped'].splitlines()[0]}")
                if not var.get("phases"):
                    continue
                L.append(f"  {var['title']}; start {var.get('node_start_s', float('nan')):.1f} s, "
                         f"idle RSS {var.get('node_rss_idle_mb', float('nan')):.0f} MB:")
                for p in var["phases"]:
                    L.append(_phase_row(f"{key[:5]} {p['name'].split('_')[-1]}", p, "-"))
            L.append("  (node CPU in cores: 1.00 = one core busy; ms/msg = node CPU time per processed "
                     "message;")
            L.append("   harness = publisher + receiver processes; host busy = all processes, of "
                     f"{m['cpu_count']} cores;")
            L.append("   latency = contacts stamp -> receipt of the step's last output; RSS = node resident "
                     "memory at phase start / end)")
    sc = results.get("scaling")
    if sc:
        L.append(f"\n== Scaling (1 thread, barycentric; plot {sc.get('plot', '-')}) ==")
        L.extend(f"  skipped: {s}" for s in sc.get("skipped", []))
        w = (-11, -11, 5, 5, 10, 10, 7)
        L.append(_cols(("curve", "sensor", "V", "N", "lib med ms", "ref med ms", "ref/lib"), w))
        for curve in ("vs_contacts", "vs_vertices"):
            for r in sc.get(curve, []):
                L.append(_cols((curve.replace("vs_", "vs "), r["sensor"], r["vertices"], r["contacts"],
                                _f(1e3 * r["library"]["median_s"]), _f(1e3 * r["reference"]["median_s"]),
                                _f(r.get("ratio"), "{:.1f}")), w))
    L.append("\n== Targets (reported, not asserted) ==")
    for t in results.get("targets", []):
        mark = {True: "MET", False: "MISSED", None: "not measured"}[t["met"]]
        if t["met"] is None and t["limit"] == "reported" and t["value"] is not None:
            mark = "reported"      # a number to read, not a limit to meet
        L.append(f"  [{mark:^12}] {t['target']:<52} {_f(t['value'], '{:.3g}'):>9} {t['unit']:<5} "
                 f"(target {t['limit']}) {t['note']}")
    return "\n".join(L)


def _clean(x: Any) -> Any:
    """JSON-safe copy: NaN/inf -> None, tuples -> lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


# ---------------------------------------------------------------------------------------- main
def run(args: argparse.Namespace) -> Dict[str, Any]:
    """Run the chosen sections; returns the results dict (also written to ``args.out``)."""
    import torch
    t_start = time.monotonic()
    torch.set_num_threads(1)   # the "one core" numbers
    cfg = settings(args.quick, args.node_count)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    out = Path(args.out)
    results: Dict[str, Any] = {"meta": meta(args.quick), "settings": cfg, "sections": sections}

    if "library" in sections:
        print("[library] predict + sparse Jacobian vs dense reference (1 thread)", flush=True)
        from benchmarks.library_rows import library_section
        t0 = time.monotonic()
        results["library"] = library_section(cfg["lib_counts"], cfg["repeats"], cfg["budget_s"])
        print("[library] membrane force estimator on the real Punyo poke", flush=True)
        from benchmarks.bench_membrane import load_poke, membrane_section, poke_dir
        root = poke_dir()
        poke = load_poke(root) if root is not None else None     # read once for both
        results["library"]["membrane"] = membrane_section(1 if args.quick else 3, flow=cfg["membrane_flow"],
                                                          poke=poke)
        from benchmarks.bench_membrane_node import node_frame_section
        results["library"]["membrane_node"] = node_frame_section(1 if args.quick else 2,
                                                                 stride=cfg["membrane_stride"], poke=poke)
        results["library"]["seconds"] = time.monotonic() - t0
    if "cuda" in sections:
        if torch.cuda.is_available():
            print("[cuda] library rows on CUDA", flush=True)
            from benchmarks.library_rows import library_section
            results["cuda"] = library_section(cfg["lib_counts"], cfg["repeats"], cfg["budget_s"],
                                              device="cuda")
        else:
            why = f"torch.cuda.is_available() is False (torch {torch.__version__}, CPU build or no GPU)"
            print(f"[cuda] skipped: {why}", flush=True)
            results["cuda"] = {"rows": [], "skipped": [why]}
    if "node" in sections:
        print("[node] sensor_node end to end over DDS", flush=True)
        from benchmarks.bench_node import run_node_bench
        phases = [{"name": f"rate_{r}", "rate": float(r), "count": cfg["node_count"]}
                  for r in cfg["node_rates"]]
        if cfg["idle_phase"]:
            # one message every 2 s: each arrives after >= 2 s of idleness (the cold-message case)
            phases.append({"name": "idle_2s", "rate": 0.5, "count": 10, "max_seconds": 30.0})
        if cfg["memory_s"]:
            phases.append({"name": "memory_1000", "rate": 1000.0, "count": int(1000 * cfg["memory_s"]),
                           "max_seconds": 1.5 * cfg["memory_s"]})
        t0 = time.monotonic()
        results["node"] = run_node_bench(phases, warmup=cfg["node_warmup"], world=args.node_world)
        results["node"]["seconds"] = time.monotonic() - t0
        if results["node"].get("skipped"):
            print(f"  node skipped: {results['node']['skipped']}", flush=True)
        elif not cfg["node_extras"]:
            results["node"]["floor"] = {"skipped": "full run only"}
            for key, *_ in VARIANTS:
                results["node"][key] = {"skipped": "full run only"}
        else:
            # The same messages through a bare rclpy relay in the node's place, in the same run.
            print("[node] transport floor: bare rclpy relay in the node's place", flush=True)
            t0 = time.monotonic()
            floor = run_node_bench([p for p in phases if not p["name"].startswith("memory")],
                                   warmup=cfg["node_warmup"], world=results["node"]["world"],
                                   node_module="benchmarks.relay_node")
            floor["seconds"] = time.monotonic() - t0
            results["node"]["floor"] = floor
            if floor.get("skipped"):
                print(f"  transport floor skipped: {floor['skipped']}", flush=True)
            rates = [p for p in phases if p["name"].startswith("rate_")]
            for key, text, extra, kinds, count in VARIANTS:
                print(f"[node] {text}", flush=True)
                t0 = time.monotonic()
                ph = [{**p, "count": min(p["count"], count)} for p in rates]
                var = run_node_bench(ph, warmup=cfg["node_warmup"], world=results["node"]["world"],
                                     extra_params=extra, complete_kinds=kinds)
                var["seconds"] = time.monotonic() - t0
                var["title"] = text
                results["node"][key] = var
                if var.get("skipped"):
                    print(f"  {key} skipped: {var['skipped']}", flush=True)
    if "scaling" in sections:
        print("[scaling] latency vs contacts and vs mesh size", flush=True)
        from benchmarks.bench_scaling import plot_scaling, scaling_section
        t0 = time.monotonic()
        sc = scaling_section(cfg["scale_counts"], cfg["scale_subdiv"], cfg["repeats"], cfg["budget_s"])
        png = Path(args.plot) if args.plot else out.with_name("scaling.png")
        sc["plot"] = str(plot_scaling(sc, png))
        sc["seconds"] = time.monotonic() - t0
        results["scaling"] = sc

    results["meta"]["load_avg_end"] = list(os.getloadavg())
    results["total_seconds"] = time.monotonic() - t_start
    results["targets"] = evaluate_targets(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_clean(results), indent=1))
    print("\n" + format_table(results))
    print(f"\nwrote {out}" + (f" and {results['scaling']['plot']}" if "scaling" in results else "")
          + f" in {results['total_seconds']:.0f} s")
    return results


def main(argv: Sequence[str] = ()) -> int:
    """CLI entry (``make bench``)."""
    ap = argparse.ArgumentParser(description="vsf_sensor_ros benchmarks (see benchmarks/run.py)")
    ap.add_argument("--quick", action="store_true", help="small counts, no 60 s memory run")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="results JSON (default benchmarks/results.json)")
    ap.add_argument("--plot", default="", help="scaling PNG (default: scaling.png beside --out)")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)}")
    ap.add_argument("--node-count", type=int, default=None, help="messages per node rate (override)")
    ap.add_argument("--node-world", choices=["auto", "kinova", "embedded"], default="auto",
                    help="world of the node run (auto: Kinova + Punyo mesh when the fixture is there)")
    args = ap.parse_args(list(argv) or None)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
