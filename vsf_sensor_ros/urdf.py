"""URDF parsing: joints as written, axis normalisation, mimic order, collision pieces, xacro
(docs/decisions.md).
"""
from __future__ import annotations

import graphlib
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .transforms import rpy_matrix

__all__ = ["JointNameMapError", "MOVABLE_JOINT_TYPES", "UrdfError", "UrdfJoint", "collision_elements",
           "mimic_order", "normalize_joint_axes", "origin_transform", "parse_joint_name_map",
           "parse_urdf_joints", "read_urdf"]

MOVABLE_JOINT_TYPES = ("revolute", "continuous", "prismatic")
"""URDF joint types that ``World.set_joint_positions`` accepts (one DOF each)."""


class UrdfError(ValueError):
    """A URDF that cannot be used as written (a ``ValueError``, raised at start): ``where`` the document or
    element at fault, ``value`` as written (or None), ``reason`` one of ``'xacro_missing'``,
    ``'xacro_failed'``, ``'not_numbers'``, ``'axis_size'``, ``'zero_axis'``, ``'origin_size'``,
    ``'incomplete_joint'``, ``'mimic_numbers'``, ``'mimic_no_joint'``, ``'mimic_cycle'``,
    ``'mesh_unreadable'``, ``'mesh_scale'``, ``'primitives_unloadable'``, ``'no_triangles'``, and from the
    MuJoCo scene ``'joint_type'``."""

    def __init__(self, message: str, reason: str, where: str, value: Any = None) -> None:
        super().__init__(message)
        self.reason, self.where, self.value = reason, where, value


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>`` as written: ``name``, ``type``, ``parent``, ``child``; ``origin`` ``(4, 4)``
    parent -> joint frame at zero; ``axis`` unit (``[1, 0, 0]`` when absent);
    ``mimic`` ``(joint, multiplier, offset)`` or None.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    mimic: Optional[Tuple[str, float, float]] = None


_XACRO_MARKS = re.compile(r"http://(www\.)?ros\.org/wiki/xacro|<xacro:|\$\{|\$\(")
"""The xacro namespace, a xacro element, or a ``${...}``/``$(...)`` substitution: never in a plain URDF."""


def read_urdf(urdf: Union[str, os.PathLike]) -> Tuple[str, Optional[Path]]:
    """``(text, file directory or None)`` of ``urdf``: text when it starts with ``<`` (after a BOM and
    blanks), else a file path; a xacro document is expanded by the ``xacro`` package (``$(find pkg)`` through
    the ament index).

    Raises:
        FileNotFoundError: the path names no file.
        UrdfError: xacro that cannot be expanded here (says why and the command that expands it).
    """
    text = os.fspath(urdf).lstrip("\ufeff")
    path: Optional[Path] = None
    if not text.lstrip().startswith("<"):
        path = Path(text).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"URDF file {str(path)!r} does not exist")
        text = path.read_text(encoding="utf-8").lstrip("\ufeff")
    if (path is not None and path.suffix == ".xacro") or _XACRO_MARKS.search(text):
        text = _expand_xacro(text, path)
    return text, None if path is None else path.resolve().parent


def _expand_xacro(text: str, path: Optional[Path]) -> str:
    """``text`` expanded by xacro (``path``: its file, for includes and messages)."""
    name = "robot_description" if path is None else str(path)
    src = "robot.urdf.xacro" if path is None else path.name
    command = f"xacro {src} > {src.removesuffix('.xacro').removesuffix('.urdf')}.urdf"
    try:
        import xacro
        from xml.parsers.expat import ExpatError
    except ImportError:
        raise UrdfError(f"{name} is a xacro document, not a URDF, and the xacro package is not installed; "
                        f"pip install xacro, or expand it first: {command}", "xacro_missing", name) from None
    try:
        xacro.init_stacks(None if path is None else str(path.resolve()))
        doc = xacro.parse(text)
        xacro.process_doc(doc)
    except (xacro.XacroException, ExpatError, OSError, RecursionError) as exc:
        # $(find pkg) fails without a ROS install before xacro names the package: name it here
        needs = sorted(set(re.findall(r"\$\(find\s+([^)\s]+)\)", text)))
        why = f"{exc}" + (f" (it needs the packages {', '.join(needs)})" if needs else "")
        raise UrdfError(f"{name} is a xacro document, not a URDF, and expanding it here failed: {why}; "
                        f"expand it where its packages are installed ({command}) and give that "
                        f"file", "xacro_failed", name, str(exc)) from None
    return doc.toxml()


