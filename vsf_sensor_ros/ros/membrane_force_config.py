"""``membrane_force_node``'s parameters (``sensor_node``'s :class:`.Spec` format, all read-only):
the table, ``--help``, the start-up checks (:func:`configure`).  Relative paths resolve against
``$VSF_ASSETS`` when set and not empty, else the working directory."""
from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from rclpy.node import Node

from vsf_sensor_ros.sensor.membrane_force_estimator import MembraneModel, isa_pressure, punyo_camera_rotation
from vsf_sensor_ros.sensor.membrane_frame import MeshFrameTransform, fit_mesh_transform
from vsf_sensor_ros.sensor.membrane_mesh import MembraneMesh, read_membrane_mesh
from vsf_sensor_ros.sensor.scale_calibration import ENTRY_KEY, ScaleRecord, record_from_entry

from ..transforms import transform_from_xyz_quat
from ._rclpy_compat import parameter_override_names
from .calibration import CalibrationStore
from .messages.camera import PRESSURE_TYPES
from .parameter_table import ConfigError, Spec, check_topic_name, raise_all
from .main import parameter_usage
from .parameters import declare_all, unknown_keys, unmatched_params_files
from .scene import effective_assets_dir, resolve_path, resolved_from

RELATIVE_PATHS = "relative: against $VSF_ASSETS when set, else the working directory"
#: gauge pressure (Pa) of the start-up check that the mesh can be inflated (any positive one does)
NOMINAL_GAUGE_PA = 1000.0
#: ``ambient_pressure`` range, Pa (lowest shore to about 9 km): outside, a unit mistake or a gauge pressure
AMBIENT_RANGE_PA = (30000.0, 110000.0)
SEA_LEVEL_WARNING = ("ambient_pressure and altitude are 0: the standard atmosphere at sea level (101325 Pa) "
                     "is assumed; set altitude (m) or ambient_pressure (Pa, best the bubble's own sensor "
                     "read deflated): the gauge pressure sets the size of every force")

