"""Klampt physics scene for the contact simulator: a robot carrying the Punyo bubble, a table, a box.

Two worlds, ``embedded`` and ``kinova``, laid out as :mod:`vsf_sensor_ros.embedded_world`; only the bubble,
table and box collide unless ``arm_collision`` (docs/demo.md, the simulator).
"""
from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import klampt
import numpy as np
import trimesh

from .. import embedded_world as ew
from vsf_sensor_ros.world import (MOVABLE_JOINT_TYPES, WORLD_FRAME, load_mesh, parse_urdf_joints, resolve_uri,
                                  rpy_from_matrix, trimesh_to_klampt, validate_transform)

# body names in every simulated world: the bubble link (punyo), the static table, the pressed box
BUBBLE, TABLE, OBJECT = ew.BUBBLE_BODY, ew.TABLE_BODY, ew.OBJECT_BODY
CONTACT_PADDING = 0.0025
"""ODE collision padding (boundary layer, m) of the object (Klampt's default, set explicitly);
the table has none.  Bodies touch when their paddings meet, so the resting object floats one
padding above the table: see :meth:`SimScene.touch_z`."""
WORLDS = ("embedded", "kinova")
"""World names accepted by :func:`load_assets`."""

KINOVA_FILES = ("kinova_gen3.urdf", "punyo_mesh_complete.ply", "punyo2end_effector_transform.json")
"""Files a Kinova assets directory must hold."""


@dataclass
class SceneAssets:
    """Everything a world contributes to a physics scene: ``name`` (``embedded`` | ``kinova``), the robot's
    ``urdf_text`` (no bubble) and ``base_dir`` for its meshes, the bubble on ``end_link`` by ``(4, 4)``
    ``T_end_bubble`` (bubble -> end link), ``bubble_mesh`` (bubble frame, m; vertex order kept),
    ``bubble_normal_local`` ``(3,)``, ``bubble_mass`` (kg), ``seed_config`` (``{joint: rad}`` IK
    seed), ``pid_gains`` (``(kP, kI, kD)`` or None: the URDF's), and the layout (m, world; the table frame
    is the slab centre)."""

    name: str
    urdf_text: str
    base_dir: Optional[str]
    end_link: str
    bubble_mesh: trimesh.Trimesh
    T_end_bubble: np.ndarray
    bubble_normal_local: np.ndarray
    bubble_mass: float
    seed_config: Dict[str, float]
    pid_gains: Optional[Tuple[List[float], List[float], List[float]]] = None
    object_xy: Tuple[float, float] = (ew.OBJECT_POSITION[0], ew.OBJECT_POSITION[1])
    object_size: Tuple[float, float, float] = tuple(ew.OBJECT_SIZE)  # type: ignore[assignment]
    table_size: Tuple[float, float, float] = tuple(ew.TABLE_SIZE)  # type: ignore[assignment]
    table_center: Tuple[float, float, float] = tuple(ew.TABLE_POSITION)  # type: ignore[assignment]


def kinova_assets(assets_dir: Optional[str] = None) -> SceneAssets:
    """Kinova Gen3 with the real Punyo mesh; ``assets_dir`` empty = ``default_assets_dir()``.

    Raises:
        FileNotFoundError: the directory or a file is missing (named).  ValueError: a non-rigid mount.
    """
    d = ew.kinova_assets_dir(assets_dir, KINOVA_FILES)
    T = validate_transform(ew.kinova_punyo_transform(d), "punyo2ee")
    # Kinova's "home" posture branch (elbow up, wrist flexed): IK from here reaches a top-down press in
    # front of the base without joint flips.
    seed = dict(zip(ew.KINOVA_JOINTS, [0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]))
    return SceneAssets(
        name="kinova", urdf_text=(d / ew.KINOVA_URDF_FILE).read_text(), base_dir=str(d),
        end_link=ew.KINOVA_END_LINK, bubble_mesh=load_mesh(d / ew.KINOVA_PUNYO_MESH_FILE),
        T_end_bubble=T, bubble_normal_local=np.array([0.0, 0.0, 1.0]), bubble_mass=0.3, seed_config=seed)


def embedded_assets() -> SceneAssets:
    """The package's own 4-joint arm and generated bubble, with PID gains that track the press within a
    millimetre and load the bubble with about 10 N per cm of press.
    """
    urdf = Path(ew.embedded_urdf_path())
    return SceneAssets(
        name="embedded", urdf_text=urdf.read_text(), base_dir=str(urdf.parent), end_link=ew.END_LINK,
        bubble_mesh=ew.bubble_mesh(), T_end_bubble=np.eye(4), bubble_normal_local=np.array([0.0, 0.0, 1.0]),
        bubble_mass=0.1, seed_config=dict(ew.HOME),
        pid_gains=([300.0, 300.0, 150.0, 60.0], [0.0] * 4, [8.0, 6.0, 2.0, 0.2]))


