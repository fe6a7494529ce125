"""Robot and attached rigid bodies -> body transforms, on top of Klampt (docs/decisions.md)."""
from __future__ import annotations

import copy
import os
import tempfile
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import klampt
import numpy as np
import torch
import trimesh

# re-exported: ``from vsf_sensor_ros.world import ...`` serves the helpers of the three modules below
from .mesh_io import MeshLike, load_mesh, read_obj_geometry, resolve_uri, trimesh_to_klampt
from .sensor.errors import InputError
from .transforms import (klampt_to_matrix, matrix_to_klampt, rpy_from_matrix, rpy_matrix,
                         transform_from_xyz_quat, validate_transform, xyz_quat_from_transform)
from .urdf import (MOVABLE_JOINT_TYPES, UrdfError, UrdfJoint, collision_elements, mimic_order,
                   normalize_joint_axes, origin_transform, parse_urdf_joints, read_urdf)

__all__ = ["MOVABLE_JOINT_TYPES", "MeshLike", "UrdfError", "UrdfJoint",
           "WORLD_FRAME", "World", "klampt_to_matrix", "load_mesh", "matrix_to_klampt", "mimic_order",
           "normalize_joint_axes", "parse_urdf_joints", "read_obj_geometry", "resolve_uri",
           "rpy_from_matrix", "rpy_matrix", "transform_from_xyz_quat", "trimesh_to_klampt",
           "validate_transform", "xyz_quat_from_transform"]

WORLD_FRAME = "world"
"""Name of the fixed world frame (identity transform), REP 103 ``world``."""


def _mesh_piece(piece: ET.Element, what: str, base_dir: Optional[Union[str, os.PathLike]]) -> trimesh.Trimesh:
    """A ``<collision>`` mesh piece in its link's frame: the file's vertices (order and count kept), scaled
    by ``scale``, placed by ``<origin>``.  Raises as :func:`resolve_uri`; UrdfError: an unreadable file or a
    bad ``scale`` (message starts with ``what``)."""
    mesh = piece.find("geometry/mesh")
    uri = mesh.get("filename") or ""
    path = resolve_uri(uri, base_dir)
    try:
        m = load_mesh(path)
        scale = np.array([float(v) for v in (mesh.get("scale") or "1 1 1").split()])
    except ValueError as exc:
        raise UrdfError(f"{what}: mesh {uri!r}: {exc}", "mesh_unreadable", what, uri) from None
    if scale.shape != (3,):
        raise UrdfError(f"{what}: mesh {uri!r} has scale {mesh.get('scale')!r}; it needs 3 numbers",
                        "mesh_scale", what, mesh.get("scale"))
    T = origin_transform(piece, what)
    return trimesh.Trimesh((np.asarray(m.vertices) * scale) @ T[:3, :3].T + T[:3, 3], m.faces, process=False)


def _primitive_pieces(pieces: Dict[str, ET.Element], tmp: Path) -> Dict[str, trimesh.Trimesh]:
    """``{label: mesh}``: box, cylinder and sphere pieces tessellated by Klampt (a scratch URDF, one link
    per piece), each in its link's frame; UrdfError: a piece Klampt makes no triangles of (its label)."""
    if not pieces:
        return {}
    scratch = ET.Element("robot", name="collision_pieces")
    ET.SubElement(scratch, "link", name="pieces_root")
    for n, piece in enumerate(pieces.values()):
        ET.SubElement(scratch, "link", name=f"piece{n}").append(copy.deepcopy(piece))  # our names never clash
        joint = ET.SubElement(scratch, "joint", name=f"piece{n}_mount", type="fixed")
        ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
        ET.SubElement(joint, "parent", link="pieces_root")
        ET.SubElement(joint, "child", link=f"piece{n}")
    fpath = tmp / "collision_pieces.urdf"
    fpath.write_text(ET.tostring(scratch, encoding="unicode"))
    kw = klampt.WorldModel()
    if kw.loadElement(str(fpath)) < 0 or kw.numRobots() == 0:
        raise UrdfError(f"Klampt could not load the collision primitives {', '.join(pieces)}",
                        "primitives_unloadable", ", ".join(pieces))
    robot = kw.robot(0)
    out = {}
    for n, what in enumerate(pieces):
        g = robot.link(f"piece{n}").geometry()
        if not g.empty() and g.type() == "GeometricPrimitive":
            g = g.convert("TriangleMesh")
        if g.empty() or g.type() != "TriangleMesh" or len(g.getTriangleMesh().indices) == 0:
            raise UrdfError(f"{what} gives no triangles (Klampt made {'nothing' if g.empty() else g.type()} "
                            f"of it)", "no_triangles", what)
        out[what] = _klampt_trimesh(g.getTriangleMesh())
    return out


