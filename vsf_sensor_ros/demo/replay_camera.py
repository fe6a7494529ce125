"""The real poke's camera frames in the replay: the measured dense force through ``membrane_force_node``,
the contacts relayed with the pressed vertex, the in-process estimator and the scale; docs/real_data.md."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np

from vsf_sensor_ros.demo.replay_analysis import CONTACT_BODIES, HPA_TO_PA, Recording, nearest_frame

if TYPE_CHECKING:   # the sensor package (torch) is imported when the analysis runs
    from vsf_sensor_ros.sensor.scale_calibration import ScaleScore

MEMBRANE_BODY = "punyo_membrane"
MEMBRANE_SENSOR = "punyo_force"
MEASURED_TOPIC = f"{MEMBRANE_SENSOR}/measured"
# depth aligned to colour, as a RealSense driver names it (the recording's depth and colour share a grid)
DEPTH_TOPIC = "punyo/camera/aligned_depth_to_color/image_raw"
INFO_TOPIC = "punyo/camera/aligned_depth_to_color/camera_info"
COLOUR_TOPIC = "punyo/camera/color/image_raw"     # rgb8, on the depth image's pixel grid
STAMPED_PRESSURE_TOPIC = "punyo/pressure_stamped"   # FluidPressure, Pa, stamped with the frame
WRENCH_CONTACTS_TOPIC = "wrench_contacts"      # the wrench node's clouds, before the relay
SESSION_BODIES = CONTACT_BODIES + [MEMBRANE_BODY]
REFERENCE_FRAMES = 5        # the recording's contact-free reference frames 0-4 (its README)
SITE_ALTITUDE_M = 222.0     # Urbana, Illinois, where the poke was recorded: ISA ambient pressure
# The reference estimator on the same poke and rules (docs/membrane_force.md).
REFERENCE_ESTIMATOR = {"correlation": 0.99, "ratio_at_peak": 0.59, "rms_error_n": 1.37, "s_per_frame": 0.81}
# Deepest indentation while it is held (frames 78-101): the reference-surface point on the deepest
# pixel's ray at frame 84, membrane mesh frame, m (camera/README.md).
DEEPEST_MESH = np.array([0.0268, 0.0083, 0.0824])
HELD_FRAMES = (78, 102)


@dataclass
class CameraRecording:
    """``(N, H, W)`` uint16 depth in ``depth_unit_m`` m, ``(9,)`` intrinsics ``k`` px, ``(5,)`` distortion
    ``d``, image size px, membrane VTK and PLY, frame 0's index, ``(N, H, W, 3)`` uint8 colour or None."""

    depth: np.ndarray
    depth_unit_m: float
    k: List[float]
    d: List[float]
    width: int
    height: int
    mesh: Path
    attachment_mesh: Path
    first_frame: int = 0
    rgb: Optional[np.ndarray] = None


def attachment_mesh(root: Path) -> Path:
    """``punyo_mesh_complete.ply`` in ``$VSF_ASSETS``, else in ``kinova_punyo/`` beside ``root``."""
    from vsf_sensor_ros.embedded_world import KINOVA_PUNYO_MESH_FILE, default_assets_dir
    assets = default_assets_dir()
    if assets is not None and (assets / KINOVA_PUNYO_MESH_FILE).is_file():
        return assets / KINOVA_PUNYO_MESH_FILE
    return root.parent / "kinova_punyo" / KINOVA_PUNYO_MESH_FILE


def missing_camera_files(recording: Path) -> List[Path]:
    """The dense-force files missing: ``camera/`` depth.npz, camera.json, membrane_equalized.vtk, the PLY."""
    root = Path(os.path.abspath(recording)).parent
    cam = root / "camera"
    needed = [cam / "depth.npz", cam / "camera.json", cam / "membrane_equalized.vtk", attachment_mesh(root)]
    return [f for f in needed if not f.is_file()]


