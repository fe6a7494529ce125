"""Reference decoders: slow, point by point, written from the message definitions.

Each reference reads a message the obvious way (``struct.unpack_from`` per
field of every point; plain Python for joint states and poses) and returns
either the decoded values or a :class:`Rejected` holding *every* fault the
message has.  A decoder under test may stop at the first fault it finds, so
the property is: it rejects exactly the messages the reference rejects, with
a reason among the reference's, and decodes the others to the reference's
values.

Nothing here imports the code under test's tables: the contacts field table,
the datatype codes and the measured-message rules are restated from the
message documentation (``sensor_msgs/PointField``, ``PointCloud2``) and from
the package's documented contract (README, module docstrings).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from scipy.spatial.transform import Rotation

STRUCT = {1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 7: "f", 8: "d"}
"""``PointField`` datatype (INT8 .. FLOAT64 = 1 .. 8) -> ``struct`` code."""
SIZE = {dt: struct.calcsize(code) for dt, code in STRUCT.items()}
FLOAT_DT = (7, 8)


@dataclass(frozen=True)
class Rejected:
    """A malformed message: every reason it could be rejected for."""

    reasons: frozenset


@dataclass
class ConfigError:
    """The call itself is wrong (e.g. a body-name table with duplicates): plain ``ValueError``."""

    what: str


def _data_faults(h: int, w: int, step: int, row_step: int, nbytes: int, exact: bool) -> bool:
    """The data length rule of a cloud (message contract, or tolerant: reaches the last point)."""
    if h * w == 0:
        return exact and nbytes not in (0, h * row_step)
    if w * step > row_step:
        return True
    if exact:
        return nbytes != h * row_step
    return nbytes < (h - 1) * row_step + w * step


def read_points(fields: Sequence[Any], h: int, w: int, step: int, row_step: int, big: bool, data: bytes,
                names: Sequence[str], optional: Sequence[str] = (),
                datatypes: Optional[Mapping[str, Sequence[int]]] = None,
                exact: bool = True) -> Union[Rejected, Dict[str, List[Any]]]:
    """Fields ``names`` (+ present ``optional``) of every point, row-major, by ``struct``.

    Faults (reason names of the package's cloud reader): a read field twice
    (``duplicate_field``), a required one absent (``missing_field``), an
    unknown or disallowed datatype (``bad_field_type``), ``count != 1``
    (``bad_field_count``), a field not inside ``point_step``
    (``bad_field_offset``), points with ``point_step`` 0 or data of the
    wrong length (``bad_size``).
    """
    faults = set()
    wanted = list(names) + [n for n in optional if n not in names]
    present = [f.name for f in fields]
    if any(present.count(n) > 1 for n in wanted):
        faults.add("duplicate_field")
    if any(n not in present for n in names):
        faults.add("missing_field")
    if h * w and step <= 0:
        faults.add("bad_size")
    first: Dict[str, Any] = {}
    for f in fields:
        first.setdefault(f.name, f)
    used = [n for n in wanted if n in first]
    for name in used:
        f = first[name]
        dt = int(f.datatype)
        if dt not in STRUCT or (datatypes is not None and name in datatypes and dt not in datatypes[name]):
            faults.add("bad_field_type")
        if int(f.count) != 1:
            faults.add("bad_field_count")
        if dt in SIZE and int(f.offset) + SIZE[dt] > step:
            faults.add("bad_field_offset")
    if _data_faults(h, w, step, row_step, len(data), exact):
        faults.add("bad_size")
    if faults:
        return Rejected(frozenset(faults))
    e = ">" if big else "<"
    out: Dict[str, List[Any]] = {n: [] for n in used}
    for v in range(h if w else 0):          # a cloud of 2**31 empty rows has no point to visit
        for u in range(w):
            base = v * row_step + u * step
            for n in used:
                f = first[n]
                out[n].append(struct.unpack_from(e + STRUCT[int(f.datatype)], data, base + int(f.offset))[0])
    return out


# ------------------------------------------------------------------------------------ contacts

CONTACT_REQUIRED = {"x": FLOAT_DT, "y": FLOAT_DT, "z": FLOAT_DT, "fx": FLOAT_DT, "fy": FLOAT_DT,
                    "fz": FLOAT_DT, "body1": (4, 6), "body2": (4, 6)}
CONTACT_OPTIONAL = {"elem1": (5,), "elem2": (5,), "nx": FLOAT_DT, "ny": FLOAT_DT, "nz": FLOAT_DT,
                    "depth": FLOAT_DT}
"""The contacts field table: x y z fx fy fz float32/64, body1 body2 uint16/32, elem1 elem2 int32,
nx ny nz depth float32/64."""


@dataclass
class Contacts:
    """Reference decoding of a contacts cloud: per ordered body pair, in order of first appearance."""

    pairs: Dict[Tuple[str, str], Dict[str, list]] = field(default_factory=dict)
    num_points: int = 0
    has_normals: bool = False
    has_depth: bool = False


def _finite(x: float) -> bool:
    return math.isfinite(x)


def _fits_float32(x: float) -> bool:
    try:
        struct.pack("<f", x)         # rounds to float32; raises when the result would be infinite
    except OverflowError:
        return False
    return True


def contacts(fields: Sequence[Any], h: int, w: int, step: int, row_step: int, big: bool, data: bytes,
             body_names: Sequence[str], frame_id: str = "", expected_frame_id: Optional[str] = None,
             float32: bool = False) -> Union[Rejected, ConfigError, Contacts]:
    """Reference contacts decoding (the README's contacts cloud contract).

    An empty cloud carries no contact (its fields are not checked; its data
    must be empty or ``height * row_step`` bytes).  A contact is rejected
    for a non-finite point, force, depth or normal (normals are used only
    when all three fields are present; one or two alone are read for their
    datatype and otherwise ignored), a body index past the table
    (``body_index_out_of_range``), an element below -1
    (``elem_index_invalid``), or a non-empty frame other than the expected
    one (``bad_frame_id``).  With ``float32`` output, a point or force
    that a float32 cannot hold is non-finite too.
    """
    names = list(body_names)
    if len(set(names)) != len(names):
        return ConfigError("contact_body_names has duplicates")
    faults = set()
    if expected_frame_id is not None and frame_id and frame_id != expected_frame_id:
        faults.add("bad_frame_id")
    if h * w == 0:
        if _data_faults(h, w, step, row_step, len(data), exact=True):
            faults.add("bad_size")
        return Rejected(frozenset(faults)) if faults else Contacts()
    allowed = {**CONTACT_REQUIRED, **CONTACT_OPTIONAL}
    cols = read_points(fields, h, w, step, row_step, big, data, list(CONTACT_REQUIRED),
                       list(CONTACT_OPTIONAL), allowed, exact=True)
    if isinstance(cols, Rejected):
        return Rejected(frozenset(faults | cols.reasons))
    n = h * w
    normals = all(c in cols for c in ("nx", "ny", "nz"))
    checked = ["x", "y", "z", "fx", "fy", "fz"] + (["nx", "ny", "nz"] if normals else []) + \
        (["depth"] if "depth" in cols else [])
    if not all(_finite(cols[c][r]) for c in checked for r in range(n)):
        faults.add("non_finite")
    elif float32 and not all(_fits_float32(cols[c][r]) for c in ("x", "y", "z", "fx", "fy", "fz")
                             for r in range(n)):
        faults.add("non_finite")
    if any(cols[b][r] >= len(names) for b in ("body1", "body2") for r in range(n)):
        faults.add("body_index_out_of_range")
    if any(cols[e][r] < -1 for e in ("elem1", "elem2") if e in cols for r in range(n)):
        faults.add("elem_index_invalid")
    if faults:
        return Rejected(frozenset(faults))
    out = Contacts(num_points=n, has_normals=normals, has_depth="depth" in cols)
    for r in range(n):
        pair = (names[cols["body1"][r]], names[cols["body2"][r]])
        p = out.pairs.setdefault(pair, {"rows": [], "points": [], "forces": [], "elem1": [], "elem2": [],
                                        "normals": [], "depth": []})
        p["rows"].append(r)
        p["points"].append([cols["x"][r], cols["y"][r], cols["z"][r]])
        p["forces"].append([cols["fx"][r], cols["fy"][r], cols["fz"][r]])
        for e in ("elem1", "elem2"):
            if e in cols:
                p[e].append(cols[e][r])
        if normals:
            p["normals"].append([cols["nx"][r], cols["ny"][r], cols["nz"][r]])
        if "depth" in cols:
            p["depth"].append(cols["depth"][r])
    return out


# ------------------------------------------------------------------------------------ measured

KIND_OF = {"PunyoPressureSensor": "pressure", "PunyoDenseForceSensor": "dense_force",
           "ContactSensor": "wrench", "IsaacContactSensor": "load"}


def measured(type_name: str, names: Sequence[str], msg_kind: str, values: Any,
             scale: float) -> Union[Rejected, List[float]]:
    """Reference measured decoding into the sensor's measurement vector (NaN = not carried).

    Args:
        type_name, names: the sensor's type and ``measurement_names()``.
        msg_kind: ``pressure`` (``values`` = the fluid pressure),
            ``wrench`` (``values`` = force ``(x, y, z)``), or ``cloud``
            (``values`` = a :class:`Rejected` of the cloud's layout, or the
            ``fx fy fz`` columns read with the tolerant data rule; the
            layout reasons other than ``missing_field`` count as
            ``bad_cloud_layout``, integer force fields as ``bad_field_type``).
        scale: ``measured_scale``.

    A pressure sensor takes a FluidPressure; a dense-force sensor a cloud
    with one point per vertex; a Klampt contact sensor a wrench's force on
    the axes it measures; an Isaac-style sensor the wrench's force
    magnitude.  Any non-finite value, in the message or after scaling,
    rejects the message (``non_finite``).
    """
    kind = KIND_OF[type_name]
    own = {"pressure": "pressure", "dense_force": "cloud", "wrench": "wrench", "load": "wrench"}[kind]
    if msg_kind != own:
        return Rejected(frozenset({"measured_type_mismatch"}))
    out = [math.nan] * len(names)
    if kind == "pressure":
        vals, slots = [float(values)], [names.index("pressure")]
    elif kind == "wrench":
        vals = [float(v) for v in values]
        slots = [names.index(a) if a in names else -1 for a in ("force_x", "force_y", "force_z")]
    elif kind == "load":
        x, y, z = (float(v) for v in values)
        vals = [math.hypot(x, y, z) if all(map(math.isfinite, (x, y, z))) else math.nan]
        slots = [next(names.index(c) for c in ("value", "force", "load") if c in names)]
    else:
        if isinstance(values, Rejected):
            return values
        fx, fy, fz = values["fx"], values["fy"], values["fz"]
        faults = set()
        if not all(map(math.isfinite, fx + fy + fz)):
            faults.add("non_finite")
        if 3 * len(fx) != len(names):
            faults.add("measured_size_mismatch")
        if faults:
            return Rejected(frozenset(faults))
        vals = [v for i in range(len(fx)) for v in (fx[i], fy[i], fz[i])]
        slots = list(range(len(names)))
    if not all(map(math.isfinite, vals)):
        return Rejected(frozenset({"non_finite"}))
    scaled = [v * scale for v in vals]
    if not all(map(math.isfinite, scaled)):
        return Rejected(frozenset({"non_finite"}))
    for s, v in zip(slots, scaled):
        if s >= 0:
            out[s] = v
    return out


def measured_cloud_columns(fields: Sequence[Any], h: int, w: int, step: int, row_step: int, big: bool,
                           data: bytes) -> Union[Rejected, Dict[str, list]]:
    """``fx fy fz`` of a measured dense-force cloud, or its faults in the measured decoder's names."""
    faults = set()
    if any(f.name in ("fx", "fy", "fz") and int(f.datatype) not in FLOAT_DT for f in fields):
        faults.add("bad_field_type")
    cols = read_points(fields, h, w, step, row_step, big, data, ["fx", "fy", "fz"], exact=False)
    if isinstance(cols, Rejected):
        faults |= {r if r == "missing_field" else "bad_cloud_layout" for r in cols.reasons}
    if faults:
        return Rejected(frozenset(faults))
    return cols


# ------------------------------------------------------------------------------------ joint states

JointResult = Tuple[Dict[str, float], List[str]]


def joint_state(joint_names: Sequence[str], mimic_names: Sequence[str], current: Mapping[str, float],
                names: Sequence[str], positions: Sequence[float]) -> Union[Rejected, JointResult]:
    """Positions after applying a JointState, and the ignored names; or its faults.

    The rule (README, "Bad input"): a JointState is rejected whole when it
    has no positions, a different number of positions than names, a
    NaN/inf position, or a movable joint named twice.  Otherwise every
    named movable joint takes its position, the others keep theirs, mimic
    joints are derived (not ignored), and every other name is ignored.
    """
    faults = set()
    if len(positions) == 0:
        faults.add("empty")
    if len(positions) != len(names):
        faults.add("length_mismatch")
    if not all(math.isfinite(p) for p in positions):
        faults.add("non_finite")
    known = [n for n in names if n in joint_names]
    if len(set(known)) != len(known):
        faults.add("duplicate")
    if faults:
        return Rejected(frozenset(faults))
    new = dict(current)
    for n, p in zip(names, positions):
        if n in new:
            new[n] = float(p)
    ignored = [n for n in names if n not in joint_names and n not in mimic_names]
    return new, ignored


# ------------------------------------------------------------------------------------ poses

QUAT_MIN_NORM = 1e-9
"""Quaternions with a smaller norm are rejected (the World's documented threshold)."""


def pose(position: Sequence[float], quat_xyzw: Sequence[float]) -> Union[Rejected, np.ndarray, None]:
    """The ``(4, 4)`` transform of a pose, or its faults; ``None`` when on the norm threshold.

    The quaternion is normalised (any non-zero norm from 1e-9 up); its
    norm is computed after scaling by the largest component, so huge
    components do not overflow.  The rotation comes from scipy.
    """
    vals = list(position) + list(quat_xyzw)
    if not all(math.isfinite(v) for v in vals):
        return Rejected(frozenset({"non_finite"}))
    big = max(abs(c) for c in quat_xyzw)
    if big == 0.0:
        return Rejected(frozenset({"zero_norm"}))
    scaled = [c / big for c in quat_xyzw]
    norm = big * math.sqrt(sum(c * c for c in scaled))
    if abs(norm - QUAT_MIN_NORM) <= 1e-12 * QUAT_MIN_NORM:
        return None
    if norm < QUAT_MIN_NORM:
        return Rejected(frozenset({"zero_norm"}))
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat(scaled).as_matrix()
    T[:3, 3] = position
    return T


# ------------------------------------------------------------------------------------ stamps

NS_PER_S = 1_000_000_000
INT32 = (-2 ** 31, 2 ** 31 - 1)


def ns_to_sec_nanosec(ns: int) -> Union[Rejected, Tuple[int, int]]:
    """``(sec, nanosec)`` with ``0 <= nanosec < 10**9``; rejected when ``sec`` leaves int32."""
    sec, nsec = ns // NS_PER_S, ns % NS_PER_S
    if not INT32[0] <= sec <= INT32[1]:
        return Rejected(frozenset({"out_of_range"}))
    return sec, nsec


def seconds_to_ns(seconds: Union[int, float]) -> Union[Rejected, int]:
    """Exact nearest nanosecond of ``seconds`` (ties to even), or its faults."""
    if isinstance(seconds, float) and not math.isfinite(seconds):
        return Rejected(frozenset({"non_finite"}))
    if seconds < 0:
        return Rejected(frozenset({"negative"}))
    ns = round(Fraction(seconds) * NS_PER_S)
    if isinstance(ns_to_sec_nanosec(ns), Rejected):
        return Rejected(frozenset({"out_of_range"}))
    return ns
