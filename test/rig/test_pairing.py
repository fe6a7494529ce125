"""The stamp pairer, without ROS: hand-worked sequences of stamps (ns) and the pairs they must give."""
from __future__ import annotations

import pytest

from vsf_sensor_ros.rig.pairing import PeriodEstimate, StampPairer, nearest_within
from vsf_sensor_ros.sensor.errors import SettingError


# --------------------------------------------------------------------------- the matching rule
@pytest.mark.parametrize("stamps, query, tol, expected", [
    ([10, 20, 30], 24, 5, 1),        # |24-20| = 4 <= 5, |24-30| = 6 > 5
    ([10, 20, 30], 25, 5, 1),        # a tie (5 and 5): the earlier stamp
    ([10, 20, 30], 26, 3, None),     # nearest is 30, 4 ns away, beyond 3
    ([10, 20, 30], 10, 0, 0),        # tolerance 0: equal stamps only
    ([10, 20, 30], 5, 5, 0),         # before every stamp
    ([10, 20, 30], 36, 6, 2),        # after every stamp
    ([], 10, 100, None),             # nothing buffered
])
def test_nearest_within_picks_the_closest_stamp_inside_the_tolerance(stamps, query, tol, expected):
    assert nearest_within(stamps, query, tol) == expected


# --------------------------------------------------------------------------- pairing
def test_a_measurement_pairs_with_a_queued_prediction_and_the_pair_carries_the_prediction_stamp():
    p = StampPairer(capacity=10, tolerance_ns=5)
    assert p.add_prediction(100, "pred100") is None
    pair = p.add_measurement(103, "meas103")
    assert (pair.stamp_ns, pair.measured_stamp_ns, pair.prediction, pair.measurement) == \
        (100, 103, "pred100", "meas103")
    assert p._pred.stamps == [] and p._meas.stamps == []


def test_a_prediction_pairs_with_a_queued_measurement():
    p = StampPairer(capacity=10, tolerance_ns=5)
    assert p.add_measurement(98, "m") is None
    pair = p.add_prediction(100, "p")
    assert (pair.stamp_ns, pair.measured_stamp_ns) == (100, 98)


def test_the_nearest_of_several_candidates_is_taken_and_the_others_stay():
    p = StampPairer(capacity=10, tolerance_ns=5)
    p.add_prediction(100, "a")
    p.add_prediction(104, "b")
    pair = p.add_measurement(103, "m")      # 104 is 1 ns away, 100 is 3 ns away
    assert pair.prediction == "b"
    assert p._pred.stamps == [100]


def test_beyond_the_tolerance_both_are_queued():
    p = StampPairer(capacity=10, tolerance_ns=5)
    p.add_prediction(100, "p")
    assert p.add_measurement(106, "m") is None
    assert p._pred.stamps == [100] and p._meas.stamps == [106]


def test_queues_stay_sorted_and_drop_the_oldest_stamp_beyond_capacity():
    p = StampPairer(capacity=2, tolerance_ns=0)
    for s in (30, 10, 20):                   # out of order: sorted 10, 20, 30, then 10 dropped
        p.add_prediction(s, s)
    assert p._pred.stamps == [20, 30]


def test_the_tolerance_can_change_between_messages():
    p = StampPairer(capacity=10, tolerance_ns=1)
    p.add_prediction(100, "p")
    assert p.add_measurement(104, "m") is None        # 4 ns > 1 ns
    p.tolerance_ns = 10
    pair = p.add_prediction(110, "q")                 # 104 is 6 ns from 110, within 10
    assert (pair.stamp_ns, pair.measured_stamp_ns) == (110, 104)


def test_a_restarted_measured_source_is_detected_and_its_queue_cleared():
    p = StampPairer(capacity=10, tolerance_ns=0)
    p.add_measurement(500, "old")
    assert not p.measurement_went_back(600)
    assert p.measurement_went_back(10)
    p.clear_measurements()
    assert p._meas.stamps == []
    p.clear()
    assert not p.measurement_went_back(10)            # everything forgotten, the last stamp too