def load_assets(world: str, assets_dir: Optional[str] = None) -> SceneAssets:
    """Assets of a named world.

    Raises:
        ValueError: ``world`` is not one of :data:`WORLDS`.  FileNotFoundError: Kinova files missing.
    """
    if world == "kinova":
        return kinova_assets(assets_dir)
    if world == "embedded":
        return embedded_assets()
    raise ValueError(f"unknown world {world!r}; use one of {list(WORLDS)}")


# --------------------------------------------------------------------------- URDF with the bubble

def _inertia(mesh: trimesh.Trimesh, mass: float) -> Tuple[np.ndarray, np.ndarray]:
    """Centre of mass and inertia (bubble frame) of a uniform solid of ``mass`` (bounding box if not closed).
    """
    if mesh.is_watertight and mesh.volume > 1e-12:
        props = mesh.copy()
        props.density = mass / mesh.volume
        return np.asarray(props.center_mass), np.asarray(props.moment_inertia)
    lo, hi = mesh.bounds
    e = hi - lo
    inertia = mass / 12.0 * np.diag([e[1] ** 2 + e[2] ** 2, e[0] ** 2 + e[2] ** 2, e[0] ** 2 + e[1] ** 2])
    return (lo + hi) / 2.0, inertia


def urdf_with_bubble(assets: SceneAssets, bubble_file: str, arm_collision: bool = False) -> str:
    """The assets' URDF text with the bubble link (mesh file ``bubble_file``) added, mesh paths made
    absolute, the arm's collision elements dropped unless ``arm_collision``.

    Raises:
        ValueError: a link named :data:`BUBBLE` already, or the end link missing.
        FileNotFoundError: a mesh referenced by the URDF does not exist.
    """
    root = ET.fromstring(assets.urdf_text)
    links = [link.get("name") for link in root.findall("link")]
    if BUBBLE in links:
        raise ValueError(f"URDF already has a link named {BUBBLE!r}")
    if assets.end_link not in links:
        raise ValueError(f"end link {assets.end_link!r} not in the URDF; links: {links}")
    if not arm_collision:
        for link in root.findall("link"):
            for col in link.findall("collision"):
                link.remove(col)
    for mesh in root.iter("mesh"):
        fn = mesh.get("filename")
        if fn:
            mesh.set("filename", str(resolve_uri(fn, assets.base_dir)))
    com, inertia = _inertia(assets.bubble_mesh, assets.bubble_mass)
    link = ET.Element("link", name=BUBBLE)
    inert = ET.SubElement(link, "inertial")
    ET.SubElement(inert, "origin", xyz=" ".join(f"{v:.9g}" for v in com), rpy="0 0 0")
    ET.SubElement(inert, "mass", value=f"{assets.bubble_mass:.9g}")
    ET.SubElement(inert, "inertia", {f"i{'xyz'[i]}{'xyz'[j]}": f"{inertia[i, j]:.9g}"
                                     for i in range(3) for j in range(i, 3)})
    col = ET.SubElement(link, "collision")
    ET.SubElement(ET.SubElement(col, "geometry"), "mesh", filename=bubble_file)
    T = validate_transform(assets.T_end_bubble, "T_end_bubble")
    joint = ET.Element("joint", name=f"{BUBBLE}_mount", type="fixed")
    ET.SubElement(joint, "origin", xyz=" ".join(f"{v:.12g}" for v in T[:3, 3]),
                  rpy=" ".join(f"{v:.12g}" for v in rpy_from_matrix(T[:3, :3])))
    ET.SubElement(joint, "parent", link=assets.end_link)
    ET.SubElement(joint, "child", link=BUBBLE)
    # Klampt reads its <klampt> block after the links; keep it last.
    root[:] = ([e for e in root if e.tag in ("link", "joint")] + [link, joint]
               + [e for e in root if e.tag not in ("link", "joint")])
    return ET.tostring(root, encoding="unicode")


# --------------------------------------------------------------------------- scene

@dataclass
class SimScene:
    """A Klampt world ready for ``klampt.Simulator``: ``world`` (robot 0 with the bubble, terrain
    :data:`TABLE`, rigid object :data:`OBJECT`), the movable ``joint_names`` and their ``(J,)`` int64
    ``joint_dofs``, ``body_ids`` (name -> Klampt id), ``object_size`` (m), ``object_top_z`` (m), the robot's
    ``link_names``."""

    assets: SceneAssets
    world: klampt.WorldModel
    robot: klampt.RobotModel
    joint_names: List[str]
    joint_dofs: np.ndarray
    body_ids: Dict[str, int]
    object_size: Tuple[float, float, float]
    object_top_z: float
    link_names: List[str] = field(default_factory=list)

    def touch_z(self, bubble_padding: float) -> float:
        """Height (m, world) at which the bubble tip first touches the resting object (top + paddings)."""
        return self.object_top_z + 2.0 * CONTACT_PADDING + float(bubble_padding)

    @property
    def bubble(self) -> klampt.RobotModelLink:
        """The bubble link (body :data:`BUBBLE`)."""
        return self.robot.link(BUBBLE)

    def config_from_joints(self, positions: Dict[str, float]) -> List[float]:
        """A full Klampt configuration, the named URDF joints set (others 0); ValueError: unknown joint."""
        q = [0.0] * self.robot.numLinks()
        index = dict(zip(self.joint_names, self.joint_dofs.tolist()))
        for name, value in positions.items():
            if name not in index:
                raise ValueError(f"{name!r} is not a movable joint; joints: {self.joint_names}")
            q[index[name]] = float(value)
        return q


