"""Transport floor of the node benchmark: a bare rclpy relay in the node's place.

``python -m benchmarks.relay_node --ros-args --params-file <the node benchmark's params>``

It reads the same parameter file as ``sensor_node`` (for the sensor names,
the world and the QoS depth), subscribes raw to ``joint_states`` and
``contacts``, and for every contacts message publishes the four outputs the
node publishes, in the node's order and with the node's message types and
sizes (``<pressure>/predicted`` FluidPressure, ``<pressure>/jacobian`` with
3 nonzeros per contact, ``<force>/predicted`` with one point per mesh
vertex, ``<force>/jacobian`` with 27 nonzeros per contact), stamped with the
contacts stamp.  The payloads are byte templates built once per contact
count with :mod:`vsf_sensor_ros.ros.messages.wire`; only the 8 stamp bytes change.
No model runs: what it costs is what DDS + rclpy take, the floor under any
node written in Python with rclpy.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import rclpy
import yaml
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2

from vsf_sensor_ros.ros.messages import wire as cdr
from vsf_sensor_ros.ros.messages import readings as enc
from vsf_sensor_ros.ros.main import spin_node

JACOBIAN_NNZ_PER_CONTACT = {"PunyoPressureSensor": 3, "PunyoDenseForceSensor": 27}


def _params(argv: Sequence[str]) -> Dict:
    path = argv[list(argv).index("--params-file") + 1]
    doc = yaml.safe_load(Path(path).read_text())
    return doc["sensor_node"]["ros__parameters"]


def _mesh_vertices(p: Dict) -> int:
    """Vertex count of the attachment mesh of the dense force sensor (what its cloud carries)."""
    from benchmarks.bench_publisher import SENSOR_BODY, world_and_joints
    kind = "kinova" if p.get("robot_description_path") else "embedded"
    world, _, _ = world_and_joints(kind, p.get("assets_dir", ""))
    return int(len(world.body_mesh(SENSOR_BODY).vertices))


def _stamped(template: bytes, stamp: bytes) -> bytes:
    return template[:4] + stamp + template[12:]


def main(argv: Sequence[str] = ()) -> int:
    """Run the relay until SIGINT."""
    argv = list(argv) or sys.argv[1:]
    p = _params(argv)
    rclpy.init(args=argv)
    node = rclpy.create_node("transport_floor_relay")
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(p.get("qos.inputs.depth", 1000)),
                     reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
    vertices = _mesh_vertices(p)
    outputs: List = []       # (publisher, builder(n_contacts) -> template bytes)
    for s in p["sensors"]:
        frame = p[f"{s}.attachment"]
        if p[f"{s}.type"] == "PunyoPressureSensor":
            outputs.append((node.create_publisher(FluidPressure, f"{s}/predicted", qos),
                            lambda n, f=frame: enc.encode_fluid_pressure(0, f, 1.0, 0.0)))
        else:
            outputs.append((node.create_publisher(PointCloud2, f"{s}/predicted", qos),
                            lambda n, f=frame: enc.encode_dense_force(
                                0, f, np.zeros((vertices, 3)), np.ones((vertices, 3)))))
        if p.get(f"{s}.publish_jacobian"):
            k = JACOBIAN_NNZ_PER_CONTACT[p[f"{s}.type"]]
            outputs.append((node.create_publisher(PointCloud2, f"{s}/jacobian", qos),
                            lambda n, k=k: enc.encode_jacobian(
                                np.arange(k * n), np.arange(k * n), np.ones(k * n), 0, "world")))
    templates: Dict[int, List[bytes]] = {}

    def on_contacts(raw: bytes) -> None:
        cloud = cdr.decode_pointcloud2(raw)
        n = cloud.height * cloud.width
        tpl = templates.get(n)
        if tpl is None:
            tpl = templates[n] = [build(n) for _, build in outputs]
        stamp = struct.pack("<iI", cloud.header.stamp.sec, cloud.header.stamp.nanosec)
        for (pub, _), t in zip(outputs, tpl):
            pub.publish(_stamped(t, stamp))

    node.create_subscription(JointState, "joint_states", lambda raw: None, qos, raw=True)
    node.create_subscription(PointCloud2, "contacts", on_contacts, qos, raw=True)
    node.get_logger().info(f"sensor_node ready: transport floor relay, {len(outputs)} outputs, "
                           f"{vertices} vertices")
    try:
        spin_node(node)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
