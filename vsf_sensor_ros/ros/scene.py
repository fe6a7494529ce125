"""From parameter values to models: the world (robot + extra bodies) and attached sensor models;
every failure a :class:`.ConfigError` naming the parameter and value (never told by message text)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..sensor.base_sensor import BaseSensor
from ..sensor.errors import SettingError
from .messages import readings as enc
from .messages.gz_contacts import GZ_CONTACTS_TYPE, ContactBodyMap
from .kinds import sensor_kinds, sensor_layout
from .frames import sensor_frame_name, sensor_frame_transform
from .parameter_table import ConfigError
from .parameters import SensorParameters


def resolve_path(text: str, assets_dir: str) -> Path:
    """Resolve a file parameter: absolute as is, relative against ``assets_dir`` (or cwd)."""
    # (joining an absolute path keeps it as is)
    return (Path(assets_dir) if assets_dir else Path.cwd()) / os.path.expanduser(text)


def resolved_from(text: str, assets_dir: str) -> str:
    """For a missing file: how a relative ``text`` was resolved, e.g. ``" (resolved from 'a.ply'
    against $VSF_ASSETS = /data)"``; ``""`` for an absolute one."""
    if Path(os.path.expanduser(text)).is_absolute():
        return ""
    if not assets_dir:
        return f" (resolved from {text!r} against the working directory {os.getcwd()})"
    if os.environ.get("VSF_ASSETS", "") == assets_dir:
        return f" (resolved from {text!r} against $VSF_ASSETS = {assets_dir})"
    where = "" if Path(assets_dir).is_absolute() else f" in the working directory {os.getcwd()}"
    return (f" (resolved from {text!r} against assets_dir = {assets_dir}{where}; set VSF_ASSETS to "
            "the assets folder, it wins over assets_dir)")


def effective_assets_dir(param_value: str) -> str:
    """``$VSF_ASSETS`` when set and non-empty, else the ``assets_dir`` parameter."""
    return os.environ.get("VSF_ASSETS", "") or param_value


def transform_from_params(body: str, flat: Sequence[float], transform_file: str, key: str,
                          assets_dir: str) -> np.ndarray:
    """An extra body's ``(4, 4)`` body -> parent transform: ``transform_file`` (JSON, entry ``key``)
    over the 16 row-major floats ``flat`` (checked at declaration: 16, finite).  ConfigError:
    unreadable, no key, not a 4x4."""
    if not transform_file:
        return np.asarray(flat, dtype=np.float64).reshape(4, 4)
    path = resolve_path(transform_file, assets_dir)
    pname = f"{body}.transform_file"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(pname, transform_file, f"file {str(path)!r} does not exist"
                          + resolved_from(transform_file, assets_dir)) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(pname, transform_file, f"cannot read JSON: {exc}") from None
    if key:
        if not isinstance(data, dict) or key not in data:
            keys = sorted(data) if isinstance(data, dict) else []
            raise ConfigError(f"{body}.transform_key", key, f"not a key of {path.name} (keys: {keys})")
        data = data[key]
    try:
        T = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        T = np.zeros(0)
    if T.shape != (4, 4) or not np.isfinite(T).all():
        raise ConfigError(pname, transform_file, f"entry is not a finite 4x4 matrix (shape {T.shape})")
    return T


def build_world(robot_description: str, robot_description_path: str, assets: str) -> Any:
    """The ``World``: URDF text, else a URDF file, else the package's embedded world (ConfigError
    naming ``robot_description`` or ``robot_description_path``)."""
    from ..world import World
    text, path = robot_description, robot_description_path
    if not (text.strip() or path.strip()):
        from ..embedded_world import embedded_world
        return embedded_world()
    full = None if text.strip() else resolve_path(path, assets)
    if full is not None and not full.is_file():
        raise ConfigError("robot_description_path", path, f"file {str(full)!r} does not exist"
                          + resolved_from(path, assets))
    try:
        return World.from_urdf(text, base_dir=assets or None) if full is None else World.from_urdf(str(full))
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        raise (ConfigError("robot_description", text[:60] + ("..." if len(text) > 60 else ""), str(exc))
               if full is None else ConfigError("robot_description_path", path, str(exc))) from None


