"""MuJoCo scene of the embedded arm pressing the Punyo bubble into a box, and its contacts (no ROS).

The embedded world as MJCF (same names, so ``config/sensor_node.yaml`` reads it unchanged), MuJoCo's own pad
and load sensors, and its contacts as rows of the contract; see docs/mujoco.md.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import mujoco
import numpy as np
import torch
import trimesh
from scipy.spatial.transform import Rotation

from vsf_sensor_ros import embedded_world as ew
from vsf_sensor_ros.sensor.base_sensor import ContactState
from vsf_sensor_ros.sensor.errors import InputError, SettingError
from vsf_sensor_ros.urdf import MOVABLE_JOINT_TYPES, UrdfError, parse_urdf_joints

# body names: the bubble (punyo), the pressed box, the static table
BUBBLE, OBJECT, TABLE = ew.BUBBLE_BODY, ew.OBJECT_BODY, ew.TABLE_BODY
PAD_SITE = "punyo_pad"
"""Site and ``force`` sensor on the bubble (the pad's frame)."""
LOAD_SITE = "object_load"
"""Site and ``touch`` sensor at the object's top face (the load cell's zone)."""

Pair = Tuple[str, str]


@dataclass
class MujocoSceneConfig:
    """Physical settings of the scene (SI): ``object_size`` (m), ``object_mass`` (kg), ``physics_dt`` (s),
    ``arm_kp`` (N m/rad) / ``arm_kv`` (N m s/rad) per arm joint, ``solref`` of the bubble ``(timeconst s,
    dampratio)``, ``friction``, ``multiccd``, ``pad_T`` (``(4, 4)`` pad frame in the bubble frame),
    ``load_radius`` (m, touch zone on the object's top face).
    """

    object_size: Tuple[float, float, float] = tuple(ew.OBJECT_SIZE)  # type: ignore[assignment]
    object_mass: float = 0.3
    physics_dt: float = 0.001
    arm_kp: Tuple[float, ...] = (300.0, 300.0, 150.0, 60.0)
    arm_kv: Tuple[float, ...] = (8.0, 6.0, 2.0, 0.2)
    solref: Tuple[float, float] = (0.01, 1.0)
    friction: float = 0.8
    multiccd: bool = True
    pad_T: Optional[np.ndarray] = None
    load_radius: float = 0.03

    def validate(self, n_joints: int) -> None:
        """Raise ``SettingError`` naming the first bad value (``setting`` the field, ``value`` as given,
        ``reason`` ``'out_of_range'``; a ``solref`` time constant under 2 ``physics_dt``: ``'too_stiff'``)."""
        for label, n, positive, want in (
                ("object_size", 3, True, "3 positive lengths (m)"), ("object_mass", 1, True, "positive"),
                ("physics_dt", 1, True, "positive"), ("load_radius", 1, True, "positive"),
                ("arm_kp", n_joints, False, f"{n_joints} non-negative numbers"),
                ("arm_kv", n_joints, False, f"{n_joints} non-negative numbers"),
                ("solref", 2, True, "(timeconst, dampratio), both positive"), ("friction", 1, False, ">= 0")):
            v = np.asarray(getattr(self, label), dtype=np.float64).reshape(-1)
            if v.shape != (n,) or not np.isfinite(v).all() or (v <= 0.0 if positive else v < 0.0).any():
                raise SettingError(f"{label} must be {want}, got {getattr(self, label)}", label,
                                   getattr(self, label), "out_of_range")
        ref = np.asarray(self.solref, dtype=np.float64)
        if ref[0] < 2.0 * self.physics_dt:
            raise SettingError(f"solref timeconst {ref[0]} s must be >= 2 physics_dt "
                               f"({2 * self.physics_dt} s): "
                               "MuJoCo would stiffen it to that", "solref", self.solref, "too_stiff",
                               2 * self.physics_dt)


def robot_spec(urdf_text: str) -> mujoco.MjSpec:
    """MuJoCo's own import of the URDF's link tree: one body per link (fixed joints kept), a hinge / slide
    per movable joint (URDF name, axis, limits), inertials kept, collision geometry left out, gravity
    compensated.

    Raises:
        UrdfError: a floating or planar joint (``reason`` ``'joint_type'``, ``where`` the joint, ``value`` its
            type).
        ValueError: MuJoCo rejects the URDF (its message).
    """
    root = ET.fromstring(urdf_text)
    for j in parse_urdf_joints(root):
        if j.type not in MOVABLE_JOINT_TYPES + ("fixed",):
            raise UrdfError(f"URDF joint {j.name!r} has type {j.type!r}; the MuJoCo scene takes "
                            "revolute, continuous, prismatic and fixed joints", "joint_type", j.name, j.type)
    for link in root.iter("link"):   # the arm only carries the bubble: contacts are the bubble's alone
        for collision in link.findall("collision"):
            link.remove(collision)
    spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    spec.compiler.fusestatic = False   # keep tool_link: the bubble hangs from it
    for body in spec.bodies[1:]:
        body.gravcomp = 1.0
    return spec


def scene_spec(cfg: MujocoSceneConfig, bubble_mesh: Optional[trimesh.Trimesh] = None) -> mujoco.MjSpec:
    """The scene's spec (joints named as the URDF); ``bubble_mesh`` defaults to the package's.

    Raises:
        ValueError: a bad setting (:meth:`MujocoSceneConfig.validate`).
    """
    spec = robot_spec(Path(ew.embedded_urdf_path()).read_text())
    movable = [j.name for j in spec.joints]
    cfg.validate(len(movable))
    mesh = ew.bubble_mesh() if bubble_mesh is None else bubble_mesh
    size = np.asarray(cfg.object_size, dtype=np.float64)
    friction = [cfg.friction, 0.005, 0.0001]
    spec.option.timestep = cfg.physics_dt
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    # MuJoCo 4 runs multi-contact CCD unless disabled; 3.x only when enabled
    if hasattr(mujoco.mjtDisableBit, "mjDSBL_MULTICCD"):
        spec.option.disableflags |= 0 if cfg.multiccd else mujoco.mjtDisableBit.mjDSBL_MULTICCD
    else:
        spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_MULTICCD if cfg.multiccd else 0
    spec.add_mesh(name=BUBBLE, uservert=np.asarray(mesh.vertices, dtype=np.float64).ravel(),
                  userface=np.asarray(mesh.faces, dtype=np.int32).ravel())
    box = mujoco.mjtGeom.mjGEOM_BOX
    table = spec.worldbody.add_body(name=TABLE, pos=ew.TABLE_POSITION)
    table.add_geom(name=TABLE, type=box, size=np.asarray(ew.TABLE_SIZE) / 2.0, friction=friction)
    obj = spec.worldbody.add_body(name=OBJECT, pos=[*ew.OBJECT_POSITION[:2], size[2] / 2.0])
    obj.add_freejoint(name=OBJECT)
    obj.add_geom(name=OBJECT, type=box, size=size / 2.0, mass=cfg.object_mass, friction=friction)
    obj.add_site(name=LOAD_SITE, type=mujoco.mjtGeom.mjGEOM_SPHERE, pos=[0.0, 0.0, size[2] / 2.0],
                 size=[cfg.load_radius, 0.0, 0.0])
    bubble = spec.body(ew.END_LINK).add_body(name=BUBBLE)
    # massless: the flange's force sensor then reads the contact force alone
    bubble.add_geom(name=BUBBLE, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=BUBBLE, mass=0.0,
                    solref=cfg.solref, friction=friction)
    pad_T = np.eye(4) if cfg.pad_T is None else np.asarray(cfg.pad_T, dtype=np.float64).reshape(4, 4)
    bubble.add_site(name=PAD_SITE, type=box, size=[0.03, 0.03, 0.001], pos=pad_T[:3, 3],
                    quat=np.roll(Rotation.from_matrix(pad_T[:3, :3]).as_quat(), 1))   # MuJoCo: w first
    for name, kp, kv in zip(movable, cfg.arm_kp, cfg.arm_kv):
        servo = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        servo.set_to_position(kp=kp, kv=kv)
    site = mujoco.mjtObj.mjOBJ_SITE
    spec.add_sensor(name=PAD_SITE, type=mujoco.mjtSensor.mjSENS_FORCE, objtype=site, objname=PAD_SITE)
    spec.add_sensor(name=LOAD_SITE, type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=site, objname=LOAD_SITE)
    return spec


# --------------------------------------------------------------------------- contacts

@dataclass
class ContactRows:
    """Every active contact of one step: ``body1``, ``body2`` names; ``points`` ``(N, 3)`` (world, m);
    ``forces`` ``(N, 3)`` on body1 by body2 (N); ``normals`` ``(N, 3)`` body1 -> body2; ``depths`` (m, > 0
    overlapping)."""

    body1: List[str]
    body2: List[str]
    points: np.ndarray
    forces: np.ndarray
    normals: np.ndarray
    depths: np.ndarray

    def __len__(self) -> int:
        return len(self.body1)


def contact_rows(model: "mujoco.MjModel", data: "mujoco.MjData") -> ContactRows:
    """The contacts of ``data`` in the world frame: force on body1 = ``−frameᵀ f[:3]`` of
    ``mj_contactForce``; contacts excluded from the solver are left out.
    """
    c = data.contact
    active = np.flatnonzero(np.asarray(c.efc_address).reshape(-1) >= 0)
    f6 = np.zeros((len(active), 6))
    for row, i in enumerate(active):
        mujoco.mj_contactForce(model, data, int(i), f6[row])
    frames = np.asarray(c.frame, dtype=np.float64).reshape(-1, 3, 3)[active]

    def bodies(geoms: np.ndarray) -> List[str]:
        ids = model.geom_bodyid[np.asarray(geoms, dtype=np.int64).reshape(-1)[active]]
        return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(b)) or "" for b in ids]
    return ContactRows(bodies(c.geom1), bodies(c.geom2),
                       np.asarray(c.pos, dtype=np.float64).reshape(-1, 3)[active],
                       -np.einsum("nji,nj->ni", frames, f6[:, :3]), frames[:, 0].copy(),
                       -np.asarray(c.dist, dtype=np.float64).reshape(-1)[active])