def _floats(text: Optional[str], default: Sequence[float], what: str) -> List[float]:
    if text is None:
        return list(default)
    try:
        return [float(v) for v in text.split()]
    except ValueError:
        raise UrdfError(f"{what} must be numbers, got {text!r}", "not_numbers", what, text) from None


def _unit_axis(name: str, jtype: str, xyz: List[float]) -> np.ndarray:
    a = np.array(xyz, dtype=np.float64)
    if a.shape != (3,):
        raise UrdfError(f"URDF joint {name!r}: <axis xyz> must have 3 values, got {xyz}", "axis_size",
                        f"joint {name!r}", xyz)
    n = float(np.linalg.norm(a))
    if jtype in MOVABLE_JOINT_TYPES and not (np.isfinite(a).all() and n > 0.0):
        raise UrdfError(f"URDF joint {name!r} ({jtype}) has axis xyz={xyz}: a {jtype} joint needs "
                        f"a finite non-zero axis", "zero_axis", f"joint {name!r}", xyz)
    return a / n if n > 0.0 and np.isfinite(n) else a


def origin_transform(element: ET.Element, what: str) -> np.ndarray:
    """``(4, 4)`` float64 transform of ``element``'s ``<origin xyz rpy>`` (identity when absent).

    Raises:
        UrdfError: ``xyz`` or ``rpy`` not three numbers (the message names ``what``).
    """
    o = element.find("origin")
    T = np.eye(4)
    if o is not None:
        rpy = _floats(o.get("rpy"), (0, 0, 0), f"{what} origin rpy")
        xyz = _floats(o.get("xyz"), (0, 0, 0), f"{what} origin xyz")
        if len(rpy) != 3 or len(xyz) != 3:
            raise UrdfError(f"{what} origin needs 3 values for xyz and rpy, got xyz={xyz}, rpy={rpy}",
                            "origin_size", what, (xyz, rpy))
        T[:3, :3] = rpy_matrix(rpy)
        T[:3, 3] = xyz
    return T


def parse_urdf_joints(root: ET.Element) -> List[UrdfJoint]:
    """All joints of a parsed URDF ``<robot>`` element, in file order.

    Raises:
        UrdfError: a joint without name, type, parent or child; non-numeric values; a movable joint with a
            zero or non-finite axis (names joint and axis).
    """
    joints = []
    for j in root.findall("joint"):
        name, jtype = j.get("name"), j.get("type")
        parent, child = j.find("parent"), j.find("child")
        if not name or not jtype or parent is None or child is None:
            raise UrdfError(f"URDF joint {name!r} lacks a name, type, parent or child", "incomplete_joint",
                            f"joint {name!r}")
        T = origin_transform(j, f"joint {name!r}")
        a = j.find("axis")
        axis = _unit_axis(name, jtype, _floats(None if a is None else a.get("xyz"), (1, 0, 0),
                                               f"joint {name!r} axis xyz"))
        m = j.find("mimic")
        mimic = None
        if m is not None:
            try:
                mimic = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
            except ValueError:
                raise UrdfError(f"URDF joint {name!r}: <mimic> multiplier/offset must be numbers, got "
                                f"{m.get('multiplier')!r} / {m.get('offset')!r}", "mimic_numbers",
                                f"joint {name!r}", (m.get('multiplier'), m.get('offset'))) from None
            if not mimic[0]:
                raise UrdfError(f"URDF joint {name!r}: <mimic> names no joint", "mimic_no_joint",
                                f"joint {name!r}")
        joints.append(UrdfJoint(name, jtype, parent.get("link"), child.get("link"), T, axis, mimic))
    return joints