def _mesh_path(body: str, mesh: str, assets: str) -> Path:
    """Resolve and check ``<b>.mesh`` (a path, ``package://`` or ``file://`` URI)."""
    if not mesh:
        raise ConfigError(f"{body}.mesh", mesh, "every extra body needs a triangle mesh file")
    if "://" in mesh:
        # package://pkg/path (ament index, installed Python package) or file:///abs/path
        from ..world import resolve_uri
        try:
            path = resolve_uri(mesh, assets or None)
        except (FileNotFoundError, ValueError) as exc:
            raise ConfigError(f"{body}.mesh", mesh, str(exc)) from None
    else:
        path = resolve_path(mesh, assets)
    if path.is_dir():
        raise ConfigError(f"{body}.mesh", mesh, f"{str(path)!r} is a directory, not a mesh file")
    if not path.is_file():
        raise ConfigError(f"{body}.mesh", mesh, f"file {str(path)!r} does not exist"
                          + ("" if "://" in mesh else resolved_from(mesh, assets)))
    return path


def attach_body(world: Any, body: str, v: Mapping[str, Any], assets: str) -> Optional[str]:
    """Load extra body ``body`` (its ``<b>.*`` values ``v``) into ``world``; its pose topic or None.
    ConfigError: naming ``bodies`` or the ``<b>.*`` key at fault."""
    if body in world.body_names:
        raise ConfigError("bodies", body, f"body {body!r} already exists")
    mesh_path = _mesh_path(body, v["mesh"], assets)
    from ..world import load_mesh
    try:
        # loaded here so a bad file is blamed on <b>.mesh; trimesh raises many types
        # (NotImplementedError for an unknown extension, ValueError, KeyError, ...)
        mesh = load_mesh(str(mesh_path))
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"{body}.mesh", v["mesh"],
                          f"cannot load a triangle mesh from {str(mesh_path)!r}: "
                          f"{type(exc).__name__}: {exc}") from None
    T = transform_from_params(body, v["transform"], v["transform_file"], v["transform_key"], assets)
    parent = v["parent_link"] or None
    if parent is not None and parent not in world.body_names:
        raise ConfigError(f"{body}.parent_link", parent,
                          f"unknown link; known: {', '.join(world.body_names)}")
    try:
        world.attach_body(body, mesh, parent, T)
    except ValueError as exc:   # the name is new and the mesh loaded: the transform is at fault
        which = "transform_file" if v["transform_file"] else "transform"
        raise ConfigError(f"{body}.{which}", v[which], str(exc)) from None
    if v["pose_topic"] and parent is not None:
        raise ConfigError(f"{body}.pose_topic", v["pose_topic"],
                          f"body is fixed to {parent!r}; only free bodies follow a pose topic")
    return v["pose_topic"] or None


def build_scene(p: Mapping[str, Any], assets: str, declare_body: Callable[[str], Dict[str, Any]]
                ) -> Tuple[Any, Dict[str, str], Dict[str, str]]:
    """``(world, pose topics given for free extra bodies, <b>.mesh per extra body)`` from the node's
    values ``p`` (``declare_body``: declares ``<b>.*``, returns its values); ConfigError."""
    world = build_world(p["robot_description"], p["robot_description_path"], assets)
    pose_topics: Dict[str, str] = {}
    meshes: Dict[str, str] = {}
    for body in p["bodies"] or []:
        values = declare_body(body)
        topic = attach_body(world, body, values, assets)
        meshes[body] = values["mesh"]
        if topic:
            pose_topics[body] = topic
    return world, pose_topics, meshes


def check_contact_body_names(names: Sequence[str], world: Any) -> list:
    """The contacts table's names that are no body of the world (allowed: they touch no sensor);
    ConfigError: a duplicate or empty name."""
    for i, n in enumerate(names):
        if not n.strip():
            raise ConfigError("contact_body_names", list(names), "names must be non-empty")
        if n in names[:i]:
            raise ConfigError("contact_body_names", list(names),
                              f"name {n!r} appears twice; body1/body2 indices must be unambiguous")
    return [n for n in names if n not in world.body_names]