def load_camera(recording: Path, frames: Optional[Tuple[int, int]] = None,
                colour: bool = False) -> Optional[CameraRecording]:
    """The ``camera/`` folder beside ``data.json`` (frames ``a:b``); None when absent.  Raises ValueError:
    ``colour`` asked for without ``rgb.npz``."""
    if missing_camera_files(recording):
        return None
    # absolute: the nodes resolve a relative mesh path against $VSF_ASSETS when it is set
    root = Path(os.path.abspath(recording)).parent
    cam, ply = root / "camera", attachment_mesh(root)
    info = json.loads((cam / "camera.json").read_text())
    f = info["distortion_fit"]
    cut = slice(None) if frames is None else slice(*frames)
    depth, rgb = np.load(cam / "depth.npz")["depth"][cut], None
    if colour:
        if not (cam / "rgb.npz").is_file():
            raise ValueError(f"colour asked for, but {cam / 'rgb.npz'} is missing")
        rgb = np.load(cam / "rgb.npz")["rgb"][cut]
    return CameraRecording(depth, float(info["depth_unit_m"]),
                           [f["fx"], 0.0, f["cx"], 0.0, f["fy"], f["cy"], 0.0, 0.0, 1.0],
                           [f["k1"], f["k2"], f["p1"], f["p2"], f["k3"]],
                           int(info["image_size"]["width"]), int(info["image_size"]["height"]),
                           cam / "membrane_equalized.vtk", ply, 0 if frames is None else int(frames[0]), rgb)


def membrane_mount_transform(cam: CameraRecording) -> np.ndarray:
    """``punyo_membrane`` body → ``tool0`` ``(4, 4)``: the clamped ring's (the VTK mesh's vertex cells)
    centre at the bubble's base centre, normal along tool −y, the smallest such rotation."""
    from scipy.spatial.transform import Rotation

    from vsf_sensor_ros.demo.ur5e import punyo_mount_transform
    from vsf_sensor_ros.sensor.membrane_mesh import read_membrane_mesh
    v = ply_vertices(cam)
    ring = v[np.asarray(read_membrane_mesh(cam.mesh).boundary)]
    centre = ring.mean(axis=0)
    normal = np.linalg.svd(ring - centre)[2][2]
    if (v - centre).mean(axis=0) @ normal < 0:      # toward the dome
        normal = -normal
    align, _ = Rotation.align_vectors([[0.0, 0.0, 1.0]], [normal])   # membrane normal -> bubble +z
    bubble = punyo_mount_transform()                 # bubble +z -> tool -y, base at the offset
    T = np.eye(4)
    T[:3, :3] = bubble[:3, :3] @ align.as_matrix()
    T[:3, 3] = bubble[:3, 3] - T[:3, :3] @ centre
    return T


def membrane_node_params(cam: CameraRecording, out: Path) -> Path:
    """``membrane_force_node.yaml`` in ``out`` (reliable inputs, reference frames 0-4, colour if any)."""
    import yaml
    params = {
        "mesh": str(cam.mesh), "attachment_mesh": str(cam.attachment_mesh), "frame_id": MEMBRANE_BODY,
        "camera_rotation_deg": 25.0, "ambient_pressure": 0.0, "altitude": SITE_ALTITUDE_M,
        "input": "depth", "depth_topic": DEPTH_TOPIC, "camera_info_topic": INFO_TOPIC,
        "depth_unit": cam.depth_unit_m, "pressure_topic": STAMPED_PRESSURE_TOPIC,
        "pressure_type": "sensor_msgs/msg/FluidPressure", "pressure_scale": 1.0,
        "reference_frames": REFERENCE_FRAMES, "force_topic": MEASURED_TOPIC,
        "surface_topic": "punyo_membrane/surface", "total_force_topic": "punyo_membrane/total_force",
        "input_reliability": "reliable", "pressure_reliability": "reliable", "qos_depth": 50,
    }
    if cam.rgb is not None:   # same stamp as the depth frame; a late one may come a few frames after
        params.update({"colour_topic": COLOUR_TOPIC, "colour_tolerance": 0.0, "colour_timeout": 2.0})
    path = out / "membrane_force_node.yaml"
    path.write_text(yaml.safe_dump({"membrane_force_node": {"ros__parameters": params}}, sort_keys=False))
    return path


