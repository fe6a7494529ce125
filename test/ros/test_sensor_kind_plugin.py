"""A package adds a sensor kind through the ``vsf_sensor_ros.sensor_kinds`` entry point group.

The package here is real but not pip-installed: a directory holding ``my_kind.py`` (the one file
of the kind: model, settings, codec) and ``my_kind-0.1.dist-info/`` (METADATA, entry_points.txt),
put on the ``PYTHONPATH`` of a real ``sensor_node`` process, where importlib.metadata finds it.
The kind reads the total normal force on its body, ``gain * sum_c (R^T f_c) . n`` (n = the unit
``axis``, body frame), published as ``WrenchStamped.force.z``.  Expected values are derived by
hand from the world's transform of the body and the forces sent.
"""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger

from vsf_sensor_ros.ros import kinds
from vsf_sensor_ros.ros.kinds import SensorKindError

from .node_helpers import NodeProcess, Probe, deliver_counted, joint_state, write_params
from .sensor_node_scene import (JOINT_NAMES, JOINT_POS, empty_cloud, posed_world, rows_to_cloud, stamp,
                                wait_stamp)

MY_KIND = '''
"""TotalNormalForce: the total normal force on the attachment body (N), one file."""
import numpy as np
import torch
from geometry_msgs.msg import WrenchStamped

from vsf_sensor_ros.ros.kinds import SensorKind
from vsf_sensor_ros.ros.messages.readings import WrenchMessageCodec, index_of, type_mismatch
from vsf_sensor_ros.ros.parameter_table import model_spec
from vsf_sensor_ros.sensor import BaseSensor, rigid_transform


class TotalNormalForce(BaseSensor):
    type_name = "TotalNormalForce"

    def __init__(self, name, body, axis=(0.0, 0.0, 1.0), gain=1.0):
        super().__init__(name, body)
        a = np.asarray(axis, dtype=np.float64)
        self.axis, self.gain, self.calib = a / np.linalg.norm(a), float(gain), {}

    @classmethod
    def from_config(cls, name, config):
        return cls(name, config["attachment"], config.get("axis", (0.0, 0.0, 1.0)), config.get("gain", 1.0))

    def measurement_names(self):
        return ["force"]

    def predict_torch(self, state):
        _, f = state.contacts_on_body(self.attachModelName, local=True)
        n = torch.as_tensor(self.axis, dtype=f.dtype)
        off = self.calib.get("tare", np.zeros(1)) - self.calib.get("tare_sim_avg", np.zeros(1))
        return self.gain * (f @ n).sum().reshape(1) + torch.as_tensor(off, dtype=f.dtype)

    def measurement_force_jacobian(self, state):
        R, _ = rigid_transform(state, self.attachModelName)
        row = self.gain * (R @ torch.as_tensor(self.axis, dtype=R.dtype))
        return {pair: row.expand(len(c), 3).reshape(1, len(c), 3)
                for pair, c in state.contacts.items() if pair[0] == self.attachModelName}

    def set_calibration(self, calib_dict):
        self.calib = {k: np.asarray(v, dtype=np.float64).reshape(1) for k, v in calib_dict.items()
                      if v is not None}

    def get_calibration(self):
        return dict(self.calib)


class NormalForceCodec(WrenchMessageCodec):
    kind, axes = "normal_force", ("normal_force",)

    def slots(self, names, vertices):
        return np.array([index_of(names, "force")]), None

    def force(self, layout, values):
        return 0.0, 0.0, float(values[layout.slots[0]])

    def measured_values(self, layout, msg):
        if not isinstance(msg, WrenchStamped):
            raise type_mismatch(msg, layout)
        return np.array([msg.wrench.force.z])

    def recorded_vector(self, msg, measured):
        return np.array([msg.wrench.force.z])


KIND = SensorKind("TotalNormalForce", TotalNormalForce, settings=[
    model_spec("axis", [0.0, 0.0, 1.0], "normal n in the body frame (normalised)", length=3, finite=True),
    model_spec("gain", 1.0, "multiplier of the summed normal force", finite=True, positive=True),
], codec=NormalForceCodec())
'''

GAIN, AXIS = 0.5, [0, 0, 2]          # the axis is normalised: n = body z
MEASURED_SCALE = 10.0                # the measured stream in daN


