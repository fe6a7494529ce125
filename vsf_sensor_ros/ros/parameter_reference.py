"""The parameter reference, ``docs/parameters.md``, generated from the node's parameter table (the
one source of defaults, ranges and text); run as a module it rewrites the file."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, List

from .kinds import sensor_kinds
from .parameter_table import BODY_SPECS, NODE_SPECS, SENSOR_COMMON_SPECS, Spec

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "parameters.md"

HEADER = """\
# `sensor_node` parameters

Generated from the node's parameter table (`python -m vsf_sensor_ros.ros.parameter_reference`);
do not edit by hand.  The same descriptions, ranges and read-only flags are what
`ros2 param describe` shows.

The layout is nav2's and ros2_control's: lists of names (`bodies`, `sensors`), then one namespace
per name (`<b>.*`, `<s>.*`).  The sensor set, each sensor's type, attachment, model settings and
measured topic / type, and the bodies are fixed at start: restart the node to change them.  *Live*
parameters apply on `ros2 param set` after validation (a rejected value changes nothing and the
answer names the parameter and value).  Relative file paths resolve against `assets_dir`
(`$VSF_ASSETS` wins when set).  Integers are accepted for double parameters.  Units are SI.
"""


def _value(value: Any) -> str:
    """One default or bound as it is written in a parameter file (inf as `.inf`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, str):
        return '""' if value == "" else value
    if isinstance(value, (list, tuple)):
        if len(value) == 16 and list(value) == [float(i % 5 == 0) for i in range(16)]:
            return "identity (16 floats)"
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _range(spec: Spec) -> str:
    parts = []
    if spec.lo is not None or spec.hi is not None:
        lo = "-inf" if spec.lo is None else _value(spec.lo).replace(".inf", "inf")
        hi = "inf" if spec.hi is None else _value(spec.hi).replace(".inf", "inf")
        parts.append(f"{lo} … {hi}")
    if spec.positive:
        parts.append("> 0")
    if spec.length is not None:
        parts.append(f"{spec.length} values")
    if spec.constraints:
        parts.append(spec.constraints)
    return "; ".join(parts)


def _cell(text: str) -> str:
    """Markdown table cell: pipes and angle brackets escaped (``<s>`` is no HTML tag)."""
    return text.replace("|", "\\|").replace("<", "\\<")


def _table(specs: Iterable[Spec], prefix: str) -> List[str]:
    return ["| parameter | default | range | live | description |", "|---|---|---|---|---|"] + [
        "| `{}` | `{}` | {} | {} | {} |".format(
            prefix + spec.key, _cell(_value(spec.default)), _cell(_range(spec)),
            "no" if spec.read_only else "yes", _cell(spec.description))
        for spec in specs]


def render() -> str:
    """The whole ``docs/parameters.md`` text (str, ends with a newline)."""
    out = [HEADER, "## Node", ""]
    out += _table(NODE_SPECS, "")
    out += ["| `use_sim_time` | `false` |  | yes | ROS's own: follow `/clock` (stamps of /diagnostics and "
            "receive times of header-less messages; set at start: the step source of contact-free "
            "steps without stamped joint states) |", ""]
    out += ["## Extra bodies (`<b>.*`, one namespace per name in `bodies`)", ""]
    out += _table(BODY_SPECS, "<b>.") + [""]
    out += ["## Every sensor (`<s>.*`, one namespace per name in `sensors`)", ""]
    out += _table(SENSOR_COMMON_SPECS, "<s>.") + [""]
    for name, kind in sensor_kinds().items():
        out += [f"## `{name}` settings (`<s>.*`)", "",
                f"Reading (`<s>/predicted`, `<s>/residual`): `{kind.codec.message_type}`; "
                "`<s>.measured_type`: " + " or ".join(f"`{t}`" for t in kind.codec.measured_types) + ".", ""]
        if kind.settings:
            out += _table(kind.settings, "<s>.") + [""]
        else:
            out += ["No settings beyond the common ones.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    DEFAULT_PATH.write_text(render())