def test_invalid_capacity_and_tolerance_are_refused():
    for kw, setting, value in ((dict(capacity=0, tolerance_ns=0), "capacity", 0),
                               (dict(capacity=1, tolerance_ns=-1), "tolerance_ns", -1)):
        with pytest.raises(SettingError) as err:
            StampPairer(**kw)
        assert (err.value.setting, err.value.value, err.value.reason) == (setting, value, "out_of_range")


# --------------------------------------------------------------------------- stamp 0: no time
S = 1_000_000_000


def test_a_zero_stamped_measurement_among_stamped_ones_is_refused_counted_and_never_paired():
    """Under a wide fixed tolerance (20 s) a measurement stamped 0 would pair with the oldest kept
    prediction (10 s, nearest to 0); it is refused, and the next stamped measurement still pairs
    with its own prediction."""
    p = StampPairer(capacity=10, tolerance_ns=20 * S)
    p.add_prediction(10 * S, "p10")
    p.add_prediction(11 * S, "p11")
    assert p.add_measurement(0, "m0") is None
    assert p.zero_stamps == {"predicted": 0, "measured": 1}
    assert p._meas.stamps == [] and p._pred.stamps == [10 * S, 11 * S]
    pair = p.add_measurement(11 * S, "m11")
    assert (pair.prediction, pair.measurement) == ("p11", "m11")
    assert p._pred.stamps == [10 * S]


def test_a_zero_stamped_prediction_and_measurement_never_pair_with_each_other():
    """A simulator and a driver that both leave the stamp at 0: |0 - 0| is within any tolerance."""
    p = StampPairer(capacity=10, tolerance_ns=5)
    assert p.add_prediction(0, "p0") is None
    assert p.add_measurement(0, "m0") is None
    assert p.add_prediction(0, "p0b") is None
    assert p.zero_stamps == {"predicted": 2, "measured": 1}
    assert p._pred.stamps == [] and p._meas.stamps == []
    assert p.offset_hint() is None
    p.clear()
    assert p.zero_stamps == {"predicted": 2, "measured": 1}     # counts outlive a clear


def test_a_zero_stamp_is_no_restart_and_leaves_the_periods_alone():
    """Predictions 10, 20, 30 ns and measurements 11, 21 ns: both periods 10 ns, tolerance 5 ns.  A
    measurement at 0 taken as a stamp would be a restart (queue cleared) and a step back (period
    forgotten: tolerance 0, so 31 would not pair with 30)."""
    p = StampPairer(capacity=10, tolerance_ns=None)
    for t in (10, 20):
        p.add_prediction(t, t)
    p.add_measurement(11, 11)                 # tolerance 0 still (one measured stamp): queued
    p.add_measurement(21, 21)                 # measured period now 10: 21 pairs with 20
    assert p.effective_tolerance_ns() == 5 and p._meas.stamps == [11]
    assert not p.measurement_went_back(0)
    assert p.add_measurement(0, 0) is None
    assert p.effective_tolerance_ns() == 5 and p._meas.stamps == [11]
    assert not p.measurement_went_back(31)
    p.add_prediction(30, 30)
    pair = p.add_measurement(31, 31)
    assert (pair.stamp_ns, pair.measured_stamp_ns) == (30, 31)
    assert p.zero_stamps["measured"] == 1


# --------------------------------------------------------------------------- adaptive tolerance
def test_period_estimate_is_the_median_step_and_a_step_back_starts_afresh():
    e = PeriodEstimate()
    assert e.period_ns is None
    for s in (0, 10, 20, 50):                 # steps 10, 10, 30: median 10
        e.observe(s)
    assert e.period_ns == 10
    e.observe(5)                               # back in time: a restart
    assert e.period_ns is None
    e.observe(9)
    assert e.period_ns == 4


