"""A stamped measured stream lagging the contacts by more than the kept predictions is named on
/diagnostics (``pairing``) and in a tare's answer, with the parameter to raise.

The real in-process ``SensorNode`` of test_loud_configuration.py (reports every 0.2 s).  Contacts
are stamped every 10 ms of simulated time, three per feed step, and a ``FluidPressure`` per step is
stamped 350 ms before the newest contacts stamp (a camera or driver whose stamps lag).  By hand:
with ``alignment_buffer_size`` 20 the node keeps the predictions of the last 190 ms, so the
prediction of a measured stamp is gone before the measurement comes -- nothing pairs, and the
0.35 s gap is well under a clock offset's 1 s.  With 100 kept (990 ms) every measurement finds
the prediction of its own stamp.
"""
from __future__ import annotations

from sensor_msgs.msg import FluidPressure
from std_srvs.srv import Trigger

from .test_loud_configuration import _params, joint_state, make, no_contacts, values  # noqa: F401

MS = 1_000_000
LAG_NS = 350 * MS


def _stamped(msg, ns: int):
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
    return msg


def _feed(node, lis, steps: int, t: list) -> None:
    """``steps`` feed steps: three contacts 10 ms apart, then the pressure stamped LAG_NS earlier."""
    for _ in range(steps):
        node._on_joint_state(joint_state(1))
        for _ in range(3):
            t[0] += 10 * MS
            node._on_contacts(_stamped(no_contacts(node, 0), t[0]))
        node._on_measured("pressure", _stamped(FluidPressure(fluid_pressure=101325.0), t[0] - LAG_NS))
        lis.spin(0.03)


def test_measured_stamps_older_than_every_kept_prediction_name_the_buffer_to_raise(make):  # noqa: F811
    node, lis = make(parameter_overrides=_params(alignment_buffer_size=20))
    h = node._handles["pressure"]
    t = [10_000 * MS]
    _feed(node, lis, 40, t)          # 1.2 s of feeding: 80 unpaired offers in a row
    assert len(h.pairs) == 0
    sentence = ("measured stamps are 0.35 s behind contacts stamps, older than the 20 predictions kept "
                "(0.19 s of them): raise alignment_buffer_size")
    lis.reports.clear()
    _feed(node, lis, 10, t)
    st = lis.status(": pressure", lambda s: values(s)["pairing"] == sentence, timeout=2.0)
    assert values(st)["residuals_published"] == "0"
    h.pairs.clear()
    answer = node.measurements.on_tare("pressure", Trigger.Request(), Trigger.Response())
    assert not answer.success and sentence in answer.message, answer.message


def test_with_enough_predictions_kept_the_lagging_stream_pairs_and_pairing_is_ok(make):  # noqa: F811
    node, lis = make(parameter_overrides=_params(alignment_buffer_size=100))
    h = node._handles["pressure"]
    t = [10_000 * MS]
    _feed(node, lis, 40, t)
    # step k's pressure is stamped 10 s + 30 (k + 1) ms - 350 ms; the first contacts are stamped
    # 10.01 s, so steps 0 .. 10 come before any prediction (unpaired: 11) and from step 11 on each
    # pairs with the prediction of its own stamp (on the contacts' 10 ms grid)
    assert [p.stamp_ns for p in h.pairs] == [10_000 * MS + 30 * MS * (k + 1) - LAG_NS for k in range(11, 40)]
    lis.reports.clear()
    _feed(node, lis, 10, t)
    st = lis.status(": pressure", timeout=2.0)
    assert values(st)["pairing"] == "ok"
