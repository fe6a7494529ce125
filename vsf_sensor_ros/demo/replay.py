"""Replay a recording through the sensor node: the real Punyo poke (data.json, through
``wrench_contact_node`` on a UR5e world) or an MCAP bag (:mod:`~vsf_sensor_ros.demo.replay_bag`);
docs/real_data.md and docs/demo.md."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from vsf_sensor_ros.demo import replay_camera as rc
from vsf_sensor_ros.demo.processes import ManagedProcess, module_command
from vsf_sensor_ros.demo.replay_analysis import (CONTACT_BODIES, HPA_TO_PA, MAX_LAG_FRAMES, PRESSURE_SENSOR,
                                                 PRESSURE_TOPIC, TARE_SAMPLES, Recording, ReplayError,
                                                 analyse, estimate_lag, load_recording, poke_onset,
                                                 print_report, replay_figure)
from vsf_sensor_ros.demo.ros_env import run_isolated, usage_error
from vsf_sensor_ros.demo.session import NodeRun, SessionResult, demo_child_env

FORCE_SENSOR = "punyo_force"
WRENCH_FRAME = "base"
MIN_FORCE_N = 1.0             # wrench deadband: above the recorded contact-free noise (max 0.92 N)
MAX_BIAS_SAMPLES = 30
STARTUP_TIMEOUT_S = 60.0
PREDICT_WAIT_S = 60.0
WARMUP_LEAD_S = 100.0         # warm-up frames are stamped this long before the recording
WARMUP_STEP_S = 0.05
# measured: the contacts of a frame arrive ~2 ms after the wrench completing them (one more hop than
# the pressure's direct path)
WRENCH_NODE_LATENCY_S = 0.002
DRAIN_WAIT_S = 15.0           # longest wait for late predictions after the last frame
TARES = (f"{PRESSURE_SENSOR}/tare", "wrench_contact_node/tare")   # the pressure's tare, the wrench bias
INFO_FRAMES = 10              # CameraInfo goes with the warm-up and the first frames only


def write_session_files(out: Path, measured_delay: float = 0.0, camera: Optional[Any] = None,
                        membrane_mount: Optional[np.ndarray] = None) -> Dict[str, Path]:
    """Write ``ur5e.urdf``, ``sensor_node.yaml`` (pressure ``measured_delay`` s) and with ``camera``
    ``membrane_force_node.yaml`` (dense force on the membrane at ``membrane_mount``) in ``out``; paths."""
    import yaml

    from vsf_sensor_ros.demo.ur5e import TOOL_LINK, punyo_mount_transform, ur5e_urdf
    from vsf_sensor_ros.embedded_world import BUBBLE_MESH_FILE, DATA_DIR
    urdf = out / "ur5e.urdf"
    urdf.write_text(ur5e_urdf())
    params = {
        "robot_description_path": str(urdf.resolve()),
        "world_frame": "world",
        "contact_body_names": CONTACT_BODIES,
        "bodies": ["punyo"],
        "punyo": {"mesh": str(DATA_DIR / BUBBLE_MESH_FILE), "parent_link": TOOL_LINK,
                  "transform": [float(v) for v in punyo_mount_transform().reshape(-1)], "pose_topic": ""},
        "tare_samples": TARE_SAMPLES,
        "tare_on_start": False,
        "calibration_file": str((out / "calibration.yaml").resolve()),
        "max_stamp_difference": 0.0,     # adaptive: half the longer period of the two streams
        "qos.inputs.reliability": "reliable",
        "qos.inputs.depth": 500,
        "sensors": [PRESSURE_SENSOR, FORCE_SENSOR],
        PRESSURE_SENSOR: {"type": "PunyoPressureSensor", "attachment": "punyo",
                          "measured_type": "std_msgs/msg/Float32", "measured_topic": PRESSURE_TOPIC,
                          "measured_scale": HPA_TO_PA, "measured_delay": float(measured_delay),
                          "base_normal_local": [0.0, 0.0, 1.0]},
        FORCE_SENSOR: {"type": "PunyoDenseForceSensor", "attachment": "punyo"},
    }
    files = {"urdf": urdf}
    if camera is not None:
        from vsf_sensor_ros.demo.replay_camera import (MEASURED_TOPIC, MEMBRANE_BODY, SESSION_BODIES,
                                                       membrane_node_params)
        params.update({"contact_body_names": SESSION_BODIES, "bodies": ["punyo", MEMBRANE_BODY],
                       MEMBRANE_BODY: {"mesh": str(camera.attachment_mesh), "parent_link": TOOL_LINK,
                                       "transform": np.asarray(membrane_mount, float).reshape(-1).tolist(),
                                       "pose_topic": ""},
                       FORCE_SENSOR: {"type": "PunyoDenseForceSensor", "attachment": MEMBRANE_BODY,
                                      "measured_topic": MEASURED_TOPIC}})
        files["membrane"] = membrane_node_params(camera, out)
    yml = out / "sensor_node.yaml"
    yml.write_text(yaml.safe_dump({"sensor_node": {"ros__parameters": params}}, sort_keys=False))
    files["params"] = yml
    return files


def wrench_node_args(urdf: Path, time_shift: float, bias_samples: int) -> List[str]:
    """The ROS arguments of the wrench contact node for the recording."""
    from vsf_sensor_ros.demo.ur5e import TOOL_LINK, punyo_apex_local, punyo_mount_transform

    def arr(v: Any) -> str:
        return "[" + ",".join(repr(float(x)) for x in np.asarray(v).reshape(-1)) + "]"
    return ["-p", f"robot_description_path:={urdf.resolve()}",
            "-p", f"contact_body_names:=[{','.join(CONTACT_BODIES)}]", "-p", "body:=punyo",
            "-p", "other_body:=world", "-p", f"body_parent:={TOOL_LINK}",
            "-p", f"body_transform:={arr(punyo_mount_transform())}",
            "-p", f"contact_point:={arr(punyo_apex_local())}", "-p", "force_sign:=1.0",
            "-p", f"time_shift:={time_shift!r}", "-p", f"bias_samples:={bias_samples}",
            "-p", "bias_on_start:=false", "-p", f"min_force:={MIN_FORCE_N!r}", "-p", "qos_depth:=500"]


class PokeReplay(NodeRun):
    """The poke replayed into ``out`` at ``speed``, wrenches ``time_shift`` s later, wrench bias and pressure
    tare before ``tare_frame``; with ``camera`` also ``membrane_force_node`` and the relay.  :meth:`run`
    raises :class:`ReplayError`: a child exits, nodes not ready or silent, or the time is up."""

    call_timeout_s = 15.0
    error, exit_reason = ReplayError, "child_exited"

    def __init__(self, rec: Recording, out: Path, speed: float, time_shift: float, bias_samples: int,
                 tare_frame: int, domain_id: int, camera: Optional[Any] = None,
                 contact_vertex: int = 0) -> None:
        super().__init__(None, domain_id, STARTUP_TIMEOUT_S + 10.0 * len(rec) / speed + 60.0)
        self.rec, self.out, self.speed, self.tare_frame, self.camera = rec, out, speed, tare_frame, camera
        self.vertex, self.offset, self.streams = contact_vertex, None, None
        self.result.tare.message = "not called"
        self.mount = None if camera is None else rc.membrane_mount_transform(camera)
        # the contacts of frame k leave the wrench node time_shift / speed after its pressure
        delay = min(1.0, time_shift / speed + WRENCH_NODE_LATENCY_S)
        files = write_session_files(out, delay, camera, self.mount)
        env = demo_child_env(domain_id, None)

        def child(name: str, module: str, args: List[str], child_env: Dict[str, str] = env) -> ManagedProcess:
            return ManagedProcess(name, module_command(f"vsf_sensor_ros.{module}", args), child_env,
                                  out / "logs" / f"{name}.log")
        self.node_proc = child("sensor_node", "ros.sensor_node", ["--params-file", str(files["params"])])
        # twice the wrenches: each frame also has its interpolated one
        remap = [] if camera is None else ["-r", f"contacts:={rc.WRENCH_CONTACTS_TOPIC}"]
        self.wrench_proc = child("wrench_contact_node", "contact_sources.wrench_contact_node",
                                 wrench_node_args(files["urdf"], time_shift, 2 * bias_samples) + remap)
        self.children = self.watched = [self.node_proc, self.wrench_proc]
        if camera is not None:
            # one BLAS thread: one-core figures, and the other nodes are not stalled
            one = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
            self.children.append(child("membrane_force_node", "ros.membrane_force_node",
                                       ["--params-file", str(files["membrane"])], {**env, **one}))
        # one wrench interpolated at t_k + time_shift per frame k, 1 us late (float seconds near 1.7e9 hold
        # 0.24 us; a hair early would leave the frame waiting for the next recorded wrench)
        extra_t = [t + time_shift + 1e-6 for t in rec.t if t + time_shift + 1e-6 <= rec.t[-1]
                   and np.min(np.abs(rec.t - (t + time_shift))) > 1e-5]
        self.extra = [(t, np.array([np.interp(t, rec.t, rec.wrench[:, i]) for i in range(6)]))
                      for t in extra_t]
        self.first_ns = int(round(rec.t[0] * 1e9))

    def run(self, say: Any = print) -> SessionResult:
        """Start, warm up, replay, tare, drain; children always stopped.  The result (tare offset Pa:
        :attr:`offset`)."""
        from geometry_msgs.msg import WrenchStamped
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float32
        try:
            # the depth images stay out of the bag (92 MB); their CameraInfo is in it
            self.open_ros("vsf_replay", TARES + ("save_calibration",),
                          [] if self.camera is None else ["/" + rc.DEPTH_TOPIC, "/" + rc.COLOUR_TOPIC])
            qos = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
            self.pubs = {"js": self._node.create_publisher(JointState, "joint_states", qos),
                         "w": self._node.create_publisher(WrenchStamped, "wrench", qos),
                         "hpa": self._node.create_publisher(Float32, PRESSURE_TOPIC, qos)}
            needs = {"/joint_states": 3, "/wrench": 2, "/contacts": 2, f"/{PRESSURE_TOPIC}": 2}
            if self.camera is not None:
                self.streams = rc.CameraStreams(self.camera, self.rec, self.vertex, self.mount, self._node,
                                                self._ctx, self.domain_id, qos)
                needs.update(self.streams.needs)
            for p in self.children:
                p.start()
            say(f"ROS_DOMAIN_ID={self.domain_id} (localhost only); children's output in {self.out / 'logs'}/")
            # both nodes offer their tare and subscribe to every topic published here
            self._wait_ready(lambda: (all(self._clients[s].service_is_ready() for s in TARES) and all(
                self._node.count_subscribers(t) >= n for t, n in needs.items())
                and (self.streams is None or self.streams.matched())),
                STARTUP_TIMEOUT_S, "nodes not ready", "not_ready", 0.5)
            warm = self._warm_up()
            rec = self.rec
            say(f"nodes ready after {time.monotonic() - self.t0:.1f} s ({warm} warm-up frames); replaying "
                f"{len(rec)} frames ({rec.t[-1] - rec.t[0]:.2f} s) at speed {self.speed:g}")
            self._replay(say)
            self._drain()
        finally:
            if self.streams is not None:
                self.streams.close()
            self.stop()
        return self.result

    def _frames(self, topic: str) -> int:
        """Messages on ``topic`` stamped at or after the recording's start (warm-up excluded)."""
        from vsf_sensor_ros.demo.recorder import header_stamp_ns
        log = self.recorder.logs.get(topic)
        return 0 if log is None else sum(1 for d in log.data if header_stamp_ns(d) >= self.first_ns)

    def _publish_wrench(self, t: float, wrench: np.ndarray) -> None:
        from geometry_msgs.msg import WrenchStamped

        from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
        w = WrenchStamped()
        w.header.stamp, w.header.frame_id = ns_to_stamp(int(round(t * 1e9))), WRENCH_FRAME
        (w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
         w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z) = map(float, wrench)
        self.pubs["w"].publish(w)

    def _publish(self, k: int, t: float, with_hpa: bool) -> None:
        """Frame ``k`` stamped ``t``: wrench, joint state, hPa when ``with_hpa``, the camera frame (its
        CameraInfo in the warm-up and the first :data:`INFO_FRAMES` only)."""
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float32

        from vsf_sensor_ros.demo.ur5e import UR5E_JOINTS
        from vsf_sensor_ros.ros.messages.stamps import ns_to_stamp
        stamp = ns_to_stamp(int(round(t * 1e9)))
        self._publish_wrench(t, self.rec.wrench[k])
        js = JointState()
        js.header.stamp, js.header.frame_id = stamp, ""
        js.name, js.position = list(UR5E_JOINTS), [float(v) for v in self.rec.q[k]]
        self.pubs["js"].publish(js)
        if with_hpa:
            self.pubs["hpa"].publish(Float32(data=float(self.rec.pressure_pa[k] / HPA_TO_PA)))
        if self.streams is not None:
            self.streams.publish(k, stamp, info=not (with_hpa and k >= INFO_FRAMES), frame=with_hpa)

    def _warm_up(self) -> int:
        """Frame 0, restamped before the recording, until a prediction comes back (subscriptions matched,
        kernels compiled); the frames sent.  No pressure: the Float32 has no stamp to tell it apart."""
        warm, predictions = 0, f"/{PRESSURE_SENSOR}/predicted"
        while not len(self.recorder.logs.get(predictions, ())):
            self._publish(0, self.rec.t[0] - WARMUP_LEAD_S + WARMUP_STEP_S * warm, with_hpa=False)
            warm += 1
            self._spin_for(WARMUP_STEP_S)
            self.recorder.refresh()
            self._check("warming up")
            if warm * WARMUP_STEP_S > PREDICT_WAIT_S or warm * WARMUP_STEP_S >= WARMUP_LEAD_S - 1.0:
                raise ReplayError(f"no prediction from the sensor node after {warm} warm-up frames:\n"
                                  f"{self.node_proc.tail()}\n{self.wrench_proc.tail()}", "no_prediction",
                                  value=warm)
        return warm

    def _replay(self, say: Any) -> None:
        """Every frame and extra wrench at its recorded time / speed, the tare before :attr:`tare_frame`."""
        rec, speed = self.rec, self.speed
        start = time.monotonic()
        for k in range(len(rec)):
            if k == self.tare_frame:
                self._tare(k, say)
                start = time.monotonic() - (rec.t[k] - rec.t[0]) / speed
            while self.extra and self.extra[0][0] < rec.t[k]:
                te, we = self.extra.pop(0)
                self._wait_until(start + (te - rec.t[0]) / speed)
                self._publish_wrench(te, we)
            self._wait_until(start + (rec.t[k] - rec.t[0]) / speed)
            self._publish(k, rec.t[k], with_hpa=True)
            self._check("replaying")

    def _tare(self, k: int, say: Any) -> None:
        """The wrench bias, then the pressure tare once every cloud so far is predicted, then the save."""
        resp = self._call_trigger("wrench_contact_node/tare", "taring the wrench bias")
        say(f"wrench bias before frame {k}: " + ("no answer" if resp is None else resp.message))
        self._spin_until(lambda: (self._frames(f"/{PRESSURE_SENSOR}/predicted")
                                  >= max(self._frames("/contacts"), k - MAX_LAG_FRAMES)),
                         "waiting for the predictions before the tare", time.monotonic() + PREDICT_WAIT_S,
                         0.05)
        self._spin_for(0.2)
        resp = self._call_trigger(f"{PRESSURE_SENSOR}/tare", "taring")
        tare = self.result.tare
        tare.message = "no answer" if resp is None else resp.message
        tare.success = resp is not None and resp.success
        seen = {t: self._frames(t) for t in ("/contacts", f"/{PRESSURE_SENSOR}/predicted")}
        seen[f"/{PRESSURE_TOPIC}"] = len(self.recorder.logs.get(f"/{PRESSURE_TOPIC}", ()))   # no header: all
        say(f"tare before frame {k} (recorded so far: {seen}): {'ok' if tare.success else 'FAILED'}: "
            f"{tare.message}")
        if tare.success and self._call_trigger("save_calibration", "saving the calibration") is not None:
            self.offset = _offset_from(self.out / "calibration.yaml")

    def _drain(self) -> None:
        """Wait (bounded: DDS may repair seconds late) for every cloud's prediction and every camera
        frame's estimate, then until quiet."""
        def caught_up() -> bool:
            done = self._frames(f"/{PRESSURE_SENSOR}/predicted") >= self._frames("/contacts")
            return done and (self.camera is None or self._frames("/" + rc.MEASURED_TOPIC)
                             >= len(self.rec) - rc.REFERENCE_FRAMES + 1)
        self._spin_until(caught_up, "draining", time.monotonic() + DRAIN_WAIT_S, 0.05)
        last, quiet = -1, 0
        while quiet < 10:
            self._spin_for(0.1)
            n = len(self.recorder.logs.get(f"/{PRESSURE_SENSOR}/predicted", []))
            quiet = quiet + 1 if n == last else 0
            last = n
            self._check("draining")


