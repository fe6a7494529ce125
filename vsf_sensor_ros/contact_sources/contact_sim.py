"""Klampt/ODE physics run of a press scene, read out as contract contacts (no ROS).

The force on ``body1`` by ``body2`` is ``-getContactForces(body1, body2)``: Klampt returns the force on the
second body, whatever its docstring says (measured; see docs/demo.md, the simulator).
"""
from __future__ import annotations

import itertools
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import klampt
import numpy as np
import torch

from vsf_sensor_ros.sensor.base_sensor import ContactState, SimState
from vsf_sensor_ros.sensor.errors import SettingError
from vsf_sensor_ros.world import klampt_to_matrix

from .sim_world import BUBBLE, CONTACT_PADDING, OBJECT, TABLE, SimScene
from .trajectory import PressTrajectory

Pair = Tuple[str, str]


def contacts_between(sim: klampt.Simulator, id1: int, id2: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(points, forces)`` ``(N, 3)`` float64, world frame (m, N on body 1 by body 2) of the last step
    between Klampt objects ``id1`` and ``id2`` (contact feedback enabled for the pair); ``N = 0`` when apart.
    """
    pts = np.asarray(sim.getContacts(id1, id2), dtype=np.float64).reshape(-1, 7)[:, :3]
    # getContactForces(a, b) is the force on b by a (module doc): negate for the force on a.
    frc = -np.asarray(sim.getContactForces(id1, id2), dtype=np.float64).reshape(-1, 3)
    return pts, frc


def add_klampt_contact_sensor(sim: klampt.Simulator, robot_index: int, name: str, link_index: int,
                              settings: Mapping[str, str]) -> klampt.SimRobotSensor:
    """Klampt's own C++ ``ContactSensor`` (``SimRobotSensor``) on a robot link in ``sim``, reading the pairs
    with contact feedback; ``settings``: Klampt strings (one equal to Klampt's value is not set: Klampt cannot
    parse ``inf``).  ValueError: Klampt rejects a setting (named)."""
    sensor = sim.controller(robot_index).addSensor(name, "ContactSensor")
    sensor.setSetting("link", str(int(link_index)))
    for key, value in settings.items():
        if key == "link" or sensor.getSetting(key) == value:
            continue
        try:
            sensor.setSetting(key, value)
        except RuntimeError as exc:
            raise ValueError(f"Klampt ContactSensor {name!r} rejects {key} = {value!r}: {exc}") from None
    return sensor


class ContactSimulation:
    """Steps a press scene (:func:`~.sim_world.build_scene`) along ``trajectory`` in Klampt's ODE simulator:
    ``sim_dt`` (s per step) >= ``physics_dt`` > 0; contacts among ``contact_body_names`` (default bubble,
    object, table); the bubble a soft skin (``bubble_stiffness`` N/m, inf = rigid; ``bubble_damping`` N s/m;
    ``bubble_padding`` m: docs/demo.md); ``max_contacts`` (>= 1) per pair and step.  The ranges are
    ``contact_sim_node``'s parameter checks; here only the bodies are checked.

    Raises:
        SettingError: ``setting`` ``'contact_body_names'``, ``value`` the unknown bodies, ``reason``
            ``'unknown_body'``, ``expected`` the known bodies.
    """

    def __init__(self, scene: SimScene, trajectory: PressTrajectory, sim_dt: float = 0.01,
                 physics_dt: float = 0.001, contact_body_names: Optional[Sequence[str]] = None,
                 bubble_stiffness: float = 3000.0, bubble_damping: float = 30.0,
                 bubble_padding: float = 0.01, max_contacts: int = 12) -> None:
        names = list(contact_body_names) if contact_body_names is not None else [BUBBLE, OBJECT, TABLE]
        known = list(scene.link_names) + [OBJECT, TABLE]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SettingError(f"contact_body_names has unknown bodies {unknown}; known: {known}",
                               "contact_body_names", unknown, "unknown_body", known)
        self.scene, self.trajectory, self.contact_body_names = scene, trajectory, names
        self.sim_dt, self.physics_dt = float(sim_dt), float(physics_dt)
        self.time, self.steps = 0.0, 0

        robot = scene.robot
        robot.setConfig(trajectory.configs[0].tolist())
        self.sim = klampt.Simulator(scene.world)
        self.sim.setSimStep(float(physics_dt))
        # Klampt clusters each pair's ODE contacts to at most this many points; the ODE solve cost in
        # contact grows steeply with it (hold phase: ~3x from 8 to 20).
        self.sim.setSetting("maxContacts", str(int(max_contacts)))
        ids = scene.body_ids
        present = [n for n in names if n in ids]
        links = set(scene.link_names)
        # robot-robot pairs are not simulated (no self-collision of interest)
        self._pairs: List[Tuple[str, str, int, int]] = [
            (a, b, ids[a], ids[b]) for a, b in itertools.combinations(present, 2)
            if not (a in links and b in links)]
        for _, _, ia, ib in self._pairs:
            self.sim.enableContactFeedback(ia, ib)
        bubble = self.sim.body(scene.bubble)
        bubble.setCollisionPadding(float(bubble_padding))
        self.sim.body(scene.world.rigidObject(OBJECT)).setCollisionPadding(CONTACT_PADDING)
        self.sim.body(scene.world.terrain(TABLE)).setCollisionPadding(0.0)
        if np.isfinite(bubble_stiffness):
            surf = bubble.getSurface()
            surf.kStiffness = float(bubble_stiffness)
            surf.kDamping = float(bubble_damping)
            bubble.setSurface(surf)
        self._controller = self.sim.controller(0)
        if scene.assets.pid_gains is not None:   # (kP, kI, kD)
            self._controller.setPIDGains(*(list(g) for g in scene.assets.pid_gains))
        self._drivers = np.array([robot.driver(i).getAffectedLink() for i in range(robot.numDrivers())],
                                 dtype=np.int64)
        self._command(0.0)

    def _command(self, t: float) -> None:
        q, dq = self.trajectory.command(t)
        robot = self.scene.robot
        robot.setConfig(q.tolist())
        # gravity feed-forward at the commanded posture: the PID only corrects errors
        g = np.asarray(robot.getGravityForces([0.0, 0.0, -9.8]), dtype=np.float64)
        self._controller.setPIDCommand(q.tolist(), dq.tolist(), g[self._drivers].tolist())

    def step(self) -> None:
        """Advance ``sim_dt`` seconds, commanding the trajectory at the step's end time."""
        self._command(self.time + self.sim_dt)
        self.sim.simulate(self.sim_dt)
        self.steps += 1
        self.time = self.steps * self.sim_dt
        self.sim.updateWorld()

    def contact_arrays(self) -> Dict[Pair, Tuple[np.ndarray, np.ndarray]]:
        """``{(body1, body2): (points, forces on body1)}`` of the last step, both orders of every touching
        pair, float64 ``(N, 3)``, world frame, m and N."""
        out: Dict[Pair, Tuple[np.ndarray, np.ndarray]] = {}
        for a, b, ia, ib in self._pairs:
            pts, frc = contacts_between(self.sim, ia, ib)
            if len(pts):
                out[(a, b)] = (pts, frc)
                out[(b, a)] = (pts.copy(), -frc)
        return out

    def contacts(self, dtype: torch.dtype = torch.float64) -> Dict[Pair, ContactState]:
        """:meth:`contact_arrays` as ``ContactState`` objects (no element indices)."""
        return {k: ContactState(torch.from_numpy(p).to(dtype), torch.from_numpy(f).to(dtype))
                for k, (p, f) in self.contact_arrays().items()}

    def summed_contact_force(self, body1: str, body2: str) -> np.ndarray:
        """Klampt's own summed contact force between two bodies, ``(3,)`` N, world (its magnitude only: the
        sign ignores the order).  ValueError for a body without a simulated pair."""
        for a, b, ia, ib in self._pairs:
            if {a, b} == {body1, body2}:
                return np.asarray(self.sim.contactForce(ia, ib), dtype=np.float64)
        raise ValueError(f"no simulated contact pair ({body1!r}, {body2!r}); pairs: "
                         f"{[(a, b) for a, b, _, _ in self._pairs]}")

    def joint_positions(self) -> np.ndarray:
        """``(J,)`` float64 joint positions (rad or m) in ``scene.joint_names`` order."""
        return np.asarray(self.sim.getActualConfig(0), dtype=np.float64)[self.scene.joint_dofs]

    def joint_velocities(self) -> np.ndarray:
        """``(J,)`` float64 joint velocities (rad/s or m/s) in ``scene.joint_names`` order."""
        return np.asarray(self.sim.getActualVelocity(0), dtype=np.float64)[self.scene.joint_dofs]

    def body_transform(self, name: str) -> np.ndarray:
        """``(4, 4)`` float64 body -> world of a link, the object or the table; ValueError: unknown name."""
        w = self.scene.world
        if name == TABLE:
            # the terrain's geometry is stored in world coordinates; its body frame is the slab centre
            T = np.eye(4)
            T[:3, 3] = self.scene.assets.table_center
            return T
        if name == OBJECT:
            return klampt_to_matrix(w.rigidObject(OBJECT).getTransform())
        if name in self.scene.link_names:
            return klampt_to_matrix(self.scene.robot.link(name).getTransform())
        raise ValueError(f"unknown body {name!r}; known: {self.scene.link_names + [OBJECT, TABLE]}")

    def sim_state(self, dtype: torch.dtype = torch.float64,
                  extra_bodies: Sequence[str] = ()) -> SimState:
        """The current step as a ``SimState`` of ``dtype``: transforms of the contact bodies and
        ``extra_bodies``, ``body_states['robot']`` (URDF joint order) and :meth:`contacts`.

        Raises:
            ValueError: an unknown name in ``extra_bodies``.
        """
        names = list(self.contact_body_names) + [n for n in extra_bodies if n not in self.contact_body_names]
        T = {n: torch.from_numpy(self.body_transform(n)).to(dtype) for n in names}
        q = torch.from_numpy(self.joint_positions()).to(dtype)
        return SimState(body_transforms=T, body_states={"robot": q}, contacts=self.contacts(dtype))