def contacts_by_pair(rows: ContactRows, body_names: Sequence[str]) -> Dict[Pair, ContactState]:
    """``{(body1, body2): ContactState}`` of the rows between two bodies of ``body_names`` (lower index
    first, then reversed with forces negated); world frame, m and N.
    """
    index = {n: i for i, n in enumerate(body_names)}
    i1, i2 = (np.array([index.get(n, -1) for n in side], dtype=np.int64) for side in (rows.body1, rows.body2))
    keep = (i1 >= 0) & (i2 >= 0) & (i1 != i2)
    lo, hi = np.minimum(i1, i2), np.maximum(i1, i2)
    forces = np.where((i1 > i2)[:, None], -rows.forces, rows.forces)   # turned to the lower index first
    out: Dict[Pair, ContactState] = {}
    for a, b in sorted(set(zip(lo[keep].tolist(), hi[keep].tolist()))):
        rows_ab = keep & (lo == a) & (hi == b)
        pts, frc = (torch.as_tensor(x[rows_ab], dtype=torch.float64) for x in (rows.points, forces))
        out[(body_names[a], body_names[b])] = ContactState(pts, frc)
        out[(body_names[b], body_names[a])] = ContactState(pts.clone(), -frc)
    return out


# --------------------------------------------------------------------------- the scene

