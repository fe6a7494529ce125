"""``contact_sim_node``: a Klampt physics session of a robot pressing the Punyo bubble into a box.

It stands in for the simulator bridge and the real sensors: each step it publishes the joint states, the box
pose, the contacts and stand-in measured readings.  Topics: docs/demo.md (the simulator); parameters:
``--help``.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Dict, List, Optional

import klampt
import numpy as np
from builtin_interfaces.msg import Time

from .. import embedded_world as ew
from vsf_sensor_ros.ros.main import answer_help, parameter_usage, run_node
from vsf_sensor_ros.ros.parameters import declare_spec
from vsf_sensor_ros.ros.parameter_table import Spec
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.ros.frames import sensor_frame_name, sensor_frame_transform
from vsf_sensor_ros.ros.kinds import codec_of_type, sensor_layout

from .contact_sim import ContactSimulation
from .stepping import (PACE_PARAMS, PRESS_TIMING_PARAMS, SESSION_PARAMS, SimulatorNode, finish,
                       spin_until_done)
from .sim_sensors import DEMO_SENSORS, MeasuredStream, demo_sensor_specs, independent_source
from .sim_world import BUBBLE, OBJECT, TABLE, WORLDS, build_scene, load_assets
from .trajectory import PressProfile, PressTrajectory, bubble_tip

INF = float("inf")

# name -> (default, description, read_only, (lo, hi) or None)
PARAMS: Dict[str, tuple] = {
    "world": ("embedded", "simulated world: embedded (package assets) | kinova (Kinova Gen3 + Punyo files)",
              True, None),
    "assets_dir": ("", "Kinova assets directory (empty: $VSF_ASSETS, else ../shared/fixtures/kinova_punyo)",
                   True, None),
    **PACE_PARAMS,
    "physics_dt": (0.001, "ODE integration step (s), <= sim_dt", True, (1e-5, 1.0)),
    **PRESS_TIMING_PARAMS,
    "trajectory.clearance": (0.05, "bubble tip height above the object at start and end (m)", True,
                             (1e-3, 1.0)),
    "trajectory.press_depth": (0.01, "commanded tip depth below the object's top while pressing (m)",
                               True, (0.0, 0.1)),
    "object.size": (list(ew.OBJECT_SIZE), "box extents x y z (m)", True, None),
    "object.mass": (0.3, "box mass (kg)", True, (1e-3, 100.0)),
    "bubble.stiffness": (3000.0, "bubble skin contact stiffness (N/m); inf = rigid ODE contact (chatters)",
                         True, (1.0, INF)),
    "bubble.damping": (30.0, "bubble skin contact damping (N s/m), with a finite stiffness", True,
                       (0.0, 1e6)),
    "bubble.padding": (0.01, "bubble collision padding = skin thickness (m); keep force/stiffness below it",
                       True, (1e-4, 0.05)),
    "max_contacts": (12, "most contact points per body pair and step (Klampt maxContacts; more = richer "
                         "patches, slower ODE solves)", True, (1, 1000)),
    "arm_collision": (False, "keep the arm links' collision meshes (slower; default: only bubble, "
                             "table and object collide)", True, None),
    "seed": (0, "seed of the measured streams' noise", True, (0, 2 ** 31 - 1)),
    "contact_body_names": ([BUBBLE, OBJECT, TABLE], "body index table of the contacts cloud "
                           "(body1/body2); configure the sensor node with the same list", True, None),
    "sensors": (list(DEMO_SENSORS), "demo sensors whose <s>/measured stream is published; subset of "
                + ", ".join(DEMO_SENSORS), True, None),
    "measured_source": ("independent", "where <s>/measured comes from: independent (Klampt's own "
                        "ContactSensor for the pad, the simulator's summed contact force for the load "
                        "cell; the Punyo streams stay synthetic) | model (every stream from the package's "
                        "models: synthetic)", True, None),
    **SESSION_PARAMS,
    "publish_clock": (False, "publish /clock (rosgraph_msgs/Clock) with the simulation time before every "
                             "step's messages, for nodes run with use_sim_time", True, None),
}


def sim_time_msg(t: float) -> Time:
    """Simulation seconds -> ``builtin_interfaces/Time`` (rounded to the nanosecond)."""
    ns = int(round(t * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def param_spec(name: str, default: Any, description: str, read_only: bool, bounds: Optional[tuple]) -> Spec:
    """The :class:`~vsf_sensor_ros.ros.parameter_table.Spec` of one simulator parameter; ``bounds`` give the
    range (an infinite ``hi`` is checked as ``>= lo`` only).
    """
    lo = hi = None
    if bounds is not None and not isinstance(default, bool):
        lo, hi = bounds
        if not math.isfinite(hi):
            hi = None
    return Spec(name, default, description, read_only=read_only, lo=lo, hi=hi)


SPECS: Dict[str, Spec] = {name: param_spec(name, *row) for name, row in PARAMS.items()}


class ContactSimNode(SimulatorNode):
    """The simulator node.  Raises ValueError for an invalid parameter (named), FileNotFoundError for
    missing Kinova assets.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("contact_sim_node", SPECS["rate_hz"], **kwargs)
        # declared with the sensor node's Spec machinery (descriptors, int -> double, range checks)
        self.p: Dict[str, Any] = {name: declare_spec(self, name, spec) for name, spec in SPECS.items()}
        self.check_common_parameters()
        if self.p["world"] not in WORLDS:
            raise SettingError(f"world must be one of {list(WORLDS)}, got {self.p['world']!r}", "world",
                               self.p["world"], "invalid", list(WORLDS))
        self.add_on_set_parameters_callback(self.on_set_parameters)

        # -- simulation (Klampt's INFO/WARN console chatter about URDF materials and ODE
        # joint stops would drown the node's log)
        klampt.set_log_level("ERROR")
        assets = load_assets(self.p["world"], self.p["assets_dir"] or None)
        scene = build_scene(assets, self.p["object.size"], self.p["object.mass"], self.p["arm_collision"])
        profile = PressProfile(**{k.split(".", 1)[1]: float(self.p[k]) for k in PARAMS
                                  if k.startswith("trajectory.")})
        tip = bubble_tip(np.asarray(assets.bubble_mesh.vertices), assets.bubble_normal_local)
        traj = PressTrajectory(scene.robot, scene.bubble, tip, assets.bubble_normal_local, assets.object_xy,
                               scene.touch_z(self.p["bubble.padding"]), profile,
                               scene.config_from_joints(assets.seed_config))
        self.sim = ContactSimulation(scene, traj, self.p["sim_dt"], self.p["physics_dt"],
                                     self.p["contact_body_names"], self.p["bubble.stiffness"],
                                     self.p["bubble.damping"], self.p["bubble.padding"],
                                     self.p["max_contacts"])
        self.scene = scene

        # -- measured streams
        specs = demo_sensor_specs(assets, scene.object_size)
        self.streams: List[MeasuredStream] = []
        self._attachments = sorted({specs[n].config["attachment"] for n in self.p["sensors"]})
        self._layouts = []
        for i, name in enumerate(self.p["sensors"]):
            spec = specs[name]
            self.declare_stream_parameters(name, spec, param_spec)
            att = spec.config["attachment"]
            model = scene.robot.link(att) if att in scene.link_names else scene.world.rigidObject(att)
            stream = MeasuredStream(spec, model, int(self.p["seed"]), i)
            if self.p["measured_source"] == "independent":
                stream.source = independent_source(spec, self.sim, stream.sensor)
            dense = codec_of_type(spec.config["type"]).per_vertex
            verts = np.asarray(assets.bubble_mesh.vertices) if dense else None
            # stamped like the node's prediction: a pad / load cell reads in its sensor frame <s>_frame
            T_sensor = sensor_frame_transform(stream.sensor)
            frame = sensor_frame_name(spec.name) if T_sensor is not None else ""
            layout = sensor_layout(spec.config["type"], att, stream.names, stream.sensor.measurement_errors(),
                                   verts, frame, T_sensor)
            stream.slots = layout.slots  # the entries the message carries get offset and noise
            self.streams.append(stream)
            self._layouts.append(layout)
        synthetic = [s.spec.name for s in self.streams if s.synthetic]
        self.get_logger().info(
            f"measured streams: independent {[s.spec.name for s in self.streams if not s.synthetic]}, "
            f"synthetic (the package's own model + offset + noise) {synthetic}")

        measured = [(st.spec.name, lay.codec.message) for st, lay in zip(self.streams, self._layouts)]
        self.create_outputs(measured, bool(self.p["publish_clock"]))
        self.start_stepping("contact_sim")
        self.get_logger().info(
            f"world {self.p['world']}: joints {scene.joint_names}, contact bodies "
            f"{self.p['contact_body_names']}, sensors {self.p['sensors']}; {self.p['duration_s']} s "
            f"simulated at sim_dt {self.p['sim_dt']} s, rate {self.p['rate_hz']} Hz")

    @property
    def simulated_time(self) -> float:
        """Simulation time reached, s."""
        return float(self.sim.time)

    # ------------------------------------------------------------------ stepping
    def step_once(self) -> None:
        """Advance one step and publish joint states, object pose, contacts and measured streams."""
        self.sim.step()
        state = self.sim.sim_state(extra_bodies=self._attachments)
        self.publish_step(sim_time_msg(self.sim.time), self.scene.joint_names,
                          self.sim.joint_positions().tolist(), self.sim.joint_velocities().tolist(),
                          self.sim.body_transform(OBJECT), state.contacts, state)


