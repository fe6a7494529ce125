"""What the launch files compute before starting processes, without ``launch`` or rclpy (the pip install
has no ``launch`` wheels, so it is tested here; docs/install.md)."""
from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

import yaml

from ..urdf import JointNameMapError, read_urdf
from ..urdf import parse_joint_name_map as _parse_joint_name_map

ASSETS_ENV = "VSF_ASSETS"
"""Environment variable that wins over ``assets_dir`` (the node reads the same one)."""
PACKAGE_DATA = Path(__file__).resolve().parents[1] / "data"
EMBEDDED_URDF = PACKAGE_DATA / "embedded_arm.urdf"
"""The package's own arm: the node's world when no URDF is configured."""


SIM_WORLD_CONFIGS = {"embedded": "sensor_node.yaml", "kinova": "kinova_punyo.yaml"}
"""Simulator world -> the shipped sensor_node parameter file that pairs with it."""


class LaunchConfigError(ValueError):
    """A launch argument or parameter file that cannot start the setup: ``parameter`` at fault, ``value``
    as given, ``reason`` (``unknown_world``, ``missing``, ``unreadable``, ...), ``source`` (``environment``,
    ``argument``, ``file`` or None)."""

    def __init__(self, message: str, parameter: str, value: Any, reason: str,
                 source: Optional[str] = None) -> None:
        super().__init__(message)
        self.parameter, self.value, self.reason, self.source = parameter, value, reason, source


def sim_world_config(world: str) -> str:
    """The ``config/`` file of simulator ``world``; LaunchConfigError for an unknown one."""
    if world not in SIM_WORLD_CONFIGS:
        raise LaunchConfigError(f"world = {world!r}: use one of {sorted(SIM_WORLD_CONFIGS)}", "world", world,
                                "unknown_world")
    return SIM_WORLD_CONFIGS[world]


def load_node_parameters(config_path: str, node_name: str = "sensor_node") -> Dict[str, Any]:
    """The ``ros__parameters`` of ``node_name`` in a parameter file (``/ns/<node>``, ``<node>``, ``/<node>``,
    ``/**/<node>``, ``/**``); LaunchConfigError: missing, unreadable, or none for the node."""
    path = Path(config_path).expanduser()
    if not path.is_file():
        raise LaunchConfigError(f"config {str(path)!r} does not exist", "config", config_path, "missing")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchConfigError(f"config {str(path)!r} is not readable YAML: {exc}", "config", config_path,
                                "unreadable") from None
    if not isinstance(data, dict):
        raise LaunchConfigError(f"config {str(path)!r} is not a mapping of node names", "config", config_path,
                                "not_mapping")
    candidates = [k for k in data if isinstance(k, str) and k.startswith("/") and k.endswith("/" + node_name)]
    candidates += [node_name, "/" + node_name, "/**/" + node_name, "/**"]
    for key in candidates:
        section = data.get(key)
        if isinstance(section, dict) and isinstance(section.get("ros__parameters"), dict):
            return dict(section["ros__parameters"])
    raise LaunchConfigError(f"config {str(path)!r} has no ros__parameters for node {node_name!r} "
                            f"(top-level keys: {sorted(map(str, data))})", "config", config_path,
                            "no_node_section")


def write_node_parameters(params: Mapping[str, Any], directory: Optional[str] = None) -> Path:
    """The path of a new parameter file (in ``directory`` or the temporary one) of ``params`` keyed
    ``/**``: it is given to one node only."""
    fd, name = tempfile.mkstemp(prefix="vsf_sensor_node_", suffix=".yaml", dir=directory)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump({"/**": {"ros__parameters": dict(params)}}, fh, default_flow_style=None,
                       sort_keys=False)
    return Path(name)


def effective_assets_dir(argument: str, params: Mapping[str, Any],
                         environ: Optional[Mapping[str, str]] = None,
                         cwd: Optional[str] = None) -> str:
    """The absolute assets directory (``""``: none): ``$VSF_ASSETS``, else ``argument``, else the file's,
    relative to ``cwd``; LaunchConfigError: it does not exist (naming where it came from)."""
    env = os.environ if environ is None else environ
    for source, where, value in ((f"${ASSETS_ENV}", "environment", env.get(ASSETS_ENV, "")),
                                 ("launch argument assets_dir", "argument", argument or ""),
                                 ("parameter assets_dir", "file", str(params.get("assets_dir", "") or ""))):
        if value.strip():
            p = Path(os.path.expanduser(value.strip()))
            if not p.is_absolute():
                p = Path(cwd or os.getcwd()) / p
            if not p.is_dir():
                raise LaunchConfigError(
                    f"{source} = {value!r}: directory {str(p)!r} does not exist (give "
                    f"assets_dir:=/path/to/the/robot/files)", "assets_dir", value, "missing", where)
            return str(p.resolve())
    return ""