class MujocoScene:
    """The compiled scene with its state, servo targets, contacts and MuJoCo's own sensors; ValueError: a
    bad setting, or MuJoCo rejects the model (its message)."""

    def __init__(self, cfg: Optional[MujocoSceneConfig] = None,
                 bubble_mesh: Optional[trimesh.Trimesh] = None) -> None:
        self.cfg = cfg or MujocoSceneConfig()
        self.spec = scene_spec(self.cfg, bubble_mesh)
        self.joint_names = [j.name for j in self.spec.joints if j.type != mujoco.mjtJoint.mjJNT_FREE]
        try:
            self.model = self.spec.compile()
        except ValueError as exc:  # MuJoCo's compile errors are ValueError
            raise ValueError(f"MuJoCo rejected the scene: {exc}") from exc
        self.data = mujoco.MjData(self.model)
        self._qadr = np.array([self.model.joint(n).qposadr[0] for n in self.joint_names], dtype=np.int64)
        self._dadr = np.array([self.model.joint(n).dofadr[0] for n in self.joint_names], dtype=np.int64)
        self.bubble_geom = int(self.model.geom(BUBBLE).id)

    @property
    def time(self) -> float:
        """Simulated time (s) since the last :meth:`reset`."""
        return float(self.data.time)

    def reset(self, joints: Dict[str, float], settle_s: float = 0.3) -> None:
        """Put the arm at ``joints`` (servo-held), let the object settle for ``settle_s``, reset the clock;
        InputError as :meth:`set_targets`."""
        mujoco.mj_resetData(self.model, self.data)
        self.set_targets(joints)
        for name, q in joints.items():
            self.data.joint(name).qpos = float(q)
        mujoco.mj_forward(self.model, self.data)
        for _ in range(int(round(settle_s / self.cfg.physics_dt))):
            mujoco.mj_step(self.model, self.data)
        self.data.time = 0.0

    def set_targets(self, joints: Dict[str, float]) -> None:
        """Servo targets (rad) by URDF joint name; InputError for a non-movable name (``argument``
        ``'joints'``, ``value`` the names, ``reason`` ``'unknown_joint'``, ``expected`` the joints; nothing
        changed)."""
        bad = [n for n in joints if n not in self.joint_names]
        if bad:
            raise InputError(f"{bad} are not movable joints; joints: {self.joint_names}", "joints", bad,
                             "unknown_joint", self.joint_names)
        for name, q in joints.items():   # each servo is named as its joint
            self.data.actuator(name).ctrl = float(q)

    def step(self, n: int = 1) -> None:
        """``n`` MuJoCo steps of ``physics_dt``."""
        for _ in range(int(n)):
            mujoco.mj_step(self.model, self.data)

    def joint_positions(self) -> np.ndarray:
        """``(J,)`` float64 arm joint positions (rad), :attr:`joint_names` order."""
        return self.data.qpos[self._qadr].copy()

    def joint_velocities(self) -> np.ndarray:
        """``(J,)`` float64 arm joint velocities (rad/s)."""
        return self.data.qvel[self._dadr].copy()

    def body_transform(self, name: str) -> np.ndarray:
        """``(4, 4)`` float64 body frame -> world; KeyError for an unknown body."""
        b = self.data.body(name)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = b.xmat.reshape(3, 3), b.xpos
        return T

    def contacts(self, body_names: Sequence[str]) -> Dict[Pair, ContactState]:
        """This step's contacts between bodies of ``body_names`` (:func:`contacts_by_pair`)."""
        return contacts_by_pair(contact_rows(self.model, self.data), body_names)

    def sensor(self, name: str) -> np.ndarray:
        """MuJoCo's reading of sensor ``name`` (copy; see the module doc for the two sensors)."""
        return np.asarray(self.data.sensor(name).data, dtype=np.float64).copy()

    def bubble_in_contact(self) -> bool:
        """True when an active contact involves the bubble's geom."""
        c, g = self.data.contact, self.bubble_geom
        return bool(np.any((np.asarray(c.efc_address) >= 0) & ((np.asarray(c.geom1) == g)
                                                               | (np.asarray(c.geom2) == g))))