_Fixed = functools.partial(Spec, read_only=True)
SPECS: List[Spec] = [
    _Fixed("mesh", "", "membrane mesh file (VTK or any meshio format; its vertex cells = the clamped "
           "ring), m; required; " + RELATIVE_PATHS),
    _Fixed("attachment_mesh", "", "mesh file the PunyoDenseForceSensor is attached with (same vertices, "
           "same order); outputs are published in its frame ('' = the membrane mesh's frame); " +
           RELATIVE_PATHS),
    _Fixed("frame_id", "punyo", "frame_id of the outputs: the sensor's attachment body"),
    _Fixed("camera_rotation_deg", 25.0, "R_cam_mesh: rotation of the membrane mesh frame about the camera "
           "y axis, degrees (the Punyo reference mesh: 25)", lo=-180.0, hi=180.0),
    _Fixed("camera_translation", [0.0, 0.0, 0.0], "t_cam_mesh: mesh origin in the camera frame, m",
           length=3, finite=True),
    _Fixed("ambient_pressure", 0.0, "atmospheric pressure, Pa, best the bubble's own sensor read deflated "
           "(0 = ISA standard atmosphere at 'altitude'; else 30000..110000, checked at start with a word "
           "on hPa)"),
    _Fixed("altitude", 0.0, "site altitude for the standard atmosphere, m (used when ambient_pressure is 0)",
           lo=-500.0, hi=11000.0),
    _Fixed("input", "depth", "camera input: 'depth' (Image + CameraInfo) or 'points' (organised "
           "PointCloud2 + CameraInfo)"),
    _Fixed("depth_topic", "camera/depth/image_rect_raw", "depth image topic (input 'depth')"),
    _Fixed("points_topic", "camera/depth/color/points", "organised cloud topic (input 'points')"),
    _Fixed("camera_info_topic", "camera/depth/camera_info", "CameraInfo of the depth stream"),
    _Fixed("depth_unit", 0.001, "metres per 16UC1 depth unit (RealSense: 0.001)", lo=1e-7, hi=1.0),
    _Fixed("colour_topic", "", "colour Image topic (rgb8 | bgr8 | mono8) on the depth image's pixel grid, "
           "e.g. a RealSense colour stream with the depth aligned to it: adds the membrane's sliding "
           "(optical flow) and tangential forces; '' = depth only"),
    _Fixed("colour_tolerance", 0.01, "a depth frame takes the colour image stamped nearest to it within "
           "this many s (0 = the same stamp only)", lo=0.0, hi=1.0),
    _Fixed("colour_timeout", 0.2, "longest a depth frame waits for its colour image, s of receive time; "
           "then it is estimated from depth alone and counted", lo=0.001, hi=10.0),
    _Fixed("pressure_topic", "punyo/pressure", "bubble pressure topic"),
    _Fixed("pressure_type", "std_msgs/msg/Float32", "std_msgs/msg/Float32 | std_msgs/msg/Float64 | "
           "sensor_msgs/msg/FluidPressure"),
    _Fixed("pressure_scale", 100.0, "pressure message value x scale = Pa (100 for the firmware's hPa)",
           lo=1e-9, hi=1e9),
    _Fixed("pressure_timeout", 0.5, "longest age, s of receive time, of the latest Float32 / Float64 "
           "pressure a frame is estimated with (older: the frame is rejected as stale_pressure and "
           "/diagnostics says the pressure stopped; a FluidPressure received longer ago is reported as "
           "stopped); 0 = never stale", lo=0.0, hi=3600.0),
    _Fixed("pressure_tolerance", 0.02, "a stamped pressure (FluidPressure) pairs with the frame stamped "
           "within this many s (a frame waits for it); Float32 / Float64: the latest", lo=0.0, hi=10.0),
    _Fixed("reference_frames", 10, "contact-free frames averaged as the reference at start and after "
           "reset_reference", lo=1, hi=1000),
    _Fixed("window", 9, "odd side of the pixel window read around each vertex, px", lo=1, hi=51),
    _Fixed("max_depth", 0.2, "readings at or beyond this depth are not membrane, m", lo=0.001, hi=10.0),
    _Fixed("min_vertex_fraction", 0.8, "a frame is rejected when fewer than this fraction of the "
           "reference's vertices have a reading", lo=0.0, hi=1.0),
    _Fixed("force_topic", "membrane_force", "output: per-vertex force cloud (sensor_node's measured layout)"),
    _Fixed("surface_topic", "membrane_surface", "output: estimated membrane surface (x y z)"),
    _Fixed("total_force_topic", "membrane_total_force", "output: total contact force (WrenchStamped)"),
    _Fixed("input_reliability", "best_effort", "QoS reliability of the camera inputs (frames, CameraInfo): "
           "best_effort (matches every publisher) | reliable"),
    _Fixed("pressure_reliability", "best_effort", "QoS reliability of the pressure input: best_effort | "
           "reliable"),
    _Fixed("qos_depth", 10, "queue depth of inputs and outputs", lo=1, hi=10000),
    _Fixed("diagnostics_period", 1.0, "s between /diagnostics reports", lo=0.01, hi=3600.0),
    _Fixed("reference_wrench_topic", "", "reference force for the force scale: WrenchStamped (e.g. the "
           "arm's F/T sensor); '' = no scale fit (~/calibrate_scale refuses)"),
    _Fixed("reference_rotation", [0.0, 0.0, 0.0, 1.0], "R_frame_ref: quaternion x y z w turning the "
           "reference wrench's frame into frame_id (normalised)", length=4, finite=True),
    _Fixed("reference_tolerance", 0.01, "an estimated frame pairs with the reference wrench stamped "
           "nearest to it within this many s", lo=0.0, hi=1.0),
    _Fixed("reference_reliability", "best_effort", "QoS reliability of the reference wrench input: "
           "best_effort | reliable"),
    _Fixed("scale_threshold", 0.5, "~/calibrate_scale fits on the frames whose reference force (bias "
           "removed) exceeds this, N", lo=0.0, hi=10000.0),
    _Fixed("scale_min_frames", 10, "~/calibrate_scale refuses fewer frames above scale_threshold",
           lo=2, hi=100000),
    _Fixed("scale_min_force", 2.0, "~/calibrate_scale refuses when the largest reference force stays below "
           "this, N", lo=0.0, hi=10000.0),
    _Fixed("calibration_file", "", "YAML file of the force scale (sensor_node's calibration file format): "
           "loaded at start when it exists, written by a successful ~/calibrate_scale; '' = not kept; " +
           RELATIVE_PATHS),
    _Fixed("calibration_create_dirs", False, "~/calibrate_scale may create the missing directories of "
           "calibration_file"),
]
PARAMETER_NAMES = [s.key for s in SPECS]
TOPIC_PARAMETERS = ("depth_topic", "points_topic", "camera_info_topic", "pressure_topic", "force_topic",
                    "surface_topic", "total_force_topic")
