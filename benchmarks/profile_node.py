"""Where the node's time per contacts message goes: ``sensor_node``'s callbacks under cProfile.

Builds the node in this process with the benchmark's parameters
(:func:`benchmarks.bench_node.node_params`), then calls its ``joint_states``
and ``contacts`` callbacks directly with the publisher's messages (as
serialised bytes, as the node receives them), so the numbers are the
node's own work per simulator step (decode, forward kinematics, models,
Jacobians, checks) without transport or scheduling.  By default nothing
subscribes to the outputs, so the node encodes and publishes nothing (as it
does for an output nobody subscribes to); with ``--subscribe`` a second node
in this process subscribes to the four outputs (never spun), so each step
also encodes and publishes them.  Reports the wall time and this process's
CPU time per step and the functions with the largest cumulative time per step (µs).

``python -m benchmarks.profile_node [--steps 500] [--top 25] [--subscribe]``
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import struct
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def profile_node(steps: int = 500, contacts: int = 100, top: int = 25,
                 subscribe: bool = False) -> Dict[str, Any]:
    """Profile ``steps`` joint-state + contacts callbacks; returns per-step timing and hot spots.

    Returns:
        ``{"world", "steps", "step_us": {"median", "p90", "mean"}, "hot": [{"function",
        "calls_per_step", "cum_us_per_step", "self_us_per_step"}...]}`` sorted by cumulative time;
        ``step_us`` also holds ``cpu`` (process CPU time per step, µs).
    """
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message
    from vsf_sensor_ros.demo.ros_env import apply_localhost_env, free_domain_id
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.ros.sensor_node import SensorNode
    from sensor_msgs.msg import JointState
    from benchmarks import bench_node, bench_publisher as bp

    assets = bench_node.fixtures_dir()
    world_kind = "kinova" if assets is not None else "embedded"
    params = bench_node.node_params(world_kind, assets)
    apply_localhost_env(free_domain_id())
    rclpy.init()
    try:
        node = SensorNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        if subscribe:   # a subscriber on each output: the node then encodes and publishes them
            from sensor_msgs.msg import FluidPressure, PointCloud2
            sink = rclpy.create_node("profile_sink")
            for t in bench_node.output_topics(True):
                sink.create_subscription(FluidPressure if t.endswith("pressure/predicted") else PointCloud2,
                                         t, lambda _m: None, 10, raw=True)
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline and not all(
                    node.count_subscribers(t) for t in bench_node.output_topics(True)):
                time.sleep(0.05)
        world, names, q = bp.world_and_joints(world_kind, str(assets or ""))
        clouds = [contacts_to_pointcloud2(c, bp.CONTACT_BODY_NAMES, frame_id="world")
                  for c in bp.contact_pool(world, contacts, 20)]
        js = JointState(name=names, position=q)
        # The subscriptions take serialised bytes: feed them the bytes, header stamp patched in
        # place (CDR: 4-byte encapsulation, int32 sec, uint32 nsec).
        raw_js = bytearray(serialize_message(js))
        raw_clouds = [bytearray(serialize_message(c)) for c in clouds]

        def step(i: int) -> None:
            sec, nsec = divmod(time.time_ns(), 1_000_000_000)
            cloud = raw_clouds[i % len(raw_clouds)]
            for buf in (raw_js, cloud):
                struct.pack_into("<iI", buf, 4, sec, nsec)
            node.sub_joints.callback(bytes(raw_js))
            node.sub_contacts.callback(bytes(cloud))

        for i in range(50):          # first-call costs out of the way
            step(i)
        times = np.empty(steps)
        cpu0 = time.process_time()
        for i in range(steps):
            t0 = time.perf_counter()
            step(i)
            times[i] = time.perf_counter() - t0
        cpu_us = 1e6 * (time.process_time() - cpu0) / steps
        prof = cProfile.Profile()
        prof.enable()
        for i in range(steps):
            step(i)
        prof.disable()
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    st = pstats.Stats(prof)
    rows: List[Dict[str, Any]] = []
    for (fname, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():
        short = fname.split("/site-packages/")[-1].replace(str(ROOT) + "/", "")
        rows.append({"function": f"{short}:{line}({func})", "calls_per_step": nc / steps,
                     "cum_us_per_step": 1e6 * ct / steps, "self_us_per_step": 1e6 * tt / steps})
    rows.sort(key=lambda r: -r["cum_us_per_step"])
    return {"world": world_kind, "steps": steps, "contacts": contacts,
            "step_us": {"median": 1e6 * float(np.median(times)), "p90": 1e6 * float(np.percentile(times, 90)),
                        "mean": 1e6 * float(times.mean()), "min": 1e6 * float(times.min()), "cpu": cpu_us},
            "subscribed": subscribe,
            "hot": rows[:top],
            "hot_self": sorted(rows, key=lambda r: -r["self_us_per_step"])[:top]}


def main(argv: Sequence[str] = ()) -> int:
    """CLI: print the per-step time and the hot spots."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--contacts", type=int, default=100)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--subscribe", action="store_true", help="subscribe to the four outputs in this process")
    args = ap.parse_args(list(argv) or None)
    r = profile_node(args.steps, args.contacts, args.top, args.subscribe)
    s = r["step_us"]
    outs = "outputs encoded and published" if r["subscribed"] else "no output subscribed"
    print(f"sensor_node per step ({r['world']} world, {r['contacts']} barycentric contacts, "
          f"joint state + contacts, {outs}, no profiler): min {s['min']:.0f} us, "
          f"median {s['median']:.0f} us, p90 {s['p90']:.0f} us, process CPU {s['cpu']:.0f} us")
    for title, key in (("cumulative", "hot"), ("self", "hot_self")):
        print(f"\nby {title} time (us per step, under cProfile):")
        print(f"{'cum':>8} {'self':>8} {'calls':>6}  function")
        for h in r[key]:
            print(f"{h['cum_us_per_step']:8.1f} {h['self_us_per_step']:8.1f} {h['calls_per_step']:6.1f}  "
                  f"{h['function']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
