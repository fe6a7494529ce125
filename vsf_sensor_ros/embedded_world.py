"""The package's own default world, and the Kinova Gen3 + Punyo world from assets.

:func:`embedded_world` needs no files outside the package (a 4-joint arm, a Punyo-like bubble on its flange,
a table, a box) and is what the node and the demo use when no robot is configured; layout in docs/demo.md.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import trimesh

from .sensor.errors import InputError, SettingError
from .world import World, load_mesh

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Folder of the package's own data files (installed as package data)."""

EMBEDDED_URDF_FILE = "embedded_arm.urdf"
BUBBLE_MESH_FILE = "punyo_bubble.ply"

BUBBLE_BODY = "punyo"
"""Name of the bubble body (both worlds)."""
TABLE_BODY = "table"
OBJECT_BODY = "object"
END_LINK = "tool_link"
"""Flange link of the embedded arm; the bubble is fixed to it."""
EMBEDDED_JOINTS: List[str] = ["shoulder_yaw", "shoulder_pitch", "elbow_pitch", "wrist_pitch"]
EMBEDDED_LINKS: List[str] = ["base_link", "shoulder_link", "upper_arm_link", "forearm_link", "wrist_link",
                             END_LINK]

# Bubble geometry (m): 10 cm across, 3 cm tall like the real membrane (3.1 cm above its base plane).
BUBBLE_RADIUS = 0.05
BUBBLE_HEIGHT = 0.03

# Arm geometry, as written in data/embedded_arm.urdf (m).
SHOULDER_HEIGHT = 0.18      # shoulder pitch axis above the world origin
UPPER_ARM_LENGTH = 0.30     # shoulder pitch -> elbow pitch
FOREARM_LENGTH = 0.25       # elbow pitch -> wrist pitch
WRIST_LENGTH = 0.06         # wrist pitch -> flange (tool_link origin)

# Scene (m).
TABLE_SIZE = (0.6, 0.8, 0.04)
TABLE_POSITION = (0.55, 0.0, -0.02)       # box centre: top surface at z = 0
OBJECT_SIZE = (0.06, 0.06, 0.04)
OBJECT_POSITION = (0.45, 0.0, 0.02)       # resting on the table: top at z = 0.04
HOME_APEX_CLEARANCE = 0.01                # bubble apex above the object's top at HOME

ASSETS_ENV = "VSF_ASSETS"
"""Environment variable naming the Kinova/Punyo assets directory."""
KINOVA_URDF_FILE = "kinova_gen3.urdf"
KINOVA_PUNYO_MESH_FILE = "punyo_mesh_complete.ply"
KINOVA_PUNYO_TRANSFORM_FILE = "punyo2end_effector_transform.json"
KINOVA_PUNYO_TRANSFORM_KEY = "punyo2ee"
KINOVA_END_LINK = "EndEffector_Link"
KINOVA_JOINTS: List[str] = [f"Actuator{i}" for i in range(1, 8)]
KINOVA_LINKS: List[str] = ["Base_Link", "Shoulder_Link", "HalfArm1_Link", "HalfArm2_Link", "ForeArm_Link",
                           "SphericalWrist1_Link", "SphericalWrist2_Link", "Bracelet_Link", KINOVA_END_LINK]


# --------------------------------------------------------------------------- meshes

