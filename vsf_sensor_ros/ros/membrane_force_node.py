"""``membrane_force_node``: a Punyo bubble's measured dense force, live, from its depth frames and
pressure, in ``sensor_node``'s measured dense-force layout (docs/membrane_force.md)."""
from __future__ import annotations

import functools
import sys
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Vector3, Wrench, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, FluidPressure, Image, PointCloud2
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from vsf_sensor_ros.sensor.membrane_force_estimator import (
    FrameRejected, MembraneForceEstimator, punyo_camera_rotation)
from vsf_sensor_ros.sensor.membrane_frame import total_wrench
from vsf_sensor_ros.sensor.scale_calibration import ENTRY_KEY, ForceScale, ScaleFitRefused

from ..rig.calibration_file import SaveRefused
from ..rig.pairing import ColourPairing
from ..rig.input_health import pressure_unit_problem
from ..rig.membrane_inputs import (Input, Pressures, check_reference_frame, inputs_text, join_names,
                                   stamp_partners)
from .diagnostics import make_status
from .kinds.punyo_pressure import PressureCodec
from .main import answer_help, run_node
from .membrane_force_config import PARAMETER_NAMES, configure, pressure_type_name, reference_rotation, usage
from .membrane_force_inputs import InputWatch, pressure_type_hints, report
from .messages.camera import (PRESSURE_TYPES, InputRejected, camera_from_info, camera_info_text,
                              colour_from_image, depth_from_cloud, depth_from_image)
from .messages.pointcloud import write_cloud
from .messages.readings import make_header
from .messages.stamps import copy_stamp, stamp_to_ns
from .parameter_table import ConfigError
from .parameters import UnknownKey, closest_key
from .topic_types import type_name