def test_without_a_fixed_tolerance_half_the_longer_period_is_used():
    # predictions every 10 ns, measurements every 4 ns: tolerance = max(10, 4) // 2 = 5 ns
    p = StampPairer(capacity=10, tolerance_ns=None)
    assert p.add_prediction(100, "p100") is None      # no period known yet: equal stamps only
    assert p.add_measurement(103, "m103") is None
    assert p.add_prediction(110, "p110") is None      # prediction period 10, measured still unknown
    assert p.effective_tolerance_ns() == 0
    pair = p.add_measurement(107, "m107")             # measured period 4 -> tolerance 5; 110 is 3 away
    assert p.effective_tolerance_ns() == 5
    assert (pair.stamp_ns, pair.measured_stamp_ns) == (110, 107)
    assert p._pred.stamps == [100] and p._meas.stamps == [103]


# --------------------------------------------------------------------------- clock offset
def test_offset_hint_names_a_gap_no_tolerance_bridges():
    p = StampPairer(capacity=10, tolerance_ns=5_000_000)              # 5 ms
    p.add_prediction(2_000_000_000, "sim")                            # simulation time: 2 s
    p.add_measurement(1_700_000_002_000_000_000, "wall")              # wall clock: 1.7e9 s + 2 s
    # gap = 1.7e18 ns = 1.7e9 s
    assert p.offset_hint() == "measured stamps are 1.7e+09 s ahead of contacts stamps: different clocks?"
    q = StampPairer(capacity=10, tolerance_ns=5_000_000)
    q.add_prediction(10_000_000_000, "sim")
    q.add_measurement(7_000_000_000, "meas")                          # 3 s behind
    assert q.offset_hint() == "measured stamps are 3 s behind contacts stamps: different clocks?"


def test_offset_hint_is_silent_for_jitter_and_empty_queues():
    p = StampPairer(capacity=10, tolerance_ns=5_000_000)
    assert p.offset_hint() is None
    p.add_prediction(1_000_000_000, "p")
    p.add_measurement(1_900_000_000, "m")                             # 0.9 s: not above 1 s
    assert p.offset_hint() is None


def test_a_100_hz_stream_against_60_hz_predictions_pairs_every_prediction_once_periods_are_known():
    # Receive times (ns) of a header-less 100 Hz driver (3, 13, 23, ... ms) and 60 Hz contacts
    # (0, 16.67, 33.33, 50 ms) after T0 (stamp 0 is no time), offered in arrival order.  Tolerance
    # once both periods are known: 16_666_667 // 2 = 8_333_333 ns.  By hand:
    #   p0    no period yet: queued          m3, m13  measured period 10 ms, prediction's unknown: queued
    #   p16.7 nearest of [3, 13] is 13 (3.67 ms): pair       m23, m33: nearest prediction 0 is too far: queued
    #   p33.3 nearest of [3, 23, 33] is 33 (0.33 ms): pair   m43: queued
    #   p50   nearest of [3, 23, 43] is 43 (7 ms <= 8.33 ms): pair           m53: queued
    ms = 1_000_000
    p_times = [0, 16_666_667, 33_333_333, 50_000_000]
    m_times = [3 * ms, 13 * ms, 23 * ms, 33 * ms, 43 * ms, 53 * ms]
    events = sorted([(t, "p") for t in p_times] + [(t, "m") for t in m_times])
    p = StampPairer(capacity=50, tolerance_ns=None)
    pairs = []
    for t, kind in events:
        pair = p.add_prediction(T0 + t, t) if kind == "p" else p.add_measurement(T0 + t, t)
        if pair is not None:
            pairs.append((pair.prediction, pair.measurement))
    assert pairs == [(16_666_667, 13 * ms), (33_333_333, 33 * ms), (50_000_000, 43 * ms)]
    assert p.effective_tolerance_ns() == 8_333_333
    assert p._pred.stamps == [T0]
    assert p._meas.stamps == [T0 + t for t in (3 * ms, 23 * ms, 53 * ms)]


