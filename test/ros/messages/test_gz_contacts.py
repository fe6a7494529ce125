"""Gazebo ``Contacts`` -> decoded contacts: rows, body map, force convention, rejections.

Every expected row below is written out by hand from the message built in the test:
one row per contact point, numbered through the message, the force on body1 being
``body_1_wrench.force`` (gz: the wrench on collision1).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

ros_gz = pytest.importorskip("ros_gz_interfaces.msg",
                             reason="ros_gz_interfaces not importable (make venv builds it)")
from geometry_msgs.msg import Vector3  # noqa: E402

from vsf_sensor_ros.rig.contacts import with_implied_pairs  # noqa: E402
from vsf_sensor_ros.ros.messages.pointcloud import contacts_to_pointcloud2  # noqa: E402
from vsf_sensor_ros.ros.messages.wire import pointcloud2_to_contacts  # noqa: E402
from vsf_sensor_ros.ros.messages.gz_contacts import (GZ_DECODE_REASONS, ContactBodyMap,  # noqa: E402
                                                     GzContactsDecodeError, gz_contacts_to_contacts)
from vsf_sensor_ros.sensor.base_sensor import ContactState  # noqa: E402

MAP = ContactBodyMap.parse(["bubble_model::*=punyo", "box::*=object"])
NAMES = ["punyo", "object", "table"]


def contact(c1, c2, positions, forces, normals=(), depths=(), second=None):
    """A ``Contact`` between scoped collisions ``c1``/``c2``; ``forces`` are the body_1 forces."""
    c = ros_gz.Contact(collision1=ros_gz.Entity(name=c1, type=ros_gz.Entity.COLLISION),
                       collision2=ros_gz.Entity(name=c2, type=ros_gz.Entity.COLLISION))
    c.positions = [Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in positions]
    c.normals = [Vector3(x=float(n[0]), y=float(n[1]), z=float(n[2])) for n in normals]
    c.depths = [float(d) for d in depths]
    ws = []
    for k, f in enumerate(forces):
        w = ros_gz.JointWrench()
        w.body_1_wrench.force = Vector3(x=float(f[0]), y=float(f[1]), z=float(f[2]))
        # gz fills body_2 with the opposite; a deliberately different value here shows it is not read
        b2 = (0.0, 0.0, 0.0) if second is None else second[k]
        w.body_2_wrench.force = Vector3(x=b2[0], y=b2[1], z=b2[2])
        ws.append(w)
    c.wrenches = ws
    return c


def contacts(*cs, frame="bubble_model::punyo_link::contact_sensor", sec=3, nanosec=500):
    m = ros_gz.Contacts(contacts=list(cs))
    m.header.frame_id = frame
    m.header.stamp.sec, m.header.stamp.nanosec = sec, nanosec
    return m


def three_contacts():
    """punyo/object (2 points), object/table (1), punyo/object again (1), with normals and depths."""
    return contacts(
        contact("bubble_model::punyo_link::collision", "box::link::collision",
                [(0.1, 0.0, 0.5), (0.2, 0.0, 0.5)], [(0.0, 0.0, -1.5), (0.0, 0.5, -2.0)],
                normals=[(0, 0, 1), (0, 0, 1)], depths=[0.001, 0.002], second=[(9.0, 9.0, 9.0)] * 2),
        contact("box::link::collision", "table_model::table::surface",
                [(0.15, 0.0, 0.0)], [(0.0, 0.0, 3.5)], normals=[(0, 0, -1)], depths=[0.0005]),
        contact("bubble_model::punyo_link::collision_2", "box::link::collision",
                [(0.3, 0.1, 0.5)], [(1.0, 0.0, 0.0)], normals=[(1, 0, 0)], depths=[0.003]))


def test_rows_pairs_and_forces_are_the_hand_derived_ones():
    d = gz_contacts_to_contacts(three_contacts(), NAMES, MAP)
    assert list(d.contacts) == [("punyo", "object"), ("object", "table")]
    po, ot = d.contacts[("punyo", "object")], d.contacts[("object", "table")]
    # rows through the message: 0, 1 (first contact), 2 (second), 3 (third, same pair as the first)
    np.testing.assert_array_equal(d.rows[("punyo", "object")], [0, 1, 3])
    np.testing.assert_array_equal(d.rows[("object", "table")], [2])
    np.testing.assert_array_equal(po.points.numpy(), [[0.1, 0.0, 0.5], [0.2, 0.0, 0.5], [0.3, 0.1, 0.5]])
    # the force on body1 = body_1_wrench.force; body_2_wrench (9, 9, 9) is not read
    np.testing.assert_array_equal(po.forces.numpy(), [[0.0, 0.0, -1.5], [0.0, 0.5, -2.0], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(ot.points.numpy(), [[0.15, 0.0, 0.0]])
    np.testing.assert_array_equal(ot.forces.numpy(), [[0.0, 0.0, 3.5]])
    assert po.elems1 is None and po.elems2 is None      # gz reports no elements
    np.testing.assert_array_equal(d.normals[("punyo", "object")], [[0, 0, 1], [0, 0, 1], [1, 0, 0]])
    np.testing.assert_array_equal(d.depths[("object", "table")], [0.0005])
    np.testing.assert_array_equal(d.depths[("punyo", "object")], [0.001, 0.002, 0.003])
    assert d.num_points == 4 and d.stamp_ns == 3_000_000_500
    assert d.frame_id == "bubble_model::punyo_link::contact_sensor"
    assert po.points.dtype == torch.float64


def test_equal_to_the_pointcloud2_decoder_on_the_same_contacts():
    """The same rows, written by hand as ContactStates into our PointCloud2, decode identically."""
    def t(rows):
        return torch.tensor(rows, dtype=torch.float64)
    given = {("punyo", "object"): ContactState(t([[0.1, 0.0, 0.5], [0.2, 0.0, 0.5]]),
                                               t([[0.0, 0.0, -1.5], [0.0, 0.5, -2.0]])),
             ("object", "table"): ContactState(t([[0.15, 0.0, 0.0]]), t([[0.0, 0.0, 3.5]]))}
    normals = {("punyo", "object"): [[0, 0, 1], [0, 0, 1]], ("object", "table"): [[0, 0, -1]]}
    depths = {("punyo", "object"): [0.001, 0.002], ("object", "table"): [0.0005]}
    cloud = pointcloud2_to_contacts(contacts_to_pointcloud2(given, NAMES, stamp=3.0000005, normals=normals,
                                                            depths=depths), NAMES)
    gz = gz_contacts_to_contacts(contacts(*three_contacts().contacts[:2]), NAMES, MAP)
    assert list(gz.contacts) == list(cloud.contacts)
    for pair in cloud.contacts:
        for attr in ("points", "forces"):
            assert torch.equal(getattr(gz.contacts[pair], attr), getattr(cloud.contacts[pair], attr))
        np.testing.assert_array_equal(gz.rows[pair], cloud.rows[pair])
        np.testing.assert_array_equal(gz.normals[pair], cloud.normals[pair])
        np.testing.assert_array_equal(gz.depths[pair], cloud.depths[pair])
    assert gz.fields == cloud.fields and gz.num_points == cloud.num_points and gz.stamp_ns == cloud.stamp_ns


def test_the_body_map_globs_first_match_and_link_name_default():
    m = ContactBodyMap.parse(["*::finger_?::*=fingers", "arm::*=arm", " robot::* = whole "])
    assert m.body("arm::finger_1::pad") == "fingers"            # the first rule wins over 'arm::*'
    assert m.body("arm::wrist::collision") == "arm"
    assert m.body("robot::a::b::c") == "whole"                   # spaces around pattern and body ignored
    assert m.body("table_model::table::surface") == "table"      # default: the link's name
    assert m.body("outer::inner::link_3::collision") == "link_3"  # nested models: still the link
    assert m.body("ground") == "ground"                          # no scope: the name itself
    for bad in ("no_equals_sign", "=body", "pattern=", "  =  "):
        with pytest.raises(ValueError, match="pattern=body"):
            ContactBodyMap.parse([bad])


def test_a_body_outside_the_table_is_decoded_and_the_table_kept():
    msg = contacts(contact("bubble_model::punyo_link::collision", "shelf::board::collision",
                           [(0.0, 0.0, 1.0)], [(0.0, 0.0, -2.0)]))
    d = gz_contacts_to_contacts(msg, NAMES, MAP)
    assert list(d.contacts) == [("punyo", "board")]
    np.testing.assert_array_equal(d.contacts[("punyo", "board")].forces.numpy(), [[0.0, 0.0, -2.0]])
    assert NAMES == ["punyo", "object", "table"]
    assert d.normals is None and d.depths is None               # none given: none decoded
    assert not {"nx", "depth"} & set(d.fields)


def test_an_engine_without_normals_and_depths_and_empty_contacts():
    msg = contacts(contact("bubble_model::p::c", "box::l::c", [(0, 0, 0)], [(0, 0, 1)]),
                   contact("bubble_model::p::c", "box::l::c", [], []))   # no point: skipped
    d = gz_contacts_to_contacts(msg, NAMES, MAP)
    assert d.num_points == 1 and d.normals is None and d.depths is None
    empty = gz_contacts_to_contacts(contacts(), NAMES, MAP)
    assert empty.contacts == {} and empty.num_points == 0


@pytest.mark.parametrize("case, reason, words", [
    ("no_wrench", "empty_wrenches", "2 positions but no wrench"),
    ("fewer_wrenches", "mismatched_lengths", "2 positions, 1 wrenches"),
    ("fewer_normals", "mismatched_lengths", "2 positions, 1 normals"),
    ("more_depths", "mismatched_lengths", "2 positions, 3 depths"),
    ("normals_on_one_contact", "mismatched_lengths", "normals given for 1 of the 2 contacts"),
    ("unnamed", "unnamed_collision", "collision2 has no name"),
    ("no_link", "unnamed_collision", "collision2 '::collision' names no link"),
    ("nan_position", "non_finite", "positions"),
    ("inf_force", "non_finite", "body_1_wrench forces"),
    ("nan_depth", "non_finite", "depth"),
])
def test_malformed_messages_are_rejected_whole_with_a_reason(case, reason, words):
    two = [(0, 0, 0), (1, 0, 0)]
    f2 = [(0, 0, 1), (0, 0, 2)]
    a, b = "bubble_model::p::c", "box::l::c"
    msg = {
        "no_wrench": lambda: contacts(contact(a, b, two, [])),
        "fewer_wrenches": lambda: contacts(contact(a, b, two, f2[:1])),
        "fewer_normals": lambda: contacts(contact(a, b, two, f2, normals=[(0, 0, 1)])),
        "more_depths": lambda: contacts(contact(a, b, two, f2, depths=[0.1, 0.2, 0.3])),
        "normals_on_one_contact": lambda: contacts(contact(a, b, two, f2, normals=[(0, 0, 1)] * 2),
                                                   contact(a, b, two, f2)),
        "unnamed": lambda: contacts(contact(a, "", two, f2)),
        "no_link": lambda: contacts(contact(a, "::collision", two, f2)),
        "nan_position": lambda: contacts(contact(a, b, [(0, 0, 0), (math.nan, 0, 0)], f2)),
        "inf_force": lambda: contacts(contact(a, b, two, [(0, 0, 1), (0, math.inf, 0)])),
        "nan_depth": lambda: contacts(contact(a, b, two, f2, depths=[0.1, math.nan])),
    }[case]()
    with pytest.raises(GzContactsDecodeError, match=words) as err:
        gz_contacts_to_contacts(msg, NAMES, MAP)
    assert err.value.reason == reason and reason in GZ_DECODE_REASONS


def test_duplicate_body_names_are_a_configuration_error():
    with pytest.raises(ValueError):
        gz_contacts_to_contacts(contacts(), ["a", "a"], MAP)


def _named_wrench_contact(body_1_name, c1="bubble_model::punyo_link::collision", c2="box::link::collision",
                          id1=0, id2=0):
    """One point at (0.1, 0, 0.5); body_1 force (0, 0, 2) N, the wrench's body 1 named ``body_1_name``."""
    c = contact(c1, c2, [(0.1, 0.0, 0.5)], [(0.0, 0.0, 2.0)])
    c.collision1.id, c.collision2.id = id1, id2
    c.wrenches[0].body_1_name.data = body_1_name
    return c


