"""Diagnostic status names and hardware ids carry the node's fully qualified name.

Two grippers, each a ``sensor_node`` of the same name in its own namespace (``/left``,
``/right``), publish on the one ``/diagnostics`` topic.  Following ``diagnostic_updater``
(``<node>: <task>``) with the namespace kept, their statuses are ``/left/sensor_node: inputs``,
``/left/sensor_node: pressure``, ... and ``/right/sensor_node: ...``: no name is reported by
both, and every status's ``hardware_id`` is its node's fully qualified name.
"""
from __future__ import annotations

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import PointCloud2

from vsf_sensor_ros.rig.counters import InputStats, SensorStats
from vsf_sensor_ros.ros.diagnostics import build_diagnostics, status_values

from .node_helpers import NodeProcess, Probe, write_params

SIDES = ("left", "right")


def test_build_diagnostics_prefixes_every_status_with_the_node_name():
    arr = build_diagnostics(Time(sec=1), "/left/sensor_node", InputStats(),
                            {"punyo_pressure": ("PunyoPressureSensor", "punyo", SensorStats())}, 1.0,
                            node_name="/left/sensor_node")
    assert [st.name for st in arr.status] == ["/left/sensor_node: inputs",
                                              "/left/sensor_node: punyo_pressure"]
    assert {st.hardware_id for st in arr.status} == {"/left/sensor_node"}
    assert status_values(arr, "/left/sensor_node: punyo_pressure")["attachment"] == "punyo"
    # without a separate node name, the hardware id is the prefix
    arr = build_diagnostics(Time(sec=1), "/right/sensor_node", InputStats(), {}, 1.0)
    assert [st.name for st in arr.status] == ["/right/sensor_node: inputs"]


def test_two_nodes_of_one_name_in_two_namespaces_do_not_collide(tmp_path, rclpy_context):
    procs = {}
    params = {"sensors": ["pressure"], "contact_body_names": ["punyo", "object", "table"],
              "pressure.type": "PunyoPressureSensor", "pressure.attachment": "punyo",
              "pressure.publish_markers": False, "diagnostics_period": 0.5}
    f = write_params(tmp_path / "params.yaml", params, node_name="/**")
    probe = Probe("diag_names_probe")
    try:
        diags = probe.listen("/diagnostics", DiagnosticArray)
        for side in SIDES:
            procs[side] = NodeProcess(f, tmp_path / f"{side}.log",
                                      extra_args=["-r", f"__ns:=/{side}"]).start()
        for side in SIDES:
            assert probe.wait_for_subscriber(f"/{side}/contacts", PointCloud2, timeout=90.0), \
                procs[side].output()[-3000:]

        def reported():
            out = {}
            for m in diags:
                for st in m.status:
                    if not st.name.endswith(" topic status"):   # the per-topic frequency statuses
                        out.setdefault(st.name, set()).add(st.hardware_id)
            return out
        want = {f"/{side}/sensor_node: {task}" for side in SIDES for task in ("inputs", "pressure")}
        assert probe.spin_until(lambda: want <= set(reported()), 15.0), sorted(reported())
        names = reported()
        assert set(names) == want                                  # nothing else, no bare 'sensor_node: '
        for name, hw in names.items():
            assert hw == {name.split(":", 1)[0]}, (name, hw)        # '/left/sensor_node', one id per name
        # one report holds one node's statuses only
        for m in diags:
            assert len({st.hardware_id for st in m.status}) == 1
    finally:
        probe.destroy_node()
        for side, proc in procs.items():
            assert proc.stop() == 0, proc.output()[-3000:]