def write_package(root: Path, module: str, source: str, entry: str) -> Path:
    """``root/<module>.py`` and ``root/<module>-0.1.dist-info/`` declaring ``entry`` in the group."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source)
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{kinds.ENTRY_POINT_GROUP}]\n{entry}\n")
    return root


def wrench(fz: float, t) -> WrenchStamped:
    w = WrenchStamped()
    w.header.stamp, w.header.frame_id = t, "tool_link"
    w.wrench.force.z = fz
    return w


def _start(tmp_path: Path, pkg: Path, params: dict) -> NodeProcess:
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    return NodeProcess(write_params(tmp_path / "params.yaml", params), tmp_path / "node.log",
                       env=env).start()


def test_a_package_kind_runs_in_sensor_node(tmp_path, rclpy_context):
    pkg = write_package(tmp_path / "site", "my_kind", textwrap.dedent(MY_KIND), "total = my_kind:KIND")
    params = {"sensors": ["total"], "tare_samples": 3, "diagnostics_period": 0.2,
              "total.type": "TotalNormalForce", "total.attachment": "tool_link",
              "total.axis": AXIS, "total.gain": GAIN, "total.measured_scale": MEASURED_SCALE}
    proc = _start(tmp_path, pkg, params)
    p = Probe("kind_plugin_probe")
    try:
        for out in ("predicted", "residual", "measured_si"):
            p.listen(f"/total/{out}", WrenchStamped)
        assert p.wait_for_subscriber("/contacts", PointCloud2, timeout=90.0), proc.output()[-3000:]
        assert p.wait_for_subscriber("/total/measured", WrenchStamped)
        deliver_counted(p, "/joint_states", joint_state(JOINT_NAMES, JOINT_POS), "/sensor_node: inputs",
                        "joint_states_received")
        # tare: three contact-free steps measured 0.030, 0.032, 0.034 daN = 0.30, 0.32, 0.34 N
        for k, v in enumerate([0.030, 0.032, 0.034]):
            t = stamp(50 + k)
            p.send("/contacts", empty_cloud(t))
            p.send("/total/measured", wrench(v, t))
            wait_stamp(p, "/total/residual", t)
        res = p.call(Trigger, "/total/tare", Trigger.Request())
        assert res.success, res.message
        tare = (0.30 + 0.32 + 0.34) / 3            # contact-free raw prediction is 0
        # one step in contact: two contacts on tool_link, one on the object (not the sensor's body)
        Tt = posed_world().body_transform("tool_link")
        R, o = Tt[:3, :3], Tt[:3, 3]
        fa, fb = np.array([1.0, 2.0, -4.0]), np.array([0.0, -1.0, 3.0])
        rows = [("tool_link", "object", o, fa, -1, -1), ("object", "tool_link", o, -fa, -1, -1),
                ("tool_link", "object", o + R[:, 0] * 0.01, fb, -1, -1)]
        t = stamp(60)
        p.send("/contacts", rows_to_cloud(rows, t))
        p.send("/total/measured", wrench(0.5, t))
        pred = wait_stamp(p, "/total/predicted", t)
        resid = wait_stamp(p, "/total/residual", t)
        meas = wait_stamp(p, "/total/measured_si", t)
    finally:
        p.destroy_node()
        code = proc.stop()
        out = proc.output()
    # body z in the world is R's third column: the normal force of f is f . R[:, 2]
    expected = tare + GAIN * float((fa + fb) @ R[:, 2])
    assert pred.wrench.force.z == pytest.approx(expected, abs=1e-9)
    assert (pred.wrench.force.x, pred.wrench.force.y) == (0.0, 0.0)
    assert pred.header.frame_id == "tool_link"
    assert meas.wrench.force.z == pytest.approx(5.0, abs=1e-12)
    assert resid.wrench.force.z == pytest.approx(5.0 - expected, abs=1e-9)
    assert code == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


def test_a_kind_that_fails_to_load_stops_the_node_naming_its_entry_point(tmp_path):
    pkg = write_package(tmp_path / "site", "broken_kind", "import no_such_module_here\n",
                        "broken = broken_kind:KIND")
    params = {"sensors": ["s"], "s.type": "PunyoPressureSensor", "s.attachment": "punyo"}
    proc = _start(tmp_path, pkg, params)
    code = proc.wait(timeout=90.0)
    out = proc.output()
    proc.stop()
    assert code == 2, out[-3000:]
    assert "broken = broken_kind:KIND" in out and "no_such_module_here" in out and "Traceback" not in out, \
        out[-3000:]


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry re-read with the test's entry points, and re-read again afterwards."""
    kinds.sensor_kinds.cache_clear()
    yield lambda root: monkeypatch.syspath_prepend(str(root))
    monkeypatch.undo()
    kinds.sensor_kinds.cache_clear()


def test_a_clashing_type_name_is_refused_naming_the_entry_point(tmp_path, fresh_registry):
    source = ("from vsf_sensor_ros.ros.kinds import SensorKind\n"
              "from vsf_sensor_ros.ros.kinds.punyo_pressure import KIND as P\n"
              "from vsf_sensor_ros.ros.kinds.klampt_contact import KIND as W\n"
              "KIND = SensorKind('PunyoPressureSensor', P.model, P.settings, W.codec)\n")
    fresh_registry(write_package(tmp_path, "clash_kind", source, "clash = clash_kind:KIND"))
    with pytest.raises(SensorKindError) as err:
        kinds.sensor_kinds()
    assert err.value.source == "clash = clash_kind:KIND"
    assert "PunyoPressureSensor" in str(err.value)


def test_an_entry_point_that_is_no_kind_is_refused(tmp_path, fresh_registry):
    fresh_registry(write_package(tmp_path, "odd_kind", "KIND = 42\n", "odd = odd_kind:KIND"))
    with pytest.raises(SensorKindError) as err:
        kinds.sensor_kinds()
    assert err.value.source == "odd = odd_kind:KIND" and "int" in str(err.value)
