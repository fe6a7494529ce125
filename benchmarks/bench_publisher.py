"""Load generator for the node benchmark: joint states + contact clouds at fixed rates.

Runs as its own process (``python -m benchmarks.bench_publisher ...``) so the
sending schedule is not disturbed by the receiving side's callbacks (the
GIL) and the node under test sees an ordinary remote publisher.

For every step it publishes a ``sensor_msgs/JointState`` (fixed
configuration, so the node recomputes forward kinematics as it would for a
moving robot) and then one contacts ``sensor_msgs/PointCloud2`` built with
:func:`vsf_sensor_ros.ros.messages.pointcloud.contacts_to_pointcloud2`: ``N``
contacts on the Punyo membrane between ``punyo`` and ``world``, without
``elem1`` (so every contact is mapped barycentrically to its closest
triangle).  A pool of distinct clouds (different points and forces) is
cycled.  Both headers are stamped with the wall clock (``time.time_ns()``) at
send; the receiver compares that stamp with its own wall clock at receipt.

The schedule is absolute (step ``i`` is due at ``t0 + i / rate``); a late
step is sent at once and counted as late, so the achieved mean rate stays
honest.  Each phase is bounded in count and in time.

QoS: reliable, keep-last, depth 1000, volatile (matches the node's inputs as
configured by :mod:`benchmarks.bench_node`).

Output (``--out``): JSON ``{"phases": [{"name", "rate_hz", "count_requested",
"sent", "first_stamp_ns", "last_stamp_ns", "duration_s", "achieved_rate_hz",
"late_steps", "max_lateness_ms"}], "contacts": N, "world": ...}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np
import torch

RELIABLE_DEPTH = 1000
SENSOR_BODY = "punyo"
OTHER_BODY = "world"
CONTACT_BODY_NAMES = [SENSOR_BODY, OTHER_BODY]
"""The ``contact_body_names`` table shared with the node (see bench_node.node_params)."""


def world_and_joints(world_kind: str, assets_dir: str):
    """The world the node builds, and the joint configuration to publish.

    Returns:
        ``(world, joint_names, positions)``; Kinova: all joints at 0 (arm up);
        embedded: the embedded arm's ``HOME``.
    """
    from vsf_sensor_ros import embedded_world as ew
    if world_kind == "kinova":
        world = ew.kinova_world(assets_dir, with_scene=False)
        names = list(ew.KINOVA_JOINTS)
        q = [0.0] * len(names)
    elif world_kind == "embedded":
        world = ew.embedded_world()
        names = list(ew.HOME)
        q = [float(ew.HOME[n]) for n in names]
    else:
        raise ValueError(f"world must be 'kinova' or 'embedded', got {world_kind!r}")
    world.set_joint_positions(names, q)
    return world, names, q


def contact_pool(world: Any, n_contacts: int, pool: int, seed: int = 0) -> List[Dict]:
    """``pool`` distinct ``{(punyo, world): ContactState}`` dicts of ``n_contacts`` contacts each.

    Points are sampled uniformly on the membrane surface and moved up to
    0.5 mm off it along the face normal (a simulator's contact points are
    rarely exactly on the mesh); forces push into the membrane (along the
    inward normal, 0.05..0.5 N) with a small tangential part.  All in the
    world frame at the published joint configuration.
    """
    import trimesh
    from vsf_sensor_ros.sensor import ContactState
    mesh = world.body_mesh(SENSOR_BODY)
    T = world.body_transform(SENSOR_BODY)
    R, t = T[:3, :3], T[:3, 3]
    rng = np.random.default_rng(seed)
    out = []
    for k in range(pool):
        pts, faces = trimesh.sample.sample_surface(mesh, n_contacts, seed=seed + k)
        normal = mesh.face_normals[faces]
        pts = pts + normal * rng.uniform(-5e-4, 5e-4, size=(n_contacts, 1))
        tangential = rng.normal(scale=0.02, size=(n_contacts, 3))
        force = -normal * rng.uniform(0.05, 0.5, size=(n_contacts, 1)) + tangential
        out.append({(SENSOR_BODY, OTHER_BODY): ContactState(
            torch.from_numpy(pts @ R.T + t), torch.from_numpy(force @ R.T))})
    return out


def run(args: argparse.Namespace) -> Dict[str, Any]:
    """Publish every phase; return the summary written to ``--out``."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState, PointCloud2
    from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
    from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp

    world, names, q = world_and_joints(args.world, args.assets)
    clouds = [contacts_to_pointcloud2(c, CONTACT_BODY_NAMES, frame_id="world")
              for c in contact_pool(world, args.contacts, args.pool)]
    phases = json.loads(args.phases)

    rclpy.init()
    node = rclpy.create_node("bench_publisher")
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=RELIABLE_DEPTH,
                     reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
    pub_js = node.create_publisher(JointState, "joint_states", qos)
    pub_c = node.create_publisher(PointCloud2, "contacts", qos)
    js = JointState(name=names, position=q)
    js.header.frame_id = ""
    deadline = time.monotonic() + args.match_timeout
    while pub_c.get_subscription_count() < 1 or pub_js.get_subscription_count() < 1:
        if time.monotonic() > deadline:
            raise RuntimeError("the node's contacts/joint_states subscriptions did not appear within "
                               f"{args.match_timeout} s")
        time.sleep(0.05)
    time.sleep(0.5)  # let the reliable writers finish matching with the node's readers

    summary: Dict[str, Any] = {"world": args.world, "contacts": args.contacts, "pool": args.pool,
                               "qos": f"reliable, keep_last {RELIABLE_DEPTH}, volatile", "phases": []}
    for p_i, phase in enumerate(phases):
        if p_i:
            time.sleep(args.gap)   # drain: the previous phase's outputs arrive before the next starts
        rate, count = float(phase["rate"]), int(phase["count"])
        max_s = float(phase.get("max_seconds", 3.0 * count / rate + 5.0))
        period = 1.0 / rate
        late, max_late, sent = 0, 0.0, 0
        first = last = 0
        t0 = time.perf_counter() + 0.01
        for i in range(count):
            due = t0 + i * period
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)
            else:
                lateness = now - due
                if lateness > period:
                    late += 1
                max_late = max(max_late, lateness)
            if now - t0 > max_s:
                break
            ns = time.time_ns()
            stamp = ns_to_stamp(ns)
            js.header.stamp = stamp
            pub_js.publish(js)
            msg = clouds[i % len(clouds)]
            msg.header.stamp = stamp
            pub_c.publish(msg)
            sent += 1
            last = ns
            if i == 0:
                first = ns
        duration = (last - first) * 1e-9
        summary["phases"].append({
            "name": phase["name"], "rate_hz": rate, "count_requested": count, "sent": sent,
            "first_stamp_ns": first, "last_stamp_ns": last, "duration_s": duration,
            "achieved_rate_hz": (sent - 1) / duration if duration > 0 else float("nan"),
            "late_steps": late, "max_lateness_ms": 1e3 * max_late})
    time.sleep(0.5)   # reliable writers: give the last samples time to be acknowledged
    node.destroy_node()
    rclpy.try_shutdown()
    return summary


def main(argv: Sequence[str] = ()) -> int:
    """CLI: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", choices=["kinova", "embedded"], required=True)
    ap.add_argument("--assets", default="", help="Kinova/Punyo assets directory (world=kinova)")
    ap.add_argument("--contacts", type=int, default=100, help="contacts per cloud")
    ap.add_argument("--pool", type=int, default=20, help="distinct clouds cycled")
    ap.add_argument("--phases", required=True,
                    help='JSON list of {"name", "rate", "count"[, "max_seconds"]}')
    ap.add_argument("--gap", type=float, default=2.0, help="pause between phases (s)")
    ap.add_argument("--match-timeout", type=float, default=30.0)
    ap.add_argument("--out", required=True, help="summary JSON file")
    args = ap.parse_args(list(argv) or None)
    summary = run(args)
    Path(args.out).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