def image_msg(cam: CameraRecording, k: int, stamp: Any, colour: bool = False) -> Any:
    """Frame ``k`` stamped ``stamp`` as a RealSense driver publishes it: depth ``16UC1``, or with ``colour``
    ``rgb8`` on the depth grid.  Raises ValueError: colour asked for, but none loaded."""
    from sensor_msgs.msg import Image
    if colour and cam.rgb is None:
        raise ValueError("the camera recording was loaded without colour")
    a = np.ascontiguousarray(cam.rgb[k] if colour else cam.depth[k], dtype=np.uint8 if colour else "<u2")
    msg = Image(height=a.shape[0], width=a.shape[1], encoding="rgb8" if colour else "16UC1", is_bigendian=0,
                step=a.strides[0], data=a.tobytes())
    msg.header.stamp = stamp
    msg.header.frame_id = f"punyo_camera_{'color' if colour else 'depth'}_optical_frame"
    return msg


@dataclass
class LibraryRun:
    """The estimator in this process (mesh frame): ``(N, V, 3)`` forces N, positions m, ``(N, V)`` normal
    displacement m (NaN: not read), ``(N,)`` ms, ``set_reference`` s, ``(B,)`` ring, ``(V, 3)`` vertices m."""

    forces: np.ndarray
    positions: np.ndarray
    normal_displacement: np.ndarray
    estimate_ms: np.ndarray
    startup_s: float
    boundary: np.ndarray
    mesh_points: np.ndarray


def library_run(cam: CameraRecording, rec: Recording) -> LibraryRun:
    """:class:`MembraneForceEstimator` on every frame with the node's inputs (reference: the first
    :data:`REFERENCE_FRAMES`; depth × unit, float32 hPa × 100, ISA ambient at the site, colour if any)."""
    from vsf_sensor_ros.sensor.camera_model import BrownConradyCamera
    from vsf_sensor_ros.sensor.membrane_force_estimator import (MembraneForceEstimator, isa_pressure,
                                                                punyo_camera_rotation)
    from vsf_sensor_ros.sensor.membrane_mesh import read_membrane_mesh
    mesh = read_membrane_mesh(cam.mesh)
    camera = BrownConradyCamera.from_camera_info(cam.width, cam.height, cam.k, cam.d)
    est = MembraneForceEstimator(mesh, camera, punyo_camera_rotation(25.0),
                                 ambient_pressure=isa_pressure(SITE_ALTITUDE_M))
    depth = [cam.depth[k].astype(np.float64) * cam.depth_unit_m for k in range(len(cam.depth))]
    pa = (rec.pressure_pa / HPA_TO_PA).astype(np.float32).astype(np.float64) * HPA_TO_PA   # float32 hPa
    rgb = cam.rgb
    est.set_reference(depth[:REFERENCE_FRAMES], list(pa[:REFERENCE_FRAMES]),
                      None if rgb is None else list(rgb[:REFERENCE_FRAMES]))
    res = [est.estimate(depth[k], colour=None if rgb is None else rgb[k], pressure=pa[k])
           for k in range(len(depth))]
    return LibraryRun(np.stack([r.contact_forces for r in res]), np.stack([r.positions for r in res]),
                      np.stack([r.displacement_normal for r in res]),
                      np.array([r.timings["total"] * 1e3 for r in res]), float(est.startup_s),
                      np.asarray(mesh.boundary), np.asarray(mesh.points))


def contact_vertex(run: LibraryRun, rec: Recording) -> int:
    """The vertex of largest mean inward normal displacement over the loaded frames (|F − bias| > 0.5 N; all
    when none)."""
    frames = np.flatnonzero(rec.force_change() > 0.5)
    w = run.normal_displacement[frames if frames.size else slice(None)]
    read = np.isfinite(w).sum(axis=0)
    mean_in = -np.where(np.isfinite(w), w, 0.0).sum(axis=0) / np.maximum(read, 1)
    mean_in[read == 0] = -np.inf          # never read: not where the camera sees the press
    return int(np.argmax(mean_in))


