"""``sensor_node``: predicted tactile readings and their force Jacobians, live over ROS 2; it owns
every endpoint and hands each concern to its module (docs/interface.md, docs/node.md)."""
from __future__ import annotations

import functools
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import torch
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState, PointCloud2
from std_srvs.srv import Trigger

from ..rig.calibration import restored_text
from ..rig.contact_free import ContactFreeSteps
from ..rig.contacts import DecodedContacts
from ..rig.kinematics import JointStateWait
from ..rig.rig import Rig
from ..rig.sensors import SensorResult, StepRejected
from ..sensor import SimState
from ..sensor.base_sensor import BaseSensor
from ..urdf import MOVABLE_JOINT_TYPES
from . import calibration as cal_store
from . import main as node_main
from .messages import readings as enc
from .messages import wire
from ._rclpy_compat import add_parameter_callbacks
from .messages.pointcloud import contacts_to_pointcloud2
from .messages.wire import ContactsDecodeError, pointcloud2_to_contacts
from .diagnostics import InputStats, build_diagnostics
from .health import (JOINT_STATE, POSE_STAMPED, NodeHealth, configuration_warnings, known_keys,
                     misspelt_keys, node_value_problems, own_topics, type_name)
from ..rig.input_health import SensorInputs, StreamClock, missing_input_hint
from .topic_types import WrongTypeWatch
from .frames import FramePublisher
from .kinematics import KinematicInputs, decode_joint_state, parse_joint_name_map
from .messages.gz_contacts import gz_contacts_to_contacts, note_unknown_bodies
from .scene import (SensorFactory, build_scene, check_contact_body_names, effective_assets_dir,
                    gz_contacts_input, resolve_path)
from .parameters import (LiveSettings, NodeParameters, SensorParameters, check_measured_topic, unknown_keys,
                         wrong_type_errors)
from .calibration import Measurements
from .parameter_table import ConfigError, raise_all
from .sensor_handle import EndpointQoS, SensorEndpoints, SensorHandle
from .messages.stamps import ns_to_stamp, stamp_to_ns

DTYPE = torch.float64
DEVICE = torch.device("cpu")


