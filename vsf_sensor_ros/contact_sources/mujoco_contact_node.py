"""``mujoco_contact_node``: MuJoCo as the contact source -- the embedded arm presses the Punyo bubble.

The MuJoCo counterpart of ``contact_sim_node`` (same topics), with MuJoCo's own force and touch sensors as
independent measured streams; see docs/mujoco.md, parameters with ``--help``.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any, Dict, Optional, Sequence

import mujoco
import numpy as np
import torch

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.contact_sources.sim_sensors import (DEMO_SENSORS, SOURCE_MUJOCO_FORCE,
                                                        SOURCE_MUJOCO_TOUCH, demo_sensor_specs,
                                                        measured_source_label)
from vsf_sensor_ros.contact_sources.sim_world import embedded_assets
from vsf_sensor_ros.contact_sources.trajectory import PressProfile
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.sensor.base_sensor import SimState

from .stepping import (PACE_PARAMS, PRESS_TIMING_PARAMS, SESSION_PARAMS, SimulatorNode, run_simulator,
                       sim_time_msg)
from .mujoco_scene import (BUBBLE, OBJECT, TABLE, MujocoScene, MujocoSceneConfig, PressPlan, load_reading,
                           pad_reading)

INF = float("inf")

_DEFAULT_CFG = MujocoSceneConfig()

# name -> (default, description, read_only, (lo, hi) or None)
PARAMS: Dict[str, tuple] = {
    **PACE_PARAMS,
    "physics_dt": (0.001, "MuJoCo integration step (s), <= sim_dt", True, (1e-5, 0.1)),
    **PRESS_TIMING_PARAMS,
    "trajectory.clearance": (0.05, "bubble apex height above the object at start and end (m)", True,
                             (1e-3, 0.2)),
    "trajectory.press_depth": (0.01, "commanded apex depth below the object's top while pressing (m)",
                               True, (0.0, 0.03)),
    "object.size": (list(ew.OBJECT_SIZE), "box extents x y z (m)", True, None),
    "object.mass": (0.3, "box mass (kg)", True, (1e-3, 100.0)),
    "arm.kp": (list(_DEFAULT_CFG.arm_kp), "position-servo stiffness per arm joint (N m/rad), URDF order",
               True, None),
    "arm.kv": (list(_DEFAULT_CFG.arm_kv), "servo damping per arm joint (N m s/rad)", True, None),
    "bubble.solref": (list(_DEFAULT_CFG.solref), "MuJoCo contact solref of the bubble skin (time constant "
                      "s, damping ratio): larger = softer", True, None),
    "friction": (_DEFAULT_CFG.friction, "sliding friction coefficient of every geom", True, (0.0, 10.0)),
    "multiccd": (True, "several contact points per convex pair (MuJoCo's multiccd flag)", True, None),
    "seed": (0, "seed of the measured streams' noise", True, (0, 2 ** 31 - 1)),
    "contact_body_names": ([BUBBLE, OBJECT, TABLE], "body index table of the contacts cloud "
                           "(body1/body2; MuJoCo body names); configure the sensor node with the same list",
                           True, None),
    "sensors": (list(DEMO_SENSORS), "demo sensors whose <s>/measured stream is published; subset of "
                + ", ".join(DEMO_SENSORS), True, None),
    "measured_source": ("independent", "where <s>/measured comes from: independent (MuJoCo's force sensor "
                        "for the pad, its touch sensor for the load cell; the Punyo streams are the "
                        "package's models: MuJoCo has no membrane) | model (every stream synthetic)",
                        True, None),
    **SESSION_PARAMS,
    "publish_clock": (False, "publish /clock with the simulation time before every step's messages", True,
                      None),
}


class MujocoContactNode(SimulatorNode):
    """The MuJoCo contact source node.  Raises ValueError for an invalid parameter (named) or a model
    MuJoCo rejects.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("mujoco_contact_node", PARAMS, **kwargs)
        p = self.p
        substeps = p["sim_dt"] / p["physics_dt"]
        if abs(substeps - round(substeps)) > 1e-6:
            raise SettingError(f"sim_dt={p['sim_dt']} must be a whole number of physics_dt={p['physics_dt']}",
                               "sim_dt", p["sim_dt"], "not_multiple", p["physics_dt"])
        self._substeps = int(round(substeps))
        names = list(p["contact_body_names"])

        # -- scene and press
        assets = embedded_assets()
        specs = demo_sensor_specs(assets, p["object.size"])
        pad = specs["punyo_pad"].config
        cfg = MujocoSceneConfig(
            object_size=tuple(float(v) for v in p["object.size"]), object_mass=float(p["object.mass"]),
            physics_dt=float(p["physics_dt"]), arm_kp=tuple(float(v) for v in p["arm.kp"]),
            arm_kv=tuple(float(v) for v in p["arm.kv"]), solref=tuple(float(v) for v in p["bubble.solref"]),
            friction=float(p["friction"]), multiccd=bool(p["multiccd"]),
            pad_T=np.asarray(pad["Tsensor"], dtype=np.float64).reshape(4, 4),
            load_radius=float(specs["object_load"].config["radius"]))
        self.scene = MujocoScene(cfg, assets.bubble_mesh)
        body = mujoco.mjtObj.mjOBJ_BODY
        missing = [b for b in names if mujoco.mj_name2id(self.scene.model, body, b) < 0]
        if missing:
            raise SettingError(f"contact_body_names {missing} are not bodies of the MuJoCo scene",
                               "contact_body_names", missing, "unknown_body")
        profile = PressProfile(**{k.split(".", 1)[1]: float(p[k]) for k in PARAMS
                                  if k.startswith("trajectory.")})
        self.plan = PressPlan(profile, (ew.OBJECT_POSITION[0], ew.OBJECT_POSITION[1]),
                              float(p["object.size"][2]))
        self.scene.reset(self.plan.targets(0.0))

        # -- measured streams
        self.sources: Dict[str, str] = {}
        for name in p["sensors"]:
            spec = specs[name]
            kind, att = spec.config["type"], spec.config["attachment"]
            # a pad model's attach() reads only the body's name (Klampt's getName)
            model = (assets.bubble_mesh if kind.startswith("Punyo")
                     else SimpleNamespace(getName=lambda a=att: a))
            stream = self.add_stream(spec, model, assets.bubble_mesh.vertices)
            label = measured_source_label(kind, att, p["measured_source"], backend="mujoco")
            if label == SOURCE_MUJOCO_FORCE:
                stream.source = (lambda names=list(stream.names): pad_reading(self.scene, names))
            elif label == SOURCE_MUJOCO_TOUCH:
                stream.source = (lambda c=spec.config: load_reading(
                    self.scene, float(c.get("minThreshold", 0.0)), float(c.get("maxThreshold", INF))))
            self.sources[name] = label
        self.get_logger().info("measured streams: "
                               + ", ".join(f"{n} <- {s}" for n, s in self.sources.items())
                               + " (MuJoCo has no counterpart of the Punyo pressure or membrane force)")

        self.create_outputs()
        self.start_stepping("mujoco_contact")
        self.get_logger().info(
            f"MuJoCo scene: joints {self.scene.joint_names}, contact bodies {names}, sensors {p['sensors']}; "
            f"{p['duration_s']} s simulated at sim_dt {p['sim_dt']} s ({self._substeps} MuJoCo steps), "
            f"rate {p['rate_hz']} Hz")

    def step_once(self) -> None:
        """Advance ``sim_dt`` and publish clock, joint states, object pose, contacts and measured streams."""
        sc = self.scene
        sc.set_targets(self.plan.targets(sc.time + float(self.p["sim_dt"])))
        sc.step(self._substeps)
        # MuJoCo's contacts and sensors after mj_step belong to the state the step started from; mj_forward
        # evaluates them (and the body poses) at the state just reached, the one stamped.
        mujoco.mj_forward(sc.model, sc.data)
        contacts = sc.contacts(self.p["contact_body_names"])
        self.publish_step(sim_time_msg(sc.time), sc.joint_names, sc.joint_positions().tolist(),
                          sc.joint_velocities().tolist(), sc.body_transform(OBJECT), contacts,
                          self._state(contacts) if self.streams else None)

    def _state(self, contacts: Dict[Any, Any]) -> Any:
        """The package's ``SimState`` of this step (body poses of the contact bodies, the contacts)."""
        bodies = {b for pair in contacts for b in pair} | {s.spec.config["attachment"] for s in self.streams}
        transforms = {b: torch.as_tensor(self.scene.body_transform(b), dtype=torch.float64) for b in bodies}
        return SimState(transforms, {}, contacts)


def main(args: Optional[Sequence[str]] = None) -> int:
    """Console entry point (:func:`~.stepping.run_simulator`): 0 finished or interrupted, 1 the simulation
    failed, 2 a configuration error."""
    return run_simulator(
        "mujoco_contact_node", MujocoContactNode,
        "MuJoCo as a contact source: steps a MuJoCo scene of the package's embedded arm pressing the "
        "Punyo bubble into a box and publishes joint_states, object/pose, contacts "
        "(sensor_msgs/PointCloud2: force on body1 by body2, world frame, from mj_contactForce), "
        "<s>/measured (the pad from MuJoCo's force sensor, the load cell from its touch sensor; the "
        "Punyo pressure and membrane force from the package's models, MuJoCo having no membrane) and "
        "sim_done.",
        PARAMS, ["mujoco_contact_node --ros-args -p rate_hz:=50.0 -p duration_s:=10.0"], args)


if __name__ == "__main__":
    sys.exit(main())