class CameraStreams:
    """The camera side of the replay: depth (and colour) frames from a participant of their own, CameraInfo
    and stamped pressure from ``node``, and in a thread of its own the relay of :data:`WRENCH_CONTACTS_TOPIC`
    to ``contacts``, adding to each ``(punyo, other)`` contact one on ``(punyo_membrane, other)`` with the
    same force at ``vertex`` (``elem1``); :attr:`needs`: the subscribers each topic must have first."""

    def __init__(self, cam: CameraRecording, rec: Recording, vertex: int, mount: np.ndarray, node: Any,
                 ctx: Any, domain_id: int, qos: Any) -> None:
        import threading

        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import CameraInfo, FluidPressure, Image, PointCloud2

        from vsf_sensor_ros.demo.session import ros_context
        from vsf_sensor_ros.demo.ur5e import TOOL_LINK, ur5e_world
        self.cam, self.rec = cam, rec
        # the 0.6 MB frames from a participant of their own: behind them small samples came seconds late
        self._ctx = ros_context(domain_id)
        self._node = rclpy.create_node("vsf_replay_camera", context=self._ctx)
        image_qos = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE)
        self.depth = self._node.create_publisher(Image, DEPTH_TOPIC, image_qos)
        self.colour = None if cam.rgb is None else self._node.create_publisher(Image, COLOUR_TOPIC, image_qos)
        self.info = node.create_publisher(CameraInfo, INFO_TOPIC, qos)
        self.pressure = node.create_publisher(FluidPressure, STAMPED_PRESSURE_TOPIC, qos)
        # plumb_bob: the inverse Brown–Conrady coefficients
        self.info_msg = CameraInfo(width=cam.width, height=cam.height, distortion_model="plumb_bob",
                                   d=list(cam.d), k=list(cam.k))
        self.info_msg.header.frame_id = "punyo_camera_depth_optical_frame"
        self.needs = {"/" + STAMPED_PRESSURE_TOPIC: 2, "/" + DEPTH_TOPIC: 1, "/" + INFO_TOPIC: 2,
                      "/" + WRENCH_CONTACTS_TOPIC: 2, **({} if cam.rgb is None else {"/" + COLOUR_TOPIC: 1})}
        # the relay in its own thread: the header-less pressure pairs by receive time
        self.vertex, self.world = int(vertex), ur5e_world()
        self.world.attach_body(MEMBRANE_BODY, str(cam.attachment_mesh), TOOL_LINK, mount)
        self.local = ply_vertices(cam)[self.vertex]
        self._relay_node = rclpy.create_node("vsf_contacts_relay", context=ctx)
        self._relay_pub = self._relay_node.create_publisher(PointCloud2, "contacts", qos)
        self._relay_node.create_subscription(PointCloud2, WRENCH_CONTACTS_TOPIC, self._relay, qos)
        self._relay_exec = SingleThreadedExecutor(context=ctx)
        self._relay_exec.add_node(self._relay_node)
        self._thread = threading.Thread(target=self._relay_exec.spin, name="contacts_relay", daemon=True)
        self._thread.start()

    def matched(self) -> bool:
        """The depth (and colour) publishers have matched a subscription: the graph seen from another
        participant can show one before this participant's writer has matched it."""
        return all(p.get_subscription_count() > 0 for p in (self.depth, self.colour) if p is not None)

    def publish(self, k: int, stamp: Any, info: bool, frame: bool) -> None:
        """``CameraInfo`` when ``info``; frame ``k``'s pressure (float32 hPa in Pa), colour, depth when
        ``frame``; all stamped ``stamp``."""
        from sensor_msgs.msg import FluidPressure
        if info:
            self.info_msg.header.stamp = stamp
            self.info.publish(self.info_msg)
        if not frame:
            return
        pa = FluidPressure(fluid_pressure=float(np.float32(self.rec.pressure_pa[k] / HPA_TO_PA)) * HPA_TO_PA)
        pa.header.stamp = stamp
        self.pressure.publish(pa)
        if self.colour is not None:
            self.colour.publish(image_msg(self.cam, k, stamp, colour=True))
        self.depth.publish(image_msg(self.cam, k, stamp))

    def _relay(self, msg: Any) -> None:
        import torch

        from vsf_sensor_ros.demo.ur5e import UR5E_JOINTS
        from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2
        from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts
        from vsf_sensor_ros.sensor import ContactState
        dec = pointcloud2_to_contacts(msg, CONTACT_BODIES)
        k = int(np.argmin(np.abs(self.rec.t - dec.stamp_ns * 1e-9)))
        self.world.set_joint_positions(UR5E_JOINTS, self.rec.q[k])   # warm-up frames are frame 0's
        T = self.world.body_transform(MEMBRANE_BODY)
        point = torch.tensor((T[:3, :3] @ self.local + T[:3, 3])[None, :])
        contacts = dict(dec.contacts)
        for (b1, b2), c in dec.contacts.items():
            if b1 == CONTACT_BODIES[0]:
                f = c.forces.sum(dim=0, keepdim=True)
                contacts[(MEMBRANE_BODY, b2)] = ContactState(point, f, elems1=torch.tensor([self.vertex]))
        self._relay_pub.publish(contacts_to_pointcloud2(contacts, SESSION_BODIES, stamp=msg.header.stamp,
                                                        frame_id=msg.header.frame_id))

    def close(self) -> None:
        """End the relay's thread and node, and the camera's participant."""
        import rclpy
        self._relay_exec.shutdown()
        self._thread.join(timeout=5.0)
        self._relay_node.destroy_node()
        self._node.destroy_node()
        rclpy.shutdown(context=self._ctx)


