"""Robot and attached rigid bodies -> body transforms, on top of Klampt.

A :class:`World` owns one Klampt ``WorldModel`` holding a robot loaded from a
URDF plus rigid bodies attached to it (the Punyo membrane on a flange, a table,
a grasped object).  It turns a ``sensor_msgs/JointState``-like update and
free-body poses into the ``body_transforms`` dictionary of a
:class:`~vsf_sensor_ros.sensor.state.SimState`, and hands sensors the Klampt
models their ``attach()`` expects.

Conventions (DESIGN §4):

* Joints are addressed by their URDF *joint* names (what ``JointState.name``
  carries).  Klampt names its links and drivers after the URDF *child links*,
  so the URDF is parsed here and each movable joint is mapped to the Klampt
  configuration entry of its child link.
* Klampt's URDF loader drops a root link named ``world`` (it becomes Klampt's
  world frame; the fixed joint's origin is kept as the pose of the first real
  link).  :data:`WORLD_FRAME` is therefore always present as a frame with the
  identity transform, so contacts and attachments can name it.  When the root
  link has another name, Klampt adds a floating base that stays at the
  identity.
* ``package://pkg/...`` mesh URIs resolve through the ament index when it is
  available, else through the installed Python package ``pkg``, else
  relative to the URDF directory (``base_dir``) and its parents.
* ROS quaternions are ``(x, y, z, w)``; Klampt's are ``(w, x, y, z)``.  The
  helpers below take and return ROS order only.
* Klampt rotations are 9-lists in column-major order; everything public here
  is a plain ``(4, 4)`` homogeneous ``numpy``/``torch`` matrix.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import klampt
import numpy as np
import torch
import trimesh

WORLD_FRAME = "world"
"""Name of the fixed world frame (identity transform), REP 103 ``world``."""

MOVABLE_JOINT_TYPES = ("revolute", "continuous", "prismatic")
"""URDF joint types that ``set_joint_positions`` accepts (one DOF each)."""

MeshLike = Union[str, os.PathLike, trimesh.Trimesh]


# --------------------------------------------------------------------------- transforms

def transform_from_xyz_quat(xyz: Sequence[float], quat_xyzw: Sequence[float]) -> np.ndarray:
    """Homogeneous transform from a position and a ROS-ordered quaternion.

    Args:
        xyz: translation ``(x, y, z)`` in metres.
        quat_xyzw: rotation as ``(x, y, z, w)`` (ROS / ``geometry_msgs`` order,
            not Klampt's ``(w, x, y, z)``).  Normalised here; a zero or
            non-finite quaternion is rejected.

    Returns:
        ``(4, 4)`` float64 matrix ``[[R, t], [0, 0, 0, 1]]``.

    Raises:
        ValueError: wrong lengths, non-finite values, or a quaternion of norm
            below 1e-9.
    """
    p = np.asarray(xyz, dtype=np.float64).reshape(-1)
    q = np.asarray(quat_xyzw, dtype=np.float64).reshape(-1)
    if p.shape != (3,) or q.shape != (4,):
        raise ValueError(f"expected xyz of length 3 and quaternion of length 4, got {p.shape} and {q.shape}")
    if not (np.isfinite(p).all() and np.isfinite(q).all()):
        raise ValueError(f"non-finite pose: xyz={p.tolist()} quat_xyzw={q.tolist()}")
    n = float(np.linalg.norm(q))
    if n < 1e-9:
        raise ValueError(f"quaternion (x, y, z, w)={q.tolist()} has zero norm")
    x, y, z, w = q / n
    T = np.eye(4)
    T[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    T[:3, 3] = p
    return T


def xyz_quat_from_transform(T: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`transform_from_xyz_quat`.

    Args:
        T: ``(4, 4)`` homogeneous transform with a rotation block.

    Returns:
        ``(xyz, quat_xyzw)``: float64 arrays of shape ``(3,)`` and ``(4,)``,
        quaternion in ROS order with ``w >= 0``.

    Raises:
        ValueError: ``T`` is not a valid rigid transform (see
            :func:`validate_transform`).
    """
    T = validate_transform(T, "T")
    R = T[:3, :3]
    # Shepperd's method: pick the largest diagonal term for stability.
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        v = np.empty(3)
        v[i] = 0.25 * s
        v[j] = (R[j, i] + R[i, j]) / s
        v[k] = (R[k, i] + R[i, k]) / s
        w = (R[k, j] - R[j, k]) / s
        x, y, z = v
    q = np.array([x, y, z, w])
    if q[3] < 0:
        q = -q
    return T[:3, 3].copy(), q / np.linalg.norm(q)


def klampt_to_matrix(T_klampt: Tuple[Sequence[float], Sequence[float]]) -> np.ndarray:
    """Convert a Klampt ``(R, t)`` (R column-major 9-list) to a ``(4, 4)`` float64 matrix."""
    R, t = T_klampt
    T = np.eye(4)
    T[:3, :3] = np.asarray(R, dtype=np.float64).reshape(3, 3).T
    T[:3, 3] = t
    return T


def matrix_to_klampt(T: np.ndarray) -> Tuple[List[float], List[float]]:
    """Convert a ``(4, 4)`` matrix to Klampt's ``(R, t)`` (R column-major 9-list)."""
    T = np.asarray(T, dtype=np.float64)
    return T[:3, :3].T.reshape(-1).tolist(), T[:3, 3].tolist()


def validate_transform(T: object, label: str, tol: float = 1e-5) -> np.ndarray:
    """Check a rigid transform and return it as a clean float64 ``(4, 4)`` array.

    The rotation block is projected onto the nearest rotation (SVD) so that
    values printed with 8 digits (such as the Punyo mount transform) become
    exactly orthonormal; anything further than ``tol`` from a rotation is
    rejected rather than silently repaired.

    Args:
        T: array-like ``(4, 4)``.
        label: name used in error messages.
        tol: allowed max-abs deviation of ``RᵀR`` from the identity and of the
            last row from ``[0, 0, 0, 1]``.

    Raises:
        ValueError: wrong shape, non-finite entries, bottom row not
            ``[0, 0, 0, 1]``, rotation not orthonormal or a reflection.
    """
    try:
        A = np.array(T, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{label} is not a numeric 4x4 array: {exc}") from None
    if A.shape != (4, 4):
        raise ValueError(f"{label} must have shape (4, 4), got {A.shape}")
    if not np.isfinite(A).all():
        raise ValueError(f"{label} has non-finite entries: {A.tolist()}")
    if np.abs(A[3] - [0, 0, 0, 1]).max() > tol:
        raise ValueError(f"{label} bottom row must be [0, 0, 0, 1], got {A[3].tolist()}")
    R = A[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > tol or np.linalg.det(R) < 0:
        raise ValueError(f"{label} rotation block is not a proper rotation: {R.tolist()}")
    U, _, Vt = np.linalg.svd(R)
    A[:3, :3] = U @ Vt
    A[3] = [0, 0, 0, 1]
    return A


def _rpy_matrix(rpy: Sequence[float]) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


# --------------------------------------------------------------------------- URDF parsing

@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` of a URDF, as written in the file.

    Attributes:
        name, type, parent, child: the URDF attributes (link names).
        origin: ``(4, 4)`` parent-link -> joint frame at zero position.
        axis: unit axis in the joint frame (``[1, 0, 0]`` when absent).
        mimic: ``(joint, multiplier, offset)`` when the joint mimics another.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    mimic: Optional[Tuple[str, float, float]] = None


def _floats(text: Optional[str], default: Sequence[float]) -> List[float]:
    if text is None:
        return list(default)
    return [float(v) for v in text.split()]


def parse_urdf_joints(root: ET.Element) -> List[UrdfJoint]:
    """All joints of a parsed URDF ``<robot>`` element, in file order.

    Raises:
        ValueError: a joint without name, type, parent or child.
    """
    joints = []
    for j in root.findall("joint"):
        name, jtype = j.get("name"), j.get("type")
        parent, child = j.find("parent"), j.find("child")
        if not name or not jtype or parent is None or child is None:
            raise ValueError(f"URDF joint {name!r} lacks a name, type, parent or child")
        o = j.find("origin")
        T = np.eye(4)
        if o is not None:
            T[:3, :3] = _rpy_matrix(_floats(o.get("rpy"), (0, 0, 0)))
            T[:3, 3] = _floats(o.get("xyz"), (0, 0, 0))
        a = j.find("axis")
        axis = np.array(_floats(None if a is None else a.get("xyz"), (1, 0, 0)))
        n = np.linalg.norm(axis)
        axis = axis / n if n > 0 else axis
        m = j.find("mimic")
        mimic = None
        if m is not None:
            mimic = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
        joints.append(UrdfJoint(name, jtype, parent.get("link"), child.get("link"), T, axis, mimic))
    return joints


def resolve_uri(uri: str, base_dir: Optional[Union[str, os.PathLike]] = None) -> Path:
    """Resolve a mesh reference from a URDF or a parameter to an existing file.

    Accepted forms: ``package://pkg/rel/path``, ``file:///abs/path``, an
    absolute path, or a path relative to ``base_dir``.  ``package://`` is
    tried, in order, through the ament index (``share/pkg``), the installed
    Python package ``pkg``, then ``base_dir/pkg``, ``base_dir/../pkg``,
    ``base_dir/../../pkg`` and finally ``base_dir`` itself (URDFs shipped next
    to their meshes).

    Raises:
        FileNotFoundError: no candidate exists (message lists those tried).
        ValueError: a relative path or ``package://`` URI with nothing to
            resolve it against.
    """
    uri = uri.strip()
    tried: List[Path] = []
    base = Path(base_dir).resolve() if base_dir is not None else None
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        pkg, _, rel = rest.partition("/")
        if not pkg or not rel:
            raise ValueError(f"malformed package URI {uri!r}")
        try:
            from ament_index_python.packages import get_package_share_directory
            tried.append(Path(get_package_share_directory(pkg)) / rel)
        except Exception:  # noqa: BLE001 - no ament index, or the package is not in it
            pass
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            tried += [Path(p) / rel for p in spec.submodule_search_locations]
        if base is not None:
            tried += [d / pkg / rel for d in (base, base.parent, base.parent.parent)]
            tried.append(base / rel)
        elif not tried:
            raise ValueError(f"cannot resolve {uri!r}: package {pkg!r} not found and no base_dir given")
    else:
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        p = Path(path).expanduser()
        if p.is_absolute():
            tried.append(p)
        elif base is not None:
            tried.append(base / p)
        else:
            raise ValueError(f"relative mesh path {uri!r} needs base_dir (URDF given as text)")
    for c in tried:
        if c.is_file():
            return c
    raise FileNotFoundError(f"mesh {uri!r} not found; tried: {', '.join(str(c) for c in tried)}")


def load_mesh(mesh: MeshLike, base_dir: Optional[Union[str, os.PathLike]] = None) -> trimesh.Trimesh:
    """Load a triangle mesh without reordering its vertices.

    ``process=False`` keeps the file's vertex order and count: element
    indices in contact messages (``elem1``) index those vertices.

    Args:
        mesh: a path or URI (``ply``/``stl``/``obj``…, see :func:`resolve_uri`)
            or a ``trimesh.Trimesh`` (copied).
        base_dir: directory for a relative path; the current directory when
            ``None``.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file holds no triangles.
    """
    if isinstance(mesh, trimesh.Trimesh):
        m = mesh.copy()
    else:
        path = resolve_uri(os.fspath(mesh), Path.cwd() if base_dir is None else base_dir)
        m = trimesh.load(str(path), process=False, force="mesh")
        if not isinstance(m, trimesh.Trimesh):
            raise ValueError(f"{path} holds no triangle mesh")
    if len(m.faces) == 0:
        raise ValueError(f"mesh {mesh!r} has no triangles")
    return m


def trimesh_to_klampt(mesh: trimesh.Trimesh) -> klampt.TriangleMesh:
    """Copy a ``trimesh.Trimesh`` into a Klampt ``TriangleMesh`` (same vertex order)."""
    tm = klampt.TriangleMesh()
    tm.setVertices(np.ascontiguousarray(mesh.vertices, dtype=np.float64))
    tm.setIndices(np.ascontiguousarray(mesh.faces, dtype=np.int32))
    return tm


# --------------------------------------------------------------------------- world

@dataclass
class _Attached:
    name: str
    obj: klampt.RigidObjectModel
    mesh: trimesh.Trimesh
    parent: Optional[str]              # None = free body
    T_parent_body: Optional[np.ndarray]
    pose: np.ndarray                   # current body -> world


class World:
    """A Klampt robot plus attached rigid bodies, queried for body transforms.

    Build it with :meth:`from_urdf`.  Bodies are the robot's links
    (:attr:`link_names`), the fixed frame :data:`WORLD_FRAME` (identity; the
    root link Klampt drops) and the rigid bodies added with
    :meth:`attach_body`, in that order in :attr:`body_names`.

    Attributes:
        robot: the Klampt ``RobotModel``.
        klampt_world: the Klampt ``WorldModel`` holding the robot and one
            ``RigidObjectModel`` per attached body.  Their Klampt transforms
            are brought up to date by :meth:`update` (and thus by
            :meth:`body_transforms`).
        link_names: robot link names as Klampt keeps them (URDF names; the
            dropped ``world`` root and Klampt's virtual floating-base links are
            not included).
        joint_names: URDF names of the movable (revolute, continuous,
            prismatic, non-mimic) joints, in URDF order.
        body_names: every body that :meth:`body_transforms` returns.
        urdf_root_link: name of the URDF root link.
        joints: every URDF joint (:class:`UrdfJoint`), in file order.
        last_ignored_joints: names ignored by the last
            :meth:`set_joint_positions` call (not joints of this robot).

    Not thread-safe: call it from one thread (one rclpy callback group).
    """

    def __init__(self, klampt_world: klampt.WorldModel, robot: klampt.RobotModel,
                 joints: Sequence[UrdfJoint], urdf_links: Sequence[str]) -> None:
        """Wrap an already loaded robot; prefer :meth:`from_urdf`.

        Args:
            klampt_world: world containing ``robot``.
            robot: robot loaded from the URDF whose joints and links are given.
            joints: the URDF's joints (:func:`parse_urdf_joints`).
            urdf_links: the URDF's link names.

        Raises:
            ValueError: a movable joint's child link is missing from the robot.
        """
        self.klampt_world = klampt_world
        self.robot = robot
        self.joints = list(joints)
        urdf_link_set = set(urdf_links)
        children = {j.child for j in self.joints}
        roots = [n for n in urdf_links if n not in children]
        self.urdf_root_link = roots[0] if roots else ""
        klampt_index = {robot.link(i).getName(): i for i in range(robot.numLinks())}
        self.link_names: List[str] = [n for n, _ in sorted(klampt_index.items(), key=lambda kv: kv[1])
                                      if n in urdf_link_set]
        self._links = [robot.link(klampt_index[n]) for n in self.link_names]

        movable = [j for j in self.joints if j.type in MOVABLE_JOINT_TYPES]
        for j in movable:
            if j.child not in klampt_index:
                raise ValueError(f"joint {j.name!r}: child link {j.child!r} not in the Klampt robot")
        self.joint_names: List[str] = [j.name for j in movable if j.mimic is None]
        self._joint_dof: Dict[str, int] = {j.name: klampt_index[j.child] for j in movable}
        self._joint_lookup = {n: self._joint_dof[n] for n in self.joint_names}
        dof = dict(self._joint_dof)
        self._mimic_names = {j.name for j in movable if j.mimic is not None}
        mim = [(dof[j.name], dof[j.mimic[0]], j.mimic[1], j.mimic[2])
               for j in movable if j.mimic is not None and j.mimic[0] in dof]
        self._mimic = (np.array([m[0] for m in mim], dtype=np.int64),
                       np.array([m[1] for m in mim], dtype=np.int64),
                       np.array([m[2] for m in mim]), np.array([m[3] for m in mim]))

        self._q = np.asarray(robot.getConfig(), dtype=np.float64)
        self._frames: List[str] = [] if WORLD_FRAME in klampt_index else [WORLD_FRAME]
        self._attached: Dict[str, _Attached] = {}
        self.body_names: List[str] = []
        self._index: Dict[str, int] = {}
        self._T = np.zeros((0, 4, 4))
        self._name_map_cache: Dict[Tuple[str, ...], Tuple[np.ndarray, np.ndarray, List[str]]] = {}
        self.last_ignored_joints: List[str] = []
        self._rebuild_body_table()

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_urdf(cls, urdf: Union[str, os.PathLike],
                  base_dir: Optional[Union[str, os.PathLike]] = None) -> World:
        """Load a robot from URDF text (``robot_description``) or a URDF file path.

        Mesh references are resolved first (:func:`resolve_uri`; relative
        paths against ``base_dir``, which defaults to the file's directory
        for a path) and the rewritten URDF is handed to Klampt, so a URDF
        given as text with ``package://`` or relative meshes loads the same
        as from its file.

        Args:
            urdf: URDF XML text (starts with ``<``) or a path to a ``.urdf``.
            base_dir: directory for relative mesh paths and ``package://``
                fallbacks.

        Raises:
            FileNotFoundError: the URDF file or a mesh does not exist.
            ValueError: not a URDF, relative meshes without ``base_dir``, or
                Klampt fails to load it.
        """
        text_or_path = os.fspath(urdf).lstrip("\ufeff")   # a UTF-8 BOM may precede robot_description
        if text_or_path.lstrip().startswith("<"):
            text = text_or_path
        else:
            path = Path(text_or_path).expanduser()
            if not path.is_file():
                raise FileNotFoundError(f"URDF file {str(path)!r} does not exist")
            text = path.read_text()
            if base_dir is None:
                base_dir = path.resolve().parent
        try:
            root = ET.fromstring(text)
        except ET.ParseError as exc:
            raise ValueError(f"URDF is not valid XML: {exc}") from None
        if root.tag != "robot":
            raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
        for mesh in root.iter("mesh"):
            fn = mesh.get("filename")
            if fn:
                mesh.set("filename", str(resolve_uri(fn, base_dir)))
        joints = parse_urdf_joints(root)
        links = [link.get("name") for link in root.findall("link")]
        kw = klampt.WorldModel()
        with tempfile.TemporaryDirectory(prefix="vsf_urdf_") as tmp:
            name = (root.get("name") or "robot").replace("/", "_")
            fpath = Path(tmp) / f"{name}.urdf"
            fpath.write_text(ET.tostring(root, encoding="unicode"))
            idx = kw.loadElement(str(fpath))
        if idx < 0 or kw.numRobots() == 0:
            raise ValueError("Klampt failed to load the URDF (see its log above)")
        return cls(kw, kw.robot(kw.numRobots() - 1), joints, links)

    def attach_body(self, name: str, mesh: MeshLike, parent_link: Optional[str],
                    T_parent_body: Optional[np.ndarray] = None,
                    base_dir: Optional[Union[str, os.PathLike]] = None) -> None:
        """Add a rigid body with a triangle mesh.

        Args:
            name: new body name (must not clash with any body).
            mesh: mesh file path / URI or ``trimesh.Trimesh``, vertices in the
                body frame (m).  The vertex order is kept (:func:`load_mesh`).
            parent_link: a link name, :data:`WORLD_FRAME`, or an already
                attached body: the body moves rigidly with it.  ``None``: a
                free body whose pose is set by :meth:`set_body_pose`
                (initially ``T_parent_body`` or the identity).
            T_parent_body: ``(4, 4)`` body -> parent transform (identity when
                ``None``).
            base_dir: directory for a relative mesh path (current directory
                when ``None``).

        Raises:
            ValueError: name taken, unknown parent (message names it and
                lists the known bodies), invalid transform or mesh.
            FileNotFoundError: mesh file missing.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"body name must be a non-empty string, got {name!r}")
        if name in self._index:
            raise ValueError(f"body {name!r} already exists")
        if parent_link is not None and parent_link not in self._index:
            raise ValueError(f"unknown parent link {parent_link!r}; known: {', '.join(self.body_names)}")
        T = np.eye(4) if T_parent_body is None else validate_transform(
            T_parent_body, f"T_parent_body of {name!r}")
        m = load_mesh(mesh, base_dir)
        obj = self.klampt_world.makeRigidObject(name)
        obj.geometry().setTriangleMesh(trimesh_to_klampt(m))
        if parent_link is None:
            self._attached[name] = _Attached(name, obj, m, None, None, T.copy())
        else:
            self._attached[name] = _Attached(name, obj, m, parent_link, T, np.eye(4))
        self._rebuild_body_table()

    def _rebuild_body_table(self) -> None:
        self.body_names = list(self.link_names) + self._frames + list(self._attached)
        self._index = {n: i for i, n in enumerate(self.body_names)}
        self._T = np.tile(np.eye(4), (len(self.body_names), 1, 1))
        self._n_links = len(self.link_names)
        self._robot_dirty = True
        self._bodies_dirty = True

    # ------------------------------------------------------------------ state updates

    def set_body_pose(self, name: str, T_world_body: np.ndarray) -> None:
        """Set the pose of a free body (attached with ``parent_link=None``).

        Args:
            name: the free body.
            T_world_body: ``(4, 4)`` body -> world transform (m).  For a
                ``geometry_msgs/Pose`` use :func:`transform_from_xyz_quat`
                (ROS quaternion order ``x, y, z, w``).

        Raises:
            ValueError: unknown body, a body that follows a link, or an
                invalid transform.  Nothing changes on error.
        """
        a = self._attached.get(name)
        if a is None:
            free = [b for b, x in self._attached.items() if x.parent is None]
            raise ValueError(f"{name!r} is not a free body; free bodies: {', '.join(free) or '(none)'}")
        if a.parent is not None:
            raise ValueError(f"body {name!r} is attached to {a.parent!r}; its pose follows that body")
        a.pose = validate_transform(T_world_body, f"pose of {name!r}")
        self._bodies_dirty = True

    def set_joint_positions(self, names: Sequence[str], positions: Sequence[float]) -> List[str]:
        """Apply ``sensor_msgs/JointState`` positions (rad or m), matched by URDF joint name.

        Any order and any subset; joints not named keep their value; names
        that are not joints of this robot are ignored and returned (also kept
        in :attr:`last_ignored_joints`).  Atomic: on error nothing changes.

        Args:
            names: URDF joint names (``JointState.name``).
            positions: same length, finite (``JointState.position``).

        Returns:
            The ignored (unknown) names, in message order.

        Raises:
            ValueError: empty ``positions``; length mismatch; a NaN/inf
                position (message names the joint); a joint named twice.
        """
        pos = np.asarray(positions, dtype=np.float64).reshape(-1)
        names = list(names)
        if pos.size == 0:
            raise ValueError(f"JointState has no positions (names: {names[:8]})")
        if len(names) != pos.size:
            raise ValueError(f"JointState has {len(names)} names but {pos.size} positions")
        bad = ~np.isfinite(pos)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"joint {names[i]!r} has non-finite position {pos[i]}")
        key = tuple(names)
        cached = self._name_map_cache.get(key)
        if cached is None:
            known = [i for i, n in enumerate(names) if n in self._joint_lookup]
            dof = [self._joint_lookup[names[i]] for i in known]
            if len(set(dof)) != len(dof):
                uniq, counts = np.unique([names[i] for i in known], return_counts=True)
                raise ValueError(f"joint {str(uniq[counts > 1][0])!r} appears more than once in JointState")
            # mimic joints are derived from their source joint: accepted silently, not applied
            ignored = [n for n in names if n not in self._joint_lookup and n not in self._mimic_names]
            cached = (np.array(known, dtype=np.int64), np.array(dof, dtype=np.int64), ignored)
            if len(self._name_map_cache) < 64:
                self._name_map_cache[key] = cached
        src, dst, ignored = cached
        self._q[dst] = pos[src]
        m_dst, m_src, m_mul, m_off = self._mimic
        if m_dst.size:
            self._q[m_dst] = m_mul * self._q[m_src] + m_off
        self._robot_dirty = True
        self.last_ignored_joints = list(ignored)
        return list(ignored)

    def joint_positions(self) -> np.ndarray:
        """Current positions of :attr:`joint_names` (float64, rad or m)."""
        return self._q[[self._joint_lookup[n] for n in self.joint_names]].copy()

    def update(self) -> None:
        """Recompute transforms if anything changed and push them into the Klampt models.

        Called by :meth:`body_transforms`; call it directly before using
        :attr:`klampt_world` (e.g. collision queries) after a state change.
        """
        if self._robot_dirty:
            self.robot.setConfig(self._q.tolist())
            out = [link.getTransform() for link in self._links]
            if out:
                n = self._n_links
                self._T[:n, :3, :3] = np.array([o[0] for o in out]).reshape(-1, 3, 3).transpose(0, 2, 1)
                self._T[:n, :3, 3] = np.array([o[1] for o in out])
            self._robot_dirty = False
            self._bodies_dirty = True
        if self._bodies_dirty:
            # attached bodies in attach order: a parent is always attached before its child
            for a in self._attached.values():
                if a.parent is not None:
                    a.pose = self._T[self._index[a.parent]] @ a.T_parent_body
                self._T[self._index[a.name]] = a.pose
                a.obj.setTransform(*matrix_to_klampt(a.pose))
            self._bodies_dirty = False

    # ------------------------------------------------------------------ queries

    def body_transforms(self, dtype: torch.dtype = torch.float64,
                        device: Union[str, torch.device] = "cpu") -> Dict[str, torch.Tensor]:
        """Body -> world transforms of every body, for ``SimState.body_transforms``.

        Returns:
            ``{name: (4, 4) tensor}`` in :attr:`body_names` order, metres.
            The tensors are views of one fresh ``(B, 4, 4)`` tensor (not
            shared with earlier calls).
        """
        self.update()
        T = torch.from_numpy(self._T.copy()).to(dtype=dtype, device=device)
        return dict(zip(self.body_names, T.unbind(0)))

    def body_transform(self, name: str) -> np.ndarray:
        """Body -> world transform of one body as a float64 ``(4, 4)`` array (a copy).

        Raises:
            ValueError: unknown body (message lists the known ones).
        """
        self._check(name)
        self.update()
        return self._T[self._index[name]].copy()

    def body_model(self, name: str) -> Union[klampt.RobotModelLink, klampt.RigidObjectModel]:
        """Klampt model of a body, as a sensor's ``attach()`` accepts.

        Links give their ``RobotModelLink``, attached bodies their
        ``RigidObjectModel``; both offer ``getName()`` and
        ``geometry().getTriangleMesh()`` (vertices in the body frame).

        Raises:
            ValueError: unknown name (lists the known bodies), or
                :data:`WORLD_FRAME`, which is a frame without geometry.
        """
        self._check(name)
        if name in self._attached:
            return self._attached[name].obj
        if name in self._frames:
            raise ValueError(f"{name!r} is the fixed world frame and has no model or geometry")
        return self._links[self.link_names.index(name)]

    def body_mesh(self, name: str) -> Optional[trimesh.Trimesh]:
        """Triangle mesh of a body in its own frame (``None`` when it has none).

        Attached bodies return their mesh with the original vertex order;
        links return a copy of their Klampt collision mesh.

        Raises:
            ValueError: unknown body.
        """
        self._check(name)
        if name in self._attached:
            return self._attached[name].mesh
        if name in self._frames:
            return None
        g = self._links[self.link_names.index(name)].geometry()
        if g.empty() or g.type() != "TriangleMesh":
            return None
        tm = g.getTriangleMesh()
        return trimesh.Trimesh(np.array(tm.vertices), np.array(tm.indices), process=False)

    def body_parent(self, name: str) -> Optional[str]:
        """Parent of an attached body (``None`` for a free body or a link).

        Raises:
            ValueError: unknown body.
        """
        self._check(name)
        a = self._attached.get(name)
        return None if a is None else a.parent

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
            raise ValueError(f"unknown body {name!r}; known bodies: {', '.join(self.body_names)}")

    def __repr__(self) -> str:
        return (f"World(robot={self.robot.getName()!r}, joints={self.joint_names}, "
                f"bodies={self.body_names})")