EXAMPLE = ("membrane_force_node --ros-args -p mesh:=equalized.vtk "
           "-p attachment_mesh:=punyo_mesh_complete.ply -p frame_id:=punyo \\\n"
           "      -p force_topic:=/punyo_force/measured -p depth_topic:=/camera/depth/image_rect_raw")


def usage() -> argparse.ArgumentParser:
    """The command line: only ``-h`` / ``--help`` (:func:`.main.parameter_usage`)."""
    return parameter_usage(
        "membrane_force_node", "Measured dense force of a Punyo bubble from its internal depth camera and "
        "its pressure, published as sensor_node's measured stream of a PunyoDenseForceSensor; also the "
        "membrane surface, the total contact force, /diagnostics, the ~/reset_reference service and, with a "
        "reference wrench, the ~/calibrate_scale service (the force scale).  Every parameter is read-only.",
        [(s.key, s.default, s.description + ("" if s.lo is None else f" ({s.lo:g}..{s.hi:g})"))
         for s in SPECS],
        [EXAMPLE])


def mesh_file(name: str, given: str) -> str:
    """The absolute file mesh parameter ``name`` names (``~`` expanded, relative resolved);
    ConfigError: no such file (naming the path and what it was resolved against), not a file."""
    assets = effective_assets_dir("")
    path = os.path.abspath(resolve_path(given, assets))
    if not os.path.exists(path):
        raise ConfigError(name, given, f"no such file: {path}{resolved_from(given, assets)}")
    if not os.path.isfile(path):
        raise ConfigError(name, given, f"not a regular file: {path}")
    return path


def read_mesh(given: str) -> MembraneMesh:
    """The membrane mesh of parameter ``mesh``; ConfigError: no path or file, unreadable, or a
    mesh the model cannot inflate (flat, a free vertex in no triangle)."""
    if not given:
        raise ConfigError("mesh", given, "the membrane mesh file is required")
    path = mesh_file("mesh", given)
    try:
        mesh = read_membrane_mesh(path)
    except Exception as exc:   # meshio raises many types for unreadable files
        raise ConfigError("mesh", path, str(exc)) from None
    try:   # what the reference will need of the mesh (a flat one has no pressure pre-tension)
        MembraneModel(mesh, NOMINAL_GAUGE_PA)
    except ValueError as exc:
        raise ConfigError("mesh", path, f"no inflatable membrane: {exc}") from None
    return mesh


def attachment_frame(mesh: Optional[MembraneMesh], given: str) -> Tuple[MeshFrameTransform, str]:
    """``(transform from the membrane mesh to the attachment_mesh file's frame, its path)`` (file
    vertex order, :func:`vsf_sensor_ros.mesh_io.load_mesh`; without a mesh: identity).
    ConfigError: no such file, not a file, unreadable, or not the same membrane."""
    path = mesh_file("attachment_mesh", given)
    if mesh is None:
        return MeshFrameTransform(), path
    from ..mesh_io import load_mesh
    try:
        vertices = np.asarray(load_mesh(path).vertices, dtype=np.float64)
    except Exception as exc:   # trimesh's loaders fail with many types on a file that is no mesh
        raise ConfigError("attachment_mesh", given,
                          f"not a triangle mesh ({type(exc).__name__}: {exc})") from None
    try:
        return fit_mesh_transform(mesh.points, vertices, mesh.boundary), path
    except Exception as exc:
        raise ConfigError("attachment_mesh", given, str(exc)) from None