class SensorNode(Node):
    """The ROS 2 sensor-model node.  ConfigError (:class:`.ConfigErrors` for several) naming the
    parameter and value; rclpy's InvalidParameterType/ValueException from ``Node.__init__``."""

    def __init__(self, node_name: str = "sensor_node", command_line: Optional[List[str]] = None,
                 **kwargs: Any) -> None:
        """``command_line``: the arguments whose ``--params-file`` s are checked for this node
        (default: ``sys.argv`` with global arguments, plus ``cli_args``); ``kwargs``: to ``Node``."""
        super().__init__(node_name, **kwargs)
        if command_line is None:
            command_line = (list(sys.argv) if kwargs.get("use_global_arguments", True) else []) \
                + ["--"] + list(kwargs.get("cli_args") or [])
        self._command_line = command_line
        try:
            self._configure()
        except ConfigError:
            self.destroy_node()   # nothing half-built stays on the graph
            raise

    def _configure(self) -> None:
        """Declare parameters, build the world and sensors, create every endpoint."""
        self.params = NodeParameters(self)
        self._pending: Dict[str, Dict[str, Any]] = {}   # the checked request (_validate -> _apply)
        self._wrong_types: Dict[str, ConfigError] = {}   # of the request being set (_coerce_request)
        self.inputs = InputStats()
        # one child logger per reason, kept: rclpy's throttle lives in it
        self._reason_log = functools.lru_cache(maxsize=None)(self.get_logger().get_child)
        self._last_diag = time.monotonic()
        self.health = NodeHealth(self.get_fully_qualified_name(), self._last_diag)

        # every node-wide problem at once (one line), so a user fixes them in one go
        p, problems = self.params.declare_node()
        problems += node_value_problems(p)
        # a misspelt top-level key may be why a value kept its default: name it with the problems
        raise_all(problems + (misspelt_keys(self, {""}, p["bodies"]) if problems else []))
        self._world_frame = p["world_frame"]
        # robot_state_publisher's rule: prefixed on the wire, bare in the model and on inputs
        self._frame_prefix = str(p["frame_prefix"])
        self._wire_world_frame = self._frame_prefix + self._world_frame    # as stamped on the wire
        self._jacobian_due = lambda h: h.endpoints.jacobian_due(int(h.config.values["jacobian_decimation"]))
        assets = effective_assets_dir(p["assets_dir"])
        self._qos = EndpointQoS.from_values(p)
        try:
            self.world, pose_topics, body_meshes = build_scene(p, assets, self.params.declare_body)
        except ConfigError as exc:   # a misspelt key (box.transform_kye) may be the cause: named with it
            raise_all(getattr(exc, "errors", [exc]) + misspelt_keys(self, {""} | set(p["bodies"] or []),
                                                                    p["bodies"]))
        self._factory = SensorFactory(self.world, body_meshes, self._frame_prefix)
        self.rig = Rig(self.world, DTYPE, DEVICE)
        self._handles = self.rig.sensors   # the node's sensors are the rig's
        # every free body (embedded scene objects included) follows a PoseStamped topic
        self._pose_topics = {b: pose_topics.get(b, f"{b}/pose") for b in self.world.free_body_names}
        self._body_subs = [
            self.create_subscription(PoseStamped, topic, lambda msg, b=b: self._on_pose(b, msg),
                                     self._qos.inputs) for b, topic in self._pose_topics.items()]
        names = list(p["contact_body_names"] or []) or list(self.world.body_names)
        unknown = check_contact_body_names(names, self.world)
        if unknown:
            self.get_logger().warning(
                f"contact_body_names {unknown} are not bodies of the world; contacts with them are "
                f"decoded but touch no sensor (bodies: {', '.join(self.world.body_names)})")
        self._contact_body_names = names
        self._gz_contacts = gz_contacts_input(p["contacts_type"], p["contact_body_map"] or [])
        # a misspelt contact_body_map target sends a sensor's contacts to a body no sensor reads
        self._startup_warnings: List[str] = ([] if self._gz_contacts is None else
                                             self._gz_contacts[1].unknown_targets(self.world.body_names))
        urdf_joints = [j.name for j in self.world.joints if j.type in MOVABLE_JOINT_TYPES]
        # driver -> URDF joint names; the watched joints follow the sensors (_refresh_dense_counts)
        name_map = parse_joint_name_map(list(p["joint_name_map"] or []), urdf_joints)
        self.kinematics = KinematicInputs(self.world, self._world_frame, name_map, self.rig.transforms,
                                          self._reject, self.get_logger())
        self.joint_names, self._transforms = self.kinematics.joint_names, self.kinematics.transforms
        self._joint_wait = JointStateWait(self._transforms)
        self.live = LiveSettings.from_values(p)

        sensors = list(p["sensors"] or [])
        self.params.check_sensor_list(sensors)
        text = p["calibration_file"]
        # fixed at start (read-only): the only file save_calibration ever writes
        self.calibration = cal_store.CalibrationStore(resolve_path(text, assets) if text else None,
                                                      bool(p["calibration_create_dirs"]))
        self.measurements = Measurements(self.rig, self.calibration, lambda: self.live, self._reject,
                                         self.get_logger(), self.get_clock())
        calibration = self.calibration.load()   # refuses a directory, FIFO... at the path
        self._frames = FramePublisher(self, bool(p["publish_tf"]), self._world_frame, self.world,
                                      self._frame_prefix)
        restored = []
        problems: Dict[str, ConfigError] = {}   # every sensor's first problem, then the node stops
        cfgs: Dict[str, SensorParameters] = {}
        for name in sensors:
            try:
                cfgs[name] = self.params.declare_sensor(name)
            except ConfigError as exc:
                problems[name] = exc
        # the endpoints made below too, not yet on the graph
        own = own_topics(self, p["contacts_type"], self._pose_topics, cfgs.values())
        for name, cfg in cfgs.items():
            try:
                check_measured_topic(self, cfg, own)   # a topic of another type: a ConfigError
                h = self._install(cfg, *self._factory.build(cfg))
                # an entry the model rejects: a ConfigError naming calibration_file and the sensor
                if name in calibration:
                    warning = cal_store.apply_file_entry(h, calibration[name], text)
                    if warning:
                        self.get_logger().warning(warning)
                    else:
                        restored.append(restored_text(h))
            except ConfigError as exc:
                problems[name] = exc
        if problems:
            raise_all([problems[n] for n in sensors if n in problems]
                      + misspelt_keys(self, problems, self.params.values.get("bodies")))
        self._headerless = any(h.headerless for h in self._handles.values())   # a step reads the clock
        cal_path = self.calibration.path
        if cal_path is not None:
            self.get_logger().info(f"calibration file {cal_path} " + (
                "does not exist yet; sensors start uncalibrated" if not cal_path.is_file() else
                f"loaded: restored {', '.join(restored)}" if restored else
                "loaded: no entry for the configured sensors"))

        # joint_states first: the single-threaded executor serves ready subscriptions in creation
        # order (the EventsExecutor in arrival order); a step reads the joint state of its stamp
        self.sub_joints = wire.subscribe(self, JointState, "joint_states", decode_joint_state,
                                         self._on_joint_state, self._reject, self._qos.inputs)
        self.sub_contacts = (
            self.create_subscription(self._gz_contacts[0], "contacts", self._on_contacts, self._qos.inputs)
            if self._gz_contacts else
            wire.subscribe(self, PointCloud2, "contacts", wire.decode_pointcloud2, self._on_contacts,
                           self._reject, self._qos.inputs))
        self._contacts_clock = self.health.stream(self.sub_contacts.topic_name, p["contacts_type"])
        self._joints_clock = self.health.stream(self.sub_joints.topic_name, JOINT_STATE)
        self._pose_clocks = {b: self.health.stream(sub.topic_name, POSE_STAMPED)
                             for b, sub in zip(self.world.free_body_names, self._body_subs)}
        self._contact_free = self._contact_free_steps(p)
        # for a tare / gain answer: the inputs of a sensor missing now; its paired streams, when stopped
        self.measurements.missing_inputs = lambda h: self._input_hint(self._needs(h))
        self.measurements.stopped_inputs = lambda h: self._input_hint(self._paired_streams(h))
        self.measurements.clock_hint = self._clock_hint
        self._input_types = WrongTypeWatch(self, self.get_logger())   # asked at diagnostics time only
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", self._qos.outputs)
        self.srv_tare_all = self.create_service(Trigger, "tare", self.measurements.on_tare_all)
        self.srv_save = self.create_service(Trigger, "save_calibration",
                                            self.measurements.on_save_calibration)
        self.timer_diag = self.create_timer(float(p["diagnostics_period"]), self._on_diagnostics)
        self._has_post_set = add_parameter_callbacks(self, self._coerce_request, self._validate, self._apply)
        self._frames.refresh(h.layout for h in self._handles.values())
        self._refresh_dense_counts()   # now that the free bodies on /tf are known
        # unknown keys, unmatched parameter files, no sensors: WARN lines (and /diagnostics)
        lines = configuration_warnings(self, {n: h.config.type for n, h in self._handles.items()},
                                       p["bodies"] or [], self._command_line, bool(p["strict_parameters"]))
        self.health.config_problems = lines + self._startup_warnings
        for line in self.health.config_problems:
            self.get_logger().warning(line)
        self.get_logger().info(
            f"sensor_node ready: {len(self._handles)} sensors ({', '.join(self._handles) or 'none'}), "
            f"{len(self.world.body_names)} bodies, contact bodies {self._contact_body_names}")

    def _contact_free_steps(self, p: Dict[str, Any]) -> Optional[ContactFreeSteps]:
        """Steps without a contacts message (event-driven contacts, ``contact_free_period`` > 0), else
        None; under ``use_sim_time`` a timer steps on the node clock until stamped joint states come."""
        period = float(p["contact_free_period"])
        if period <= 0 or not (self._gz_contacts is not None or p["contacts_event_driven"]):
            return None
        # the contacts path decodes an empty message of the subscribed type: no second code path
        names, frame = self._contact_body_names, self._world_frame
        self._empty_contacts = (self._gz_contacts[0]() if self._gz_contacts is not None else
                                contacts_to_pointcloud2({}, names, frame_id=frame))
        if self.get_parameter("use_sim_time").value:
            self.timer_contact_free = self.create_timer(period / 4, self._on_contact_free_clock)
        return ContactFreeSteps(round(period * 1e9))

    def _install(self, cfg: SensorParameters, sensor: BaseSensor, layout: enc.SensorLayout) -> SensorHandle:
        """Create a sensor's handle with its publishers, subscription and tare service."""
        h = SensorHandle(cfg, sensor, layout, int(self.params.values["alignment_buffer_size"]),
                         self.live.tolerance_ns)
        h.endpoints = SensorEndpoints(self, cfg, layout, self._qos, self._on_measured,
                                      self.measurements.on_tare, self.measurements.on_calibrate_gain, sensor)
        self.rig.add(h)
        self._refresh_dense_counts()
        return h

    def _refresh_dense_counts(self) -> None:
        """The bodies a step computes follow the sensors and the free bodies on /tf."""
        free = list(self._frames.table.free) if self._frames.table is not None else []
        self.kinematics.follow(self._handles.values(), self._contact_body_names, free)

    def _reject(self, reason: str, detail: str, handle: Optional[SensorHandle] = None) -> None:
        """Count a rejected message under ``reason`` and log it (once a second per reason)."""
        if handle is None:
            self.inputs.reject(reason)
            self.health.prediction_failed(reason, detail)
        else:
            handle.stats.rejected[reason] += 1
        self._reason_log(reason).warning(f"rejected message ({reason}): {detail}", throttle_duration_sec=1.0)

    def _on_joint_state(self, msg: JointState) -> None:
        self.inputs.joint_states_received += 1
        self._joints_clock.arrived(time.monotonic())
        self.kinematics.on_joint_state(msg)
        self._step_all(self._joint_wait.joint_state())
        if self._contact_free is not None:
            self._step_contact_free(self._contact_free.due(self._transforms.newest_ns))

    def _on_contact_free_clock(self) -> None:
        """Under ``use_sim_time``: the node clock is the step source until a stamped joint state came."""
        if self._transforms.newest_ns == 0:
            self._step_contact_free(self._contact_free.due(self.get_clock().now().nanoseconds, "clock"))

    def _step_contact_free(self, stamp_ns: Optional[int]) -> None:
        """A contact-free step stamped ``stamp_ns`` (None: none due), through the contacts path."""
        if stamp_ns is None or not self.context.ok():
            return
        self._empty_contacts.header.stamp = ns_to_stamp(stamp_ns)
        self._step_all([(self._empty_contacts, time.perf_counter())], contact_free=True)

    def _on_pose(self, body: str, msg: PoseStamped) -> None:
        self.inputs.poses_received += 1
        self._pose_clocks[body].arrived(time.monotonic())
        self.kinematics.on_pose(body, msg)

    def _on_contacts(self, msg: PointCloud2) -> None:
        """One contacts message: stepped when its joint state is in (:meth:`_step_all`)."""
        t_recv = time.perf_counter()
        if not self.context.ok():
            return   # shutting down (SIGINT/SIGTERM): publishing would fail on the invalid context
        self.inputs.contacts_received += 1
        now = time.monotonic()
        self._contacts_clock.arrived(now)
        # in lockstep with the joint states, a message ahead of them waits for its own (rig.kinematics)
        self._step_all(self._joint_wait.offer(stamp_to_ns(msg.header.stamp), (msg, t_recv), now))

    def _step_all(self, items: List[Tuple[Any, float]], contact_free: bool = False) -> None:
        """Step contacts messages ``(msg, receive time)`` in order (``contact_free``: the empty message
        of a contact-free step); an unforeseen exception is counted as ``internal_error`` and logged,
        never fatal."""
        for msg, t_recv in items:
            try:
                self._process_contacts(msg, t_recv, contact_free)
            except Exception as exc:  # noqa: BLE001 -- the node must outlive one bad message
                if not self.context.ok():
                    return   # a shutdown signal arrived mid-message: the publish failed, nothing is wrong
                what = "contact-free step: " if contact_free else ""
                self._reject("internal_error", f"{what}{type(exc).__name__}: {exc}")

    def _decode_step(self, msg: Any) -> DecodedContacts:
        """A contacts message's decoded contacts; StepRejected: rejected whole, with its reason."""
        try:
            if self._gz_contacts is None:
                return pointcloud2_to_contacts(msg, self._contact_body_names, DTYPE, DEVICE,
                                               expected_frame_id=self._world_frame)
            # gz: header.frame_id names the contact sensor, not a frame (positions are in world)
            unknown: Dict[str, str] = {}
            decoded = gz_contacts_to_contacts(msg, self._contact_body_names, self._gz_contacts[1],
                                              DTYPE, DEVICE, world_frame=self._world_frame,
                                              unknown_bodies=unknown)
            for text in note_unknown_bodies(self.inputs.unknown_contact_bodies, unknown,
                                            self._contact_body_names):
                self.get_logger().warning(text)
            return decoded
        except ContactsDecodeError as exc:
            raise StepRejected(exc.reason, str(exc)) from exc

    def _process_contacts(self, msg: PointCloud2, t_recv: float, contact_free: bool = False) -> None:
        """Decode, predict every sensor, check, then publish (docs/node.md, "Bad input");
        ``contact_free``: a step without a contacts message."""
        stamp = msg.header.stamp
        stamp_ns = stamp_to_ns(stamp)
        # header-less measured streams pair by receive time (node clock: ROS time under use_sim_time)
        recv_ns = self.get_clock().now().nanoseconds if self._headerless else 0   # the clock only for them
        # decode, then every model must succeed before anything is published
        try:
            step = self.rig.predict(self._decode_step(msg), stamp_ns, self._jacobian_due)
        except StepRejected as exc:
            return self._reject(exc.reason, exc.detail)
        last = self.rig.last_stamp
        late = (step.jumped_back and not contact_free and self._contact_free is not None
                and self._contact_free.is_late(stamp_ns))
        if late:          # behind a contact-free step only: used, not a simulator reset
            self._contact_free.late += 1
            self._reason_log("late_contacts").warning(
                f"contacts stamped {stamp_ns * 1e-9:.9f} s came after the contact-free step of "
                f"{last * 1e-9:.9f} s: they lag the joint states by more than contact_free_period (raise "
                "it) or are stamped on another clock", throttle_duration_sec=1.0)
        self.rig.commit(step, reset=step.jumped_back and not late)   # acted on only for a step used
        if step.jumped_back and not late:
            self.inputs.stamp_jumps_backwards = self.rig.stamp_jumps   # the rig's counter, on /diagnostics
            self.inputs.last_stamp_jump = self.rig.last_stamp_jump
            self._reason_log("stamp_jump").warning(
                f"contacts stamp went backwards ({self.rig.last_stamp_jump}); simulator reset assumed: "
                "pairing buffers and sensor states cleared", throttle_duration_sec=1.0)
        if stamp_ns == 0:   # no time (no restart either): predicted, published, paired with nothing
            topic = self.sub_contacts.topic_name
            self.inputs.zero_stamps[topic] += 1
            self._reason_log("zero_stamp").warning(
                f"{topic}: contacts stamped 0 ({self.inputs.zero_stamps[topic]} so far): predicted, paired "
                "with no measured message (set the simulator's stamps; under use_sim_time the first stamps "
                "may be 0 until /clock arrives)", throttle_duration_sec=5.0)
            if self._contact_free is not None and self._transforms.newest_ns > 0:
                # contacts are flowing all the same: they hold off contact-free steps for a period,
                # timed from the newest joint stamp (a step between them would pair as contact-free)
                self._contact_free.used(self._transforms.newest_ns, contact_free)
        elif self._contact_free is not None:
            self._contact_free.used(stamp_ns, contact_free, reset=step.jumped_back and not late)
        now = time.monotonic()
        self.health.failing = None
        for r in step.results:
            h = r.handle
            self.health.last_prediction[h.name] = now
            self._publish_step(r, step.state, stamp_ns, now)
            h.stats.record_publish(time.perf_counter() - t_recv)
            pair = self.rig.pair_prediction(step, r, recv_ns if h.headerless else stamp_ns)
            if pair is not None:
                self.measurements.paired(h, pair)
        self._frames.on_step(stamp, step.state.body_transforms)
        if not contact_free:
            self.inputs.contacts_processed += 1

    def _publish_step(self, r: SensorResult, state: SimState, stamp_ns: int, now: float) -> None:
        """Publish one sensor's outputs for a checked step; keep its contact state."""
        h = r.handle
        if h.layout.codec.steps_sensor:
            # keeps the Isaac sensor's period-sampled reading buffer (Python API, diagnostics)
            try:
                h.sensor.update(state, stamp_ns * 1e-9)
            except ValueError as exc:
                self._reject("sensor_update_failed", f"{h.name}: {exc}", h)
        h.stats.contact = in_contact = h.layout.codec.in_contact(h.layout, r.values, r.n_on_body)
        rate = self.live.markers_max_rate
        markers = rate <= 0 or now - h.last_marker_time >= 1.0 / rate
        if enc.publish_step(h.endpoints, h.layout, r, state, stamp_ns, self._wire_world_frame, in_contact,
                            self.live.marker_force_scale if markers else None):
            h.last_marker_time = now

    def _on_measured(self, name: str, msg: Any) -> None:
        h = self._handles.get(name)
        if h is not None:
            self._measured_clock(h).arrived(time.monotonic())
        self.measurements.on_measured(name, msg)

    def _on_diagnostics(self) -> None:
        now = time.monotonic()
        self._step_all(self._joint_wait.expire(now))
        period = now - self._last_diag
        self._last_diag = now
        for h in self._handles.values():
            if h.last_values is not None and len(h.last_values) == len(h.layout.names):
                h.stats.reading = h.layout.codec.summary(h.name, h.layout, h.last_values)
            h.stats.pairing = self._clock_hint(h) or "ok"
            h.stats.calibration, h.stats.measured_stamp_jumps = h.calibration_text, h.measured_stamp_jumps
            if h.contact_free_loop is not None:
                h.stats.loop_keys, h.stats.loop_problems = h.contact_free_loop.report(h)
        sensors = {n: (h.config.type, h.config.values["attachment"], h.stats)
                   for n, h in self._handles.items()}
        self.inputs.unknown_joint_names = dict(self.joint_names.unknown)
        self.inputs.missing_joints = self.joint_names.missing_text()
        self.inputs.joint_stamp_jumps_backwards = self._transforms.stamp_jumps
        self.inputs.last_joint_stamp_jump = self._transforms.last_stamp_jump
        if self._contact_free is not None:
            self.inputs.contact_free = (self._contact_free.steps, self._contact_free.late)
        fqn = self.get_fully_qualified_name()     # two nodes of one name in two namespaces stay apart
        array = build_diagnostics(self.get_clock().now().to_msg(), fqn, self.inputs, sensors, period,
                                  node_name=fqn)
        missing = self.joint_names.missing()
        watched = self.joint_names.watched
        health = {n: SensorInputs(self._needs(h), unit_warning=h.unit_warning,
                                  missing_joints=[j for j in missing if n in watched.get(j, ())])
                  for n, h in self._handles.items()}
        self.pub_diag.publish(self.health.apply(array, now, self._input_timeout(), health, self._input_types))

    def _input_timeout(self) -> float:
        return float(self.params.values["input_timeout"])

    def _measured_clock(self, h: SensorHandle) -> StreamClock:
        """The clock of ``h``'s measured topic (optional on the default topic until it arrived)."""
        sub = h.endpoints.measured if h.endpoints is not None else None
        topic = sub.topic_name if sub is not None else h.config.measured_topic()
        return self.health.stream(topic, type_name(enc.MEASURED_TYPES[h.config.measured_type()]),
                                  optional=not str(h.config.values.get("measured_topic") or ""))

    def _needs(self, h: SensorHandle) -> List[StreamClock]:
        """The streams sensor ``h`` needs: contacts (unless event-driven), joint states when joints
        move its body, its free body's pose, its measured stream."""
        # event-driven contacts are silent while nothing touches: not a missing input
        needs = [] if self._contact_free is not None else [self._contacts_clock]
        if any(h.name in s for s in self.joint_names.watched.values()):
            needs.append(self._joints_clock)
        body: Optional[str] = str(h.config.values["attachment"])
        while body:   # up the attached bodies to a free one (a link has no parent body)
            if body in self._pose_clocks:
                needs.append(self._pose_clocks[body])
                break
            body = self.world.body_parent(body)
        needs.append(self._measured_clock(h))
        return needs

    def _clock_hint(self, h: SensorHandle) -> Optional[str]:
        """:meth:`.StampPairer.offset_hint` of ``h``; None while its paired streams stopped and for a
        header-less measured type."""
        now, timeout = time.monotonic(), self._input_timeout()
        if h.headerless or any(c.stopped(now, timeout) for c in self._paired_streams(h)):
            return None
        return h.pairer.offset_hint()

    def _paired_streams(self, h: SensorHandle) -> List[StreamClock]:
        """Its measured stream and the contacts (unless event-driven: silence is contact-free)."""
        return [self._measured_clock(h)] + ([] if self._contact_free is not None else [self._contacts_clock])

    def _input_hint(self, streams: List[StreamClock]) -> str:
        """The ``streams`` missing or stopped now, naming topic and type ('' when none)."""
        return missing_input_hint(streams, time.monotonic(), self.health.started, self._input_timeout())

    def _coerce_request(self, params: List[Parameter]) -> List[Parameter]:
        """``pre_set_parameters``: int -> double leniency; an unknown name refused and logged
        (``ParameterNotDeclaredException`` naming the closest key); a wrong type kept for _validate."""
        unknown = [u.message() for u in unknown_keys(
            [p.name for p in params if not self.has_parameter(p.name)],
            **known_keys({n: h.config.type for n, h in self._handles.items()},
                         list(self.params.values.get("bodies") or [])))]
        if unknown:
            self.get_logger().warning(f"set_parameters refused: {'; '.join(unknown)}")
            raise ParameterNotDeclaredException(unknown)
        checked, self._wrong_types = wrong_type_errors(self, self.params.coerce_request(params))
        return checked

    def _validate(self, params: List[Parameter]) -> SetParametersResult:
        """``on_set_parameters``: check the request whole; refuse it naming each bad parameter."""
        wrong, self._wrong_types = self._wrong_types, {}
        try:
            self._pending = self.params.check([p for p in params if p.name not in wrong],
                                              list(wrong.values()))
        except ConfigError as exc:
            self.get_logger().warning(f"set_parameters refused: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        if not self._has_post_set:
            self._apply(params)
        return SetParametersResult(successful=True)

    def _apply(self, params: List[Parameter]) -> None:
        """``post_set_parameters``: apply the request :meth:`_validate` checked."""
        changes, self._pending = self._pending, {}
        node_wide = changes.pop("", {})
        self.params.values.update(node_wide)
        self.live = self.live.updated(node_wide)
        for h in self._handles.values():
            h.pairer.tolerance_ns = self.live.tolerance_ns
        for name, values in changes.items():
            for note in self._handles[name].apply_live(values):
                self.get_logger().info(note)


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point (``args``: ``sys.argv`` when None): 0 (also after ``-h``, SIGINT,
    SIGTERM), or 2 on a configuration error."""
    argv = list(sys.argv if args is None else args)
    node_main.usage().parse_known_args(node_main.user_args(argv))   # exits 0 after printing -h / --help
    return node_main.run_node("sensor_node", lambda: SensorNode(command_line=argv), args,
                              config_errors=(ConfigError,),
                              spin=lambda n: node_main.spin_node(n, str(n.params.values["executor"])),
                              sigterm_as_interrupt=False)


def run() -> None:
    """The ``sensor_node`` executable: :func:`main`, then :func:`.main.exit_now` (no slow teardown)."""
    node_main.exit_now(main)


if __name__ == "__main__":
    run()