def bubble_mesh(radius: float = BUBBLE_RADIUS, height: float = BUBBLE_HEIGHT, n_rings: int = 10,
                n_segments: int = 24, n_base_rings: int = 4,
                radius_y: Optional[float] = None) -> trimesh.Trimesh:
    """A closed Punyo-like bubble: half-ellipsoid dome (height ``height``, +z) on a flat base ``z = 0``.

    Dome ring ``k`` at polar angle ``(π/2)·k/n_rings``; the base filled by ``n_base_rings - 1`` rings and a
    centre; counter-clockwise from outside.  Vertex order: apex, dome rings to the rim, base rings inwards,
    centre; ``2 + (n_rings + n_base_rings - 1) · n_segments`` vertices (314 by default).  Sizes in m;
    ``radius_y`` defaults to ``radius``.

    Raises:
        SettingError: ``setting`` the first argument at fault, ``value`` as given; ``reason``
            ``'not_positive'`` (a size not positive and finite) or ``'too_few'`` (``expected`` the least).
    """
    ry = radius if radius_y is None else radius_y
    for name, v in (("radius", radius), ("radius_y", ry), ("height", height)):
        if not (v > 0 and math.isfinite(v)):
            raise SettingError(f"bubble sizes must be positive and finite: radius={radius}, radius_y={ry}, "
                               f"height={height}", name, v, "not_positive")
    for name, v, least in (("n_rings", n_rings, 2), ("n_segments", n_segments, 3),
                           ("n_base_rings", n_base_rings, 1)):
        if v < least:
            raise SettingError(f"need n_rings >= 2, n_segments >= 3, n_base_rings >= 1; got {n_rings}, "
                               f"{n_segments}, {n_base_rings}", name, v, "too_few", least)
    S = n_segments
    phi = 2.0 * np.pi * np.arange(S) / S
    theta = 0.5 * np.pi * np.arange(1, n_rings + 1) / n_rings
    theta_sin = np.sin(theta)
    theta_sin[-1], z_ring = 1.0, height * np.cos(theta)
    z_ring[-1] = 0.0                                   # rim exactly on the base plane
    dome = np.stack([radius * np.outer(theta_sin, np.cos(phi)), ry * np.outer(theta_sin, np.sin(phi)),
                     np.repeat(z_ring[:, None], S, axis=1)], axis=-1).reshape(-1, 3)
    scale = (n_base_rings - np.arange(1, n_base_rings)) / n_base_rings     # inner base rings, outside in
    base = np.stack([radius * np.outer(scale, np.cos(phi)), ry * np.outer(scale, np.sin(phi)),
                     np.zeros((scale.size, S))], axis=-1).reshape(-1, 3)
    verts = np.concatenate([[[0.0, 0.0, height]], dome, base, [[0.0, 0.0, 0.0]]])

    j = np.arange(S)
    jn = (j + 1) % S
    apex, center = 0, len(verts) - 1
    ring = 1 + np.arange(n_rings + n_base_rings - 1)[:, None] * S + j     # (rings, S): dome then base
    # apex fan, quads between consecutive rings (dome rings go outward/down, base rings inward: the same
    # index pattern gives outward normals on both, +z-ish on the dome, -z on the base), centre fan
    a, b = ring[:-1], ring[1:]
    faces = np.concatenate([np.stack([np.full(S, apex), ring[0], ring[0, jn]], axis=1),
                            np.stack([a, b, b[:, jn]], axis=-1).reshape(-1, 3),
                            np.stack([a, b[:, jn], a[:, jn]], axis=-1).reshape(-1, 3),
                            np.stack([ring[-1], np.full(S, center), ring[-1, jn]], axis=1)])
    return trimesh.Trimesh(verts, faces, process=False)


# --------------------------------------------------------------------------- embedded world

def embedded_urdf_path() -> str:
    """Absolute path of the embedded arm's URDF (inside the installed package)."""
    return str(DATA_DIR / EMBEDDED_URDF_FILE)


def add_scene(world: World) -> None:
    """Attach the table and the object, boxes of ``TABLE_SIZE`` and ``OBJECT_SIZE`` centred on their frames
    (as data/table.ply, data/object.ply), as free bodies at their rest poses; ValueError if they exist."""
    for body, size, xyz in ((TABLE_BODY, TABLE_SIZE, TABLE_POSITION),
                            (OBJECT_BODY, OBJECT_SIZE, OBJECT_POSITION)):
        pose = trimesh.transformations.translation_matrix(xyz)
        world.attach_body(body, trimesh.creation.box(size), None, pose)


def tool_down_joint_positions(x: float, y: float, apex_z: float) -> Dict[str, float]:
    """``{joint: rad}`` of the embedded arm putting the bubble apex at ``(x, y, apex_z)``, facing down
    (closed form, elbow up).

    Raises:
        InputError: the point is out of reach (``argument`` ``'apex'``, ``value`` ``(x, y, apex_z)``,
            ``reason`` ``'out_of_reach'``, ``expected`` the wrist's reach range from the shoulder, m).
    """
    r = math.hypot(x, y)
    wx, wz = r, apex_z + BUBBLE_HEIGHT + WRIST_LENGTH - SHOULDER_HEIGHT   # wrist, shoulder-relative
    d = math.hypot(wx, wz)
    L1, L2 = UPPER_ARM_LENGTH, FOREARM_LENGTH
    if not (abs(L1 - L2) < d < L1 + L2):
        raise InputError(f"apex ({x}, {y}, {apex_z}) is out of reach of the embedded arm", "apex",
                         (x, y, apex_z), "out_of_reach", (abs(L1 - L2), L1 + L2))
    # angles measured from the vertical (+z) toward the reach direction, as a pitch about +y does
    beta = math.atan2(wx, wz)
    alpha = math.acos((L1 * L1 + d * d - L2 * L2) / (2 * L1 * d))
    q_elbow = math.acos((d * d - L1 * L1 - L2 * L2) / (2 * L1 * L2))
    q_shoulder = beta - alpha
    q_wrist = math.pi - (q_shoulder + q_elbow)
    return dict(zip(EMBEDDED_JOINTS, (math.atan2(y, x), q_shoulder, q_elbow, q_wrist)))