# --------------------------------------------------------------------------- the clock diagnosis in long runs
MS = 1_000_000
T0 = 1_000 * MS      # the streams' time origin: stamp 0 is no time (refused)


def _run(p, p_times, m_times, check_every_ns=None, m_clock_ns=0):
    """Offer the two streams in arrival order (a prediction first on equal times); return the pairs
    and the hints read every ``check_every_ns`` of arrival time (as the node's diagnostics timer
    does).  Times are arrival times (ns); a measurement's stamp is its arrival time plus
    ``m_clock_ns`` (its driver's clock offset); both are offered after :data:`T0`, the pairs
    given back without it."""
    events = sorted([(t, 0, "p") for t in p_times] + [(t, 1, "m") for t in m_times])
    pairs, hints, next_check = [], [], check_every_ns
    for t, _, kind in events:
        if check_every_ns is not None and t >= next_check:
            hints.append(p.offset_hint())
            next_check += check_every_ns
        pair = p.add_prediction(T0 + t, t) if kind == "p" else p.add_measurement(T0 + t + m_clock_ns, t)
        if pair is not None:
            pairs.append((pair.stamp_ns - T0, pair.measured_stamp_ns - T0))
    return pairs, hints


def test_a_100_hz_measured_stream_pairing_with_50_hz_contacts_is_never_called_a_clock_offset():
    # The trial's setup: a header-less 100 Hz pressure (receive times 3, 13, 23, ... ms) and 50 Hz
    # contacts (0, 20, 40, ... ms), one minute, adaptive tolerance.  By hand: p0 comes before any
    # period is known and never pairs (it stays queued for good); from then on the tolerance is
    # max(20, 10) // 2 = 10 ms and every prediction 20k ms pairs with the measurement 7 ms before
    # it (20k - 7 = 10 (2k - 1) + 3), the odd measurements 20k + 3 stay unmatched.  Pairs are being
    # made all along, so the diagnosis must say nothing at every once-a-second check -- before
    # the fix it compared the newest unmatched measurement with the stale p0 and reported
    # "measured stamps are 1 s, 2 s, ... ahead of contacts stamps".
    n = 3000                                            # 60 s of contacts
    p_times = [20 * MS * k for k in range(n)]
    m_times = [10 * MS * j + 3 * MS for j in range(2 * n)]
    p = StampPairer(capacity=50, tolerance_ns=None)
    pairs, hints = _run(p, p_times, m_times, check_every_ns=1_000 * MS)
    assert pairs == [(20 * MS * k, 20 * MS * k - 7 * MS) for k in range(1, n)]
    assert p._pred.stamps == [T0]                  # the stale entry that fooled the old rule
    assert len(hints) == 59 and hints == [None] * 59
    assert p.offset_hint() is None


def test_a_fixed_tolerance_run_with_one_early_unpaired_prediction_is_not_diagnosed_either():
    # FluidPressure with header stamps, same clock, fixed tolerance 4 ms: the first prediction
    # (stamp 0) finds the measurement 5 ms away -- beyond 4 ms, both queued; every later
    # prediction 20k pairs with the measurement at 20k + 1 ms (1 ms <= 4 ms).
    n = 500                                              # 10 s
    p_times = [20 * MS * k for k in range(n)]
    m_times = [5 * MS] + [10 * MS * j + 1 * MS for j in range(1, 2 * n)]
    p = StampPairer(capacity=50, tolerance_ns=4 * MS)
    pairs, hints = _run(p, p_times, m_times, check_every_ns=1_000 * MS)
    assert pairs == [(20 * MS * k, 20 * MS * k + 1 * MS) for k in range(1, n)]
    assert hints == [None] * 9 and p.offset_hint() is None