def gz_contacts_input(contacts_type: str, body_map: Sequence[str]) -> Optional[Tuple[type, Any]]:
    """None for the contacts cloud, else gz ``Contacts`` and the parsed ``body_map``; ConfigError:
    an unknown ``contacts_type``, no ``ros_gz_interfaces``, a malformed ``contact_body_map``."""
    if contacts_type == "sensor_msgs/msg/PointCloud2":
        return None
    if contacts_type != GZ_CONTACTS_TYPE:
        raise ConfigError("contacts_type", contacts_type,
                          f"must be sensor_msgs/msg/PointCloud2 or {GZ_CONTACTS_TYPE}")
    try:
        from ros_gz_interfaces.msg import Contacts
    except ImportError:
        raise ConfigError("contacts_type", contacts_type,
                          "ros_gz_interfaces is not importable (a ROS install has it; on the pip "
                          "path make venv builds it)") from None
    try:
        return Contacts, ContactBodyMap.parse(body_map)
    except ValueError as exc:
        raise ConfigError("contact_body_map", list(body_map), str(exc)) from None


class SensorFactory:
    """Builds attached sensor models and their layouts from :class:`SensorParameters`
    (``body_meshes``: ``<b>.mesh`` per extra body, blamed when a sensor cannot attach)."""

    def __init__(self, world: Any, body_meshes: Mapping[str, str], frame_prefix: str = "") -> None:
        self.world = world
        self.body_meshes: Dict[str, str] = dict(body_meshes)
        self.frame_prefix = frame_prefix

    def build(self, cfg: SensorParameters) -> Tuple[BaseSensor, enc.SensorLayout]:
        """A new attached model and its layout (see :meth:`sensor` and :meth:`layout`)."""
        sensor = self.sensor(cfg)
        return sensor, self.layout(cfg, sensor)

    def sensor(self, cfg: SensorParameters) -> BaseSensor:
        """The attached model (``from_config``); ConfigError naming ``<s>.attachment``, the
        setting the library rejects, ``<s>.type`` or ``<b>.mesh``."""
        att = cfg.values.get("attachment", "")
        if not att:
            raise ConfigError(f"{cfg.name}.attachment", att, "every sensor needs an attachment body")
        if att not in self.world.body_names:
            raise ConfigError(f"{cfg.name}.attachment", att,
                              f"unknown body; known: {', '.join(self.world.body_names)}")
        try:
            config = cfg.model_config()
            sensor = sensor_kinds()[cfg.type].model.from_config(config.pop("name"), config)
        except SettingError as exc:
            key = exc.setting if exc.setting in cfg.values else "type"
            raise ConfigError(f"{cfg.name}.{key}", cfg.values.get(key, cfg.type), str(exc)) from None
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"{cfg.name}.type", cfg.type, str(exc)) from None
        try:
            sensor.attach(self.world.body_model(att))
        except (ValueError, TypeError) as exc:
            if att in self.body_meshes:
                raise ConfigError(f"{att}.mesh", self.body_meshes[att],
                                  f"sensor {cfg.name!r} cannot attach to body {att!r}: {exc}") from None
            raise ConfigError(f"{cfg.name}.attachment", att, f"cannot attach: {exc}") from None
        return sensor

    def layout(self, cfg: SensorParameters, sensor: BaseSensor) -> enc.SensorLayout:
        """The sensor's message layout (a frame ``<s>_frame`` for Klampt ``Tsensor`` / Isaac
        ``position``); ConfigError: a dense force on a body without a mesh, a sensor frame name
        that is already a body or link."""
        att = cfg.values["attachment"]
        T_sensor = sensor_frame_transform(sensor)
        frame = sensor_frame_name(cfg.name) if T_sensor is not None else ""
        if frame and (frame in self.world.body_names or frame in self.world.urdf_link_names):
            raise ConfigError("sensors", cfg.name, f"the sensor's frame {frame!r} is already a body or "
                                                   "link of the world; rename the sensor")
        verts = None
        if sensor_kinds()[cfg.type].codec.per_vertex:
            mesh = self.world.body_mesh(att)
            if mesh is None:
                raise ConfigError(f"{cfg.name}.attachment", att, "body has no triangle mesh")
            verts = np.asarray(mesh.vertices)
        try:
            return sensor_layout(cfg.type, att, sensor.measurement_names(), sensor.measurement_errors(),
                                 verts, frame, T_sensor, self.frame_prefix)
        except ValueError as exc:
            raise ConfigError(f"{cfg.name}.type", cfg.type, str(exc)) from None