HOME_APEX = (OBJECT_POSITION[0], OBJECT_POSITION[1],
             OBJECT_POSITION[2] + OBJECT_SIZE[2] / 2 + HOME_APEX_CLEARANCE)
"""Bubble apex position at :data:`HOME`: 1 cm above the object's top face centre."""
HOME: Dict[str, float] = tool_down_joint_positions(*HOME_APEX)
"""Embedded-arm configuration with the bubble facing down just above the object."""


def embedded_world(with_scene: bool = True) -> World:
    """The package's default world: :data:`EMBEDDED_LINKS`, ``world``, :data:`BUBBLE_BODY` fixed to
    :data:`END_LINK`, and with ``with_scene`` the free :data:`TABLE_BODY` and :data:`OBJECT_BODY`; at
    :data:`HOME`.
    """
    w = World.from_urdf(embedded_urdf_path())
    w.attach_body(BUBBLE_BODY, bubble_mesh(), END_LINK, np.eye(4))
    if with_scene:
        add_scene(w)
    w.set_joint_positions(list(HOME), list(HOME.values()))
    return w


# --------------------------------------------------------------------------- Kinova + Punyo

def default_assets_dir() -> Optional[Path]:
    """The Kinova/Punyo assets folder: ``$VSF_ASSETS`` when set (it wins), else
    ``../shared/fixtures/kinova_punyo`` beside the checkout when it holds the URDF, else None.  Absolute.
    """
    env = os.environ.get(ASSETS_ENV, "").strip()
    if env:
        return Path(env).expanduser().resolve()
    shared = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures" / "kinova_punyo"
    return shared.resolve() if (shared / KINOVA_URDF_FILE).is_file() else None


def kinova_assets_dir(assets_dir: Optional[Union[str, os.PathLike]], needed: Sequence[str]) -> Path:
    """``assets_dir`` (empty: :func:`default_assets_dir`), resolved.  FileNotFoundError: no folder, or one of
    the ``needed`` files missing (named)."""
    d = Path(assets_dir).expanduser() if assets_dir else default_assets_dir()
    missing = list(needed) if d is None else [f for f in needed if not (d / f).is_file()]
    if missing:
        where = d if d is not None else f"${ASSETS_ENV} or ../shared/fixtures/kinova_punyo"
        raise FileNotFoundError(f"Kinova/Punyo assets not found in {where}: {', '.join(missing)} missing "
                                f"(set the assets_dir parameter or ${ASSETS_ENV})")
    return d.resolve()


def kinova_punyo_transform(assets_dir: Union[str, os.PathLike]) -> np.ndarray:
    """The ``punyo2ee`` 4x4 (Punyo mesh frame -> ``EndEffector_Link``) from the assets JSON;
    FileNotFoundError: the JSON is missing; ValueError: the key is missing or not a 4x4."""
    path = Path(assets_dir) / KINOVA_PUNYO_TRANSFORM_FILE
    data = json.loads(path.read_text())
    if KINOVA_PUNYO_TRANSFORM_KEY not in data:
        raise ValueError(f"{path} has no key {KINOVA_PUNYO_TRANSFORM_KEY!r}; keys: {list(data)}")
    T = np.asarray(data[KINOVA_PUNYO_TRANSFORM_KEY], dtype=np.float64)
    if T.shape != (4, 4):
        raise ValueError(f"{path}: {KINOVA_PUNYO_TRANSFORM_KEY!r} must be 4x4, got shape {T.shape}")
    return T


def kinova_world(assets_dir: Optional[Union[str, os.PathLike]] = None, with_scene: bool = True) -> World:
    """Kinova Gen3 with the real Punyo mesh (vertex order kept) on ``EndEffector_Link``: bodies
    :data:`KINOVA_LINKS`, ``world``, :data:`BUBBLE_BODY` [, table, object with ``with_scene``], joints at
    zero; ``assets_dir`` defaults to :func:`default_assets_dir`.  FileNotFoundError: assets missing."""
    d = kinova_assets_dir(assets_dir, (KINOVA_URDF_FILE, KINOVA_PUNYO_MESH_FILE))
    w = World.from_urdf(str(d / KINOVA_URDF_FILE))
    mesh = load_mesh(d / KINOVA_PUNYO_MESH_FILE)
    w.attach_body(BUBBLE_BODY, mesh, KINOVA_END_LINK, kinova_punyo_transform(d))
    if with_scene:
        add_scene(w)
    return w