class MembraneForceNode(Node):
    """Camera frames + pressure → :class:`MembraneForceEstimator` → measured dense force
    (``command_line``: for :func:`.configure`).  ConfigError: every problem."""

    def __init__(self, node_name: str = "membrane_force_node", command_line: Sequence[str] = (),
                 **kwargs: Any) -> None:
        # undeclared names reach _on_set_parameters, which names them (rclpy's own answer does not)
        super().__init__(node_name, allow_undeclared_parameters=True, **kwargs)
        try:
            cfg = configure(self, command_line)
        except ConfigError:
            self.destroy_node()   # nothing half-built stays on the graph (as sensor_node)
            raise
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # p, mesh, out_frame, store, record, ambient_pa, ambient_source, config_problems
        vars(self).update(vars(cfg))
        p = self.p
        ptype = pressure_type_name(p["pressure_type"])
        self.estimator: Optional[MembraneForceEstimator] = None
        self.reference: List[Any] = []          # (depth, pressure, colour or None) collected so far
        # one child logger per reason, kept: rclpy's throttle lives in it
        self._reason_log = functools.lru_cache(maxsize=None)(self.get_logger().get_child)
        # a stamped pressure (FluidPressure) pairs with the frame of the same stamp; a bare number
        # (the firmware's Float32) has none: the latest goes with each frame
        self.stamped = ptype == "sensor_msgs/msg/FluidPressure"
        # colour_topic set: depth frames wait for the colour image of their stamp
        self.colour = bool(p["colour_topic"])
        self.pairing = ColourPairing(float(p["colour_tolerance"]), max_waiting=int(p["qos_depth"]),
                                     history=int(p["qos_depth"]) + 2)
        self.reference_colour = False           # the reference in force has colour images
        self.stats, self.rejected, self.depth_only = Counter(), Counter(), Counter()
        self.period_ms: List[float] = []
        self.last: Dict[str, str] = {"reference": f"collecting 0 of {p['reference_frames']} frames"}
        self.camera_info: Optional[CameraInfo] = None     # the one the estimator was built from
        self.new_camera_info: Optional[CameraInfo] = None  # a differing later one (reset_reference takes it)

        def qos(key: str) -> QoSProfile:
            return QoSProfile(depth=int(p["qos_depth"]), reliability=ReliabilityPolicy.RELIABLE
                              if key == "reliable" or p[key] == "reliable" else ReliabilityPolicy.BEST_EFFORT)
        self.pub_force, self.pub_surface, self.pub_uncalibrated = (
            self.create_publisher(PointCloud2, topic, qos("reliable")) for topic in
            (p["force_topic"], p["surface_topic"], p["force_topic"] + "/uncalibrated"))   # (before the scale)
        self.pub_total = self.create_publisher(WrenchStamped, p["total_force_topic"], qos("reliable"))
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # camera info and pressure first: when a frame and a pressure wait together, the executor
        # serves them in creation order, so the frame goes with the pressure that came with it
        subs = {"camera_info": self.create_subscription(CameraInfo, p["camera_info_topic"],
                                                        self._on_camera_info, qos("input_reliability")),
                "pressure": self.create_subscription(PRESSURE_TYPES[ptype], p["pressure_topic"],
                                                     self._on_pressure, qos("pressure_reliability"))}
        if self.colour:   # before the frames: a colour image and its depth frame waiting together
            subs["colour"] = self.create_subscription(Image, p["colour_topic"], self._on_colour,
                                                      qos("input_reliability"))
            self.create_timer(max(float(p["colour_timeout"]) / 4.0, 0.001), self._colour_expired)
        subs["frames"] = self.create_subscription(
            *((Image, p["depth_topic"], self._on_image) if p["input"] == "depth" else
              (PointCloud2, p["points_topic"], self._on_cloud)), qos("input_reliability"))
        # named by resolved topic and graph type, in the order they are needed
        hints = {"pressure": pressure_type_hints(ptype, float(p["pressure_scale"]))}
        self.inputs = {k: Input(subs[k].topic_name, type_name(subs[k].msg_type),
                                "colour, optional" if k == "colour" else "", hints.get(k, {}))
                       for k in ("camera_info", "frames", "colour", "pressure") if k in subs}
        self.get_logger().info("subscribes " + inputs_text(list(self.inputs.values())))
        self.pressures = Pressures(self.inputs["pressure"], self.stamped, float(p["pressure_tolerance"]),
                                   float(p["pressure_timeout"]))
        # the inputs paired by stamp -> their partner; a message of one stamped 0 is rejected
        self.stamp_partners = stamp_partners(self.stamped, self.colour)
        self.zero_stamps: Counter = Counter({self.inputs[k].topic: 0 for k in self.stamp_partners})
        self.create_service(Trigger, "~/reset_reference", self._on_reset)
        self.create_service(Trigger, "~/calibrate_scale", self._on_calibrate)
        self.scale: Optional[ForceScale] = None     # frames paired with the reference wrench
        if p["reference_wrench_topic"]:
            self.scale = ForceScale(reference_rotation(p), round(float(p["reference_tolerance"]) * 1e9),
                                    float(p["scale_threshold"]), int(p["scale_min_frames"]),
                                    float(p["scale_min_force"]))
            self.create_subscription(WrenchStamped, p["reference_wrench_topic"], self._on_wrench,
                                     qos("reference_reliability"))
        self.create_timer(float(p["diagnostics_period"]), self._report)
        self._period: Dict[str, Any] = {"start": time.monotonic()}   # the last report's counts
        self.watch = InputWatch(self, list(self.inputs.values()), self._period["start"])

    def _on_set_parameters(self, params: List[Any]) -> SetParametersResult:
        """Live requests: rclpy refuses the read-only ones by name; an unknown name is refused here."""
        for prm in params:
            if not self.has_parameter(prm.name):
                unknown = UnknownKey(prm.name, closest_key(prm.name, PARAMETER_NAMES), "node")
                return SetParametersResult(successful=False, reason=f"{unknown.message()} (= {prm.value!r})")
        return SetParametersResult(successful=True)

    def _reject(self, reason: str, message: str, what: str = "frame") -> None:
        self.rejected[reason] += 1
        self.last["last_rejection"] = f"{reason}: {message}"
        self.stats[f"{what}_rejected"] += 1            # what a missing input's sentence says
        # frames: why they are not collected or estimated; pressures: why none is usable (the status says it)
        self.last[f"{what}_rejection"] = f"{reason}: {message}" if what == "frame" else reason
        self.last[f"{what}_rejection_text"] = f"{reason}: {message}"
        # one throttle per reason: a flood of one kind does not hide the first of another
        self._reason_log(reason).warning(f"{what} rejected ({reason}): {message}", throttle_duration_sec=5.0)

    def _zero_stamp(self, key: str, header: Optional[Header]) -> bool:
        """True (rejected, counted, logged) when input ``key`` pairs by stamp and ``header`` (None:
        a bare pressure) is stamped 0."""
        partner = self.stamp_partners.get(key)
        if partner is None or header is None or stamp_to_ns(header.stamp) != 0:
            return False
        inp = self.inputs[key]
        self.zero_stamps[inp.topic] += 1
        hint = "set its driver's header stamps" + (
            ", or use a bare pressure_type (std_msgs/msg/Float32: the latest goes with each frame)"
            if key == "pressure" else "")   # (a pressure pairs by stamp: a FluidPressure)
        text = (f"{inp.topic} stamped 0 ({self.zero_stamps[inp.topic]} so far): no time to pair it with its "
                f"{partner}; {hint}")
        reason, what = {"frames": ("zero_stamp", "frame"), "colour": ("colour_zero_stamp", "colour image"),
                        "pressure": ("pressure_zero_stamp", "pressure")}[key]
        self._reject(reason, text, what)
        return True

    def _on_camera_info(self, msg: CameraInfo) -> None:
        self.stats["camera_info_received"] += 1
        if self.estimator is None:
            self.estimator = self._build_estimator(msg)
            self.camera_info = msg if self.estimator is not None else None
        elif camera_info_text(msg) != camera_info_text(self.camera_info):   # size, K, distortion
            # the estimator's pixel windows belong to the first camera: ~/reset_reference takes a new one
            self.new_camera_info = msg
            self._reject("camera_info_changed", f"{camera_info_text(msg)} differs from the "
                         f"{camera_info_text(self.camera_info)} in use; call ~/reset_reference (membrane "
                         "free of contact) to take it", "CameraInfo")

    def _build_estimator(self, msg: CameraInfo) -> Optional[MembraneForceEstimator]:
        """The estimator for the camera of ``msg``; None (rejection counted) for one it cannot use."""
        p = self.p
        try:
            return MembraneForceEstimator(
                self.mesh, camera_from_info(msg), punyo_camera_rotation(float(p["camera_rotation_deg"])),
                t_cam_mesh=[float(v) for v in p["camera_translation"]], ambient_pressure=self.ambient_pa,
                window=int(p["window"]), max_depth=float(p["max_depth"]),
                min_vertex_fraction=float(p["min_vertex_fraction"]))
        except ValueError as exc:   # without a reason: e.g. vertices behind the camera (a wrong rotation)
            self._reject(exc.reason if isinstance(exc, InputRejected) else "bad_camera_info", str(exc),
                         "CameraInfo")
        return None

    def _on_pressure(self, msg: Any) -> None:
        if self._zero_stamp("pressure", getattr(msg, "header", None)):
            return
        scale = float(self.p["pressure_scale"])
        raw = float(msg.fluid_pressure if isinstance(msg, FluidPressure) else msg.data)
        # hPa read as Pa (or Pa as hPa) is a factor 100 off: a membrane model built on it would
        # publish forces 100 times too large or too small (NaN and below 0 are implausible too)
        problem = pressure_unit_problem(raw, scale, *PressureCodec.plausible,
                                        scale_parameter="pressure_scale")
        if problem is not None:
            self._reject("implausible_pressure", problem.replace("measured pressure", "bubble pressure", 1),
                         "pressure")
            return
        pa = raw * scale
        self.last.pop("pressure_rejection_text", None)
        self.pressures.add(pa, stamp_to_ns(msg.header.stamp) if self.stamped else 0, time.monotonic())
        self.stats["pressures_received"] += 1
        if self.stamped:
            waiting, self.pressures.pending = self.pressures.pending, []
            for item, _, arrived in waiting:   # frames that waited for their pressure, in arrival order
                self._on_frame(*item, pending=True, arrived=arrived)

    def _on_image(self, msg: Image) -> None:
        self._on_frame(msg.header, lambda: depth_from_image(msg, float(self.p["depth_unit"])))

    def _on_cloud(self, msg: PointCloud2) -> None:
        self._on_frame(msg.header, lambda: depth_from_cloud(msg))

    def _on_frame(self, header: Header, decode: Any, pending: bool = False,
                  arrived: Optional[float] = None) -> None:
        """A depth frame (``decode()``: its depth) received at monotonic ``arrived`` (None: now);
        ``pending``: after waiting for its stamped pressure."""
        if not pending:
            self.stats["frames_received"] += 1
            if self._zero_stamp("frames", header):
                return
        try:
            if self.estimator is None:
                got = int(self.stats["camera_info_received"])
                why = self.last.get("CameraInfo_rejection_text", "none")
                raise InputRejected(f"no usable CameraInfo yet ({got} received, rejected: {why})" if got
                                    else "no CameraInfo received yet", "no_camera_info")
            now = time.monotonic()
            pressure = self.pressures.for_frame(stamp_to_ns(header.stamp), now)
            if pressure is None:   # (a stamped one not come yet) the frame waits for it
                self.pressures.wait((header, decode), stamp_to_ns(header.stamp),
                                    now if arrived is None else arrived, now, int(self.p["qos_depth"]))
                return
        except FrameRejected as exc:   # (an InputRejected too)
            self._reject(exc.reason, str(exc))
            return
        if not self.colour:
            self._run(header, decode, pressure, None)
            return
        self.pairing.add_frame(stamp_to_ns(header.stamp), (header, decode, pressure), time.monotonic())
        self._pair_colours()

    def _on_colour(self, msg: Image) -> None:
        self.stats["colour_received"] += 1
        if self._zero_stamp("colour", msg.header):   # not kept: no frame can be told to go on without it
            return
        try:
            image: Optional[np.ndarray] = colour_from_image(msg)
            self._check_colour(image)
        except InputRejected as exc:
            self._reject(f"colour_{exc.reason}", str(exc), what="colour image")
            image = None    # kept as rejected: its depth frame goes on without waiting
        self.pairing.add_colour(stamp_to_ns(msg.header.stamp), image)
        self._pair_colours()

    def _check_colour(self, image: np.ndarray) -> None:
        """InputRejected (``wrong_size``) for an image not of the camera's size (once one is known)."""
        est = self.estimator
        hw = image.shape[:2] if est is None else (est.camera.height, est.camera.width)
        if image.shape[:2] != hw:
            raise InputRejected(f"{image.shape[1]}x{image.shape[0]} px for a {hw[1]}x{hw[0]} depth image "
                                f"(the colour must be on the depth image's pixel grid)", "wrong_size")

    def _pair_colours(self, expired: float = float("-inf")) -> None:
        """Estimate the waiting frames whose colour is settled, in arrival order; one received before
        ``expired`` (monotonic s), or beyond ``qos_depth`` waiting, goes without."""
        for (header, decode, pressure), image, reason in self.pairing.settled(expired):
            if image is not None:
                try:
                    self._check_colour(image)   # kept before the CameraInfo came
                except InputRejected as exc:
                    self._reject(f"colour_{exc.reason}", str(exc), what="colour image")
                    image, reason = None, "colour_rejected"
            if image is None:
                self.depth_only[reason] += 1
                t = stamp_to_ns(header.stamp) * 1e-9
                self.last["depth_only"] = f"{reason}: frame stamped {t:.3f} s estimated from depth alone"
            self._run(header, decode, pressure, image)

    def _colour_expired(self) -> None:
        """Timer: frames that waited ``colour_timeout`` for their colour go on without it."""
        if self.pairing.pending:
            self._pair_colours(expired=time.monotonic() - float(self.p["colour_timeout"]))

    def _run(self, header: Header, decode: Any, pressure: float, colour: Optional[np.ndarray]) -> None:
        try:
            self._process(header, decode, pressure, colour)
        except FrameRejected as exc:
            self._reject(exc.reason, str(exc))
        except Exception as exc:  # noqa: BLE001 -- the node must outlive one frame (a library failure)
            self._reject("internal_error", f"{type(exc).__name__}: {exc}")

    def _process(self, header: Header, decode: Any, pressure: float, colour: Optional[np.ndarray]) -> None:
        """Collect the reference or estimate; raises InputRejected / FrameRejected (nothing changed)."""
        est = self.estimator
        assert est is not None
        depth = decode()
        n_ref = int(self.p["reference_frames"])
        if est.model is None:   # a bad frame never enters the reference
            check_reference_frame(depth, pressure, (est.camera.height, est.camera.width), self.p,
                                  est.ambient_pressure, self.ambient_source)
            self.reference.append((depth, pressure, colour))
            if self.scale is not None:   # contact-free: the reference wrench's bias
                self.scale.add_frame(stamp_to_ns(header.stamp), None)
            self.last.pop("frame_rejection", None)
            self.last["reference"] = f"collecting {len(self.reference)} of {n_ref} frames"
            if len(self.reference) < n_ref:
                return
            frames, pressures, colours = zip(*self.reference)
            self.reference = []
            self.last["reference"] = f"collecting 0 of {n_ref} frames (last attempt rejected)"
            lacking = sum(c is None for c in colours)
            # the speckle's flow needs a colour image of every reference frame
            est.set_reference(list(frames), list(pressures), None if lacking else list(colours))
            self.reference_colour = not lacking
            with_colour = ((" with colour" if not lacking else
                            f" without colour ({lacking} of {n_ref} frames had none)") if self.colour else "")
            self.last["reference"] = (f"set from {n_ref} frames{with_colour}, {est.reference_pressure:.0f} "
                                      f"Pa, start-up {est.startup_s * 1e3:.0f} ms")
            outputs = [f"{what} on {pub.topic_name} ({type_name(pub.msg_type)})" for what, pub in (
                ("the dense force", self.pub_force), ("the surface", self.pub_surface),
                ("the total force", self.pub_total))]
            self.get_logger().info(
                f"ready: reference {self.last['reference']}; ambient {self.ambient_pa:.0f} Pa "
                f"({self.ambient_source}), gauge {self._gauge():.0f} Pa; publishing {join_names(outputs)}, "
                f"frame_id {self.p['frame_id']!r}")
            if self.colour and lacking:
                self.get_logger().warning("the reference has no colour: frames are estimated from depth "
                                          "alone until the next reset_reference; " + self._no_colour())
        res = est.estimate(depth, colour=colour, pressure=pressure)
        total = self._publish(header, res)
        if self.scale is not None:
            self.scale.add_frame(stamp_to_ns(header.stamp), total)
        self.period_ms.append(res.timings["total"] * 1e3)
        self.stats["frames_estimated"] += 1
        self.stats["frames_with_colour"] += colour is not None and self.reference_colour
        self.last.pop("frame_rejection", None)
        self.last.update(vertices_measured=str(res.vertices_measured), vertices_flow=str(res.vertices_flow))

    def _publish(self, header: Header, res: Any) -> np.ndarray:
        """Publish one estimate (dense and total force scaled, dense force unscaled, surface); the
        unscaled total contact force, ``(3,)`` N in frame_id."""
        s, pos, force = (self.record.scale, self.out_frame.points(res.positions),
                         self.out_frame.vectors(res.contact_forces))
        h = Header(stamp=copy_stamp(header.stamp), frame_id=self.p["frame_id"])
        xyz = [(k, pos[:, i].astype(np.float32)) for i, k in enumerate("xyz")]
        for pub, f in ((self.pub_force, s * force), (self.pub_uncalibrated, force)):
            pub.publish(write_cloud(h, xyz + [(k, f[:, i].astype(np.float32)) for i, k in
                                              enumerate(("fx", "fy", "fz"))]))
        self.pub_surface.publish(write_cloud(h, xyz))
        f, tq = total_wrench(pos, force)
        fv, tv = (Vector3(**{k: float(c) for k, c in zip("xyz", s * v)}) for v in (f, tq))
        self.pub_total.publish(WrenchStamped(header=h, wrench=Wrench(force=fv, torque=tv)))
        return f

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        n = int(self.p["reference_frames"])
        taken = ""
        if self.new_camera_info is not None:    # a changed camera: a new estimator for it
            new_info, self.new_camera_info = self.new_camera_info, None
            est = self._build_estimator(new_info)
            if est is None:                      # nothing changed: the reference and camera stay
                response.message = (f"nothing reset: the new CameraInfo cannot be used "
                                    f"({self.last.get('last_rejection')}); call again to reset the "
                                    f"reference with the {camera_info_text(self.camera_info)}")
                return response
            taken = f"; camera {camera_info_text(new_info)} taken (was {camera_info_text(self.camera_info)})"
            self.estimator, self.camera_info = est, new_info
        if self.estimator is not None:
            self.estimator.reset_reference()
        if self.scale is not None:   # a fit uses the frames since the last reset
            self.scale.reset()
        self.reference, self.reference_colour = [], False
        self.last["reference"] = f"collecting 0 of {n} frames"
        self.stats["reference_resets"] += 1
        response.success = True
        response.message = (f"reference cleared: the next {n} frames (keep the membrane free of contact) "
                            "become the new reference" + taken
                            + ("" if self.estimator is not None else
                               f"; no usable CameraInfo yet on {self.p['camera_info_topic']}"))
        return response

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        force = np.array([f.x, f.y, f.z], dtype=np.float64)
        stamp = stamp_to_ns(msg.header.stamp)
        if stamp == 0 or not np.isfinite(force).all():   # no time to pair by / no force
            self._reject("reference_zero_stamp" if stamp == 0 else "reference_not_finite",
                         f"reference wrench stamped {stamp * 1e-9:.3f} s, force {force.tolist()} on "
                         f"{self.p['reference_wrench_topic']}", "reference wrench")
            return
        self.scale.add_wrench(stamp, force)

    def _on_calibrate(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``~/calibrate_scale``: fit the scale on the frames since the last reset, take it and write
        it to ``calibration_file``; a refusal changes nothing."""
        response.success = False
        if self.scale is None:
            response.message = ("refused: parameter reference_wrench_topic is empty: no reference force to "
                                "fit to")
            return response

        def refused(why: str) -> Trigger.Response:   # nothing changed: the old scale stays
            self.scale.refused += 1
            response.message = f"{why}; the scale stays {self.record.scale:.6g}"
            return response
        try:
            record, text = self.scale.calibrate()
        except ScaleFitRefused as exc:
            return refused(f"refused: {exc}")
        saved = "not written: parameter calibration_file is empty"
        if self.store.path is not None:
            try:
                entries = self.store.load()   # other entries of the file are kept
                entries[ENTRY_KEY] = record.entry(self.p["frame_id"])
                saved = self.store.save(entries)
            except (SaveRefused, ConfigError) as exc:
                return refused(f"scale {record.scale:.6g} fitted but not taken: {exc}")
        self.record = record
        self.scale.fits += 1
        response.success = True
        response.message = f"{text}; {saved}"
        self.get_logger().info(f"calibrate_scale: {response.message}")
        return response

    def _gauge(self) -> Optional[float]:
        """The gauge pressure of the reference in force, Pa; None before one is set."""
        est = self.estimator
        return None if est is None or est.model is None else est.reference_pressure - est.ambient_pressure

    def _no_colour(self) -> str:
        """Why the reference has no colour (none received, or rejected) and what to do."""
        colour, received, rejected = (self.inputs["colour"], self.stats["colour_received"],
                                      self.stats["colour image_rejected"])
        if received:
            bad = (f"{rejected} of {received} colour images on {colour.topic} rejected, the latest as "
                   f"{self.last.get('colour image_rejection', '')}; " if rejected else "")
            return bad + "reset_reference with colour coming gives it colour"
        return (f"nothing arrives on {colour.text()} (colour_topic); colour_topic: '' turns colour off "
                "(on the command line: -p \"colour_topic:=''\"), or reset_reference once colour comes")

    def _report(self) -> None:
        ok, message, values = report(self, time.monotonic())
        name = self.get_fully_qualified_name()
        self.pub_diag.publish(DiagnosticArray(header=make_header(self.get_clock().now().to_msg(), ""),
                                              status=[make_status(name, name, values.items(),
                                                                  [] if ok else [message], message)]))


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point (``args``: ``sys.argv`` when None): 0 on Ctrl-C, shutdown or ``--help``,
    2 on a configuration error."""
    argv = list(sys.argv if args is None else args)
    try:
        answer_help(argv, usage())
    except SystemExit as exc:
        return int(exc.code or 0)
    return run_node("membrane_force_node", lambda: MembraneForceNode(command_line=argv), argv,
                    config_errors=(ConfigError,))


def run() -> None:
    """``console_scripts`` entry: :func:`main`'s code as the exit status."""
    sys.exit(main())


if __name__ == "__main__":
    run()
