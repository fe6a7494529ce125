"""``/diagnostics`` reports of the sensor node: one ``<node>: inputs`` status and one
``<node>: <s>`` per sensor (``<node>``: the fully qualified name); keys: docs/interface.md.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from ..rig.counters import InputStats, Values
from .messages.readings import make_header


def make_status(name: str, hardware_id: str, values: Values, problems: List[str],
                ok: str) -> DiagnosticStatus:
    """A status of ``values`` (``(key, value)`` pairs): WARN with the ``problems`` as its message when
    there are any, else OK with message ``ok``."""
    return DiagnosticStatus(level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK, name=name,
                            hardware_id=hardware_id, message="; ".join(problems) or ok,
                            values=[KeyValue(key=k, value=str(v)) for k, v in values])


def build_diagnostics(stamp, hardware_id: str, inputs: InputStats,
                      sensors: Dict[str, tuple], period_s: float,
                      node_name: Optional[str] = None) -> DiagnosticArray:
    """The report (docs/interface.md) of ``inputs`` and ``sensors`` (name -> ``(type_name,
    attachment, SensorStats)``) stamped ``stamp``, the per-window sensor fields cleared;
    ``node_name``: every status name's prefix (None: ``hardware_id``); ``period_s``: since the last."""
    prefix = hardware_id if node_name is None else node_name
    statuses = [make_status(f"{prefix}: inputs", hardware_id, *inputs.report(), "OK")]
    for name, (type_name, attachment, st) in sensors.items():
        values, problems, rate = st.report(type_name, attachment, period_s)
        statuses.append(make_status(f"{prefix}: {name}", hardware_id, values, problems, f"{rate:.1f} Hz"))
    return DiagnosticArray(header=make_header(stamp, ""), status=statuses)


def status_values(array: DiagnosticArray, name: str) -> Dict[str, str]:
    """``{key: value}`` of the status called ``name`` in ``array`` (empty if absent)."""
    return next(({kv.key: kv.value for kv in st.values} for st in array.status if st.name == name), {})