def ambient(p: Dict[str, Any]) -> Tuple[float, str]:
    """``(Pa, source)``: ``ambient_pressure`` when not 0, else the ISA atmosphere at ``altitude``
    (m); ConfigError: outside :data:`AMBIENT_RANGE_PA` (with a word on hPa when x100 fits)."""
    given = float(p["ambient_pressure"])
    lo, hi = AMBIENT_RANGE_PA
    if given == 0.0:
        alt = float(p["altitude"])
        return isa_pressure(alt), f"standard atmosphere at {alt:g} m"
    if not lo <= given <= hi:
        hpa = (f"; it looks like hPa ({given:g} x 100 = {given * 100.0:.0f} Pa?)"
               if lo <= given * 100.0 <= hi else "")
        raise ConfigError("ambient_pressure", given, "not a plausible atmospheric pressure (0 = the "
                          f"standard atmosphere at 'altitude', else {lo:.0f} .. {hi:.0f} Pa absolute){hpa}")
    return given, "ambient_pressure"


def reference_rotation(p: Dict[str, Any]) -> np.ndarray:
    """``(3, 3)`` float64 ``R_frame_ref`` of ``reference_rotation`` (x y z w, normalised);
    ConfigError: a quaternion of zero norm."""
    try:
        return transform_from_xyz_quat([0.0, 0.0, 0.0], p["reference_rotation"])[:3, :3]
    except ValueError as exc:
        raise ConfigError("reference_rotation", p["reference_rotation"],
                          f"{exc} (identity: [0, 0, 0, 1])") from None


def pressure_type_name(given: str) -> str:
    """``pressure_type`` normalised to ``pkg/msg/Type`` (``std_msgs/Float32`` -> ``std_msgs/msg/Float32``)."""
    ptype = given.replace("/msg/", "/")
    return "/".join([ptype.split("/")[0], "msg", ptype.split("/")[-1]]) if "/" in ptype else ptype


def _attempt(problems: List[ConfigError], check: Any, *args: Any) -> Any:
    """``check(*args)``; None when it raises a ConfigError, which goes to ``problems``."""
    try:
        return check(*args)
    except ConfigError as exc:
        problems.append(exc)
        return None


def settings_problems(p: Dict[str, Any], mesh: Optional[MembraneMesh], node_name: str,
                      namespace: str) -> List[ConfigError]:
    """Every problem of the parameters that need no file, naming parameter and value (with a
    ``mesh``, a camera mount that puts free vertices behind the camera too)."""
    out: List[ConfigError] = []
    _attempt(out, ambient, p)
    choices = {"input": ("depth", "points"), "pressure_type": sorted(PRESSURE_TYPES),
               **dict.fromkeys(("input_reliability", "pressure_reliability", "reference_reliability"),
                               ("best_effort", "reliable"))}
    out += [ConfigError(k, p[k], f"use {' or '.join(map(repr, ok))}") for k, ok in choices.items()
            if (pressure_type_name(p[k]) if k == "pressure_type" else p[k]) not in ok]
    out += [ConfigError(k, p[k], why) for k, bad, why in (
        ("window", int(p["window"]) % 2 == 0, "must be odd"),
        ("frame_id", not str(p["frame_id"]).strip(), "must name the frame of the outputs (the "
         "PunyoDenseForceSensor's attachment body, e.g. 'punyo')")) if bad]
    _attempt(out, reference_rotation, p)
    optional = tuple(k for k in ("colour_topic", "reference_wrench_topic") if str(p[k]))   # '' = none
    for key in TOPIC_PARAMETERS + optional:
        _attempt(out, check_topic_name, key, p[key], node_name, namespace)
    if mesh is not None:
        # the camera looks at the membrane from inside: a free vertex behind it means a wrong mount
        t_cam = np.asarray(p["camera_translation"], dtype=float)   # 3 finite numbers (its Spec)
        rotation = punyo_camera_rotation(float(p["camera_rotation_deg"]))
        behind = int(((mesh.points[mesh.interior] @ rotation.T + t_cam)[:, 2] <= 0.0).sum())
        if behind:
            out.append(ConfigError("camera_rotation_deg", p["camera_rotation_deg"],
                                   f"{behind} free membrane vertices lie behind the camera (z <= 0 in its "
                                   f"optical frame; camera_translation = {t_cam.tolist()})"))
    return out