@pytest.mark.parametrize("body_1_name, id2, sign", [
    ("", 0, 1.0),                                       # gz-sim: no names: body 1 = collision1
    ("bubble_model::punyo_link::collision", 0, 1.0),    # names collision1
    ("box::link::collision", 0, -1.0),                  # names collision2: force on collision2
    ("42", 42, -1.0),                                   # collision2's entity id as text
    ("box", 0, 1.0),                                    # names neither (a model name): the convention
])
def test_a_wrench_naming_collision2_as_its_body_1_is_the_force_on_collision2(body_1_name, id2, sign):
    d = gz_contacts_to_contacts(contacts(_named_wrench_contact(body_1_name, id2=id2)), NAMES, MAP)
    # one row, pair (punyo, object): the force on punyo by the box is +-(0, 0, 2) N by hand
    assert list(d.contacts) == [("punyo", "object")]
    assert d.contacts[("punyo", "object")].forces.tolist() == [[0.0, 0.0, 2.0 * sign]]


def test_two_collisions_mapped_to_one_body_are_rejected_naming_both():
    # a careless glob: both the bubble and the box become 'punyo'; a body cannot push itself
    msg = contacts(contact("bubble_model::punyo_link::collision", "box::link::collision",
                           [(0, 0, 0)], [(0, 0, 1)]))
    with pytest.raises(GzContactsDecodeError) as err:
        gz_contacts_to_contacts(msg, NAMES, ContactBodyMap.parse(["*=punyo"]))
    assert err.value.reason == "same_body" and "box::link::collision" in str(err.value)