def _klampt_trimesh(tm: klampt.TriangleMesh) -> trimesh.Trimesh:
    """A copy of a Klampt ``TriangleMesh`` as a ``trimesh.Trimesh`` (float64 m, int64 faces, order kept)."""
    return trimesh.Trimesh(np.array(tm.vertices, dtype=np.float64).reshape(-1, 3),
                           np.array(tm.indices, dtype=np.int64).reshape(-1, 3), process=False)


def _link_meshes(root: ET.Element, base_dir: Optional[Union[str, os.PathLike]],
                 tmp: Path) -> Dict[str, trimesh.Trimesh]:
    """``{link: trimesh}`` (m, link frame): the union of the ``<collision>`` pieces in document order (the
    URDF rule; Klampt keeps only the first) of every link with a mesh piece or several pieces; a link with
    one primitive piece is left to Klampt.  FileNotFoundError: a missing mesh; UrdfError: a bad piece."""
    def is_mesh(piece: ET.Element) -> bool:
        return piece.find("geometry/mesh") is not None

    labelled = {link: {f"URDF link {link!r}: <collision> {k + 1} of {len(pieces)}": piece
                       for k, piece in enumerate(pieces)}
                for link, pieces in collision_elements(root).items() if len(pieces) > 1 or is_mesh(pieces[0])}
    primitives = _primitive_pieces({what: piece for pieces in labelled.values()
                                    for what, piece in pieces.items() if not is_mesh(piece)}, tmp)
    out: Dict[str, trimesh.Trimesh] = {}
    for link, pieces in labelled.items():
        parts = [_mesh_piece(piece, what, base_dir) if is_mesh(piece) else primitives[what]
                 for what, piece in pieces.items()]
        offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
        out[link] = trimesh.Trimesh(np.vstack([p.vertices for p in parts]),
                                    np.vstack([p.faces + o for p, o in zip(parts, offsets)]), process=False)
    return out


@dataclass
class _Attached:
    name: str
    obj: klampt.RigidObjectModel
    mesh: trimesh.Trimesh
    parent: Optional[str]              # None = free body
    T_parent_body: Optional[np.ndarray]
    pose: np.ndarray                   # current body -> world


