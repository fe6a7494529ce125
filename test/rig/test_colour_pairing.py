"""ColourPairing: depth frames matched with colour images by stamp (cases worked out by hand)."""
import numpy as np

from vsf_sensor_ros.rig.pairing import ColourPairing

MS = 1_000_000   # ns


def img(v):
    return np.full((2, 2, 3), v, dtype=np.uint8)


def test_an_exact_stamp_settles_at_once():
    p = ColourPairing(0.010, max_waiting=5, history=8)
    p.add_colour(100 * MS, img(1))
    p.add_frame(100 * MS, "f100", 0.0)
    (item, image, reason), = p.settled()
    assert item == "f100" and image[0, 0, 0] == 1 and reason == "" and p.pending == []


def test_a_near_colour_waits_for_a_later_one_then_the_nearest_wins():
    p = ColourPairing(0.010, max_waiting=5, history=8)
    p.add_colour(96 * MS, img(1))          # 4 ms early: a nearer one may still come
    p.add_frame(100 * MS, "f", 0.0)
    assert p.settled() == [] and len(p.pending) == 1
    p.add_colour(103 * MS, img(2))         # 3 ms late, and at/after the frame: settled, the nearer one
    (item, image, reason), = p.settled()
    assert image[0, 0, 0] == 2 and reason == ""


def test_no_colour_within_the_tolerance_once_a_later_one_came():
    p = ColourPairing(0.010, max_waiting=5, history=8)
    p.add_frame(100 * MS, "f", 0.0)
    p.add_colour(85 * MS, img(1))          # 15 ms early: outside
    assert p.settled() == []               # a later one could still be within
    p.add_colour(111 * MS, img(2))         # 11 ms late: outside, and beyond the window
    assert p.settled() == [("f", None, "no_colour")]


def test_a_rejected_nearest_colour_and_expiry_and_order():
    p = ColourPairing(0.010, max_waiting=5, history=8)
    p.add_colour(100 * MS, None)           # rejected image of that instant
    p.add_frame(100 * MS, "a", 0.0)
    p.add_frame(200 * MS, "b", 1.0)        # nothing near yet
    p.add_frame(150 * MS, "c", 2.0)
    out = p.settled()
    assert out == [("a", None, "colour_rejected")]       # b waits, c waits behind b
    assert [f[1] for f in p.pending] == ["b", "c"]
    p.add_colour(150 * MS, img(3))         # c's colour: c is settled, but b still holds it back...
    assert p.settled() == []
    out = p.settled(expired=1.0)           # ...until b's wait expires (received at 1.0 s)
    assert out[0] == ("b", None, "no_colour") and out[1][0] == "c" and out[1][1][0, 0, 0] == 3


def test_more_than_max_waiting_settles_the_oldest():
    p = ColourPairing(0.0, max_waiting=2, history=8)
    for k in range(3):
        p.add_frame(k * MS, k, 0.0)
    assert p.settled() == [(0, None, "no_colour")] and len(p.pending) == 2


def test_zero_tolerance_takes_the_same_stamp_only_and_history_is_bounded():
    p = ColourPairing(0.0, max_waiting=5, history=2)
    for s in (1, 2, 3):
        p.add_colour(s * MS, img(s))
    assert [s for s, _ in p.colours] == [2 * MS, 3 * MS]
    p.add_frame(1 * MS, "old", 0.0)        # its colour dropped out of the history; later ones exist
    p.add_frame(3 * MS, "new", 0.0)
    assert p.settled() == [("old", None, "no_colour"), ("new", p.colours[1][1], "")]