def configure(node: Node, command_line: Sequence[str]) -> SimpleNamespace:
    """Declare ``node``'s parameters, read its meshes and calibration file, log the start-up notes;
    ``p`` (name -> value), ``mesh``, ``out_frame``, ``store``, ``record`` (the scale loaded),
    ``ambient_pa``, ``ambient_source``, ``config_problems`` (unknown keys, unmatched parameter
    files).  ConfigError: every problem at once, each naming parameter and value."""
    p, problems = declare_all(node, SPECS)   # (altitude: 222 is taken for 222.0, as by sensor_node)
    c = SimpleNamespace(p=p, out_frame=MeshFrameTransform(), record=ScaleRecord())
    c.mesh = _attempt(problems, read_mesh, p["mesh"])
    if p["attachment_mesh"]:
        c.out_frame, attachment = (_attempt(problems, attachment_frame, c.mesh, p["attachment_mesh"])
                                   or (c.out_frame, ""))
    problems += settings_problems(p, c.mesh, node.get_name(), node.get_namespace())
    # the calibration file is fixed at start (read-only): the only file ~/calibrate_scale writes
    c.store = CalibrationStore(Path(resolve_path(p["calibration_file"], effective_assets_dir("")))
                               if p["calibration_file"] else None, bool(p["calibration_create_dirs"]))
    try:
        entry = c.store.load().get(ENTRY_KEY)
        if entry is not None:
            c.record = record_from_entry(entry, f"file {c.store.path}")
    except ValueError as exc:   # (the store's ConfigError names the file already)
        problems.append(exc if isinstance(exc, ConfigError) else
                        ConfigError("calibration_file", p["calibration_file"], str(exc)))
    raise_all(problems)
    log = node.get_logger()
    if c.record.source != "none":
        log.info(f"force scale {c.record.scale:.6g} loaded from {c.store.path} "
                 f"(fitted {c.record.fitted_at} on {c.record.frames} frames)")
    if not p["attachment_mesh"]:
        # sensor_node reads a measured dense force in its own mesh's frame: unless that mesh is
        # this one, its residual would be off by the rotation between the two
        log.warning(f"parameter 'attachment_mesh' is empty: forces are published in the frame of "
                    f"{p['mesh']!r} and labelled {p['frame_id']!r}; give the mesh file sensor_node's "
                    "PunyoDenseForceSensor is attached with (e.g. punyo_mesh_complete.ply) unless it is "
                    "this one")
    else:
        log.info(f"outputs in the frame of {attachment}: rotation {c.out_frame.angle_deg:.2f} deg from "
                 f"the membrane mesh, ring fit {c.out_frame.max_error * 1e3:.3f} mm")
    c.ambient_pa, c.ambient_source = ambient(p)
    if not float(p["ambient_pressure"]) and not float(p["altitude"]):
        log.warning(SEA_LEVEL_WARNING)
    unknown = unknown_keys(parameter_override_names(node), set(PARAMETER_NAMES), {}, {})
    c.config_problems = [u.message() for u in unknown] + unmatched_params_files(
        command_line, node.get_fully_qualified_name())
    for line in c.config_problems:
        log.warning(line)
    return c
