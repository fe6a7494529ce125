"""Gazebo's scoped collision names -> the node's bodies (``contact_body_map``), and the names that
map to no body of the table counted and warned about once (docs/interface.md, Gazebo contacts).
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple


def _link_of(scoped: str) -> str:
    """``model::link::collision`` -> ``link``; ``a::b::link::col`` -> ``link``; ``x`` -> ``x``."""
    parts = scoped.split("::")
    return parts[-2] if len(parts) >= 2 else parts[0]


@dataclass(frozen=True)
class ContactBodyMap:
    """Scoped gz collision names -> the node's body names; ``rules``: ``(glob pattern, body)`` in
    priority order."""

    rules: Tuple[Tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "ContactBodyMap":
        """Build from ``contact_body_map`` entries ``"pattern=body"`` (a glob over the scoped name, split at
        the last ``=``); ValueError naming an entry without ``=`` or with an empty side."""
        rules = []
        for e in entries:
            text = str(e)
            pattern, sep, body = text.rpartition("=")
            pattern, body = pattern.strip(), body.strip()
            if not sep or not pattern or not body:
                raise ValueError(f"contact_body_map entry {text!r} must look like 'pattern=body' "
                                 "(e.g. 'punyo_model::*=punyo')")
            rules.append((pattern, body))
        return cls(tuple(rules))

    def unknown_targets(self, body_names: Iterable[str]) -> List[str]:
        """A sentence per rule whose body is not one of ``body_names`` (its contacts would touch
        no sensor: a misspelt target), for the start-up warnings."""
        known = list(body_names)
        return [f"contact_body_map entry '{pattern}={body}': {body!r} is not a body of the world; "
                f"contacts mapped to it touch no sensor (bodies: {', '.join(known)})"
                for pattern, body in self.rules if body not in known]

    def body(self, scoped_name: str) -> str:
        """The body of a scoped collision name: the first matching rule's body, else the link name."""
        for pattern, body in self.rules:
            if fnmatchcase(scoped_name, pattern):
                return body
        return _link_of(scoped_name)


#: most distinct unknown gz body names :func:`note_unknown_bodies` counts and warns about
MAX_UNKNOWN_GZ_BODIES = 64


def note_unknown_bodies(seen: Dict[str, int], unknown: Mapping[str, str], body_names: Sequence[str],
                        limit: int = MAX_UNKNOWN_GZ_BODIES) -> List[str]:
    """Count gz collisions mapping to no body (``unknown``: ``gz_contacts_to_contacts``' ``unknown_bodies``)
    in ``seen`` (at most ``limit`` names); a warning per new name with the ``contact_body_map`` entry."""
    out = []
    for body, collision in unknown.items():
        if body in seen:
            seen[body] += 1
            continue
        if len(seen) >= limit:
            continue
        seen[body] = 1
        model = collision.split("::")[0] if "::" in collision else collision
        out.append(f"gz contacts: collision {collision!r} maps to body {body!r}, which is not in the body "
                   f"table ({', '.join(body_names)}); its contacts touch no sensor. If it is one of these "
                   f"bodies, add a contact_body_map entry such as '{model}::*=<body>'")
    return out