def ply_vertices(cam: CameraRecording) -> np.ndarray:
    """The attachment mesh's vertices in file order, m."""
    import trimesh
    return np.asarray(trimesh.load(str(cam.attachment_mesh), process=False, force="mesh").vertices)


# -- analysis ------------------------------------------------------------------------------------

def _decode_field(log: Any, rec: Recording, n: int) -> np.ndarray:
    """``(N, V, 3)`` fx fy fz of a recorded dense-force topic by frame (NaN where none), N."""
    from vsf_sensor_ros.ros.messages.readings import read_cloud_fields
    out = np.full((len(rec), n, 3), np.nan)
    for msg in log.decode():
        k = nearest_frame(rec.t, msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        if k is not None and msg.width * msg.height == n:
            c = read_cloud_fields(msg, ["fx", "fy", "fz"])
            out[k] = np.stack([c["fx"], c["fy"], c["fz"]], axis=1)
    return out


def calibrate_scale(total: np.ndarray, rec: Recording, cmp: Any) -> "ScaleScore":
    """The ``ScaleScore`` of ``total`` (``(N, 3)`` summed forces, N) fitted on the loading, scored on the
    unloading, paired with the F/T as ``cmp`` pairs them (estimate frame numbers).  Raises ScaleFitRefused."""
    from dataclasses import replace

    from vsf_sensor_ros.sensor.scale_calibration import out_of_sample_scale
    lag, n = int(cmp.lag), len(total)
    k = np.arange(max(0, -lag), min(n, n - lag))          # estimate frames with an F/T partner
    score = out_of_sample_scale(total[k], rec.wrench[k + lag, :3] - cmp.bias)
    return replace(score, fit=replace(score.fit, frames=k[score.fit.frames]),
                   test_frames=k[score.test_frames])


def analyse_membrane(logs: Dict[str, Any], run: LibraryRun, rec: Recording, cam: CameraRecording,
                     vertex: int, out: Path) -> Dict[str, Any]:
    """Write ``membrane_force.npz`` and ``.png``; the ``membrane_force`` block.  Raises RuntimeError: nothing
    recorded on ``punyo_force/measured``."""
    from vsf_sensor_ros.sensor.membrane_force_estimator import compare_with_wrench, peak_distance
    from vsf_sensor_ros.sensor.membrane_frame import fit_mesh_transform
    from vsf_sensor_ros.sensor.scale_calibration import ScaleFitRefused
    # attachment (PLY) frame -> membrane mesh frame: f_mesh = R^T f_ply
    back = fit_mesh_transform(run.mesh_points, ply_vertices(cam), run.boundary).R
    topics = {k: f"/{MEMBRANE_SENSOR}/{k}" for k in ("measured", "predicted", "residual")}
    if topics["measured"] not in logs or not len(logs[topics["measured"]]):
        raise RuntimeError(f"nothing recorded on {topics['measured']}")
    fields = {k: _decode_field(logs[t], rec, run.forces.shape[1]) @ back if t in logs
              else np.full(run.forces.shape, np.nan) for k, t in topics.items()}
    node = fields["measured"]
    have = np.isfinite(node).all(axis=(1, 2))
    total = run.forces.sum(axis=1)
    cmp = compare_with_wrench(total, rec.wrench[:, :3])
    cmp_node = compare_with_wrench(np.where(have[:, None], np.nan_to_num(node).sum(axis=1), total),
                                   rec.wrench[:, :3])
    held = np.arange(*HELD_FRAMES) - cam.first_frame      # frame numbers of the whole recording
    held = held[(held >= 0) & (held < len(rec))]
    dist = peak_distance(run.forces[held], run.mesh_points, DEEPEST_MESH) if held.size else np.zeros(0)
    ms = run.estimate_ms
    pred_have = np.isfinite(fields["predicted"]).all(axis=(1, 2)) & have
    res_have = np.isfinite(fields["residual"]).all(axis=(1, 2))
    peak = int(cmp.peak_frame)
    try:
        scale = calibrate_scale(total, rec, cmp)
    except ScaleFitRefused as exc:     # a cut of the poke (--frames) may hold too little of it
        scale, calibration, calibrated = None, {"skipped": str(exc)}, {}
    else:
        calibration = {
            "scale": scale.fit.scale, "scale_std_error": scale.fit.std_error,
            "fit_frames": int(scale.fit.frames.size), "last_fit_frame": int(scale.fit.frames[-1]),
            "rms_error_fit_frames_calibrated_n": scale.fit.rms_after,
            "test_frames": int(scale.test_frames.size),
            "rms_error_unloading_uncalibrated_n": scale.rms_before,
            "rms_error_unloading_calibrated_n": scale.rms_after,
        }
        calibrated = {"force_calibrated": scale.fit.scale * run.forces,
                      "calibration_fit_frames": scale.fit.frames}
    np.savez_compressed(out / "membrane_force.npz", force=run.forces, boundary=run.boundary, **calibrated,
                        estimate_ms=ms, positions=run.positions, node_force=node,
                        predicted=fields["predicted"], residual=fields["residual"],
                        contact_vertex=np.array(vertex), peak_frame=np.array(peak))
    block = {
        "frames": len(rec), "frames_measured_by_node": int(have.sum()),
        "frames_with_prediction": int(pred_have.sum()), "frames_with_residual": int(res_have.sum()),
        "node_vs_library_max_abs_n": (float(np.abs(node[have] - run.forces[have]).max()) if have.any()
                                      else None),
        "frames_node_equals_library": int((np.abs(node[have] - run.forces[have]).max(axis=(1, 2))
                                           < 1e-5).sum()),
        "contact_vertex": int(vertex),
        "lag_frames": cmp.lag, "correlation": cmp.correlation, "ratio_at_peak": cmp.ratio_at_peak,
        "rms_error_n": cmp.rms_error, "peak_frame": peak,
        "node_correlation": cmp_node.correlation, "node_ratio_at_peak": cmp_node.ratio_at_peak,
        "node_rms_error_n": cmp_node.rms_error,
        "peak_distance_held_max_mm": float(dist.max() * 1e3) if dist.size else None,
        "estimate_ms_median": float(np.median(ms)), "estimate_ms_p99": float(np.percentile(ms, 99)),
        "startup_s": run.startup_s,
        "residual_total_at_peak_n": (float(np.linalg.norm(fields["residual"][peak].sum(axis=0)))
                                     if res_have[peak] else None),
        "ft_force_at_peak_n": float(rec.force_change()[peak + cmp.lag]),
        "scale_calibration": calibration,
        "reference_estimator": dict(REFERENCE_ESTIMATOR),
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
    }
    plot_membrane(run, fields, rec, cmp, peak, out / "membrane_force.png",
                  None if scale is None else scale.fit.scale)
    return block


MEMBRANE_DEFINITIONS = {
    "membrane_force": "the dense force measured from the bubble camera (membrane_force_node) against the "
                      "arm's F/T reading and the sensor node's prediction (keys below)",
    "membrane_force.frames_measured_by_node": "frames the node published on punyo_force/measured (the first "
                                              "reference_frames - 1 frames build its reference)",
    "membrane_force.node_vs_library_max_abs_n": "largest |node - library| vertex force component over those "
                                                "frames, N (float32 on the wire)",
    "membrane_force.contact_vertex": "vertex of the predicted contact: the one the camera sees pressed in "
                                     "most over the loaded frames",
    "membrane_force.frames_node_equals_library": "frames where the node's forces equal the library's to "
                                                 "1e-5 N (same frame, same pressure, same reference)",
    "membrane_force.correlation": "compare_with_wrench: Pearson r of |sum of contact forces| (library, same "
                                  "inputs as the node) with |F - bias| over frames with |F - bias| > 0.5 N, "
                                  "F/T bias = mean of frames 0-29, best lag within 3 frames",
    "membrane_force.lag_frames": "that lag (F/T frame = estimate frame + lag)",
    "membrane_force.ratio_at_peak": "|sum of contact forces| / |F - bias| at the F/T peak",
    "membrane_force.rms_error_n": "RMS of |sum| - |F - bias| over the loaded frames, N",
    "membrane_force.frames": "frames replayed (camera frames = recorded frames)",
    "membrane_force.frames_with_prediction": "frames with both a measured field and sensor_node's predicted "
                                             "field of punyo_force",
    "membrane_force.frames_with_residual": "frames with sensor_node's residual of punyo_force (measured - "
                                           "predicted, paired by stamp)",
    "membrane_force.peak_frame": "estimate frame paired with the F/T peak (the plot's field frame)",
    "membrane_force.node_correlation": "correlation as above, from the node's published forces (the "
                                       "library's where the node published none)",
    "membrane_force.node_ratio_at_peak": "ratio_at_peak from the node's published forces",
    "membrane_force.node_rms_error_n": "rms_error_n from the node's published forces, N",
    "membrane_force.estimate_ms_p99": "99th percentile of the estimate time per frame in this process, ms",
    "membrane_force.ft_force_at_peak_n": "|F - bias| at the F/T peak, N",
    "membrane_force.reference_estimator.ratio_at_peak": "the reference estimator's ratio at the F/T peak",
    "membrane_force.reference_estimator.rms_error_n": "the reference estimator's RMS magnitude error, N",
    "membrane_force.reference_estimator.s_per_frame": "the reference estimator's time per frame on this "
                                                      "project's machine, s",
    "membrane_force.peak_distance_held_max_mm": "largest distance, frames 78-101, of the vertex with the "
                                                "largest contact force from the deepest indentation "
                                                "(reference surface, mesh frame), mm",
    "membrane_force.estimate_ms_median": "median estimate time per frame in this process, ms (p99 alike)",
    "membrane_force.startup_s": "set_reference time: assembly, factorisation, compliance, s",
    "membrane_force.residual_total_at_peak_n": "|sum of the residual field| (measured - predicted) at the "
                                               "F/T peak frame, N",
    "membrane_force.reference_estimator": "the public reference estimator's figures on the same poke and "
                                          "rules, as measured for docs/membrane_force.md",
    "membrane_force.scale_calibration": "the scale s of the dense force fitted against the arm's F/T "
                                        "(sensor.scale_calibration): s = sum |sum f| |F - bias| / sum "
                                        "|sum f|^2 over the loading only (the loaded frames of correlation, "
                                        "at its lag, up to and including the F/T peak); scored on the "
                                        "loaded frames after the peak, which the fit never saw",
    "scale_calibration.skipped": "why no scale was fitted (too few loaded frames before or after the "
                                 "F/T peak, or too little force), when none was",
    "scale_calibration.scale": "s: force_calibrated = s x force in membrane_force.npz",
    "scale_calibration.scale_std_error": "standard error of s (least squares through the origin)",
    "scale_calibration.fit_frames": "frames fitted on (calibration_fit_frames in membrane_force.npz)",
    "scale_calibration.last_fit_frame": "the last of them (the F/T peak's estimate frame)",
    "scale_calibration.rms_error_fit_frames_calibrated_n": "RMS of s|sum f| - |F - bias| over the fit "
                                                           "frames, N (in sample)",
    "scale_calibration.test_frames": "loaded frames after the last fit frame (the unloading)",
    "scale_calibration.rms_error_unloading_uncalibrated_n": "RMS of |sum f| - |F - bias| over those, N",
    "scale_calibration.rms_error_unloading_calibrated_n": "RMS of s|sum f| - |F - bias| over those, N "
                                                          "(out of sample)",
    "membrane_force.blas_threads": "OPENBLAS_NUM_THREADS of the replay (1 = the one-core figure)",
}


def plot_membrane(run: LibraryRun, fields: Dict[str, np.ndarray], rec: Recording, cmp: Any, peak: int,
                  path: Path, scale: Optional[float] = None) -> Path:
    """Write |force sum| against |F − bias| over time (and × ``scale``), and the fields at ``peak``."""
    from matplotlib.figure import Figure

    from vsf_sensor_ros.demo.replay_analysis import finish_axes
    t, ft = rec.t - rec.t[0], rec.force_change()
    lag = int(cmp.lag)
    shift = lag * np.median(np.diff(rec.t))
    fig = Figure(figsize=(14, 8), layout="constrained")
    grid = fig.add_gridspec(2, 3)
    ax = fig.add_subplot(grid[0, :])
    ax.plot(t, ft, color="black", lw=2.4, marker="o", ms=3, markevery=3, label="|F - bias|, arm F/T")
    lib = np.linalg.norm(run.forces.sum(axis=1), axis=1)
    ax.plot(t - shift, lib, color="tab:red", ls="--", marker="s", ms=3,
            markevery=3, mfc="none", label=f"|sum of contact forces|, camera estimate (shifted {lag} frames)")
    if scale is not None:
        ax.plot(t - shift, scale * lib, color="tab:green", ls="-.", lw=1.2,
                label=f"the same x {scale:.2f}, the scale fitted against the F/T on the loading")
    node = fields["measured"]
    have = np.isfinite(node).all(axis=(1, 2))
    ax.plot(t[have] - shift, np.linalg.norm(node[have].sum(axis=1), axis=1),
            color="tab:blue", ls=":", marker="x", ms=3, markevery=3,
            label="the same from membrane_force_node")
    finish_axes(ax, "force magnitude [N]", f"real poke: r = {cmp.correlation:.3f}, ratio at the F/T peak "
                f"{cmp.ratio_at_peak:.2f}, RMS {cmp.rms_error:.2f} N (no parameter fitted)", "best")
    xy = run.mesh_points[:, :2] * 1e3
    panels = (("measured (camera)", fields["measured"][peak]), ("predicted (wrench at the camera's contact)",
              fields["predicted"][peak]), ("residual = measured - predicted", fields["residual"][peak]))
    vmax = max([float(np.nanmax(np.linalg.norm(v, axis=1))) for _, v in panels if np.isfinite(v).any()]
               + [1e-6])
    for i, (name, v) in enumerate(panels):
        a = fig.add_subplot(grid[1, i])
        mag = np.linalg.norm(v, axis=1) if np.isfinite(v).any() else np.zeros(len(xy))
        sc = a.scatter(xy[:, 0], xy[:, 1], c=mag, cmap="viridis", vmin=0.0, vmax=vmax, s=14)
        a.plot(*(np.r_[xy[run.boundary], xy[run.boundary[:1]]].T), color="0.5", lw=0.8)
        a.set_aspect("equal")
        a.set_title(f"{name}\nframe {peak}: |sum| = {np.linalg.norm(np.nansum(v, axis=0)):.2f} N", fontsize=9)
        a.set_xlabel("x [mm], membrane mesh frame")
        a.set_ylabel("y [mm]")
        fig.colorbar(sc, ax=a, label="|f| per vertex [N]")
    fig.savefig(path, dpi=100)
    return path
