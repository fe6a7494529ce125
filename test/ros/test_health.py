"""``NodeHealth`` (the node's /diagnostics completion) and the unit sentence, without a node.

Numbers are hand-derived: 5 messages in a 2.0 s window is 2.5 Hz; 1013.25 x 100 = 101325 Pa lies
in the plausible 2e4..1e6 Pa, 1013.25 x 1 does not.
"""
from __future__ import annotations

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

from vsf_sensor_ros.ros.health import NodeHealth, startup_problems
from vsf_sensor_ros.rig.input_health import SensorInputs, pressure_unit_problem


def _values(st):
    return {kv.key: kv.value for kv in st.values}


def test_frequency_status_has_the_frequency_status_keys_with_hand_computed_values():
    h = NodeHealth("/left/sensor_node", started=100.0)
    c = h.stream("/left/contacts", "sensor_msgs/msg/PointCloud2")
    for t in (100.2, 100.6, 101.0, 101.4, 101.8):
        c.arrived(t)
    [st] = h.frequency_statuses(now=102.0, timeout=3.0)
    assert st.name == "/left/sensor_node: /left/contacts topic status"
    assert st.hardware_id == "/left/sensor_node"
    v = _values(st)
    assert v["Events in window"] == "5" and v["Events since startup"] == "5"
    assert float(v["Duration of window (s)"]) == 2.0 and float(v["Actual frequency (Hz)"]) == 2.5
    # the next window: nothing arrived in 3.5 s on a needed topic -> WARN
    [st] = h.frequency_statuses(now=105.5, timeout=3.0)
    v = _values(st)
    assert v["Events in window"] == "0" and v["Events since startup"] == "5"
    assert float(v["Duration of window (s)"]) == 3.5
    assert st.level == DiagnosticStatus.WARN and "/left/contacts" in st.message


def test_an_optional_stream_that_never_arrived_is_ok():
    h = NodeHealth("/sensor_node", started=0.0)
    h.stream("/punyo/pressure", "std_msgs/msg/Float32", optional=True)
    [st] = h.frequency_statuses(now=10.0, timeout=3.0)
    assert st.level == DiagnosticStatus.OK


def test_apply_sets_error_while_failing_and_keeps_the_worse_level():
    h = NodeHealth("/sensor_node", started=0.0)
    c = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    c.arrived(9.5)
    h.last_prediction["pressure"] = 9.5
    arr = DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: inputs", message="OK"),
                                  DiagnosticStatus(name="/sensor_node: pressure", message="2.0 Hz")])
    h.apply(arr, now=10.0, timeout=3.0, sensors={"pressure": SensorInputs([c])})
    assert arr.status[1].level == DiagnosticStatus.OK and arr.status[1].message == "2.0 Hz"
    h.prediction_failed("non_finite_prediction", "pressure: pressure = inf")
    h.prediction_failed("invalid_contacts", "not a model's failure: ignored here")
    arr = DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: pressure", message="2.0 Hz")])
    h.apply(arr, now=10.0, timeout=3.0, sensors={"pressure": SensorInputs([c])})
    assert arr.status[0].level == DiagnosticStatus.ERROR
    assert arr.status[0].message == "predictions failing: non_finite_prediction (pressure: pressure = inf)"


def test_configuration_problems_make_the_inputs_status_warn():
    h = NodeHealth("/sensor_node", started=0.0)
    h.config_problems = ["unknown parameter 'x' (node)"]
    arr = DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: inputs", message="OK")])
    h.apply(arr, now=1.0, timeout=3.0, sensors={})
    st = arr.status[0]
    assert st.level == DiagnosticStatus.WARN
    assert _values(st)["configuration"] == "1"
    assert _values(st)["configuration.problems"] == "unknown parameter 'x' (node)"


def test_startup_problems_name_unknown_keys_and_an_empty_sensor_list():
    unknown, lines = startup_problems(["tare_samples", "punyo.measured_scael", "punyo.type"],
                                      {"punyo": "PunyoPressureSensor"}, [], [], "/sensor_node")
    assert [u.name for u in unknown] == ["punyo.measured_scael"]
    assert unknown[0].suggestion == "punyo.measured_scale"
    _, lines = startup_problems([], {}, [], [], "/sensor_node")
    assert lines == ["no sensors configured (parameter 'sensors' is empty): the node publishes no "
                     "predictions"]