def _check_size(label: str, size: Sequence[float]) -> Tuple[float, float, float]:
    s = tuple(float(v) for v in size)
    if len(s) != 3 or not all(np.isfinite(s)) or min(s) <= 0.0:
        raise ValueError(f"{label} must be three positive finite lengths (m), got {list(size)}")
    return s  # type: ignore[return-value]


def build_scene(assets: SceneAssets, object_size: Optional[Sequence[float]] = None,
                object_mass: float = 0.3, arm_collision: bool = False) -> SimScene:
    """Assemble the Klampt world: robot + bubble link, table terrain, box object (1 mm above the table, it
    settles); ``object_size`` (m) and ``object_mass`` (kg, > 0) default to the assets'.

    Raises:
        ValueError: non-positive sizes or mass, or a URDF Klampt cannot load.
    """
    size = _check_size("object_size", assets.object_size if object_size is None else object_size)
    if not (np.isfinite(object_mass) and object_mass > 0.0):
        raise ValueError(f"object_mass must be positive (kg), got {object_mass}")
    world = klampt.WorldModel()
    with tempfile.TemporaryDirectory(prefix="vsf_sim_") as tmp:
        # OFF keeps the vertex order and needs no optional Klampt importer.
        bubble_file = str(Path(tmp) / f"{BUBBLE}.off")
        assets.bubble_mesh.export(bubble_file)
        urdf_file = Path(tmp) / "robot.urdf"
        urdf_file.write_text(urdf_with_bubble(assets, bubble_file, arm_collision))
        if world.loadElement(str(urdf_file)) < 0 or world.numRobots() != 1:
            raise ValueError(f"Klampt failed to load the {assets.name} URDF with the bubble link")
    robot = world.robot(0)
    joints = parse_urdf_joints(ET.fromstring(assets.urdf_text))
    movable = [j for j in joints if j.type in MOVABLE_JOINT_TYPES and j.mimic is None]
    dofs = np.array([robot.link(j.child).getIndex() for j in movable], dtype=np.int64)
    if (dofs < 0).any():
        raise ValueError("a URDF joint's child link is missing from the Klampt robot")
    if arm_collision:
        # Environment contacts are what the sensors need; robot self-contacts are not simulated.
        for i in range(robot.numLinks()):
            for j in range(i + 1, robot.numLinks()):
                robot.enableSelfCollision(i, j, False)

    table = world.makeTerrain(TABLE)
    tmesh = trimesh.creation.box(_check_size("table_size", assets.table_size))
    # terrains have no transform: the slab is placed in world coordinates
    tmesh.apply_translation(np.asarray(assets.table_center, dtype=np.float64))
    table.geometry().setTriangleMesh(trimesh_to_klampt(tmesh))

    obj = world.makeRigidObject(OBJECT)
    obj.geometry().setTriangleMesh(trimesh_to_klampt(trimesh.creation.box(size)))
    mass = obj.getMass()
    mass.setMass(float(object_mass))
    mass.setCom([0.0, 0.0, 0.0])
    sx, sy, sz = size
    mass.setInertia([object_mass * (sy ** 2 + sz ** 2) / 12.0, object_mass * (sx ** 2 + sz ** 2) / 12.0,
                     object_mass * (sx ** 2 + sy ** 2) / 12.0])
    obj.setMass(mass)
    top = float(assets.table_center[2] + assets.table_size[2] / 2.0)     # the table's top face
    z0 = top + sz / 2.0 + 1e-3
    obj.setTransform([1, 0, 0, 0, 1, 0, 0, 0, 1], [assets.object_xy[0], assets.object_xy[1], z0])

    link_names = [robot.link(i).getName() for i in range(robot.numLinks())]
    ids = {n: robot.link(i).getID() for i, n in enumerate(link_names) if not robot.link(i).geometry().empty()}
    ids[TABLE] = table.getID()
    ids[OBJECT] = obj.getID()
    return SimScene(assets=assets, world=world, robot=robot, joint_names=[j.name for j in movable],
                    joint_dofs=dofs, body_ids=ids, object_size=size,
                    object_top_z=top + sz, link_names=link_names)


__all__ = ["BUBBLE", "TABLE", "OBJECT", "WORLDS", "CONTACT_PADDING", "WORLD_FRAME", "SceneAssets",
           "SimScene",
           "kinova_assets", "embedded_assets", "load_assets", "urdf_with_bubble", "build_scene"]
