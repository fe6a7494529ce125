"""Where the node's resident memory and start-up time go.

``python -m benchmarks.node_memory [--world auto|kinova|embedded] [--top 15]``

1. Import costs: a fresh interpreter imports the heavy dependencies one after
   another in the order the node pulls them in and reports the RSS and wall
   time each adds (a later import reuses what an earlier one loaded, so the
   numbers are increments, not standalone costs).
2. The node itself, configured as in the node benchmark (Punyo pressure +
   dense force with Jacobians): wall time from ``exec`` to its
   ``sensor_node ready`` log line, then its RSS after 2 s idle, split by
   mapping from ``/proc/<pid>/smaps`` (shared libraries by file, anonymous
   memory = Python objects, numpy/torch buffers, malloc arenas, JIT code).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
IMPORT_ORDER = ("numpy", "scipy.spatial", "torch", "numba", "trimesh", "klampt", "rclpy",
                "sensor_msgs.msg", "vsf_sensor_ros.sensor", "vsf_sensor_ros.world",
                "vsf_sensor_ros.ros.sensor_node")

_IMPORT_PROBE = """
import importlib, sys, time, json
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
rows = [("python", rss(), 0.0)]
for m in sys.argv[1:]:
    t = time.perf_counter(); a = rss(); importlib.import_module(m)
    rows.append((m, rss() - a, time.perf_counter() - t))
print(json.dumps(rows))
"""


def import_costs(modules: Sequence[str] = IMPORT_ORDER) -> List[Tuple[str, float, float]]:
    """``[(module, +RSS MB, seconds)]`` importing ``modules`` in order in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, *modules], cwd=ROOT,
                         capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return [tuple(r) for r in json.loads(out.stdout.strip().splitlines()[-1])]


def smaps_breakdown(pid: int) -> Dict[str, float]:
    """RSS (MB) of ``pid`` per mapping name: library file basename, ``[anon]``, ``[heap]``, ``[stack]``."""
    sizes: Dict[str, float] = defaultdict(float)
    name = "[anon]"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                name = os.path.basename(parts[5]) if len(parts) >= 6 else "[anon]"
            elif parts[0] == "Rss:":
                sizes[name] += int(parts[1]) / 1024
    return dict(sizes)


def node_footprint(world: str = "auto", idle_s: float = 2.0) -> Dict[str, object]:
    """Start the benchmark's node configuration; start-up time, idle RSS and its breakdown."""
    from benchmarks.bench_node import fixtures_dir, node_params
    from vsf_sensor_ros.demo.ros_env import free_domain_id, localhost_env
    assets = fixtures_dir()
    if world == "auto":
        world = "kinova" if assets is not None else "embedded"
    tmp = Path(tempfile.mkdtemp(prefix="vsf_node_memory_"))
    params = tmp / "params.yaml"
    params.write_text(yaml.safe_dump({"sensor_node": {"ros__parameters": node_params(
        world, assets if world == "kinova" else None)}}, sort_keys=False))
    env = localhost_env(free_domain_id())
    env.update({"PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "RCUTILS_COLORIZED_OUTPUT": "0",
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
    log = tmp / "node.log"
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        proc = subprocess.Popen([sys.executable, "-m", "vsf_sensor_ros.ros.sensor_node", "--ros-args",
                                 "--params-file", str(params)], cwd=ROOT, env=env, stdout=lf,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = None
        while time.monotonic() - t0 < 120 and proc.poll() is None:
            if b"sensor_node ready" in log.read_bytes():
                ready = time.monotonic() - t0
                break
            time.sleep(0.02)
        if ready is None:
            return {"world": world, "error": log.read_text()[-2000:]}
        time.sleep(idle_s)
        parts = smaps_breakdown(proc.pid)
        return {"world": world, "startup_s": ready, "rss_mb": sum(parts.values()), "by_mapping": parts}
    finally:
        proc.send_signal(2)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: Sequence[str] = ()) -> int:
    """CLI: print import costs and the node's idle footprint."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", choices=["auto", "kinova", "embedded"], default="auto")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(list(argv) or None)
    print("== import costs (cumulative order, fresh interpreter) ==")
    for name, mb, s in import_costs():
        print(f"  {name:<34} {mb:+7.0f} MB {1e3 * s:7.0f} ms")
    fp = node_footprint(args.world)
    if "error" in fp:
        print("node failed:\n" + str(fp["error"]))
        return 1
    print(f"\n== node ({fp['world']} world): ready after {fp['startup_s']:.2f} s, idle RSS "
          f"{fp['rss_mb']:.0f} MB ==")
    for name, mb in sorted(fp["by_mapping"].items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {name:<44} {mb:7.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