def test_a_pressure_in_its_scale_is_no_problem():
    assert pressure_unit_problem(1013.25, 100.0, 2e4, 1e6) is None


@pytest.mark.parametrize("reading, scale, named", [
    (1013.25, 1.0, ("1013.25 Pa", "measured_scale: 100.0")),     # hPa
    (101.325, 1.0, ("measured_scale: 1000.0",)),                  # kPa
    (101325.0, 100.0, ("measured_scale: 1.0",)),                  # Pa given a hPa scale: 1.01e7 Pa
    (1e-9, 1.0, ("no common pressure unit",)),                    # no scale to suggest
])
def test_pressure_unit_problem_names_value_and_the_scale_to_set(reading, scale, named):
    text = pressure_unit_problem(reading, scale, 2e4, 1e6)
    assert all(n in text for n in named), text


def test_topic_status_warns_only_for_a_stream_some_sensor_needs():
    # an untracked free body's pose (no sensor rides on it) stays OK; the contacts a sensor needs warn
    h = NodeHealth("/sensor_node", started=0.0)
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    h.stream("/object/pose", "geometry_msgs/msg/PoseStamped")
    arr = DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: pressure", message="")])
    h.apply(arr, now=10.0, timeout=3.0, sensors={"pressure": SensorInputs([contacts])})
    topics = {st.name: st.level for st in arr.status if st.name.endswith("topic status")}
    assert topics == {"/sensor_node: /contacts topic status": DiagnosticStatus.WARN,
                      "/sensor_node: /object/pose topic status": DiagnosticStatus.OK}


def test_a_needed_measured_topic_warns_before_its_first_message():
    # measured_topic named by the user: needed from the start, so a wrong driver topic is seen
    h = NodeHealth("/sensor_node", started=0.0)
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    measured = h.stream("/punyo/pressure", "std_msgs/msg/Float32", optional=False)
    contacts.arrived(9.9)
    h.last_prediction["pressure"] = 9.9
    arr = DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: pressure", message="")])
    h.apply(arr, now=10.0, timeout=3.0, sensors={"pressure": SensorInputs([contacts, measured])})
    assert arr.status[0].level == DiagnosticStatus.WARN
    assert "no std_msgs/msg/Float32 on /punyo/pressure since start (10 s)" in arr.status[0].message


def _report(*sensors):
    return DiagnosticArray(status=[DiagnosticStatus(name="/sensor_node: inputs", message="OK")]
                           + [DiagnosticStatus(name=f"/sensor_node: {s}", message="") for s in sensors])


def test_the_inputs_status_warns_naming_the_inputs_a_sensor_misses_and_is_ok_when_they_flow():
    h = NodeHealth("/sensor_node", started=0.0)
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    joints = h.stream("/joint_states", "sensor_msgs/msg/JointState")
    untracked = h.stream("/object/pose", "geometry_msgs/msg/PoseStamped")   # no sensor rides on it
    joints.arrived(1.0)
    sensors = {"a": SensorInputs([contacts, joints]), "b": SensorInputs([contacts])}
    arr = h.apply(_report("a", "b"), now=10.0, timeout=3.0, sensors=sensors)
    st = arr.status[0]
    assert st.level == DiagnosticStatus.WARN
    # contacts never arrived (10 s since start), joint states stopped 9 s ago; each topic once
    assert st.message == "inputs missing or stopped: /contacts, /joint_states"
    v = _values(st)
    assert v["inputs.missing"] == "/contacts, /joint_states"
    assert v["inputs.problems"] == ("no sensor_msgs/msg/PointCloud2 on /contacts since start (10 s); "
                                    "/joint_states (sensor_msgs/msg/JointState) stopped 9 s ago")
    assert untracked.topic not in v["inputs.missing"]
    # both flow again, the sensors predict: the inputs status is OK again
    contacts.arrived(11.0)
    joints.arrived(11.0)
    h.last_prediction["a"] = 11.0
    h.last_prediction["b"] = 11.0
    arr = h.apply(_report("a", "b"), now=11.5, timeout=3.0, sensors=sensors)
    st = arr.status[0]
    assert st.level == DiagnosticStatus.OK and st.message == "OK"
    assert _values(st)["inputs.missing"] == "none" and _values(st)["inputs.problems"] == "none"