def _offset_from(calibration: Path) -> Optional[float]:
    """The pressure tare (Pa) from the saved calibration; None when it holds none."""
    import yaml
    try:
        doc = yaml.safe_load(calibration.read_text())
        return float(doc["sensors"][PRESSURE_SENSOR]["calibration"]["tare"][0])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, IndexError):
        return None


def build_parser() -> argparse.ArgumentParser:
    """The replay's command line (--recording required: a bare run must not replay into the cwd)."""
    ap = argparse.ArgumentParser(prog="vsf_replay",
                                 description="Replay a recording through the sensor node: the real Punyo "
                                             "poke (data.json) or an MCAP bag.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                 epilog="example: vsf_replay --recording punyo_poke_ur5e/data.json "
                                        "--out demo_out/real (make demo-real); example: vsf_replay "
                                        "--recording "
                                        "demo_out/embedded/run.mcap --out demo_out/replay")
    ap.add_argument("--recording", type=Path, required=True,
                    help="the recording (required): data.json of the poke, or an MCAP bag (a .mcap file "
                         "or a rosbag2 folder) from ros2 bag record or the demo; the suffix decides")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default: demo_out/real for data.json, demo_out/replay for a bag)")
    ap.add_argument("--speed", type=float, default=1.0,
                    help="playback speed, 0.01-1000 (1 = recorded pace; a bag also takes 0 = as fast as the "
                         "node keeps up, unless a measured topic is header-less)")
    ap.add_argument("--params-file", type=Path, default=None,
                    help="bag only: the sensor node's parameter file (default: sensor_node.yaml beside "
                         "the bag, which the demo writes)")
    ap.add_argument("--tare-at", type=float, default=None,
                    help="bag only: tare after the last contacts message stamped at or before this "
                         "(s; default: the demo's rule, at 1 s or before the first touch)")
    ap.add_argument("--frames", default="",
                    help="data.json only: replay frames A:B (Python slice, e.g. 30:130)")
    ap.add_argument("--camera", choices=("auto", "off"), default="auto",
                    help="data.json only; auto: also replay the camera frames beside the recording "
                         "(camera/) through membrane_force_node, when present; off: the pressure and "
                         "wrench only")
    ap.add_argument("--camera-colour", action="store_true",
                    help="data.json only: also publish the camera's colour frames, so membrane_force_node "
                         "adds the membrane's sliding (optical flow) and tangential forces; off by default")
    ap.add_argument("--lag", default="auto",
                    help="data.json only: wrench time shift in s, or 'auto' (cross-correlation of dp with "
                         "|F - bias|)")
    return ap


