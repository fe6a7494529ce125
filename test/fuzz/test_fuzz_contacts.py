"""Fuzz: the contacts decoder against a struct-per-point reference.

Contacts clouds of any layout (field order, padding, byte order, datatypes,
``height x width``), with missing, duplicate, mistyped or misplaced fields,
wrong data lengths, NaN/inf values, body indices past the table, elements
below -1 and foreign frames.  The decoder must reject exactly the clouds
the reference rejects -- with a ``ContactsDecodeError`` whose reason is one
of ``DECODE_REASONS`` and one the reference finds -- and decode every other
one to the reference's pairs, rows, points, forces, elements, normals and
depths.  A body-name table with duplicates is a configuration error (a
plain ``ValueError``).  Nothing else may escape.
"""
from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import PointCloud2

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from test.fuzz.strategies import body_name_tables, contact_clouds, data_buffers, weighted_bool
from vsf_sensor_ros.ros.messages.wire import (DECODE_REASONS, ContactsDecodeError, contacts_from_buffer,
                                              pointcloud2_to_contacts)


@st.composite
def decode_calls(draw):
    """Body table, cloud, expected frame, output dtype and the path: raw buffer, message, or CDR."""
    names = draw(body_name_tables())
    cloud = draw(contact_clouds(names))
    expected = draw(st.sampled_from((None, None, None, "world", "world", "world", "map")))
    dtype = torch.float32 if draw(weighted_bool(0.15)) else torch.float64
    return names, cloud, expected, dtype, draw(st.sampled_from(("buffer", "message", "serialised")))


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


@given(call=decode_calls(), data=st.data())
def test_contacts_decode_equals_reference_or_rejects_whole(call, data):
    names, cloud, expected, dtype, via = call
    want = ref.contacts(cloud.fields, cloud.height, cloud.width, cloud.point_step, cloud.row_step,
                        cloud.is_bigendian, cloud.data, names, cloud.frame_id, expected,
                        float32=dtype == torch.float32)
    try:
        if via == "message":
            got = pointcloud2_to_contacts(cloud.message(), names, dtype, "cpu", expected_frame_id=expected)
        elif via == "serialised":     # as a subscription hands it over: through CDR and back
            msg = deserialize_message(serialize_message(cloud.message()), PointCloud2)
            got = pointcloud2_to_contacts(msg, names, dtype, "cpu", expected_frame_id=expected)
        else:
            got = contacts_from_buffer(cloud.layout, data.draw(data_buffers(cloud.data)), names, dtype, "cpu",
                                       frame_id=cloud.frame_id, stamp_ns=cloud.stamp_ns,
                                       expected_frame_id=expected)
    except ContactsDecodeError as exc:
        record("contacts", f"rejected:{exc.reason}")
        assert exc.reason in DECODE_REASONS, exc.reason
        assert isinstance(want, ref.Rejected), f"valid cloud rejected ({exc.reason}: {exc}); {cloud}"
        assert exc.reason in want.reasons, (exc.reason, sorted(want.reasons), str(exc), cloud)
        return
    except ValueError as exc:
        record("contacts", "rejected:config_error")
        assert type(exc) is ValueError and isinstance(want, ref.ConfigError), (exc, want)
        return
    record("contacts", "accepted")
    assert isinstance(want, ref.Contacts), f"malformed cloud accepted: {want}; {cloud}"
    assert got.num_points == cloud.height * cloud.width
    assert got.frame_id == cloud.frame_id
    assert got.stamp_ns == cloud.stamp_ns
    assert got.fields == [f.name for f in cloud.fields]
    assert list(got.contacts) == list(want.pairs) == list(got.rows)
    if want.pairs:          # an empty cloud has no per-pair extras
        assert (got.normals is not None) == want.has_normals
        assert (got.depths is not None) == want.has_depth
    fdt = np.float32 if dtype == torch.float32 else np.float64
    for pair, w in want.pairs.items():
        c = got.contacts[pair]
        k = len(w["rows"])
        assert _equal(got.rows[pair], np.array(w["rows"], dtype=np.int64)), pair
        assert c.points.dtype == dtype and c.forces.dtype == dtype
        assert _equal(c.points.numpy(), np.array(w["points"], dtype=np.float64).reshape(k, 3).astype(fdt))
        assert _equal(c.forces.numpy(), np.array(w["forces"], dtype=np.float64).reshape(k, 3).astype(fdt))
        assert np.isfinite(c.points.numpy()).all() and np.isfinite(c.forces.numpy()).all()
        for e, attr in (("elem1", "elems1"), ("elem2", "elems2")):
            got_e = getattr(c, attr)
            if any(f.name == e for f in cloud.fields):
                assert got_e is not None and _equal(got_e.numpy(), np.array(w[e], dtype=np.int64)), (pair, e)
            else:
                assert got_e is None
        if want.has_normals:
            assert _equal(got.normals[pair], np.array(w["normals"], dtype=np.float64).reshape(k, 3))
        if want.has_depth:
            assert _equal(got.depths[pair], np.array(w["depth"], dtype=np.float64))