def test_a_real_offset_is_reported_as_the_gap_between_the_streams_recent_stamps_and_does_not_grow():
    # The measured driver's stamps run 1.8 s ahead of the contacts' (two clocks): 100 Hz measured
    # arriving at 10j ms stamped 1800 + 10j ms, 50 Hz contacts at 20k ms.  Nothing can pair
    # (1.8 s >> any tolerance); the newest stamps of the two streams are always 1.79-1.81 s apart,
    # at every check of a one-minute run: "1.8 s ahead", never 2, 3, ... s.
    n = 3000
    p_times = [20 * MS * k for k in range(n)]
    m_times = [10 * MS * j for j in range(2 * n)]
    p = StampPairer(capacity=50, tolerance_ns=None)
    pairs, hints = _run(p, p_times, m_times, check_every_ns=1_000 * MS, m_clock_ns=1_800 * MS)
    assert pairs == []
    sentence = "measured stamps are 1.8 s ahead of contacts stamps: different clocks?"
    assert hints[1:] == [sentence] * 58                  # from the first check after both streams ran
    assert p.offset_hint() == sentence
    # the other way round: the measured stamps 3 s behind
    q = StampPairer(capacity=50, tolerance_ns=None)
    _run(q, [20 * MS * k for k in range(200)], [10 * MS * j for j in range(400)], m_clock_ns=-3_000 * MS)
    assert q.offset_hint() == "measured stamps are 3 s behind contacts stamps: different clocks?"


def test_a_stopped_stream_is_not_a_clock_offset():
    # Pairing 1:1 at 50 Hz (measured 2 ms after each prediction), then the measured stream stops
    # while contacts go on for 5 s: the newest measured stamp falls further behind, but nothing
    # is offered against it -- no diagnosis.  Then the reverse: contacts stop, measured go on.
    p = StampPairer(capacity=50, tolerance_ns=5 * MS)
    pairs, _ = _run(p, [20 * MS * k for k in range(300)], [20 * MS * k + 2 * MS for k in range(50)])
    assert len(pairs) == 50 and p.offset_hint() is None
    q = StampPairer(capacity=50, tolerance_ns=5 * MS)
    pairs, _ = _run(q, [20 * MS * k for k in range(50)], [20 * MS * k + 2 * MS for k in range(300)])
    assert len(pairs) == 50 and q.offset_hint() is None


def test_an_offset_that_appears_later_is_diagnosed_and_a_pair_clears_it():
    # 1 s of pairing 1:1 (measured 1 ms after each 20 ms prediction), then the measured driver's
    # clock jumps 5 s ahead: from then on nothing pairs and the gap of the recent stamps is 5 s.
    p = StampPairer(capacity=50, tolerance_ns=5 * MS)
    _run(p, [20 * MS * k for k in range(50)], [20 * MS * k + 1 * MS for k in range(50)])
    assert p.offset_hint() is None
    _run(p, [1_000 * MS + 20 * MS * k for k in range(50)],
         [1_000 * MS + 20 * MS * k + 1 * MS for k in range(50)], m_clock_ns=5_000 * MS)
    assert p.offset_hint() == "measured stamps are 5 s ahead of contacts stamps: different clocks?"
    # the driver comes back to the contacts' clock (a step back: cleared as a restart), pairs again
    assert p.measurement_went_back(2_000 * MS + 1 * MS)
    p.clear_measurements()
    assert p.offset_hint() is None
    p.add_prediction(2_000 * MS, "p")
    assert p.add_measurement(2_000 * MS + 1 * MS, "m") is not None
    assert p.offset_hint() is None