@pytest.mark.parametrize("frame, ok", [("", True), ("world", True), ("punyo_link", False),
                                       ("bubble_model::punyo_link", False)])
def test_a_wrench_in_another_frame_than_world_is_rejected(frame, ok):
    c = contact("bubble_model::punyo_link::collision", "box::link::collision", [(0, 0, 0)], [(0, 0, 1)])
    c.wrenches[0].header.frame_id = frame
    if ok:
        d = gz_contacts_to_contacts(contacts(c), NAMES, MAP, world_frame="world")
        assert d.contacts[("punyo", "object")].forces.tolist() == [[0.0, 0.0, 1.0]]
        return
    with pytest.raises(GzContactsDecodeError) as err:
        gz_contacts_to_contacts(contacts(c), NAMES, MAP, world_frame="world")
    assert err.value.reason == "wrench_frame" and err.value.reason in GZ_DECODE_REASONS
    # without a world frame to compare with, frames are not checked (the library default)
    assert gz_contacts_to_contacts(contacts(c), NAMES, MAP).num_points == 1


def test_collisions_of_bodies_outside_the_table_are_reported_with_their_collision():
    msg = contacts(contact("box::link::collision", "ground_plane::link::collision", [(0, 0, 0)], [(0, 0, 1)]),
                   contact("bubble_model::punyo_link::collision", "shelf::board::collision", [(0, 0, 1)],
                           [(0, 0, 1)]))
    unknown = {}
    gz_contacts_to_contacts(msg, NAMES, MAP, unknown_bodies=unknown)
    # 'link' (default map: the link of ground_plane::link::collision) and 'board' are not in NAMES
    assert unknown == {"link": "ground_plane::link::collision", "board": "shelf::board::collision"}


