"""The contact-free step rule (:mod:`vsf_sensor_ros.rig.contact_free`), pure: stamps in, steps out.

A stream is played as a simulator would send it (joint states every 50 ms, contacts while
touching) and every expected step stamp is written out by hand from the rule: a step is due when
the joint-state stamp is at least one period (here 200 ms) past the newest step used.
"""
from __future__ import annotations

import pytest

from vsf_sensor_ros.rig.contact_free import ContactFreeSteps
from vsf_sensor_ros.sensor.errors import SettingError

MS = 1_000_000
PERIOD = 200 * MS


def _play(rule, events):
    """Events ``("j", stamp_ms)`` (a joint state; a due step is used at once, as the node does) or
    ``("c", stamp_ms)`` (a contacts message used); the contact-free step stamps made, in ms."""
    made = []
    for kind, t in events:
        if kind == "j":
            due = rule.due(t * MS)
            if due is not None:
                rule.used(due, contact_free=True)
                made.append(due // MS)
        else:
            rule.used(t * MS, contact_free=False)
    return made


def test_steps_start_one_period_after_the_first_joint_stamp_and_repeat_every_period():
    rule = ContactFreeSteps(PERIOD)
    made = _play(rule, [("j", t) for t in range(1000, 1700, 50)])
    # first joint stamp 1000: due at >= 1200, then >= 1400, >= 1600
    assert made == [1200, 1400, 1600]
    assert rule.steps == 3


def test_no_step_while_contacts_flow_first_one_period_after_the_release():
    rule = ContactFreeSteps(PERIOD)
    touching = [e for t in range(1000, 1500, 50) for e in (("j", t), ("c", t))]   # joints first, as sent
    released = [("j", t) for t in range(1500, 2000, 50)]
    made = _play(rule, touching + released)
    # last contacts 1450: the first joint stamp >= 1650 is 1650; then 1850
    assert made == [1650, 1850]


def test_contacts_slower_than_the_period_are_not_stepped_between():
    # contacts every 150 ms (< the 200 ms period): no step between two of them
    rule = ContactFreeSteps(PERIOD)
    events = [("j", t) for t in range(1000, 1600, 50)]
    events = [e for e in events for e in ([e, ("c", e[1])] if e[1] % 150 == 100 else [e])]
    assert _play(rule, events) == []


def test_a_source_restart_is_a_new_start_and_the_step_follows_it_back():
    rule = ContactFreeSteps(PERIOD)
    made = _play(rule, [("j", t) for t in (1000, 1200, 1250)])
    assert made == [1200]
    # the simulator resets: joint stamps start again at 100 ms; the period counts from there
    made = _play(rule, [("j", t) for t in (100, 150, 300, 350)])
    assert made == [300]


def test_a_stamp_equal_or_earlier_than_the_newest_step_never_steps():
    rule = ContactFreeSteps(PERIOD)
    rule.used(5000 * MS, contact_free=False)     # contacts stamped ahead of the joint states
    assert rule.due(4000 * MS) is None
    assert rule.due(5100 * MS) is None
    assert rule.due(5200 * MS) == 5200 * MS
    assert rule.due(0) is None                   # an unstamped joint state is never a step


def test_late_contacts_are_told_from_a_reset():
    rule = ContactFreeSteps(PERIOD)
    rule.used(1000 * MS, contact_free=False)
    rule.used(1200 * MS, contact_free=True)
    assert rule.is_late(1100 * MS)                # after the last contacts, before the contact-free step
    assert rule.is_late(1000 * MS)
    assert not rule.is_late(900 * MS)             # before the last contacts message: a reset
    assert not rule.is_late(1300 * MS)            # after both: not late at all
    rule.used(900 * MS, contact_free=False, reset=True)
    assert not rule.is_late(1100 * MS)            # the old run's contact-free step is forgotten


def test_the_clock_source_hands_over_to_joint_states_without_a_restart():
    rule = ContactFreeSteps(PERIOD)
    assert rule.due(1000 * MS, "clock") is None
    assert rule.due(1200 * MS, "clock") == 1200 * MS
    rule.used(1200 * MS, contact_free=True)
    # the first joint stamp (1190) is below the clock's 1200: a change of source, not a reset
    assert rule.due(1190 * MS) is None
    assert rule.due(1400 * MS) == 1400 * MS


def test_a_period_must_be_positive():
    with pytest.raises(SettingError) as err:
        ContactFreeSteps(-5)
    assert (err.value.setting, err.value.value, err.value.reason) == ("period_ns", -5, "not_positive")
