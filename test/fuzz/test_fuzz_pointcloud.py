"""Fuzz: the one PointCloud2 reader against a struct-per-point reference.

Any fields, datatypes, layout and read request; the reader must either
return exactly the reference's values or raise ``CloudDecodeError`` with a
reason of ``CLOUD_REASONS`` that the reference also finds.  Nothing else
may escape.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import List, Tuple

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from test.fuzz import reference as ref
from test.fuzz.profiles import record
from test.fuzz.strategies import ALL_TYPES, BAD_DATATYPES, Column, clouds, data_buffers, weighted_bool
from vsf_sensor_ros.ros.messages.pointcloud import read_cloud
from vsf_sensor_ros.ros.messages.wire import CLOUD_REASONS, CloudDecodeError, read_points

POOL = ("a", "b", "c", "x", "rgb", "t")
NUMPY_KIND = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


def same(a, b) -> bool:
    """Equal values, NaN equal to NaN (a float field may hold any bit pattern)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


@lru_cache(maxsize=None)
def _name_lists(pool: Tuple[str, ...]) -> st.SearchStrategy[List[str]]:
    return st.lists(st.sampled_from(pool), max_size=3, unique=True)


_TYPE_SETS = st.lists(st.sampled_from(ALL_TYPES + BAD_DATATYPES), min_size=1, max_size=4, unique=True)
_COLUMN_LISTS = st.lists(st.sampled_from(POOL), max_size=5, unique=True)


@st.composite
def read_requests(draw):
    """A cloud over a pool of names, and what a caller asks of it."""
    cols = [Column(n, ALL_TYPES) for n in draw(_COLUMN_LISTS)]
    cloud = draw(clouds(cols, malformed=0.5))
    # mostly fields the cloud was drawn with, now and then any name
    mine = tuple(c.name for c in cols)
    names = draw(_name_lists(mine if mine and draw(weighted_bool(0.8)) else POOL))
    optional = draw(_name_lists(POOL))
    datatypes = None
    if draw(st.booleans()):
        datatypes = {n: tuple(draw(_TYPE_SETS)) for n in draw(_name_lists(POOL))}
    return cloud, names, optional, datatypes, draw(st.booleans())


@given(request=read_requests(), via_message=st.booleans(), data=st.data())
def test_read_points_equals_reference_or_rejects_whole(request, via_message, data):
    cloud, names, optional, datatypes, exact = request
    want = ref.read_points(cloud.fields, cloud.height, cloud.width, cloud.point_step, cloud.row_step,
                           cloud.is_bigendian, cloud.data, names, optional, datatypes, exact)
    try:
        if via_message:
            got = read_cloud(cloud.message(), names, optional, datatypes, exact_size=exact)
        else:
            got = read_points(cloud.layout, data.draw(data_buffers(cloud.data)), names, optional, datatypes,
                              exact_size=exact)
    except CloudDecodeError as exc:
        record("read_points", f"rejected:{exc.reason}")
        assert exc.reason in CLOUD_REASONS, exc.reason
        assert isinstance(want, ref.Rejected), f"valid cloud rejected ({exc.reason}: {exc}); {cloud}"
        assert exc.reason in want.reasons, (exc.reason, want.reasons, str(exc))
        assert str(exc)
        return
    record("read_points", "accepted")
    assert not isinstance(want, ref.Rejected), f"malformed cloud accepted ({sorted(want.reasons)}); {cloud}"
    n = cloud.height * cloud.width
    assert got.shape == (n,)
    assert list(got.dtype.names or ()) == list(want)
    fields = {f.name: f for f in reversed(cloud.fields)}      # first occurrence wins
    for name, values in want.items():
        dt = got.dtype[name]
        assert np.dtype(NUMPY_KIND[fields[name].datatype]) == dt.newbyteorder("="), (name, dt)
        out = got[name].tolist()
        assert all(same(a, b) for a, b in zip(out, values)) and len(out) == n, (name, out, values)