def pad_reading(scene: MujocoScene, names: Sequence[str]) -> np.ndarray:
    """The pad's reading in the layout of ``names`` from MuJoCo's ``force`` sensor (negated: the force on the
    bubble, pad frame), ``contact`` 1.0 while it touches; ValueError: another name."""
    f = -scene.sensor(PAD_SITE)
    value = {"contact": 1.0 if scene.bubble_in_contact() else 0.0,
             "force_x": f[0], "force_y": f[1], "force_z": f[2]}
    bad = [n for n in names if n not in value]
    if bad:
        raise ValueError(f"the MuJoCo pad measures contact, force_x, force_y, force_z; not {bad}")
    return np.array([value[n] for n in names], dtype=np.float64)


def load_reading(scene: MujocoScene, min_threshold: float = 0.0,
                 max_threshold: float = math.inf) -> np.ndarray:
    """``[in_contact, value]`` (N) of the load cell from MuJoCo's ``touch`` sensor, thresholded as the
    Isaac-style sensor (:func:`~.sim_sensors.isaac_load`).
    """
    from .sim_sensors import isaac_load
    return isaac_load(float(scene.sensor(LOAD_SITE)[0]), min_threshold, max_threshold)


class PressPlan:
    """Joint targets pressing the bubble apex straight down on the object's top face centre (``object_xy``,
    ``top_z``, m, world), timed by ``profile``, by the embedded arm's closed-form IK.  SettingError: a bad
    profile; InputError: a target out of reach (as ``embedded_world.tool_down_joint_positions``).
    """

    def __init__(self, profile: object, object_xy: Tuple[float, float], top_z: float) -> None:
        profile.validate()  # type: ignore[attr-defined]
        self.profile = profile
        self.xy = (float(object_xy[0]), float(object_xy[1]))
        self.top_z = float(top_z)
        for h in (profile.clearance, -profile.press_depth):  # type: ignore[attr-defined]
            ew.tool_down_joint_positions(self.xy[0], self.xy[1], self.top_z + h)   # raises when unreachable

    def targets(self, t: float) -> Dict[str, float]:
        """Joint targets (rad) at simulated time ``t`` (s)."""
        h = float(self.profile.height(np.array([t]))[0])  # type: ignore[attr-defined]
        return ew.tool_down_joint_positions(self.xy[0], self.xy[1], self.top_z + h)


__all__ = ["BUBBLE", "OBJECT", "TABLE", "PAD_SITE", "LOAD_SITE", "MujocoSceneConfig", "robot_spec",
           "scene_spec", "ContactRows", "contact_rows", "contacts_by_pair", "MujocoScene", "pad_reading",
           "load_reading", "PressPlan"]