def robot_description_file(params: Mapping[str, Any], assets_dir: str, argument: str = "") -> Path:
    """The node's URDF file: ``argument``, else ``robot_description_path`` against ``assets_dir``, else the
    embedded arm; LaunchConfigError: no such file, or ``robot_description`` text (no file to share)."""
    text = str(params.get("robot_description", "") or "")
    rel = argument.strip() or str(params.get("robot_description_path", "") or "").strip()
    if not rel:
        if text.strip():
            raise LaunchConfigError("the parameter file carries robot_description text; give the same "
                                    "URDF as the urdf:= launch argument", "robot_description", None,
                                    "text_not_file")
        return EMBEDDED_URDF
    p = Path(os.path.expanduser(rel))
    if not p.is_absolute():
        p = Path(assets_dir or os.getcwd()) / p
    if not p.is_file():
        which = "launch argument urdf" if argument.strip() else "parameter robot_description_path"
        raise LaunchConfigError(f"{which} = {rel!r}: file {str(p)!r} does not exist",
                                "urdf" if argument.strip() else "robot_description_path", rel, "missing",
                                "argument" if argument.strip() else "file")
    return p.resolve()


def parse_joint_name_map(entries: Sequence[str]) -> Dict[str, str]:
    """:func:`vsf_sensor_ros.urdf.parse_joint_name_map`, LaunchConfigError naming the entry."""
    try:
        return _parse_joint_name_map(entries)
    except JointNameMapError as exc:
        raise LaunchConfigError(str(exc), "joint_name_map", exc.entry, exc.reason) from None


def urdf_for_state_publisher(urdf_path: str, joint_name_map: Optional[Mapping[str, str]] = None) -> str:
    """URDF text for robot_state_publisher and rviz: xacro expanded, mesh paths as ``file://`` URIs, joints
    renamed by ``joint_name_map``; LaunchConfigError: unreadable XML / xacro, a map naming no joint."""
    path = Path(urdf_path)
    try:
        root = ET.fromstring(read_urdf(path)[0])
    except (OSError, ValueError, ET.ParseError) as exc:   # UrdfError (xacro) is a ValueError
        raise LaunchConfigError(f"URDF {str(path)!r} cannot be read: {exc}", "urdf", urdf_path,
                                "unreadable") from None
    base = path.resolve().parent
    for mesh in root.iter("mesh"):
        fn = mesh.get("filename", "")
        if fn and "://" not in fn:
            p = Path(fn) if Path(fn).is_absolute() else base / fn
            mesh.set("filename", p.resolve().as_uri())
    rename = {urdf: drv for drv, urdf in (joint_name_map or {}).items()}
    if rename:
        joints = {j.get("name") for j in root.findall("joint")}
        unknown = sorted(set(rename) - joints)
        if unknown:
            raise LaunchConfigError(f"joint_name_map names URDF joints {unknown} that {path.name} does not "
                                    f"have (joints: {sorted(j for j in joints if j)})", "joint_name_map",
                                    unknown, "unknown_joint")
        for el in root.iter():
            if el.tag == "joint" and el.get("name") in rename:
                el.set("name", rename[el.get("name")])
            elif el.tag == "mimic" and el.get("joint") in rename:
                el.set("joint", rename[el.get("joint")])
    return ET.tostring(root, encoding="unicode")


def _namespaced(topic: str, namespace: str) -> str:
    ns = "/" + namespace.strip("/")
    if not topic.startswith("/"):
        topic = "/" + topic
    if topic in ("/tf", "/tf_static") or topic.startswith(ns + "/"):
        return topic
    return ns + topic


def rviz_config_in_namespace(rviz_path: str, namespace: str, directory: Optional[str] = None) -> Path:
    """A copy of an rviz configuration whose topics (but ``/tf``, ``/tf_static``) are under
    ``namespace`` (empty: ``rviz_path`` itself).  LaunchConfigError: missing or not YAML."""
    if not namespace.strip("/ "):
        return Path(rviz_path)
    try:
        data = yaml.safe_load(Path(rviz_path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchConfigError(f"rviz_config {rviz_path!r} cannot be read: {exc}", "rviz_config", rviz_path,
                                "unreadable") from None

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, val in node.items():
                if isinstance(key, str) and key.endswith("Topic") and isinstance(val, dict) \
                        and isinstance(val.get("Value"), str):
                    val["Value"] = _namespaced(val["Value"], namespace.strip())
                else:
                    walk(val)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    fd, name = tempfile.mkstemp(prefix="vsf_sensor_node_", suffix=".rviz", dir=directory)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(data, fh, sort_keys=False)
    return Path(name)


__all__ = ["ASSETS_ENV", "EMBEDDED_URDF", "SIM_WORLD_CONFIGS", "LaunchConfigError", "sim_world_config",
           "load_node_parameters", "write_node_parameters", "effective_assets_dir", "robot_description_file",
           "parse_joint_name_map", "urdf_for_state_publisher", "rviz_config_in_namespace"]