def test_contacts_of_one_body_pair_listed_in_opposite_orders_are_distinct_contacts():
    """gz lists each contact once: a ``box / bubble`` contact after a ``bubble / box`` one is another
    contact, turned to the pair's first order (bodies swapped, force and normal negated)."""
    msg = contacts(
        contact("bubble_model::punyo_link::collision", "box::link::collision",
                [(0.1, 0.0, 0.5)], [(0.0, 0.0, -2.0)], normals=[(0, 0, 1)]),
        contact("box::link::collision", "table_model::table::surface", [(0.15, 0.0, 0.0)], [(0.0, 0.0, 3.5)],
                normals=[(0, 0, -1)]),
        # the box on the bubble's second collision: the force on the box is (0.5, 0, 3)
        contact("box::link::collision", "bubble_model::punyo_link::collision_2",
                [(0.3, 0.0, 0.5)], [(0.5, 0.0, 3.0)], normals=[(0, 0, -1)]))
    d = gz_contacts_to_contacts(msg, NAMES, MAP)
    assert list(d.contacts) == [("punyo", "object"), ("object", "table")]
    np.testing.assert_array_equal(d.rows[("punyo", "object")], [0, 2])
    # the force on the bubble from row 2 is minus the force on the box: (-0.5, 0, -3)
    np.testing.assert_array_equal(d.contacts[("punyo", "object")].forces.numpy(),
                                  [[0.0, 0.0, -2.0], [-0.5, 0.0, -3.0]])
    np.testing.assert_array_equal(d.normals[("punyo", "object")], [[0, 0, 1], [0, 0, 1]])
    assert d.flipped_rows.tolist() == [False, False, True]
    # with the node's row rule the box feels both contacts: (0, 0, 2) + (0.5, 0, 3) = (0.5, 0, 5) N
    done = with_implied_pairs(d)
    assert done.contacts[("object", "punyo")].forces.sum(0).tolist() == [0.5, 0.0, 5.0]
    assert done.contacts[("punyo", "object")].forces.sum(0).tolist() == [-0.5, 0.0, -5.0]
    # a message listing every pair in one order flips nothing
    assert gz_contacts_to_contacts(three_contacts(), NAMES, MAP).flipped_rows is None