def normalize_joint_axes(root: ET.Element) -> List[Tuple[str, List[float]]]:
    """Rewrite every movable joint's ``<axis xyz>`` to unit length, in place (as robot_state_publisher
    and KDL; Klampt would scale the motion).  Returns ``(joint, axis as written)`` of each rescaled one.

    Raises:
        UrdfError: as :func:`parse_urdf_joints`.
    """
    rescaled = []
    for j in root.findall("joint"):
        name, jtype = j.get("name"), j.get("type")
        a = j.find("axis")
        if jtype not in MOVABLE_JOINT_TYPES or a is None or a.get("xyz") is None:
            continue
        written = _floats(a.get("xyz"), (1, 0, 0), f"joint {name!r} axis xyz")
        unit = _unit_axis(name, jtype, written)
        if abs(float(np.linalg.norm(written)) - 1.0) > 1e-9:
            a.set("xyz", " ".join(repr(float(v)) for v in unit))
            rescaled.append((name, written))
    return rescaled


def collision_elements(root: ET.Element) -> Dict[str, List[ET.Element]]:
    """``{link: [<collision> elements of root]}`` in document order (links without one left out): the
    URDF makes a link's geometry their union; Klampt keeps only the first.
    """
    out: Dict[str, List[ET.Element]] = {}
    for link in root.findall("link"):
        pieces = link.findall("collision")
        if pieces:
            out[link.get("name") or ""] = pieces
    return out


def mimic_order(joints: Sequence[UrdfJoint]) -> List[UrdfJoint]:
    """The mimic joints of ``joints`` in dependency order (a source before its mimics).  UrdfError: a mimic
    cycle (``value`` its joints)."""
    mimics: Dict[str, UrdfJoint] = {j.name: j for j in joints if j.mimic is not None}
    graph = {n: [j.mimic[0]] if j.mimic[0] in mimics else [] for n, j in mimics.items()}
    try:
        return [mimics[n] for n in graphlib.TopologicalSorter(graph).static_order()]
    except graphlib.CycleError as exc:
        cycle = exc.args[1][::-1]         # graphlib lists it against the mimic direction
        raise UrdfError("URDF mimic joints form a cycle: " + " -> ".join(f"{n!r}" for n in cycle)
                        + " (each mimics the next)", "mimic_cycle", f"joint {cycle[0]!r}", cycle) from None


class JointNameMapError(ValueError):
    """A ``joint_name_map`` entry that cannot be read: ``entry`` as given, ``detail``, and ``reason``
    (``'format'``, ``'unknown_joint'``, ``'driver_twice'``, ``'target_twice'``).
    """

    def __init__(self, entry: str, detail: str, reason: str) -> None:
        self.entry, self.detail, self.reason = entry, detail, reason
        super().__init__(f"joint_name_map entry {entry!r}: {detail}")


def parse_joint_name_map(entries: Sequence[str],
                         urdf_joints: Optional[Sequence[str]] = None) -> Dict[str, str]:
    """``["joint_1:Actuator1", ...]`` -> ``{"joint_1": "Actuator1"}`` (driver -> URDF name; blanks ignored).

    ``urdf_joints``: the URDF's joint names to check against, or None (unchecked).

    Raises:
        JointNameMapError: naming the entry: not one ``:`` between two names, an unknown URDF joint, a name
            listed twice.
    """
    known = None if urdf_joints is None else set(urdf_joints)
    out: Dict[str, str] = {}
    for entry in entries or []:
        parts = str(entry).split(":")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise JointNameMapError(entry, "each entry is 'driver_name:urdf_name' (e.g. 'joint_1:Actuator1')",
                                    "format")
        driver, urdf = parts[0].strip(), parts[1].strip()
        if known is not None and urdf not in known:
            raise JointNameMapError(entry, f"{urdf!r} is not a joint of the URDF (joints: "
                                           f"{', '.join(sorted(known)) or 'none'})", "unknown_joint")
        if driver in out:
            raise JointNameMapError(entry, f"driver name {driver!r} is mapped twice", "driver_twice")
        if urdf in out.values():
            first = next(d for d, u in out.items() if u == urdf)
            raise JointNameMapError(entry, f"URDF joint {urdf!r} is already the target of {first!r}",
                                    "target_twice")
        out[driver] = urdf
    return out
