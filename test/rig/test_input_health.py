"""A sensor is OK only while its predictions flow; a missing input is named by topic and type."""
from vsf_sensor_ros.rig.input_health import (ERROR, OK, WARN, SensorInputs, StreamClock, silent_streams,
                                             missing_input_hint, sensor_health)

CONTACTS = ("contacts", "sensor_msgs/msg/PointCloud2")
PRESSURE = ("/punyo/pressure", "std_msgs/msg/Float32")


def _inputs(**kw):
    contacts = StreamClock(*CONTACTS)
    measured = StreamClock(*PRESSURE, optional=True)
    return contacts, measured, SensorInputs(streams=[contacts, measured], **kw)


def test_flowing_predictions_are_ok():
    contacts, measured, inputs = _inputs()
    for t in (1.0, 1.5, 2.0):
        contacts.arrived(t)
        measured.arrived(t)
    inputs.last_prediction = 2.0
    assert sensor_health(3.0, 0.0, 2.0, inputs) == (OK, [])


def test_contacts_never_arriving_is_a_warning_naming_topic_and_type():
    contacts, measured, inputs = _inputs()
    measured.arrived(0.5)
    assert sensor_health(1.0, 0.0, 2.0, inputs) == (WARN, ["no prediction yet"])   # within the grace
    measured.arrived(4.5)
    level, problems = sensor_health(5.0, 0.0, 2.0, inputs)
    assert level == WARN
    assert problems == ["no sensor_msgs/msg/PointCloud2 on contacts since start (5 s)"]


def test_a_stopped_stream_is_named_with_how_long_ago():
    contacts, measured, inputs = _inputs(last_prediction=4.0)
    contacts.arrived(4.0)
    measured.arrived(1.0)
    level, problems = sensor_health(4.5, 0.0, 2.0, inputs)
    assert level == WARN and problems == ["/punyo/pressure (std_msgs/msg/Float32) stopped 4 s ago"]


def test_prediction_only_sensor_without_a_measured_stream_is_ok():
    contacts, measured, inputs = _inputs(last_prediction=9.5)
    contacts.arrived(9.5)
    assert sensor_health(10.0, 0.0, 2.0, inputs) == (OK, [])


def test_failing_predictions_are_an_error_and_unit_and_joint_problems_warn():
    contacts, measured, inputs = _inputs(last_prediction=9.9, failing="non_finite_prediction")
    contacts.arrived(9.9)
    assert sensor_health(10.0, 0.0, 2.0, inputs)[0] == ERROR
    inputs.failing = None
    inputs.unit_warning = "pressure 1065.8 Pa is no absolute air pressure: hPa read as Pa?"
    inputs.missing_joints = ("Actuator7",)
    level, problems = sensor_health(10.0, 0.0, 2.0, inputs)
    assert level == WARN and problems[0].startswith("pressure 1065.8 Pa")
    assert problems[1].endswith("Actuator7")


def test_tare_hint_names_every_missing_topic_at_once():
    contacts, measured, inputs = _inputs()
    measured.arrived(0.1)
    assert missing_input_hint(inputs.streams, 0.2, 0.0, 2.0) == \
        "no sensor_msgs/msg/PointCloud2 received on contacts"
    contacts.arrived(0.2)
    assert missing_input_hint(inputs.streams, 5.0, 0.0, 2.0) == \
        "nothing on contacts for 5 s; nothing on /punyo/pressure for 5 s"


def test_a_cause_ends_the_sentence_of_a_silent_stream_and_replaces_the_seconds_since_start():
    joints = StreamClock("/joint_states", "sensor_msgs/msg/JointState")
    cause = "/joint_states carries std_msgs/msg/String (from /driver), not sensor_msgs/msg/JointState"
    assert joints.problem(5.0, 0.0, 2.0, cause) == (
        "no sensor_msgs/msg/JointState on /joint_states: /joint_states carries std_msgs/msg/String "
        "(from /driver), not sensor_msgs/msg/JointState")
    assert joints.problem(1.0, 0.0, 2.0, cause) is None   # within the grace: no problem, no cause
    joints.arrived(1.0)
    assert joints.problem(5.0, 0.0, 2.0, cause) == (
        f"/joint_states (sensor_msgs/msg/JointState) stopped 4 s ago: {cause}")
    assert joints.problem(2.5, 0.0, 2.0, cause) is None   # flowing: a cause does not make a problem


def test_sensor_health_takes_causes_by_topic():
    contacts, measured, inputs = _inputs()
    measured.arrived(4.5)
    causes = {"contacts": "contacts carries x/msg/Y, not z", "/other": "unused"}
    level, problems = sensor_health(5.0, 0.0, 2.0, inputs, causes)
    assert level == WARN and problems == ["no sensor_msgs/msg/PointCloud2 on contacts: contacts carries "
                                          "x/msg/Y, not z"]


def test_silent_streams_are_the_missing_stopped_and_unheard_optional_ones_once_per_topic():
    contacts, measured, _ = _inputs()
    joints = StreamClock("/joint_states", "sensor_msgs/msg/JointState")
    joints.arrived(9.0)
    # within the grace (1 s < 2 s) nothing is silent
    assert silent_streams([contacts, joints, measured], 1.0, 0.0, 2.0) == {}
    # contacts and the optional measured stream never arrived (10 s > 2 s), joints flow
    assert list(silent_streams([contacts, joints, measured, contacts], 10.0, 0.0, 2.0)) == [
        "contacts", "/punyo/pressure"]
    joints.arrived(10.0)
    measured.arrived(1.0)   # arrived once, then stopped 9 s ago
    assert list(silent_streams([joints, measured], 10.0, 0.0, 2.0)) == ["/punyo/pressure"]


def test_an_optional_stream_never_received_is_a_problem_only_with_a_cause():
    _, measured, _ = _inputs()
    assert measured.problem(10.0, 0.0, 2.0) is None
    assert measured.problem(1.0, 0.0, 2.0, "x") is None   # within the grace
    cause = "/punyo/pressure carries std_msgs/msg/Float64 (from /driver), not std_msgs/msg/Float32"
    assert measured.problem(10.0, 0.0, 2.0, cause) == f"no std_msgs/msg/Float32 on /punyo/pressure: {cause}"


def test_a_stream_is_stopped_only_after_arriving_then_timeout_seconds_of_silence():
    s = StreamClock(*PRESSURE, optional=True)
    assert not s.stopped(100.0, 2.0)              # never arrived: missing, not stopped
    s.arrived(10.0)
    assert not s.stopped(11.9, 2.0)               # 1.9 s of silence < 2 s
    assert s.stopped(12.0, 2.0) and s.stopped(50.0, 2.0)
    s.arrived(50.0)
    assert not s.stopped(50.5, 2.0)               # arriving again
