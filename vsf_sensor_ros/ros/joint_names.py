"""Joint names of a robot driver against the URDF's: ``joint_name_map``, unknown and missing names.

A real robot driver may name its joints differently from the URDF (Kinova's
driver sends ``joint_1`` .. ``joint_7``, its URDF calls them ``Actuator1`` ..
``Actuator7``).  Nothing matches, every joint stays at its initial value and
the predictions are silently wrong.  This module makes that visible and
fixable, without ROS:

* :func:`parse_joint_name_map` reads the ``joint_name_map`` parameter, a
  string array of ``driver:urdf`` pairs;
* :func:`joints_moving` lists the URDF joints whose motion moves a body (a
  sensor's attachment);
* :class:`JointNameTracker` renames a ``JointState``'s names, counts the names
  that match no URDF joint (one warning per name) and, after
  :data:`MISSING_AFTER` joint states, names once each joint that moves a
  sensor body and was never received.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .parameter_table import ConfigError

# Joint states after which a sensor-moving joint never received is reported.
MISSING_AFTER = 50


def parse_joint_name_map(entries: Sequence[str], urdf_joints: Iterable[str],
                         parameter: str = "joint_name_map") -> Dict[str, str]:
    """``["joint_1:Actuator1", ...]`` -> ``{"joint_1": "Actuator1", ...}``.

    Args:
        entries: ``driver:urdf`` pairs (whitespace around either name ignored).
        urdf_joints: every joint name the URDF's JointState may carry (movable joints,
            mimic ones included).
        parameter: name used in the error.

    Raises:
        ConfigError: naming the entry: not exactly one ``:`` with a name on each side,
            a URDF name that is no joint of the URDF, a driver name or a URDF name
            listed twice.
    """
    known = set(urdf_joints)
    out: Dict[str, str] = {}
    targets: Dict[str, str] = {}
    for entry in entries:
        parts = entry.split(":")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ConfigError(parameter, entry, "each entry is 'driver_name:urdf_name' "
                                                "(e.g. 'joint_1:Actuator1')")
        driver, urdf = parts[0].strip(), parts[1].strip()
        if urdf not in known:
            raise ConfigError(parameter, entry, f"{urdf!r} is not a joint of the URDF (joints: "
                                                f"{', '.join(sorted(known)) or 'none'})")
        if driver in out:
            raise ConfigError(parameter, entry, f"driver name {driver!r} is mapped twice")
        if urdf in targets:
            raise ConfigError(parameter, entry, f"URDF joint {urdf!r} is already the target of "
                                                f"{targets[urdf]!r}")
        out[driver] = urdf
        targets[urdf] = driver
    return out


def joints_moving(body: str, body_parent: Mapping[str, Optional[str]],
                  joints: Sequence[Tuple[str, str, str, Optional[str], bool]]) -> List[str]:
    """The joints a driver must send for ``body`` to move: movable joints from the root down to it.

    Args:
        body: a link, or an extra body fixed (through ``body_parent``) to one.
        body_parent: extra body -> its parent link or body (None: a free body).
        joints: ``(name, parent_link, child_link, mimic_source or None, movable)`` of every
            URDF joint (fixed ones too: the chain climbs through them).

    Returns:
        Joint names, root first; a mimic joint is replaced by its source (the driver
        sends the source).  Empty for a free body or the root link.
    """
    seen: Set[str] = set()
    link: Optional[str] = body
    while link in body_parent and link not in seen:   # climb extra bodies to their link
        seen.add(link)
        link = body_parent[link]
    by_child = {child: (name, parent, mimic, movable) for name, parent, child, mimic, movable in joints}
    out: List[str] = []
    while link is not None and link in by_child and link not in seen:
        seen.add(link)
        name, parent, mimic, movable = by_child[link]
        if movable:
            out.append(mimic or name)
        link = parent
    return list(dict.fromkeys(reversed(out)))


class JointNameTracker:
    """Renames driver joint names and keeps what the node reports about them.

    Args:
        name_map: driver name -> URDF name (:func:`parse_joint_name_map`).
        watched: joint -> sensors it moves (:func:`joints_moving` per sensor).

    Attributes:
        unknown: name as received (before mapping) -> JointState messages that carried it
            and no URDF joint matched.
        received: URDF joint names seen in at least one JointState.
        messages: JointState messages seen.
    """

    def __init__(self, name_map: Mapping[str, str], watched: Mapping[str, Sequence[str]]) -> None:
        self.name_map = dict(name_map)
        self.watched = {j: list(s) for j, s in watched.items()}
        self.unknown: Dict[str, int] = {}
        self.received: Set[str] = set()
        self.messages = 0
        self._missing_reported = False

    def rename(self, names: Sequence[str]) -> List[str]:
        """The URDF names of a JointState's ``names`` (unmapped names kept as they are)."""
        m = self.name_map
        return [m.get(n, n) for n in names] if m else list(names)

    def note(self, received_names: Sequence[str], applied_names: Sequence[str],
             ignored: Sequence[str]) -> List[str]:
        """Record one applied JointState; the warning lines to log now (each at most once).

        Args:
            received_names: names as the driver sent them.
            applied_names: the same after :meth:`rename`.
            ignored: the applied names no URDF joint matched.

        Returns:
            A line per name never seen before that matched nothing, and, at the
            :data:`MISSING_AFTER`-th message, one line naming the sensor-moving
            joints still never received.
        """
        self.messages += 1
        lines: List[str] = []
        bad = set(ignored)
        self.received.update(n for n in applied_names if n not in bad)
        for raw, applied in zip(received_names, applied_names):
            if applied in bad:
                if raw not in self.unknown:
                    shown = raw if raw == applied else f"{raw} (mapped to {applied})"
                    lines.append(f"JointState name {shown!r} matches no URDF joint: ignored; map driver "
                                 "names with joint_name_map ['driver:urdf', ...]")
                self.unknown[raw] = self.unknown.get(raw, 0) + 1
        if self.messages >= MISSING_AFTER and not self._missing_reported:
            self._missing_reported = True
            missing = self.missing()
            if missing:
                lines.append(f"after {self.messages} joint states, joints moving sensors were never "
                             f"received: {self.missing_text()}; they keep their initial positions "
                             "(check the driver's names or joint_name_map)")
        return lines

    def missing(self) -> List[str]:
        """Sensor-moving joints never received (empty before :data:`MISSING_AFTER` messages)."""
        if self.messages < MISSING_AFTER:
            return []
        return [j for j in self.watched if j not in self.received]

    def missing_text(self) -> str:
        """``"Actuator1 (moves pressure), ..."`` for :meth:`missing`, or ``"none"``."""
        return ", ".join(f"{j} (moves {', '.join(self.watched[j])})" for j in self.missing()) or "none"


__all__ = ["JointNameTracker", "MISSING_AFTER", "joints_moving", "parse_joint_name_map"]
