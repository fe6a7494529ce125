"""``contact_sim_node``: a Klampt physics session of a robot pressing the Punyo bubble into a box, standing
in for the simulator bridge and the real sensors.  Topics: docs/demo.md (the simulator); parameters:
``--help``.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

import klampt
import numpy as np

from .. import embedded_world as ew
from vsf_sensor_ros.sensor.errors import SettingError

from .contact_sim import ContactSimulation
from .stepping import (PACE_PARAMS, PRESS_TIMING_PARAMS, SESSION_PARAMS, SimulatorNode, run_simulator,
                       sim_time_msg)
from .sim_sensors import DEMO_SENSORS, demo_sensor_specs, independent_source
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


class ContactSimNode(SimulatorNode):
    """The simulator node.  Raises ValueError for an invalid parameter (named), FileNotFoundError for
    missing Kinova assets.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("contact_sim_node", PARAMS, **kwargs)
        if self.p["world"] not in WORLDS:
            raise SettingError(f"world must be one of {list(WORLDS)}, got {self.p['world']!r}", "world",
                               self.p["world"], "invalid", list(WORLDS))

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
        self._attachments = sorted({specs[n].config["attachment"] for n in self.p["sensors"]})
        for name in self.p["sensors"]:
            att = specs[name].config["attachment"]
            model = scene.robot.link(att) if att in scene.link_names else scene.world.rigidObject(att)
            stream = self.add_stream(specs[name], model, assets.bubble_mesh.vertices)
            if self.p["measured_source"] == "independent":
                stream.source = independent_source(specs[name], self.sim, stream.sensor)
        synthetic = [s.spec.name for s in self.streams if s.synthetic]
        self.get_logger().info(
            f"measured streams: independent {[s.spec.name for s in self.streams if not s.synthetic]}, "
            f"synthetic (the package's own model + offset + noise) {synthetic}")

        self.create_outputs()
        self.start_stepping("contact_sim")
        self.get_logger().info(
            f"world {self.p['world']}: joints {scene.joint_names}, contact bodies "
            f"{self.p['contact_body_names']}, sensors {self.p['sensors']}; {self.p['duration_s']} s "
            f"simulated at sim_dt {self.p['sim_dt']} s, rate {self.p['rate_hz']} Hz")

    def step_once(self) -> None:
        """Advance one step and publish joint states, object pose, contacts and measured streams."""
        self.sim.step()
        state = self.sim.sim_state(extra_bodies=self._attachments)
        self.publish_step(sim_time_msg(self.sim.time), self.scene.joint_names,
                          self.sim.joint_positions().tolist(), self.sim.joint_velocities().tolist(),
                          self.sim.body_transform(OBJECT), state.contacts, state)


def main(args: Optional[List[str]] = None) -> int:
    """Console entry point (:func:`~.stepping.run_simulator`): 0 finished or interrupted, 1 the simulation
    failed, 2 a configuration error."""
    return run_simulator(
        "contact_sim_node", ContactSimNode,
        "A Klampt physics session of a robot pressing the Punyo bubble into a box: publishes "
        "joint_states, object/pose, contacts, stand-in <s>/measured readings and sim_done, stamped "
        "with simulation time.  A stand-in for a simulator bridge: do not run it on a real robot's "
        "ROS domain (its joint_states would reach the robot's listeners).",
        PARAMS,
        ["ros2 run vsf_sensor_ros contact_sim_node --ros-args -p world:=kinova -p duration_s:=20.0",
         "python -m vsf_sensor_ros.contact_sources.contact_sim_node --ros-args -p rate_hz:=0.0"], args)


if __name__ == "__main__":
    sys.exit(main())
