"""The demo's residual RMS split: contact-free before / after the tare, in contact after it.

Hand-made streams: the split is by the prediction's send time against the tare call, and by the
contacts stream (a step in contact, and the steps next to one, are not contact-free).
"""
import numpy as np
import pytest

from vsf_sensor_ros.demo.analysis import Series, sensor_numbers
from vsf_sensor_ros.demo.summary import adjacent_stamps


def _series(stamps, sent, values):
    return Series(np.array(stamps, np.int64), np.array(sent, np.int64),
                  [np.array([v], float) for v in values], sent_ns=np.array(sent, np.int64))


def test_adjacent_stamps_are_the_neighbours_of_contact_steps_in_stamp_order():
    stamps = np.array([50, 10, 20, 30, 40, 60])
    assert sorted(adjacent_stamps(stamps, np.array([30])).tolist()) == [20, 40]
    assert sorted(adjacent_stamps(stamps, np.array([10, 60])).tolist()) == [20, 50]   # ends: one side
    assert adjacent_stamps(stamps, np.zeros(0, np.int64)).size == 0


def test_a_transition_spike_next_to_contact_is_neither_contact_free_nor_in_contact():
    # steps 0..7; tare requested at wall 25, answered at 35; contact at step 5
    stamps = list(range(8))
    sent = [10, 20, 30, 40, 50, 60, 70, 80]            # steps 0, 1 before; 2 in flight; 3.. after
    offset = 100.0
    measured = [offset + 1, offset - 1, offset, 2.0, 3.0, 4.0, -2.0, 1.0]
    predicted = [0, 0, 0, 0, 0, 0, 0, 0]
    measured[4] = 50.0                                 # a transition frame next to the contact
    pred, meas = _series(stamps, sent, predicted), _series(stamps, sent, measured)
    contact = np.array([5])
    near = adjacent_stamps(np.array(stamps), contact)  # steps 4 and 6
    n = sensor_numbers(pred, meas, np.array(stamps), np.array(sent) - 5, 25, 35, contact, near)
    assert n["residual_rms_contact_free_before_tare"] == pytest.approx(np.sqrt((101 ** 2 + 99 ** 2) / 2))
    # after the tare, contact-free: steps 3 and 7 (residuals 2, 1); step 4's 50 and 6's -2 left out
    assert n["residual_rms_contact_free_after_tare"] == pytest.approx(np.sqrt((4 + 1) / 2))
    assert n["residual_rms_in_contact_after_tare"] == pytest.approx(4.0)
    # without the neighbours, the spike is a contact-free sample
    strict = sensor_numbers(pred, meas, np.array(stamps), np.array(sent) - 5, 25, 35, contact)
    assert strict["residual_rms_contact_free_after_tare"] == pytest.approx(np.sqrt((4 + 2500 + 4 + 1) / 4))


def _residual_log(stamps_s, recv_ns):
    from builtin_interfaces.msg import Time
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import FluidPressure

    from vsf_sensor_ros.demo.recorder import TopicLog
    log = TopicLog("/p/residual", "sensor_msgs/msg/FluidPressure")
    for t, r in zip(stamps_s, recv_ns):
        msg = FluidPressure()
        msg.header.stamp = Time(sec=int(t), nanosec=round((t - int(t)) * 1e9))
        log.data.append(serialize_message(msg))
        log.recv_ns.append(r)
    return log


def test_the_tare_took_effect_at_the_newest_pair_received_before_its_answer():
    from vsf_sensor_ros.demo.summary import tare_sim_time
    a = _residual_log([0.90, 0.92, 0.94], [100, 200, 300])
    b = _residual_log([0.92, 0.96], [150, 400])             # 0.96 paired after the answer (at 350)
    assert tare_sim_time(350, [a, b, None]) == 0.94
    assert tare_sim_time(120, [a, b]) == 0.90
    assert tare_sim_time(50, [a, b]) is None                # no pair before the answer
    assert tare_sim_time(None, [a, b]) is None              # no answer
