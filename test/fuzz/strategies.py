"""Hypothesis strategies for the messages the package reads, well-formed and malformed.

Each strategy draws a message as a bridge, a driver or a broken tool could
write it.  Whether the message is well-formed is *not* decided here: the
reference decoders (:mod:`test.fuzz.reference`) decide it from the message
alone, so a mutation that happens to leave a message valid is simply a valid
message.  The strategies only bias the draw so that both kinds are common.

The strategies return plain values (:class:`Cloud`, ``JointState``,
``PoseStamped``, ``FluidPressure``, ``WrenchStamped``) and know nothing of
the code under test, so the node's message handlers can be fuzzed with the
same draws and the same references: e.g. ``contact_clouds(names)`` then
``cloud.message()`` into the contacts handler, with
``reference.contacts(...)`` deciding whether it must be counted under
``rejected.<reason>`` with nothing published, or decoded and predicted.

Every integer that goes into a message field stays within that field's ROS
type (``uint8`` datatype, ``uint32`` offsets and sizes, ``int32`` seconds):
a deserialised message cannot hold anything else.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, WrenchStamped
from hypothesis import strategies as st
from sensor_msgs.msg import FluidPressure, JointState, PointCloud2, PointField
from std_msgs.msg import Header

from vsf_sensor_ros.ros.messages.wire import CloudLayout, FieldSpec

INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64 = range(1, 9)
FLOATS = (FLOAT32, FLOAT64)
ALL_TYPES = tuple(range(1, 9))
TYPE_SIZE = {INT8: 1, UINT8: 1, INT16: 2, UINT16: 2, INT32: 4, UINT32: 4, FLOAT32: 4, FLOAT64: 8}
_NUMPY = {INT8: "i1", UINT8: "u1", INT16: "i2", UINT16: "u2", INT32: "i4", UINT32: "u4",
          FLOAT32: "f4", FLOAT64: "f8"}
UINT32_MAX = 2 ** 32 - 1
BAD_DATATYPES = (0, 9, 17, 255)
"""Datatype codes no ``PointField`` constant has."""

NON_FINITE = (math.nan, math.inf, -math.inf)
_NON_FINITE = st.sampled_from(NON_FINITE)
_BOOL = st.booleans()
_BYTE = st.integers(0, 255)
_SEED = st.integers(0, 2 ** 32 - 1)
FIELD_PADS = (0, 0, 0, 1, 2, 3, 4, 7)
TAIL_PADS = (0, 0, 1, 3, 4, 8)
ROW_PADS = (0, 0, 1, 2, 5, 16)


@lru_cache(maxsize=None)
def _sampled(values: Tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


@lru_cache(maxsize=None)
def weighted_bool(p_true: float) -> st.SearchStrategy[bool]:
    """``True`` with probability about ``p_true`` (in twentieths); shrinks towards ``False``."""
    k = max(1, min(19, round(20 * p_true)))
    return st.integers(0, 19).map(lambda i: i >= 20 - k)


@lru_cache(maxsize=4096)
def index_of(n: int) -> st.SearchStrategy[int]:
    """An index ``0 .. n-1`` (strategies are cached: building one costs more than drawing from it)."""
    return st.integers(0, n - 1)


# ------------------------------------------------------------------------------------ clouds

@dataclass
class Cloud:
    """A ``PointCloud2`` as plain values (what a raw-buffer parser sees, or a message builds from)."""

    fields: List[FieldSpec]
    height: int
    width: int
    point_step: int
    row_step: int
    is_bigendian: bool
    data: bytes
    frame_id: str = ""
    stamp: Tuple[int, int] = (0, 0)
    mutations: List[str] = field(default_factory=list)

    @property
    def layout(self) -> CloudLayout:
        """The :class:`CloudLayout` of the plain values."""
        return CloudLayout(list(self.fields), self.height, self.width, self.point_step, self.row_step,
                           self.is_bigendian)

    @property
    def stamp_ns(self) -> int:
        """``header.stamp`` in integer nanoseconds (``sec * 10**9 + nanosec``)."""
        return self.stamp[0] * 1_000_000_000 + self.stamp[1]

    def message(self) -> PointCloud2:
        """The ``sensor_msgs/PointCloud2`` carrying these values."""
        fields = [PointField(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
                  for f in self.fields]
        header = Header(stamp=Time(sec=self.stamp[0], nanosec=self.stamp[1]), frame_id=self.frame_id)
        return PointCloud2(header=header, height=self.height, width=self.width, fields=fields,
                           is_bigendian=self.is_bigendian, point_step=self.point_step,
                           row_step=self.row_step, is_dense=False, data=bytes(self.data))


@dataclass(frozen=True)
class Column:
    """A field a cloud strategy may write.

    Attributes:
        name: field name.
        datatypes: datatypes drawn from (first ones more often when shrinking).
        values: ``(numpy Generator, numpy dtype, n) -> (n,) array`` of
            well-formed values; ``None``: any value of the datatype (finite
            for floats, every scale).
        corrupt: ``(draw, array) -> array`` making one value malformed
            (e.g. NaN, an index out of range); ``None`` for floats = a
            non-finite value.
    """

    name: str
    datatypes: Tuple[int, ...]
    values: Optional[Callable[[np.random.Generator, np.dtype, int], np.ndarray]] = None
    corrupt: Optional[Callable[[Any, np.ndarray], np.ndarray]] = None


def _float_values(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
    """Doubles of every scale: moderate, small integers, any exponent the dtype has, special values."""
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, 1.0, -1.0, float(info.max), -float(info.max), float(info.tiny),
                        float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.eps)])
    kind = rng.choice(4, size=n, p=[0.5, 0.15, 0.2, 0.15])
    e = rng.uniform(np.log10(float(info.smallest_subnormal)), np.log10(float(info.max)), n)
    out = np.where(kind == 0, rng.uniform(-1e3, 1e3, n),
                   np.where(kind == 1, rng.integers(-5, 6, n).astype(np.float64),
                            np.where(kind == 2, rng.choice([-1.0, 1.0], n) * 10.0 ** np.minimum(e, 300.0),
                                     special[rng.integers(0, special.size, n)])))
    with np.errstate(over="ignore"):
        out = out.astype(dtype)
    out[~np.isfinite(out)] = info.max           # 10**e rounding past the dtype's range
    return out


def _int_values(rng: np.random.Generator, dtype: np.dtype, n: int, lo: int, hi: int) -> np.ndarray:
    """Integers in ``lo..hi``: uniform, and the bounds and their neighbours."""
    edges = np.array([lo, hi, min(lo + 1, hi), max(hi - 1, lo), min(max(0, lo), hi)], dtype=np.int64)
    uniform = lo + (rng.random(n) * (hi - lo + 1)).astype(np.int64).clip(0, hi - lo)
    out = np.where(rng.random(n) < 0.8, uniform, edges[rng.integers(0, edges.size, n)])
    return out.astype(dtype)


def _any_values(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "f":
        return _float_values(rng, dtype, n)
    info = np.iinfo(dtype)
    return _int_values(rng, dtype, n, int(info.min), int(info.max))


def _non_finite(draw, arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind != "f" or arr.size == 0:
        return arr
    arr = arr.copy()
    arr[draw(index_of(arr.size))] = draw(_NON_FINITE)
    return arr


def int_range(lo: int, hi: int) -> Callable[[np.random.Generator, np.dtype, int], np.ndarray]:
    """Values ``lo..hi`` clipped to the dtype's range."""
    def values(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
        info = np.iinfo(dtype)
        a, b = max(lo, int(info.min)), min(hi, int(info.max))
        return _int_values(rng, dtype, n, a, max(a, b))
    return values


def set_one(values: Sequence[int]) -> Callable[[Any, np.ndarray], np.ndarray]:
    """Corruption: one entry set to one of ``values`` (those the dtype can hold)."""
    def corrupt(draw, arr: np.ndarray) -> np.ndarray:
        if arr.size == 0:
            return arr
        info = np.iinfo(arr.dtype)
        fit = [v for v in values if info.min <= v <= info.max]
        if not fit:
            return arr
        arr = arr.copy()
        arr[draw(index_of(arr.size))] = draw(st.sampled_from(fit))
        return arr
    return corrupt


@st.composite
def cloud_shapes(draw, n_points: Optional[int] = None) -> Tuple[int, int]:
    """``(height, width)``: empty, one row, organised; about ``n_points`` points when given."""
    if n_points is not None and draw(weighted_bool(0.8)):
        divisors = [d for d in range(1, n_points + 1) if n_points % d == 0] or [1]
        h = draw(st.sampled_from(divisors)) if n_points else draw(st.integers(0, 2))
        return (h, n_points // h if h else draw(st.integers(0, 3)))
    return draw(st.one_of(
        st.tuples(st.just(1), st.integers(0, 12)),
        st.tuples(st.integers(0, 4), st.integers(0, 6)),
        st.tuples(st.just(1), st.integers(13, 64)),
        st.tuples(st.integers(0, 3), st.just(0)),
    ))


MUTATIONS = ("drop_field", "duplicate_field", "retype_field", "recount_field", "offset_past_step",
             "rename_field", "shrink_point_step", "grow_point_step", "shrink_row_step", "truncate_data",
             "extend_data", "grow_height", "grow_width", "zero_height", "flip_endianness", "huge_size")
"""Layout mutations :func:`clouds` may apply (a mutated cloud may still be well-formed)."""
_MUTATION_LISTS = st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)


def _mutate(draw, c: Cloud, op: str, names: Sequence[str]) -> Cloud:
    fields = list(c.fields)
    pick = (lambda: draw(index_of(len(fields)))) if fields else None
    if op == "drop_field" and fields:
        del fields[pick()]
    elif op == "duplicate_field" and fields:
        f = fields[pick()]
        off = draw(st.integers(0, max(0, c.point_step - TYPE_SIZE.get(f.datatype, 1))))
        fields.insert(draw(st.integers(0, len(fields))), f._replace(offset=off))
    elif op == "retype_field" and fields:
        i = pick()
        fields[i] = fields[i]._replace(datatype=draw(st.sampled_from(BAD_DATATYPES + ALL_TYPES)))
    elif op == "recount_field" and fields:
        i = pick()
        fields[i] = fields[i]._replace(count=draw(st.sampled_from((0, 2, 3, UINT32_MAX))))
    elif op == "offset_past_step" and fields:
        i = pick()
        size = TYPE_SIZE.get(fields[i].datatype, 1)
        off = draw(st.one_of(st.integers(max(0, c.point_step - size + 1), c.point_step + 8),
                             st.just(UINT32_MAX)))
        fields[i] = fields[i]._replace(offset=min(off, UINT32_MAX))
    elif op == "rename_field" and fields:
        i = pick()
        new = draw(st.sampled_from(list(names) + ["", "X", "x ", "fx\u00e9"]))
        fields[i] = fields[i]._replace(name=new)
    elif op == "shrink_point_step":
        return replace(c, point_step=draw(st.integers(0, max(0, c.point_step - 1))))
    elif op == "grow_point_step":
        return replace(c, point_step=min(UINT32_MAX, c.point_step + draw(st.integers(1, 16))))
    elif op == "shrink_row_step":
        return replace(c, row_step=draw(st.integers(0, max(0, c.width * c.point_step - 1))))
    elif op == "truncate_data" and c.data:
        return replace(c, data=c.data[:-draw(st.integers(1, len(c.data)))])
    elif op == "extend_data":
        return replace(c, data=c.data + bytes(draw(st.integers(1, 16))))
    elif op == "grow_height":
        return replace(c, height=c.height + 1)
    elif op == "grow_width":
        return replace(c, width=c.width + 1)
    elif op == "zero_height":
        return replace(c, height=0)
    elif op == "flip_endianness":
        return replace(c, is_bigendian=not c.is_bigendian)
    elif op == "huge_size":             # sizes a uint32 can hold but no message can back with data
        attr = draw(_sampled(("height", "width", "point_step", "row_step")))
        return replace(c, **{attr: draw(_sampled((2 ** 31, UINT32_MAX, 2 ** 16 + 1)))})
    return replace(c, fields=fields)


@st.composite
def clouds(draw, columns: Sequence[Column], optional: Sequence[Column] = (),
           n_points: Optional[int] = None, malformed: float = 0.5, corrupt: float = 0.15) -> Cloud:
    """A cloud with ``columns`` and a drawn subset of ``optional``, any layout.

    Fields in any order, packed or with padding between them and after the
    last (and now and then overlapping), any ``height x width``, padded
    rows, either byte order, padding bytes filled with a drawn byte so that
    a reader that reads padding reads nonsense.  With probability ``corrupt`` one
    value of one column is made malformed (that column's ``corrupt``), and
    with probability ``malformed`` one to three :data:`MUTATIONS` are
    applied (names in ``cloud.mutations``).
    """
    # The structure (which fields, their datatypes, the size, the byte order, the faults) is drawn
    # and shrunk by Hypothesis; the bulk (field order, padding, values, fill byte) comes from a
    # seeded generator: one draw instead of dozens keeps a cloud cheap to generate.
    chosen = list(columns) + [c for c in optional if draw(_BOOL)]
    types = [draw(_sampled(c.datatypes)) for c in chosen]
    h, w = draw(cloud_shapes(n_points))
    big = draw(_BOOL)
    rng = np.random.default_rng(draw(_SEED))
    padded = draw(_BOOL)
    n = h * w
    order = [int(i) for i in rng.permutation(len(chosen))]
    fields: List[FieldSpec] = []
    cursor = 0
    for i in order:
        size = TYPE_SIZE[types[i]]
        if cursor and rng.random() < 0.04:                  # overlapping an earlier field
            off = int(rng.integers(0, cursor))
        else:
            off = cursor + (int(rng.choice(FIELD_PADS)) if padded else 0)
            cursor = off + size
        fields.append(FieldSpec(chosen[i].name, off, types[i], 1))
    step = max(cursor, max((f.offset + TYPE_SIZE[f.datatype] for f in fields), default=0))
    step += int(rng.choice(TAIL_PADS)) if padded else 0
    row_step = w * step + (int(rng.choice(ROW_PADS)) if padded else 0)
    buf = bytearray([int(rng.integers(0, 256))]) * (h * row_step)
    arrays = {}
    for i, col in enumerate(chosen):
        dtype = np.dtype(_NUMPY[types[i]]).newbyteorder(">" if big else "<")
        arrays[i] = (col.values or _any_values)(rng, dtype, n)
    if n and chosen and draw(weighted_bool(corrupt)):
        i = draw(index_of(len(chosen)))
        arrays[i] = (chosen[i].corrupt or _non_finite)(draw, arrays[i])
    if n:
        for i in order:                                   # later fields overwrite overlapped bytes
            f = fields[order.index(i)]
            dt = np.dtype(_NUMPY[types[i]]).newbyteorder(">" if big else "<")
            view = np.ndarray((h, w), dtype=dt, buffer=buf, offset=f.offset, strides=(row_step, step))
            view[...] = arrays[i].reshape(h, w)
    cloud = Cloud(fields, h, w, step, row_step, big, bytes(buf))
    if draw(weighted_bool(malformed)):
        names = [c.name for c in chosen]
        for op in draw(_MUTATION_LISTS):
            cloud = _mutate(draw, cloud, op, names)
            cloud.mutations.append(op)
    return cloud


FRAME_IDS = ("", "world", "map", "base_link", "w\u00f6rld")
"""``header.frame_id`` values a cloud or pose may carry."""
_CLOUD_FRAME = st.sampled_from(("world",) * 6 + ("",) * 3 + FRAME_IDS[2:])


@st.composite
def stamps(draw) -> Tuple[int, int]:
    """``(sec, nanosec)`` within the message types (``nanosec`` may exceed 10**9 - 1)."""
    sec = draw(st.one_of(st.integers(0, 2_000_000_000), st.integers(-2 ** 31, 2 ** 31 - 1)))
    nsec = draw(st.one_of(st.integers(0, 999_999_999), st.integers(0, UINT32_MAX)))
    return sec, nsec


def data_buffers(data: bytes) -> st.SearchStrategy[Any]:
    """The same bytes as any buffer a parser may hand over."""
    import array
    return st.sampled_from((
        lambda b: b, bytearray, memoryview, lambda b: array.array("B", b),
        lambda b: np.frombuffer(b, dtype=np.uint8), lambda b: list(b),
    )).map(lambda f: f(data))


# ------------------------------------------------------------------------------------ contacts

CONTACT_FLOAT_TYPES = (FLOAT64, FLOAT32, FLOAT32)
ELEM_TYPES = (INT32,)


def contact_columns(num_bodies: int) -> Tuple[List[Column], List[Column]]:
    """Required and optional columns of a contacts cloud for ``num_bodies`` body names.

    Wrong datatypes, out-of-range body indices and elements below -1 are
    drawn as rarer alternatives so both outcomes are common.
    """
    def floats(name: str) -> Column:
        return Column(name, CONTACT_FLOAT_TYPES * 4 + (INT32,) if name in ("x", "fz", "depth")
                      else CONTACT_FLOAT_TYPES)
    body = Column("body1", (UINT32, UINT16) * 5 + (INT32, UINT8), int_range(0, num_bodies - 1),
                  set_one((num_bodies, num_bodies + 1, 65_535, 2 ** 32 - 1)))
    elem = Column("elem1", ELEM_TYPES * 10 + (UINT32, INT16), int_range(-1, 5_000),
                  set_one((-2, -1000, -2 ** 31)))
    required = [floats(n) for n in ("x", "y", "z", "fx", "fy", "fz")] + [body, replace(body, name="body2")]
    optional = [elem, replace(elem, name="elem2"), floats("depth"),
                Column("intensity", (FLOAT32, UINT8)), Column("rgb", (UINT32, FLOAT32)),
                Column("t", (FLOAT64,))]
    return required, optional


NORMAL_NAMES = ("nx", "ny", "nz")


BODY_NAME_POOL = ("world", "pad", "tool", "table", "object", "link_7", "finger/tip")
_BODY_TABLES = st.lists(st.sampled_from(BODY_NAME_POOL), min_size=1, max_size=5, unique=True)


@st.composite
def body_name_tables(draw) -> List[str]:
    """A ``contact_body_names`` table (0-5 names; rarely with a duplicate, a configuration error)."""
    names = draw(_BODY_TABLES) if draw(weighted_bool(0.97)) else []
    if names and draw(weighted_bool(0.03)):
        names.append(names[0])
    return names


@st.composite
def contact_clouds(draw, body_names: Sequence[str]) -> Cloud:
    """A contacts cloud over ``body_names`` (:func:`clouds` with the contacts field table)."""
    required, optional = contact_columns(len(set(body_names)))
    # the normals come as a triple or not at all, mostly; now and then one or two alone
    normals = draw(st.sampled_from(((), (), NORMAL_NAMES, NORMAL_NAMES, ("nx",), ("ny", "nz"))))
    required += [Column(n, CONTACT_FLOAT_TYPES) for n in normals]
    cloud = draw(clouds(required, optional))
    cloud.frame_id = draw(_CLOUD_FRAME)
    cloud.stamp = draw(stamps())
    return cloud


# ------------------------------------------------------------------------------------ measured

@dataclass(frozen=True)
class SensorSpec:
    """A sensor as the measured decoder sees it: type, measurement names, vertices."""

    type_name: str
    names: Tuple[str, ...]
    errors: Optional[Tuple[float, ...]]
    vertices: Optional[np.ndarray]


@st.composite
def sensor_specs(draw) -> SensorSpec:
    """One of the four sensor kinds with measurement names as the models list them."""
    kind = draw(st.sampled_from(("pressure", "wrench", "load", "dense_force")))
    if kind == "pressure":
        return SensorSpec("PunyoPressureSensor", ("pressure",),
                          draw(st.one_of(st.none(), st.just((50.0,)))), None)
    if kind == "wrench":
        axes = draw(st.lists(st.sampled_from(("force_x", "force_y", "force_z")), min_size=1, max_size=3,
                             unique=True))
        names = tuple(a for a in ("force_x", "force_y", "force_z") if a in axes)
        if draw(st.booleans()):
            names += ("contact",)
        return SensorSpec("ContactSensor", names, None, None)
    if kind == "load":
        main = draw(st.sampled_from(("value", "force", "load")))
        flag = draw(st.sampled_from(((), ("in_contact",), ("inContact",))))
        return SensorSpec("IsaacContactSensor", (main,) + flag, None, None)
    nv = draw(st.integers(1, 12))
    vertices = np.linspace(-0.05, 0.05, 3 * nv).reshape(nv, 3)    # not read by the measured decoder
    names = tuple(f"p{i}_{a}" for i in range(nv) for a in "xyz")
    return SensorSpec("PunyoDenseForceSensor", names, None, vertices)


_MODERATE = st.floats(-1e6, 1e6)
_FINITE = st.floats(allow_nan=False, allow_infinity=False)
_ANY_FLOAT = st.one_of(_MODERATE, _MODERATE, _MODERATE, _MODERATE, _FINITE, _FINITE, _FINITE, st.floats())


def any_float() -> st.SearchStrategy[float]:
    """Any double: mostly moderate, also huge, tiny, subnormal, zero, rarely NaN and infinities."""
    return _ANY_FLOAT


@st.composite
def measured_messages(draw, spec: SensorSpec) -> Any:
    """A measured message: mostly the sensor's own type, now and then another."""
    kinds = {"PunyoPressureSensor": "pressure", "ContactSensor": "wrench",
             "IsaacContactSensor": "wrench", "PunyoDenseForceSensor": "cloud"}
    own = kinds[spec.type_name]
    which = own if draw(weighted_bool(0.85)) else draw(st.sampled_from(("pressure", "wrench", "cloud")))
    header = Header(stamp=Time(sec=1, nanosec=2), frame_id="pad")
    if which == "pressure":
        return FluidPressure(header=header, fluid_pressure=draw(any_float()), variance=draw(any_float()))
    if which == "wrench":
        m = WrenchStamped(header=header)
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = (draw(any_float()) for _ in range(3))
        m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = (draw(any_float()) for _ in range(3))
        return m
    nv = len(spec.names) // 3 if spec.vertices is not None else draw(st.integers(0, 4))
    n = nv if draw(weighted_bool(0.85)) else max(0, nv + draw(st.sampled_from((-1, 1, 2))))
    force_types = FLOATS * 8 + (INT16, INT32, UINT8)
    cols = [Column(a, force_types) for a in ("fx", "fy", "fz")]
    opt = [Column(a, (FLOAT32,)) for a in ("x", "y", "z")] + [Column("intensity", (FLOAT32, UINT16))]
    return draw(clouds(cols, opt, n_points=n, malformed=0.3)).message()


def measured_scales() -> st.SearchStrategy[float]:
    """``measured_scale`` values: 1, unit factors, any finite double, rarely NaN/inf."""
    return _SCALES


_SCALES = st.one_of(st.sampled_from((1.0, 100.0, 1e-3, 9.80665)), st.sampled_from((1.0, -1.0, 0.0)), _FINITE,
                    _FINITE, st.floats())


# ------------------------------------------------------------------------------------ joint states

UNKNOWN_JOINTS = ("gripper_finger", "", "wheel", "j\u00fc", "Actuator1")


@st.composite
def joint_states(draw, joint_names: Sequence[str], other_names: Sequence[str] = ()) -> JointState:
    """A ``sensor_msgs/JointState`` for a robot with ``joint_names``.

    Any subset in any order, unknown names, names of joints that do not
    move (``other_names``: fixed or mimic joints, links), and as rarer
    faults: a known name twice, fewer or more positions than names, no
    positions, NaN/inf.  Velocities and efforts of any length.
    """
    pool = list(joint_names) + list(other_names) + list(UNKNOWN_JOINTS)
    names = draw(st.lists(st.sampled_from(pool), max_size=8, unique=True))
    # a name twice: a movable joint (a fault) or an unknown name (ignored twice); not a mimic or
    # fixed joint, whose repetition the JointState contract leaves open
    twice = [n for n in names if n in joint_names or n in UNKNOWN_JOINTS]
    if twice and draw(weighted_bool(0.1)):
        names.insert(draw(st.integers(0, len(names))), draw(st.sampled_from(twice)))
    position = st.one_of(st.floats(-10, 10), st.floats(-1e4, 1e4), st.sampled_from((0.0, -0.0)))
    pos = draw(st.lists(position, min_size=len(names), max_size=len(names)))
    fault = draw(st.sampled_from(("none",) * 12 + ("short", "long", "empty", "non_finite")))
    if fault == "short" and pos:
        pos = pos[:draw(st.integers(0, len(pos) - 1))]
    elif fault == "long":
        pos += draw(st.lists(position, min_size=1, max_size=3))
    elif fault == "empty":
        pos = []
    elif fault == "non_finite" and pos:
        pos[draw(st.integers(0, len(pos) - 1))] = draw(st.sampled_from(NON_FINITE))
    msg = JointState(name=names, position=pos)
    msg.velocity = draw(st.lists(st.floats(), max_size=3))
    msg.header.stamp = Time(sec=draw(st.integers(0, 100)), nanosec=draw(st.integers(0, 999_999_999)))
    return msg


# ------------------------------------------------------------------------------------ poses

@st.composite
def quaternions(draw, max_component: float = sys.float_info.max) -> Tuple[float, float, float, float]:
    """``(x, y, z, w)``: unit, scaled (non-unit), tiny, zero, NaN/inf, or any four doubles.

    Components stay within ``±max_component`` (NaN and infinities aside).
    """
    kind = draw(st.sampled_from(("unit", "unit", "scaled", "scaled", "any", "zero", "tiny", "non_finite",
                                 "axis")))
    if kind == "zero":
        return (0.0, 0.0, 0.0, 0.0)
    if kind == "axis":
        q = [0.0] * 4
        q[draw(st.integers(0, 3))] = draw(st.sampled_from((1.0, -1.0, 2.0, 1e-9, 1e-3)))
        return tuple(q)
    if kind == "any":
        c = st.floats(-max_component, max_component)
        return tuple(draw(c) for _ in range(4))
    v = np.array([draw(st.floats(-1, 1)) for _ in range(4)])
    nrm = float(np.linalg.norm(v))
    if nrm < 1e-3:
        v, nrm = np.array([0.0, 0.0, 0.0, 1.0]), 1.0
    v = v / nrm
    if kind == "scaled":
        v = v * draw(st.one_of(st.floats(1e-8, 1e8), st.sampled_from((1e-9, 0.999e-9, 1.001e-9))))
    elif kind == "tiny":
        v = v * draw(st.floats(0, 1e-9))
    elif kind == "non_finite":
        v = v.copy()
        v[draw(st.integers(0, 3))] = draw(st.sampled_from(NON_FINITE))
    return tuple(float(x) for x in v)


@st.composite
def poses(draw, max_quaternion_component: float = sys.float_info.max) -> PoseStamped:
    """A ``geometry_msgs/PoseStamped``: any position (rarely NaN/inf), any :func:`quaternions`."""
    msg = PoseStamped()
    msg.header.frame_id = draw(st.sampled_from(FRAME_IDS))
    p = st.one_of(st.floats(-100, 100), st.floats(allow_nan=False, allow_infinity=False))
    if draw(weighted_bool(0.08)):
        p = st.floats()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (draw(p) for _ in range(3))
    q = draw(quaternions(max_quaternion_component))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = q
    return msg


def as_dict(msg: Any) -> Dict[str, Any]:
    """Short description of a message for failure reports."""
    return {k: getattr(msg, k) for k in msg.get_fields_and_field_types()}
