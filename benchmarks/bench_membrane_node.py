"""``membrane_force_node``'s work per camera frame, without the transport: the real poke's frames.

Per frame, what the node does between receiving a depth image and handing its outputs to the
middleware: deserialise the ``sensor_msgs/Image`` (16UC1, 0.1 mm, from its CDR bytes as DDS hands
them over), decode it to metres, estimate, build the force cloud (x y z fx fy fz, the attachment
frame), the surface cloud and the wrench, and serialise the three.  DDS delivery itself is not in it
(it depends on the host and the middleware, not on this package).

``python -m benchmarks.bench_membrane_node [--repeats 2]``; reported (never asserted): median and
p99 per frame, ms, beside the estimate alone.
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Dict, List, Optional

import numpy as np

from benchmarks.bench_membrane import load_poke, poke_dir


def node_frame_section(repeats: int = 2, stride: int = 1, poke: Optional[Dict[str, Any]] = None
                       ) -> Dict[str, Any]:
    """Time the node's per-frame path over the poke ``repeats`` times; a dict (``skipped`` when absent).

    ``stride`` > 1 times every ``stride``-th frame only; ``poke`` is :func:`load_poke`'s result when
    the caller has read it already."""
    root = poke_dir()
    if root is None:
        return {"skipped": "Punyo poke recording not found"}
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header

    from vsf_sensor_ros.ros.messages.camera import depth_from_image
    from vsf_sensor_ros.ros.messages.pointcloud import write_cloud
    from vsf_sensor_ros.sensor.membrane_force_estimator import MembraneForceEstimator, isa_pressure
    from vsf_sensor_ros.sensor.membrane_frame import fit_mesh_transform, total_wrench
    poke = poke if poke is not None else load_poke(root)
    raw = np.rint(poke["depth"] / 1e-4).astype("<u2")      # the recording's uint16 0.1 mm values
    timed = range(0, len(raw), max(1, int(stride)))
    wire = [serialize_message(Image(height=480, width=640, encoding="16UC1", step=1280,
                                    data=raw[i].tobytes())) for i in timed]
    mesh = poke["mesh"]
    ply = root.parent / "kinova_punyo" / "punyo_mesh_complete.ply"
    if ply.is_file():
        import trimesh
        frame = fit_mesh_transform(mesh.points, trimesh.load(str(ply), process=False).vertices, mesh.boundary)
    else:
        from vsf_sensor_ros.sensor.membrane_frame import MeshFrameTransform
        frame = MeshFrameTransform()
    est = MembraneForceEstimator(mesh, poke["camera"], poke["R_cam_mesh"],
                                 ambient_pressure=isa_pressure(222.0))
    ref = poke["reference_frames"]
    est.set_reference([raw[i] * 1e-4 for i in ref], poke["pressure"][ref])
    header = Header(frame_id="punyo")
    node_ms: List[float] = []
    est_ms: List[float] = []
    for _ in range(max(1, int(repeats))):
        for i, data in zip(timed, wire):
            t0 = time.perf_counter()
            depth = depth_from_image(deserialize_message(data, Image), 1e-4)
            res = est.estimate(depth, pressure=poke["pressure"][i])
            pos = frame.points(res.positions).astype(np.float32)
            f = frame.vectors(res.contact_forces).astype(np.float32)
            xyz = [("x", pos[:, 0]), ("y", pos[:, 1]), ("z", pos[:, 2])]
            cloud = write_cloud(header, xyz + [("fx", f[:, 0]), ("fy", f[:, 1]), ("fz", f[:, 2])])
            surface = write_cloud(header, xyz)
            tot, tq = total_wrench(pos, f)
            w = WrenchStamped(header=header)
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in tot)
            for m in (cloud, surface, w):
                serialize_message(m)
            node_ms.append(1e3 * (time.perf_counter() - t0))
            est_ms.append(1e3 * res.timings["total"])
    a, b = np.asarray(node_ms), np.asarray(est_ms)
    return {"frames": len(wire), "passes": max(1, int(repeats)), "node_median_ms": float(np.median(a)),
            "node_p99_ms": float(np.percentile(a, 99)), "estimate_median_ms": float(np.median(b)),
            "estimate_p99_ms": float(np.percentile(b, 99))}


def format_rows(m: Dict[str, Any]) -> List[str]:
    """Table lines for the node's per-frame path."""
    if m.get("skipped"):
        return [f"  membrane_force_node per frame: skipped ({m['skipped']})"]
    return [f"  membrane_force_node per frame (decode + estimate + encode, no DDS; {m['frames']} frames x "
            f"{m['passes']}): median {m['node_median_ms']:.2f} ms, p99 {m['node_p99_ms']:.2f} ms "
            f"(estimate alone {m['estimate_median_ms']:.2f} / {m['estimate_p99_ms']:.2f} ms)"]


def main() -> None:
    """Command line: print the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2, help="passes over the frames (default 2)")
    print("\n".join(format_rows(node_frame_section(ap.parse_args().repeats))))


if __name__ == "__main__":
    main()