def test_configuration_problems_and_missing_inputs_share_the_inputs_message():
    h = NodeHealth("/sensor_node", started=0.0)
    h.config_problems = ["p1", "p2"]
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    arr = _report("a")
    arr.status[0].level = DiagnosticStatus.WARN
    arr.status[0].message = "3 messages rejected"
    h.apply(arr, now=10.0, timeout=3.0, sensors={"a": SensorInputs([contacts])})
    assert arr.status[0].level == DiagnosticStatus.WARN
    assert arr.status[0].message == ("2 configuration problems; inputs missing or stopped: /contacts; "
                                     "3 messages rejected")


def test_explain_is_asked_once_per_silent_topic_and_its_text_ends_every_sentence_of_it():
    h = NodeHealth("/sensor_node", started=0.0)
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    joints = h.stream("/joint_states", "sensor_msgs/msg/JointState")
    contacts.arrived(9.9)
    asked = []

    def explain(clock):
        asked.append(clock.topic)
        return f"{clock.topic} carries std_msgs/msg/String (from /driver), not {clock.type_name}"

    sensors = {"a": SensorInputs([contacts, joints]), "b": SensorInputs([joints])}
    arr = h.apply(_report("a", "b"), now=10.0, timeout=3.0, sensors=sensors, explain=explain)
    assert asked == ["/joint_states"]   # the flowing contacts are not asked about; joints only once
    sentence = ("no sensor_msgs/msg/JointState on /joint_states: /joint_states carries std_msgs/msg/String "
                "(from /driver), not sensor_msgs/msg/JointState")
    by_name = {st.name: st for st in arr.status}
    assert by_name["/sensor_node: a"].message.startswith(sentence)
    assert by_name["/sensor_node: b"].level == DiagnosticStatus.WARN
    assert _values(by_name["/sensor_node: inputs"])["inputs.problems"] == sentence
    topic = by_name["/sensor_node: /joint_states topic status"]
    assert topic.message == ("No events recorded on /joint_states (sensor_msgs/msg/JointState): "
                             "/joint_states carries std_msgs/msg/String (from /driver), "
                             "not sensor_msgs/msg/JointState")
    # an explanation of "" leaves the plain sentence
    arr = h.apply(_report("a"), now=10.0, timeout=3.0, sensors={"a": SensorInputs([joints])},
                  explain=lambda clock: "")
    assert arr.status[1].message.startswith(
        "no sensor_msgs/msg/JointState on /joint_states since start (10 s)")


def test_another_type_on_an_optional_topic_never_received_makes_it_a_problem():
    # a prediction-only sensor's default measured topic: silent is fine, another type there is not
    h = NodeHealth("/sensor_node", started=0.0)
    contacts = h.stream("/contacts", "sensor_msgs/msg/PointCloud2")
    measured = h.stream("/pressure/measured", "sensor_msgs/msg/FluidPressure", optional=True)
    contacts.arrived(9.9)
    h.last_prediction["pressure"] = 9.9
    sensors = {"pressure": SensorInputs([contacts, measured])}
    arr = h.apply(_report("pressure"), now=10.0, timeout=3.0, sensors=sensors, explain=lambda clock: "")
    assert [st.level for st in arr.status] == [DiagnosticStatus.OK] * 4   # inputs, sensor, 2 topics
    cause = ("/pressure/measured carries std_msgs/msg/Float32 (from /driver), "
             "not sensor_msgs/msg/FluidPressure")
    arr = h.apply(_report("pressure"), now=10.5, timeout=3.0, sensors=sensors, explain=lambda clock: cause)
    by_name = {st.name: st for st in arr.status}
    sentence = f"no sensor_msgs/msg/FluidPressure on /pressure/measured: {cause}"
    assert by_name["/sensor_node: pressure"].level == DiagnosticStatus.WARN
    assert by_name["/sensor_node: pressure"].message.startswith(sentence)
    assert _values(by_name["/sensor_node: inputs"])["inputs.missing"] == "/pressure/measured"
    topic = by_name["/sensor_node: /pressure/measured topic status"]
    assert topic.level == DiagnosticStatus.WARN and "optional" not in topic.message and cause in topic.message
