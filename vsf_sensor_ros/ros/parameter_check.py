"""Configuration checked, not trusted: unknown parameter keys and parameter files meant for another node.

rclpy and rcl accept both silently (the default stays, the file applies to nothing); these pure
functions (PyYAML, no rclpy) make them loud.  What the node reports: docs/node.md.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import yaml

# Parameters rclpy declares on every node, or reads itself, that no table of ours lists.
RCLPY_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service"})
RCLPY_PREFIXES = ("qos_overrides.",)


@dataclass(frozen=True)
class UnknownKey:
    """One parameter override that is no parameter of the node.

    Attributes:
        name: the full parameter name as given (e.g. ``punyo_pressure.measured_scael``).
        suggestion: the closest known full name, or None when nothing is close.
        where: ``"node"``, ``"sensor <s>"`` or ``"body <b>"``.
    """

    name: str
    suggestion: Optional[str]
    where: str

    def message(self) -> str:
        """One line naming the key, where it is, and the closest known key."""
        hint = f"; did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"unknown parameter '{self.name}' ({self.where}){hint}"


def closest_key(key: str, known: Iterable[str]) -> Optional[str]:
    """The known key most like ``key`` (difflib ratio >= 0.6), or None.

    Args:
        key: the unknown name (str).
        known: candidate names (any iterable of str).
    """
    match = difflib.get_close_matches(key, sorted(set(known)), n=1, cutoff=0.6)
    return match[0] if match else None


def unknown_keys(names: Iterable[str], node_keys: Set[str], sensors: Mapping[str, Set[str]],
                 bodies: Mapping[str, Set[str]]) -> List[UnknownKey]:
    """Every parameter name that no part of the node's table knows, with a suggestion.

    ``sensors`` / ``bodies``: name -> its valid keys.  In the order given; a key under a section
    that is no sensor or body is unknown too (suggesting a close section that has the key).
    """
    sections = {**bodies, **sensors}
    out: List[UnknownKey] = []
    for name in names:
        if name in node_keys or name in RCLPY_PARAMETERS or name.startswith(RCLPY_PREFIXES):
            continue
        prefix, dot, key = name.partition(".")
        if dot and prefix in sections:
            if key not in sections[prefix]:
                out.append(UnknownKey(name, _joined(prefix, closest_key(key, sections[prefix])),
                                      f"{'sensor' if prefix in sensors else 'body'} {prefix}"))
            continue
        near = closest_key(prefix, sections) if dot else None
        guess = (f"{near}.{key}" if near is not None and key in sections[near]
                 else closest_key(name, node_keys))
        out.append(UnknownKey(name, guess, "node"))
    return out


def _joined(prefix: str, key: Optional[str]) -> Optional[str]:
    return None if key is None else f"{prefix}.{key}"


def params_files(argv: Sequence[str]) -> List[str]:
    """The ``--params-file`` paths of a ROS command line (inside ``--ros-args`` sections).

    Args:
        argv: the process arguments (``sys.argv``), program name included or not.
    """
    files: List[str] = []
    in_ros = False
    it = iter(argv)
    for arg in it:
        if arg == "--ros-args":
            in_ros = True
        elif arg == "--":
            in_ros = False
        elif in_ros and arg == "--params-file":
            path = next(it, None)
            if path is not None:
                files.append(path)
    return files


def node_keys_of_file(path: str) -> List[str]:
    """The node names a ROS 2 parameters file is keyed by (every path ending in ``ros__parameters``).

    Nested namespaces (``left: {sensor_node: {ros__parameters: ...}}``) give ``left/sensor_node``.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: it is not YAML (rcl has refused it before this runs, normally).
    """
    data = yaml.safe_load(Path(path).read_text())
    keys: List[str] = []

    def walk(node: object, trail: Tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key == "ros__parameters":
                keys.append("/".join(trail))
            else:
                walk(value, trail + (str(key).strip("/"),))
    walk(data, ())
    return keys


def node_key_matches(key: str, fully_qualified_name: str) -> bool:
    """Whether a parameters-file node key applies to the node ``fully_qualified_name``.

    rcl's rules: the key is absolute (a missing leading ``/`` is implied); ``*`` matches one
    name token, ``**`` any number of tokens (``/**`` matches every node).
    """
    pattern = ""
    for token in key.strip("/").split("/"):
        if token == "**":
            pattern += "(/[^/]+)*"
        else:
            pattern += "/" + "[^/]*".join(re.escape(part) for part in token.split("*"))
    return re.fullmatch(pattern, fully_qualified_name) is not None


def unmatched_params_files(argv: Sequence[str], fully_qualified_name: str) -> List[Tuple[str, List[str]]]:
    """The parameters files of the command line that hold nothing for this node.

    Returns:
        ``[(path, node keys found), ...]`` for each file none of whose keys matches
        ``fully_qualified_name``; an unreadable file is listed with the reason as its only key.
    """
    out: List[Tuple[str, List[str]]] = []
    for path in params_files(argv):
        try:
            keys = node_keys_of_file(path)
        except (OSError, yaml.YAMLError) as exc:
            out.append((path, [f"<unreadable: {exc.__class__.__name__}>"]))
            continue
        if not any(node_key_matches(k, fully_qualified_name) for k in keys):
            out.append((path, keys))
    return out


__all__ = ["UnknownKey", "closest_key", "node_key_matches", "node_keys_of_file", "params_files",
           "unknown_keys", "unmatched_params_files"]