class World:
    """A Klampt robot plus attached rigid bodies, queried for body transforms (build with :meth:`from_urdf`;
    not thread-safe).  Attributes: ``robot``, ``klampt_world``; ``link_names`` (as Klampt keeps them);
    ``joint_names`` (movable non-mimic, URDF order); ``body_names`` (links, :data:`WORLD_FRAME` when Klampt
    dropped it, attached bodies); ``urdf_root_link``, ``urdf_link_names`` (the TF frames, file order);
    ``joints`` (each :class:`UrdfJoint`); ``last_ignored_joints``; ``revision`` (grows on each change).
    """

    def __init__(self, klampt_world: klampt.WorldModel, robot: klampt.RobotModel,
                 joints: Sequence[UrdfJoint], urdf_links: Sequence[str]) -> None:
        """Wrap a loaded robot with its URDF ``joints`` and ``urdf_links``; prefer :meth:`from_urdf`.
        ValueError: a movable joint's child link is missing from the robot; UrdfError: a mimic cycle."""
        self.klampt_world = klampt_world
        self.robot = robot
        self.joints = list(joints)
        urdf_link_set = set(urdf_links)
        children = {j.child for j in self.joints}
        self.urdf_root_link = next((n for n in urdf_links if n not in children), "")
        # every URDF link (Klampt may drop the root): the frames robot_state_publisher announces
        self.urdf_link_names: List[str] = [n for n in urdf_links if n]
        klampt_index = {robot.link(i).getName(): i for i in range(robot.numLinks())}
        self.link_names: List[str] = [n for n in klampt_index if n in urdf_link_set]   # in Klampt's order
        self._links = [robot.link(klampt_index[n]) for n in self.link_names]

        movable = [j for j in self.joints if j.type in MOVABLE_JOINT_TYPES]
        for j in movable:
            if j.child not in klampt_index:
                raise ValueError(f"joint {j.name!r}: child link {j.child!r} not in the Klampt robot")
        self.joint_names: List[str] = [j.name for j in movable if j.mimic is None]
        self._joint_dof: Dict[str, int] = {j.name: klampt_index[j.child] for j in movable}
        dof = self._joint_dof
        self._mimic_names = {j.name for j in movable if j.mimic is not None}
        # (joint, its dof, source dof, multiplier, offset), sources first: one pass sets every mimic from
        # the same message; a mimic of a joint that is not movable (or not in the URDF) is left alone
        self._mimic_steps: List[Tuple[str, int, int, float, float]] = [
            (j.name, dof[j.name], dof[j.mimic[0]], j.mimic[1], j.mimic[2])
            for j in mimic_order(movable) if j.mimic[0] in dof]
        self._q = np.asarray(robot.getConfig(), dtype=np.float64)
        self._frames: List[str] = [] if WORLD_FRAME in klampt_index else [WORLD_FRAME]
        self._attached: Dict[str, _Attached] = {}
        self.body_names: List[str] = []
        self._index: Dict[str, int] = {}
        self._T = np.zeros((0, 4, 4))
        self._name_map_cache: Dict[Tuple[str, ...], Tuple[np.ndarray, np.ndarray, List[str]]] = {}
        self.last_ignored_joints: List[str] = []
        self.revision = 0
        self._rebuild_body_table()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_urdf(cls, urdf: Union[str, os.PathLike],
                  base_dir: Optional[Union[str, os.PathLike]] = None) -> World:
        """Load a robot from URDF text (starts with ``<``) or a ``.urdf`` / ``.urdf.xacro`` path; mesh URIs
        resolve against ``base_dir`` (default: the file's directory).  Collision meshes are read here, Klampt
        loads only the kinematics; joint axes are normalised (one UserWarning names them).

        Raises:
            FileNotFoundError: the URDF file or a mesh does not exist.
            UrdfError: a zero/non-finite axis, a mimic cycle, malformed joint values, unexpandable xacro, or a
                collision piece without triangles or unreadable.
            ValueError: not a URDF, relative meshes without ``base_dir``, or Klampt fails to load it.
        """
        text, file_dir = read_urdf(urdf)
        base_dir = file_dir if base_dir is None else base_dir
        try:
            root = ET.fromstring(text)
        except ET.ParseError as exc:
            raise ValueError(f"URDF is not valid XML: {exc}") from None
        if root.tag != "robot":
            raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
        joints = parse_urdf_joints(root)              # raises UrdfError for a zero axis
        rescaled = normalize_joint_axes(root)
        if rescaled:
            warnings.warn("URDF joint axes not of unit length were normalised (as robot_state_publisher "
                          "does; a joint turns by q, not q * |axis|): "
                          + ", ".join(f"{n!r} xyz={a}" for n, a in rescaled), stacklevel=2)
        links = [link.get("name") for link in root.findall("link")]
        kw = klampt.WorldModel()
        with tempfile.TemporaryDirectory(prefix="vsf_urdf_") as tmp:
            meshes = _link_meshes(root, base_dir, Path(tmp))
            for link in root.findall("link"):       # Klampt reads no mesh file: the meshes are set below
                for el in link.findall("visual") + link.findall("collision") * (link.get("name") in meshes):
                    link.remove(el)
                if link.get("name") in meshes:      # a placeholder: Klampt sets no geometry on a bare link
                    placeholder = ET.SubElement(ET.SubElement(link, "collision"), "geometry")
                    ET.SubElement(placeholder, "sphere", radius="1")
            name = (root.get("name") or "robot").replace("/", "_")
            fpath = Path(tmp) / f"{name}.urdf"
            fpath.write_text(ET.tostring(root, encoding="unicode"))
            idx = kw.loadElement(str(fpath))
        if idx < 0 or kw.numRobots() == 0:
            raise ValueError("Klampt failed to load the URDF (see its log above)")
        robot = kw.robot(kw.numRobots() - 1)
        for i in range(robot.numLinks()):
            mesh = meshes.get(robot.link(i).getName())
            if mesh is not None:
                robot.link(i).geometry().setTriangleMesh(trimesh_to_klampt(mesh))
        return cls(kw, robot, joints, links)

    def attach_body(self, name: str, mesh: MeshLike, parent_link: Optional[str],
                    T_parent_body: Optional[np.ndarray] = None,
                    base_dir: Optional[Union[str, os.PathLike]] = None) -> None:
        """Add rigid body ``name`` with ``mesh`` (path / URI or trimesh; body frame, m; vertex order kept),
        fixed to ``parent_link`` (a link, :data:`WORLD_FRAME` or an attached body) by the ``(4, 4)`` body ->
        parent ``T_parent_body`` (identity when None), or free (``parent_link`` None, posed by
        :meth:`set_body_pose`, initially ``T_parent_body``).  ``base_dir`` resolves a relative mesh path.

        Raises:
            InputError: ``name`` empty (``reason`` ``'empty'``) or taken (``'exists'``), ``parent_link``
                unknown (``'unknown_body'``, ``expected`` the known bodies), invalid transform; ValueError:
                invalid mesh.
            FileNotFoundError: mesh file missing.
        """
        if not isinstance(name, str) or not name:
            raise InputError(f"body name must be a non-empty string, got {name!r}", "name", name, "empty")
        if name in self._index:
            raise InputError(f"body {name!r} already exists", "name", name, "exists")
        if parent_link is not None and parent_link not in self._index:
            raise InputError(f"unknown parent link {parent_link!r}; known: {', '.join(self.body_names)}",
                             "parent_link", parent_link, "unknown_body", self.body_names)
        T = np.eye(4) if T_parent_body is None else validate_transform(
            T_parent_body, f"T_parent_body of {name!r}")
        m = load_mesh(mesh, base_dir)
        obj = self.klampt_world.makeRigidObject(name)
        obj.geometry().setTriangleMesh(trimesh_to_klampt(m))
        free = parent_link is None
        self._attached[name] = _Attached(name, obj, m, parent_link, None if free else T,
                                         T.copy() if free else np.eye(4))
        self._rebuild_body_table()

    def _rebuild_body_table(self) -> None:
        self.body_names = list(self.link_names) + self._frames + list(self._attached)
        self._index = {n: i for i, n in enumerate(self.body_names)}
        self._T = np.tile(np.eye(4), (len(self.body_names), 1, 1))
        self._n_links = len(self.link_names)
        # links whose row of _T matches the robot's current configuration
        self._links_fresh = np.zeros(self._n_links, dtype=bool)
        self._link_sets: Dict[Tuple[str, ...], np.ndarray] = {}
        self._robot_dirty = self._bodies_dirty = True
        self.revision += 1

    # ------------------------------------------------------------------ state updates

    def set_body_pose(self, name: str, T_world_body: np.ndarray, checked: bool = False) -> None:
        """Set the ``(4, 4)`` body -> world pose (m) of a free body (``checked``: one this world validated,
        restored bit for bit; the snap is not idempotent).  InputError (nothing changes): ``name``
        not a free body (``reason`` ``'not_free'``, ``expected`` the free bodies) or one that follows a link
        (``'attached'``, ``expected`` its parent), or an invalid transform."""
        a = self._attached.get(name)
        if a is None:
            free = [b for b, x in self._attached.items() if x.parent is None]
            raise InputError(f"{name!r} is not a free body; free bodies: {', '.join(free) or '(none)'}",
                             "name", name, "not_free", free)
        if a.parent is not None:
            raise InputError(f"body {name!r} is attached to {a.parent!r}; its pose follows that body",
                             "name", name, "attached", a.parent)
        a.pose = T_world_body.copy() if checked else validate_transform(T_world_body, f"pose of {name!r}")
        self._bodies_dirty, self.revision = True, self.revision + 1

    def set_joint_positions(self, names: Sequence[str], positions: Sequence[float]) -> List[str]:
        """Apply ``JointState`` names and positions (rad or m, finite) by URDF joint name, any order and
        subset, atomically; unknown names are ignored and returned (also :attr:`last_ignored_joints`).  Mimic
        joints not named follow ``multiplier * source + offset``; a named one keeps its value (as
        robot_state_publisher).

        Raises:
            InputError: no positions (``argument`` ``'positions'``, ``reason`` ``'empty'``); length mismatch
                (``'count'``, ``value`` the positions' count, ``expected`` the names'); a NaN/inf position
                (``argument`` the joint, ``'not_finite'``); a joint named twice (``argument`` ``'names'``,
                ``value`` the joint, ``'duplicate'``).
        """
        pos = np.asarray(positions, dtype=np.float64).reshape(-1)
        names = list(names)
        if pos.size == 0:
            raise InputError(f"JointState has no positions (names: {names[:8]})", "positions", 0, "empty")
        if len(names) != pos.size:
            raise InputError(f"JointState has {len(names)} names but {pos.size} positions", "positions",
                             pos.size, "count", len(names))
        if not np.isfinite(pos).all():
            i = int(np.flatnonzero(~np.isfinite(pos))[0])
            raise InputError(f"joint {names[i]!r} has non-finite position {pos[i]}", names[i], float(pos[i]),
                             "not_finite")
        key = tuple(names)
        cached = self._name_map_cache.get(key)
        if cached is None:
            lookup = self._joint_dof                  # actuated and mimic joints
            known = [i for i, n in enumerate(names) if n in lookup]
            dof = [lookup[names[i]] for i in known]
            if len(set(dof)) != len(dof):
                uniq, counts = np.unique([names[i] for i in known], return_counts=True)
                raise InputError(f"joint {str(uniq[counts > 1][0])!r} appears more than once in JointState",
                                 "names", str(uniq[counts > 1][0]), "duplicate")
            ignored = [n for n in names if n not in lookup]
            given = set(names)
            steps = [(d, s, m, o) for (n, d, s, m, o) in self._mimic_steps if n not in given]
            cached = (np.array(known, dtype=np.int64), np.array(dof, dtype=np.int64), ignored, steps)
            if len(self._name_map_cache) < 64:
                self._name_map_cache[key] = cached
        src, dst, ignored, steps = cached
        q, before = self._q, self._q.tobytes()
        q[dst] = pos[src]
        for d, s, m, o in steps:                      # dependency order: sources first
            q[d] = m * q[s] + o
        if q.tobytes() != before:                    # forward kinematics only for a changed configuration
            self._robot_dirty, self.revision = True, self.revision + 1
        self.last_ignored_joints = list(ignored)
        return list(ignored)

    def joint_positions(self) -> np.ndarray:
        """``(J,)`` float64 positions of :attr:`joint_names` (no mimics)."""
        return self._q[[self._joint_dof[n] for n in self.joint_names]].copy()

    def configuration(self) -> np.ndarray:
        """The whole configuration, mimic joints included (float64 copy), for :meth:`set_configuration`."""
        return self._q.copy()

    def set_configuration(self, q: np.ndarray) -> None:
        """Restore a :meth:`configuration` snapshot (nothing re-derived).  InputError: not a finite vector of
        this world's size (``argument`` ``'q'``, ``value`` its shape, ``reason`` ``'shape'`` or
        ``'not_finite'``, ``expected`` the size)."""
        q = np.asarray(q, dtype=np.float64)
        if q.shape != self._q.shape or not np.isfinite(q).all():
            raise InputError(f"configuration must be {self._q.shape[0]} finite values, got shape {q.shape}",
                             "q", q.shape, "shape" if q.shape != self._q.shape else "not_finite",
                             self._q.shape)
        if q.tobytes() != self._q.tobytes():
            self._q[:] = q
            self._robot_dirty, self.revision = True, self.revision + 1

    def update(self, bodies: Optional[Sequence[str]] = None) -> None:
        """Recompute transforms after a state change and pose the Klampt models; ``bodies`` limits the links
        read back (plus those attached bodies hang from), None = all.  ValueError: an unknown body."""
        if self._robot_dirty:
            self.robot.setConfig(self._q.tolist())
            self._links_fresh[:] = False
            self._robot_dirty, self._bodies_dirty = False, True
        need = self._links_of(bodies)
        stale = need[~self._links_fresh[need]]
        if len(stale):
            out = np.array([R + t for R, t in (self._links[i].getTransform() for i in stale.tolist())])
            self._T[stale, :3, :3] = out[:, :9].reshape(-1, 3, 3).transpose(0, 2, 1)
            self._T[stale, :3, 3] = out[:, 9:]
            self._links_fresh[stale] = True
        if self._bodies_dirty:
            # attached bodies in attach order: a parent is always attached before its child
            for a in self._attached.values():
                if a.parent is not None:
                    a.pose = self._T[self._index[a.parent]] @ a.T_parent_body
                self._T[self._index[a.name]] = a.pose
                a.obj.setTransform(*matrix_to_klampt(a.pose))
            self._bodies_dirty = False

    def _links_of(self, bodies: Optional[Sequence[str]]) -> np.ndarray:
        """Link indices to refresh for ``bodies`` (None: all), always with the attached bodies' links."""
        key = None if bodies is None else tuple(bodies)
        hit = self._link_sets.get(key)
        if hit is not None:
            return hit
        if key is None:
            idx = set(range(self._n_links))
        else:
            for b in key:
                self._check(b)
            idx = {self._index[b] for b in key if self._index[b] < self._n_links}
            for a in self._attached.values():     # every attached pose follows its parent's chain
                parent = a.parent
                while parent in self._attached:
                    parent = self._attached[parent].parent
                if parent is not None and self._index[parent] < self._n_links:
                    idx.add(self._index[parent])
        hit = np.array(sorted(idx), dtype=np.int64)
        if len(self._link_sets) < 64:
            self._link_sets[key] = hit
        return hit

    # ------------------------------------------------------------------ queries

    def body_transforms(self, dtype: torch.dtype = torch.float64,
                        device: Union[str, torch.device] = "cpu",
                        names: Optional[Sequence[str]] = None) -> Dict[str, torch.Tensor]:
        """``{name: (4, 4) tensor}`` body -> world (m) of ``dtype`` / ``device`` for ``SimState``, fresh each
        call: every body in :attr:`body_names` order, or only ``names``.  ValueError: an unknown name."""
        self.update(names)
        rows = self._T.copy() if names is None else self._T[[self._index[n] for n in names]]   # fresh copies
        T = torch.from_numpy(rows).to(dtype=dtype, device=device)
        return dict(zip(self.body_names if names is None else names, T.unbind(0)))

    def body_transform(self, name: str) -> np.ndarray:
        """Body -> world transform of one body, float64 ``(4, 4)`` copy; ValueError for an unknown body."""
        self._check(name)
        self.update()
        return self._T[self._index[name]].copy()

    def body_model(self, name: str) -> Union[klampt.RobotModelLink, klampt.RigidObjectModel]:
        """The Klampt ``RobotModelLink`` or ``RigidObjectModel`` of a body, as a sensor's ``attach()`` takes.
        InputError: unknown name (``reason`` ``'unknown_body'``, ``expected`` the known bodies), or
        :data:`WORLD_FRAME` (``'world_frame'``: no geometry)."""
        self._check(name)
        if name in self._attached:
            return self._attached[name].obj
        if name in self._frames:
            raise InputError(f"{name!r} is the fixed world frame and has no model or geometry",
                             "name", name, "world_frame")
        return self._links[self.link_names.index(name)]

    def body_mesh(self, name: str) -> Optional[trimesh.Trimesh]:
        """Triangle mesh of a body in its frame (None when it has none); ValueError for an unknown body."""
        self._check(name)
        if name in self._attached:
            return self._attached[name].mesh
        if name in self._frames:
            return None
        g = self._links[self.link_names.index(name)].geometry()
        return None if g.empty() or g.type() != "TriangleMesh" else _klampt_trimesh(g.getTriangleMesh())

    def body_parent(self, name: str) -> Optional[str]:
        """Parent of an attached body (None for a free body or a link); ValueError for an unknown body."""
        self._check(name)
        a = self._attached.get(name)
        return None if a is None else a.parent

    def body_mount(self, name: str) -> Optional[np.ndarray]:
        """The fixed ``(4, 4)`` body -> parent transform of an attached body (copy; None for a free body or a
        link); ValueError for an unknown body."""
        self._check(name)
        a = self._attached.get(name)
        return None if a is None or a.T_parent_body is None else a.T_parent_body.copy()

    @property
    def attached_body_names(self) -> List[str]:
        """Names of bodies added with :meth:`attach_body`, in attach order."""
        return list(self._attached)

    @property
    def free_body_names(self) -> List[str]:
        """Attached bodies whose pose comes from :meth:`set_body_pose`."""
        return [n for n, a in self._attached.items() if a.parent is None]

    def _check(self, name: str) -> None:
        if name not in self._index:
            raise InputError(f"unknown body {name!r}; known bodies: {', '.join(self.body_names)}",
                             "name", name, "unknown_body", self.body_names)

    def __repr__(self) -> str:
        return (f"World(robot={self.robot.getName()!r}, joints={self.joint_names}, "
                f"bodies={self.body_names})")