def recording_kind(path: Path) -> Optional[str]:
    """``"json"`` (data.json or its folder), ``"mcap"`` (a ``.mcap`` or another folder), else None."""
    if path.suffix.lower() == ".json" or (path / "data.json").is_file():
        return "json"
    return "mcap" if path.suffix.lower() == ".mcap" or path.is_dir() else None


def _parse_frames(text: str) -> Optional[Tuple[int, int]]:
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d*)\s*:\s*(\d*)\s*", text)
    if not m:
        raise ValueError(f"--frames must look like A:B, got {text!r}")
    a, b = int(m.group(1) or 0), int(m.group(2)) if m.group(2) else 1 << 30
    if b <= a:
        raise ValueError(f"--frames {text!r} is empty: B must be greater than A")
    return a, b


def _camera_run(camera: Optional[Any], rec: Recording, args: argparse.Namespace) -> Tuple[Any, int]:
    """The estimator's run in this process and the contact vertex, or ``(None, 0)`` (saying why)."""
    if camera is not None:
        run = rc.library_run(camera, rec)
        vertex = rc.contact_vertex(run, rec)
        print(f"camera: {len(camera.depth)} depth frames; predicted contact at membrane vertex {vertex} "
              "(pressed in most)")
        return run, vertex
    if args.camera == "off":
        print("camera off: the dense force is predicted only")
    else:
        from vsf_sensor_ros.embedded_world import ASSETS_ENV, KINOVA_PUNYO_MESH_FILE
        missing = rc.missing_camera_files(args.recording)
        ply = [f for f in missing if f.name == KINOVA_PUNYO_MESH_FILE]
        hint = f" (set {ASSETS_ENV} to the folder holding {KINOVA_PUNYO_MESH_FILE})" if ply else ""
        print(f"dense-force files not found: {', '.join(map(str, missing))} missing{hint}: the dense "
              "force is predicted only")
    return None, 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point: 0 on success, 1 when the session or analysis failed, 2 on bad arguments, 130 Ctrl-C."""
    ap = build_parser()
    args = ap.parse_args(argv)
    usage = partial(ap.print_usage, sys.stderr)
    kind = recording_kind(args.recording)
    if kind == "mcap":
        from vsf_sensor_ros.demo import replay_bag
        return replay_bag.main(args, usage)
    from vsf_sensor_ros.demo.summary import clear_outputs
    try:
        if kind is None:
            raise ValueError(f"--recording {args.recording}: neither a .json recording nor an MCAP bag "
                             "(.mcap file or rosbag2 folder)")
        if args.params_file is not None or args.tare_at is not None:
            raise ValueError("--params-file and --tare-at apply to an MCAP bag only")
        if args.camera_colour and args.camera == "off":
            raise ValueError("--camera-colour needs the camera: not with --camera off")
        out = args.out = args.out if args.out is not None else Path("demo_out/real")
        frames = _parse_frames(args.frames)
        if not 0.01 <= args.speed <= 1000:
            raise ValueError(f"--speed must be 0.01-1000, got {args.speed}")
        try:
            lag_arg = None if args.lag == "auto" else float(args.lag)
        except ValueError:
            lag_arg = math.nan
        if lag_arg is not None and not (lag_arg >= 0 and math.isfinite(lag_arg)):
            raise ValueError(f"--lag must be 'auto' or seconds >= 0, got {args.lag!r}")
        rec = load_recording(args.recording, frames)
        onset = poke_onset(rec)
        camera = (rc.load_camera(args.recording, frames, colour=args.camera_colour) if args.camera == "auto"
                  else None)
        if camera is not None and len(camera.depth) != len(rec):
            raise ValueError(f"{len(camera.depth)} camera frames for {len(rec)} recorded frames")
        clear_outputs(out, ("run.mcap", "metadata.yaml", "summary.json", "pressure_real.png",
                            "calibration.yaml", "membrane_force.npz", "membrane_force.png",
                            "membrane_force_node.yaml", "logs/membrane_force_node.log"))
    except (ValueError, ReplayError) as exc:
        return usage_error(usage, exc)
    bias_samples = max(5, min(MAX_BIAS_SAMPLES, onset - 5))
    shift, lag = estimate_lag(rec, bias_samples) if lag_arg is None else (None, lag_arg)
    tare_frame = onset - 3
    print(f"recording: {len(rec)} frames, poke from frame {onset}; wrench bias from the last "
          f"{bias_samples} before frame {onset - 3}; "
          f"F/T lag {lag * 1000:.0f} ms" + (f" ({shift} frames, estimated)" if shift is not None else ""))

    def session(domain_id: int) -> int:
        from vsf_sensor_ros.demo.recorder import write_bag
        run, vertex = _camera_run(camera, rec, args)
        replay = PokeReplay(rec, out, args.speed, lag, bias_samples, tare_frame, domain_id, camera, vertex)
        result = replay.run()
        bag = write_bag(result.logs.values(), out)
        summary, series = analyse(result, replay.offset, tare_frame, rec)
        summary["pressure"]["lag_s"] = lag
        summary["pressure"]["lag_fitted_in_sample"] = shift is not None
        summary["bag"] = {"path": str(bag["path"]), "topics": len(bag["counts"])}
        if run is not None:
            try:
                summary["membrane_force"] = rc.analyse_membrane(result.logs, run, rec, camera, vertex, out)
            except RuntimeError as exc:
                raise ReplayError(str(exc), "membrane") from None
            summary["definitions"].update(rc.MEMBRANE_DEFINITIONS)
        (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        replay_figure(series, summary).savefig(out / "pressure_real.png", dpi=110)
        print_report(summary, lag, shift is not None, out)
        return 0
    return run_isolated(session, (ReplayError,), "replay", out / "logs")


if __name__ == "__main__":
    sys.exit(main())