def usage():
    """The ``-h`` / ``--help`` text: every parameter of :data:`PARAMS` with its default."""
    return parameter_usage(
        "contact_sim_node",
        "A Klampt physics session of a robot pressing the Punyo bubble into a box: publishes "
        "joint_states, object/pose, contacts, stand-in <s>/measured readings and sim_done, stamped "
        "with simulation time.  A stand-in for a simulator bridge: do not run it on a real robot's "
        "ROS domain (its joint_states would reach the robot's listeners).",
        [(name, row[0], row[1] + ("" if row[2] else " (live)")) for name, row in PARAMS.items()],
        ["ros2 run vsf_sensor_ros contact_sim_node --ros-args -p world:=kinova -p duration_s:=20.0",
         "python -m vsf_sensor_ros.contact_sources.contact_sim_node --ros-args -p rate_hz:=0.0"])


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point (:func:`vsf_sensor_ros.ros.main.run_node`); ``--help`` prints :func:`usage` before
    touching ROS.  Returns 0 when finished or interrupted, 1 when the simulation failed, 2 on a configuration
    error.
    """
    argv = list(sys.argv if args is None else args)
    answer_help(argv, usage())   # before rclpy.init: a help request simulates and publishes nothing
    return run_node("contact_sim_node", ContactSimNode, args,
                    config_errors=(ValueError, FileNotFoundError, RuntimeError),
                    spin=spin_until_done, finish=finish)


if __name__ == "__main__":
    sys.exit(main())