def test_measurements_older_than_every_kept_prediction_are_named_with_the_buffer_to_raise():
    # 1 kHz contacts (stamps 0, 1, 2, ... ms) and a 30 Hz camera arriving at 33j ms stamped
    # 350 ms earlier, 200 predictions kept.  By hand: the queue holds the stamps [t - 199, t] ms at
    # a camera arrival t, so the frame of t - 350 ms is 151 ms older than the oldest, beyond the
    # tolerance (half the longer period, 16.5 ms): nothing ever pairs, yet the gap (0.35 s) is
    # far below a clock offset's 1 s.  The newest contacts stamp at each camera arrival is t.
    p = StampPairer(capacity=200, tolerance_ns=None)
    pairs, hints = _run(p, [MS * k for k in range(3000)], [33 * MS * j for j in range(91)],
                        check_every_ns=1_000 * MS, m_clock_ns=-350 * MS)
    assert pairs == []
    sentence = ("measured stamps are 0.35 s behind contacts stamps, older than the 200 predictions kept "
                "(0.2 s of them): raise alignment_buffer_size")
    assert hints == [sentence, sentence] and p.offset_hint() == sentence
    # 150 ms behind is inside the kept 199 ms: every frame pairs with the prediction of its own
    # stamp (the first too, before the periods are known: equal stamps pair) -- no sentence
    q = StampPairer(capacity=200, tolerance_ns=None)
    pairs, hints = _run(q, [MS * k for k in range(3000)], [33 * MS * j + 200 * MS for j in range(85)],
                        check_every_ns=1_000 * MS, m_clock_ns=-150 * MS)
    assert pairs == [(33 * MS * j + 50 * MS,) * 2 for j in range(85)]
    assert hints == [None, None] and q.offset_hint() is None


def test_a_few_unpaired_old_measurements_are_not_yet_a_pattern():
    # The same 350 ms lag: each camera frame and the prediction after it are unpaired offers while
    # both streams arrive (2 per frame), so 9 frames make 18 in a row, under UNPAIRED_RUN = 20: no
    # sentence; the 10th frame and its next prediction make 20.
    for frames, expected in ((9, None), (10, "measured stamps are 0.35 s behind contacts stamps, older than "
                                             "the 200 predictions kept (0.2 s of them): raise "
                                             "alignment_buffer_size")):
        p = StampPairer(capacity=200, tolerance_ns=None)
        _run(p, [MS * k for k in range(33 * (frames - 1) + 2)], [33 * MS * j for j in range(frames)],
             m_clock_ns=-350 * MS)
        assert p.offset_hint() == expected


def test_measurements_ahead_by_more_than_their_queue_can_wait_are_named_too():
    # The reverse: a 1 kHz driver stamping 300 ms ahead (arrival j ms, stamp j + 300 ms) against
    # 30 Hz contacts (33k ms), 200 kept.  By hand: at a contacts arrival t the kept measurements are
    # the last 200 offered, stamps [t + 100, t + 299] ms, so the one of stamp t was dropped 100 ms
    # ago (tolerance 16.5 ms); nothing pairs.  The gap is the newest measured stamp minus t: 299 ms.
    p = StampPairer(capacity=200, tolerance_ns=None)
    pairs, hints = _run(p, [33 * MS * k for k in range(91)], [MS * j for j in range(3000)],
                        check_every_ns=1_000 * MS, m_clock_ns=300 * MS)
    assert pairs == []
    sentence = ("measured stamps are 0.3 s ahead of contacts stamps, newer than the 200 measurements kept "
                "can wait for (0.2 s of them): raise alignment_buffer_size")
    assert hints == [sentence, sentence] and p.offset_hint() == sentence
    # 150 ms ahead: the kept measurements [t - 50, t + 149] ms hold the one of stamp t -- all pair
    q = StampPairer(capacity=200, tolerance_ns=None)
    pairs, hints = _run(q, [33 * MS * k + 200 * MS for k in range(85)], [MS * j for j in range(3000)],
                        check_every_ns=1_000 * MS, m_clock_ns=150 * MS)
    assert pairs == [(33 * MS * k + 200 * MS,) * 2 for k in range(85)]
    assert hints == [None, None] and q.offset_hint() is None
