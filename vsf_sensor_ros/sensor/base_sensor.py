"""The simulation state and the sensor contract (seed: ``vsf.sensor.base_sensor``); see docs/python_api.md."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from .errors import InputError


@dataclass
class ContactState:
    """Contacts between two bodies (seed ``ContactState``), world frame: ``points`` ``(N, 3)`` float (m),
    ``forces`` ``(N, 3)`` on body 1 by body 2 (N), same dtype/device; ``elems1`` / ``elems2`` optional
    ``(N,)`` int64 vertex index on body 1 / 2 (``-1`` = none; lists, arrays, integral floats converted, empty
    = None).  InputError as :func:`validate_contact_state`, or for a fractional element."""

    points: torch.Tensor
    forces: torch.Tensor
    elems1: Optional[torch.Tensor] = None
    elems2: Optional[torch.Tensor] = None

    def __post_init__(self) -> None:
        self.elems1 = _integral_elems(self.elems1, "elems1", self.points)
        self.elems2 = _integral_elems(self.elems2, "elems2", self.points)
        validate_contact_state(self)

    def __len__(self) -> int:
        return int(self.points.shape[0])

    def to(self, device) -> ContactState:
        """Return a copy on ``device`` (seed ``ContactState.to``); dtype kept."""
        return ContactState(self.points.to(device), self.forces.to(device),
                            *(None if e is None else e.to(device) for e in (self.elems1, self.elems2)))


def _integral_elems(e: Any, label: str, points: Any) -> Optional[torch.Tensor]:
    """Element indices as the seed accepts them (see :class:`ContactState`); other types unchanged."""
    if e is None:
        return None
    if not isinstance(e, torch.Tensor) and isinstance(e, (list, tuple, np.ndarray)):
        try:
            e = torch.as_tensor(np.asarray(e), device=getattr(points, "device", None)).reshape(-1)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise InputError(f"ContactState.{label} must hold element indices (integers); "
                             f"got {_show(e)!r} ({exc})", label, e, "not_integer") from None
    if not isinstance(e, torch.Tensor):
        return e
    if e.numel() == 0:
        return None
    if not e.is_floating_point():
        return e
    bad = ~torch.isfinite(e) | (e != torch.round(e))
    if bool(bad.any()):
        row = int(bad.reshape(-1).nonzero()[0, 0])
        raise InputError(f"ContactState.{label} must hold element indices (integers); got "
                         f"{e.reshape(-1)[row].item()!r} at row {row} of a {e.dtype} tensor",
                         label, e.reshape(-1)[row].item(), "not_integer")
    return e.to(torch.int64)


def validate_contact_state(c: ContactState) -> None:
    """Check shapes, dtypes, devices and finiteness of a ``ContactState``; InputError: ``argument`` the field,
    ``value`` the offending part, ``reason`` ``'type'``, ``'shape'``, ``'dtype'``, ``'count'`` (forces vs
    points), ``'not_finite'`` or ``'not_integer'``."""
    for label, t in (("points", c.points), ("forces", c.forces)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"ContactState.{label} must be a torch.Tensor, got {type(t).__name__}",
                             label, type(t).__name__, "type", "torch.Tensor")
        if t.dim() != 2 or t.shape[1] != 3:
            raise InputError(f"ContactState.{label} must have shape (N, 3), got {tuple(t.shape)}",
                             label, tuple(t.shape), "shape", "(N, 3)")
        if not t.is_floating_point():
            raise InputError(f"ContactState.{label} must be floating point, got {t.dtype}",
                             label, t.dtype, "dtype")
    if c.points.shape[0] != c.forces.shape[0]:
        raise InputError(f"ContactState has {c.points.shape[0]} points but {c.forces.shape[0]} forces",
                         "forces", c.forces.shape[0], "count", c.points.shape[0])
    if c.points.dtype != c.forces.dtype or c.points.device != c.forces.device:
        raise InputError(
            f"ContactState points ({c.points.dtype}, {c.points.device}) and forces "
            f"({c.forces.dtype}, {c.forces.device}) must share dtype and device",
            "forces", (c.forces.dtype, c.forces.device), "dtype", (c.points.dtype, c.points.device))
    for label, t in (("points", c.points), ("forces", c.forces)):
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            row = int(bad.any(dim=1).nonzero()[0, 0])
            raise InputError(f"ContactState.{label} has a non-finite value at row {row}: {t[row].tolist()}",
                             label, t[row].tolist(), "not_finite")
    n = c.points.shape[0]
    for label, e in (("elems1", c.elems1), ("elems2", c.elems2)):
        if e is None:
            continue
        if not isinstance(e, torch.Tensor) or e.dim() != 1 or e.shape[0] != n:
            shape = tuple(e.shape) if isinstance(e, torch.Tensor) else type(e).__name__
            raise InputError(f"ContactState.{label} must have shape ({n},), got {shape}",
                             label, shape, "shape", (n,))
        if e.is_floating_point() or e.dtype == torch.bool:
            raise InputError(f"ContactState.{label} must be an integer tensor, got {e.dtype}",
                             label, e.dtype, "dtype")


@dataclass
class SimState:
    """One simulator step (seed ``SimState``): ``body_transforms`` (name -> ``(4, 4)`` body -> world, m;
    the first gives ``dtype`` / ``device``), ``body_states``, ``contacts`` (``(body1, body2)`` ->
    ``ContactState``, forces on body 1, not symmetric).  InputError for a key that is not a pair."""

    body_transforms: Dict[str, torch.Tensor] = field(default_factory=dict)
    body_states: Dict[str, torch.Tensor] = field(default_factory=dict)
    contacts: Dict[Tuple[str, str], ContactState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # every accessor unpacks the keys as (body1, body2): a string key would unpack into its characters
        for key in self.contacts:
            if type(key) is not tuple or len(key) != 2:
                raise InputError(f"SimState.contacts keys must be (body1, body2) tuples, got {key!r}",
                                 "contacts", key, "not_a_pair")

    def _check_body(self, name: str) -> None:
        if name not in self.body_transforms:
            known = ", ".join(sorted(self.body_transforms)) or "(none)"
            raise InputError(f"body {name!r} not found in state; known bodies: {known}",
                             "name", name, "unknown_body", sorted(self.body_transforms))

    def subgraph(self, names: List[str]) -> SimState:
        """Return the state restricted to ``names`` (contacts between them only)."""
        keep = set(names)
        return SimState({k: t for k, t in self.body_transforms.items() if k in keep}, dict(self.body_states),
                        {(a, b): c for (a, b), c in self.contacts.items() if a in keep and b in keep})

    def bodies_in_contact(self, name: str, reverse: bool = False) -> List[str]:
        """``b`` of the pairs ``(name, b)`` (``a`` of ``(a, name)`` when ``reverse``), in insertion order;
        ValueError when ``name`` has no transform."""
        return [pair[not reverse] for pair, _ in self._pairs_on(name, reverse)]

    def contact_states_on_body(self, name: str, reverse: bool = False) -> List[ContactState]:
        """``ContactState`` objects in the order of ``bodies_in_contact``; ValueError for an unknown body."""
        return [c for _, c in self._pairs_on(name, reverse)]

    def _pairs_on(self, name: str, reverse: bool) -> List[Tuple[Tuple[str, str], ContactState]]:
        self._check_body(name)
        return [(pair, c) for pair, c in self.contacts.items() if pair[bool(reverse)] == name]

    def contacts_on_body(self, name: str, local: bool = True) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(points, forces)`` ``(N, 3)`` of every contact on ``name`` (``bodies_in_contact`` order), body
        frame when ``local`` else world.  ValueError: unknown body, non-tensor transform."""
        states = self.contact_states_on_body(name)          # raises naming an unknown body
        T = self.body_transforms[name]
        if not isinstance(T, torch.Tensor):
            raise ValueError(f"body {name!r}: transform must be a (4, 4) torch.Tensor, got "
                             f"{type(T).__name__} (convert with torch.as_tensor)")
        empty = torch.empty(0, 3, device=self.device, dtype=self.dtype)
        pts = torch.cat([c.points for c in states]) if states else empty
        frc = torch.cat([c.forces for c in states]) if states else empty
        if local:   # x_local = R^T (x_world - t); for row vectors: (x - t) @ R
            T = T.to(device=pts.device, dtype=pts.dtype)
            pts, frc = (pts - T[:3, 3]) @ T[:3, :3], frc @ T[:3, :3]
        return pts, frc

    @property
    def device(self) -> torch.device:
        """Device of the first body transform (CPU when there is none)."""
        first = next(iter(self.body_transforms.values()), None)
        return torch.device("cpu") if first is None else first.device

    @property
    def dtype(self) -> torch.dtype:
        """Dtype of the first body transform (float32 when there is none, as the seed)."""
        first = next(iter(self.body_transforms.values()), None)
        return torch.float32 if first is None else first.dtype


def with_reverse_pairs(contacts: Mapping[Tuple[str, str], ContactState]
                       ) -> Dict[Tuple[str, str], ContactState]:
    """A new dict of ``contacts`` where ``(a, b)`` alone also gives ``(b, a)``: same points, force ``-f``,
    elements swapped (autograd kept); pairs in both orders and ``(a, a)`` kept as given (not in the seed).
    InputError for a key that is not a ``(body1, body2)`` tuple."""
    SimState({}, {}, contacts)             # the keys checked as a state's
    out: Dict[Tuple[str, str], ContactState] = {}
    for (a, b), c in contacts.items():
        out[(a, b)] = c
        if (b, a) not in contacts:
            out[(b, a)] = ContactState(c.points, -c.forces, c.elems2, c.elems1)
    return out


def _show(value: object) -> object:
    """A tensor/array as nested lists for an error message; anything else as is."""
    if isinstance(value, torch.Tensor):
        return value.detach().tolist()
    return value.tolist() if hasattr(value, "tolist") else value


@functools.lru_cache(maxsize=None)
def rigid_tolerance(dtype: torch.dtype) -> float:
    """Tolerance of :func:`rigid_transform` on ``|R Rᵀ − I|`` and the bottom row: ``max(1e-5, 64 eps)``."""
    return max(1e-5, 64.0 * torch.finfo(dtype).eps)


def check_rigid_values(vals: Sequence[float], name: str, dtype: torch.dtype, shown: object) -> None:
    """Check a transform's 16 row-major ``vals`` in plain Python (faster than torch for a 4x4); ``shown``
    is printed in an error.  InputError as :func:`rigid_transform`."""
    # a finite sum means finite entries; only an overflowing sum needs the element-wise test
    if not math.isfinite(sum(vals)) and not all(math.isfinite(v) for v in vals):
        raise InputError(f"body {name!r}: transform has a non-finite entry: {_show(shown)}",
                         name, _show(shown), "not_finite")
    tol = rigid_tolerance(dtype)
    a0, a1, a2, _, b0, b1, b2, _, c0, c1, c2, _, z0, z1, z2, one = vals
    # (exact [0, 0, 0, 1], the usual case, skips the tolerance test)
    if (z0 or z1 or z2 or one != 1.0) and max(abs(z0), abs(z1), abs(z2), abs(one - 1.0)) > tol:
        raise InputError(f"body {name!r}: transform's bottom row must be [0, 0, 0, 1], got "
                         f"{[z0, z1, z2, one]} in {_show(shown)}", name, [z0, z1, z2, one], "bottom_row",
                         [0, 0, 0, 1])
    # Gram matrix R R^T of the rows minus the identity (rows orthonormal <=> R orthonormal)
    gram_err = max(abs(a0 * a0 + a1 * a1 + a2 * a2 - 1.0), abs(b0 * b0 + b1 * b1 + b2 * b2 - 1.0),
                   abs(c0 * c0 + c1 * c1 + c2 * c2 - 1.0), abs(a0 * b0 + a1 * b1 + a2 * b2),
                   abs(a0 * c0 + a1 * c1 + a2 * c2), abs(b0 * c0 + b1 * c1 + b2 * c2))
    if not gram_err <= tol:
        raise InputError(f"body {name!r}: transform's rotation is not orthonormal "
                         f"(max |R R^T - I| = {gram_err:.3g} > {tol:.3g}; scaled or sheared?): "
                         f"{_show(shown)}", name, gram_err, "not_orthonormal", tol)
    det = a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0)
    if det <= 0.0:
        raise InputError(f"body {name!r}: transform's rotation has determinant {det:.6g} "
                         f"(a reflection, not a rotation): {_show(shown)}", name, det, "reflection")


def rigid_transform(state: SimState, name: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """Views ``R`` ``(3, 3)``, ``t`` ``(3,)`` (m, autograd kept) of body ``name``'s body -> world transform,
    checked: finite ``(4, 4)`` float, bottom row ``[0, 0, 0, 1]``, orthonormal within
    :func:`rigid_tolerance`, ``det R > 0``.  InputError: ``'name'`` / ``'unknown_body'``, else ``argument``
    the body, ``reason`` ``'type'``, ``'shape'``, ``'dtype'``, ``'not_finite'``, ``'bottom_row'``,
    ``'not_orthonormal'`` or ``'reflection'``."""
    state._check_body(name)
    T = state.body_transforms[name]
    if not isinstance(T, torch.Tensor):
        raise InputError(f"body {name!r}: transform must be a (4, 4) torch.Tensor, got "
                         f"{type(T).__name__} {T!r} (convert with torch.as_tensor)",
                         name, type(T).__name__, "type", "torch.Tensor")
    if T.shape != (4, 4):
        raise InputError(f"body {name!r}: transform must be a (4, 4) tensor, got shape {tuple(T.shape)}",
                         name, tuple(T.shape), "shape", (4, 4))
    if not T.is_floating_point():
        raise InputError(f"body {name!r}: transform must be floating point, got {T.dtype}",
                         name, T.dtype, "dtype")
    vals = T.detach().reshape(-1).tolist()
    check_rigid_values(vals, name, T.dtype, T)
    return T[:3, :3], T[:3, 3]


# -- the seed's duck-typed states ---------------------------------------------------------
def _float_tensor(value: Any, label: str, dtype: Optional[torch.dtype]) -> torch.Tensor:
    """``value`` as a float tensor: a tensor as is, a list / array in ``dtype`` (torch's default if None)."""
    if isinstance(value, torch.Tensor):
        return value
    try:
        t = torch.as_tensor(value, dtype=dtype or torch.get_default_dtype())
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"ContactState.{label} must be (N, 3) numbers, got a {type(value).__name__}: "
                         f"{exc}", label, value, "not_numeric") from None
    return t.reshape(0, 3) if t.numel() == 0 else t


def as_contact_state(c: Any, dtype: Optional[torch.dtype] = None) -> ContactState:
    """A :class:`ContactState` from anything with the seed's ``points`` / ``forces`` (``elems1`` / ``elems2``
    optional); lists and arrays become tensors of ``dtype``.  InputError: missing attributes (``'c'``,
    ``'type'``, ``value`` the type name) or values :class:`ContactState` refuses."""
    if type(c) is ContactState:
        return c
    try:
        points, forces = c.points, c.forces
    except AttributeError:
        raise InputError(f"a contact state needs .points and .forces, got a {type(c).__name__}",
                         "c", type(c).__name__, "type") from None
    # element lists and arrays (empty: absent) are ContactState's to convert
    return ContactState(_float_tensor(points, "points", dtype), _float_tensor(forces, "forces", dtype),
                        getattr(c, "elems1", None), getattr(c, "elems2", None))


def as_sim_state(state: Any) -> SimState:
    """A :class:`SimState` from anything with the seed's ``body_transforms``, ``bodies_in_contact`` and
    ``contact_states_on_body``.  InputError: no ``body_transforms`` (``'state'``, ``'type'``), the two
    methods disagreeing (``'contact_states_on_body'``, ``'count'``), a refused contact state."""
    if type(state) is SimState:
        if set(map(type, state.contacts.values())) <= {ContactState}:   # (on every model call: no genexpr)
            return state
        dtype = state.dtype if state.body_transforms else None
        return SimState(state.body_transforms, state.body_states,
                        {pair: as_contact_state(c, dtype) for pair, c in state.contacts.items()})
    try:
        transforms = state.body_transforms
    except AttributeError:
        raise InputError(f"a simulation state needs .body_transforms, got a {type(state).__name__}",
                         "state", type(state).__name__, "type") from None
    bt = {n: T if isinstance(T, torch.Tensor) else torch.as_tensor(T, dtype=torch.get_default_dtype())
          for n, T in transforms.items()}
    dtype = next(iter(bt.values())).dtype if bt else None
    contacts: Dict[Tuple[str, str], ContactState] = {}
    for name in transforms:
        others = list(state.bodies_in_contact(name))
        states = list(state.contact_states_on_body(name))
        if len(others) != len(states):
            raise InputError(f"body {name!r}: bodies_in_contact gives {len(others)} bodies but "
                             f"contact_states_on_body {len(states)} contact states",
                             "contact_states_on_body", len(states), "count", len(others))
        for other, c in zip(others, states):
            contacts[(name, other)] = as_contact_state(c, dtype)
    return SimState(bt, dict(getattr(state, "body_states", None) or {}), contacts)


# BaseSensor methods (and their overrides in subclasses) whose first argument is a state
STATE_METHODS = ("predict", "predict_torch", "predict_with_jacobian", "measurement_force_jacobian",
                 "sparse_force_jacobian", "update", "contact_bodies", "in_contact",
                 "sensor_transform", "evaluate", "get_contact_sensor_raw_data")


def _taking_sim_state(method: Any) -> Any:
    """``method`` with its state argument passed through :func:`as_sim_state` first."""
    @functools.wraps(method)
    def call(self: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, as_sim_state(state), *args, **kwargs)
    call._takes_sim_state = True
    return call


def _wrap_state_methods(cls: type) -> None:
    """Wrap the :data:`STATE_METHODS` ``cls`` defines itself with :func:`_taking_sim_state` (once)."""
    for name in STATE_METHODS:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "_takes_sim_state", False):
            setattr(cls, name, _taking_sim_state(method))


# -- the sensor contract ------------------------------------------------------------
Pair = Tuple[str, str]


@dataclass
class SparseJacobian:
    """COO Jacobian of the measurements w.r.t. the concatenated contact forces: ``rows`` / ``cols`` ``(nnz,)``
    int64 (``3·c + k``, world axis ``k``), ``values`` in the state's dtype/device, ``shape`` ``(#meas, 3·N)``,
    ``pairs`` in order, ``offsets`` (``pairs[p]`` holds contacts ``offsets[p] .. offsets[p+1]-1``)."""

    rows: torch.Tensor
    cols: torch.Tensor
    values: torch.Tensor
    shape: Tuple[int, int]
    pairs: List[Pair]
    offsets: List[int]

    def to_dense(self) -> torch.Tensor:
        """Dense ``(#meas, 3·N)`` matrix (duplicates summed)."""
        out = torch.zeros(self.shape, dtype=self.values.dtype, device=self.values.device)
        out.index_put_((self.rows, self.cols), self.values, accumulate=True)
        return out

    def to_pair_dict(self) -> Dict[Pair, torch.Tensor]:
        """Seed-form dense dict ``{pair: Tensor[#meas, N_pair, 3]}``."""
        dense = self.to_dense().reshape(self.shape[0], self.shape[1] // 3, 3)
        return {pair: dense[:, self.offsets[p]:self.offsets[p + 1]] for p, pair in enumerate(self.pairs)}

    def nbytes(self) -> int:
        """Bytes held by ``rows``, ``cols`` and ``values``."""
        return sum(t.element_size() * t.numel() for t in (self.rows, self.cols, self.values))


class BaseSensor:
    """A reading model from a ``SimState`` (seed ``BaseSensor``): subclasses give ``measurement_names``,
    ``predict_torch`` and a Jacobian; state methods take duck-typed states (:func:`as_sim_state`)."""

    type_name: str = "BaseSensor"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every model, a user's too, takes the seed's duck-typed states (as_sim_state on STATE_METHODS)
        super().__init_subclass__(**kwargs)
        _wrap_state_methods(cls)

    def __init__(self, name: str = "", attachModelName: str = "") -> None:
        self.name: str = name
        self.attachModelName: str = attachModelName

    # -- configuration -------------------------------------------------------
    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "BaseSensor":
        """Build from a plain dict (``attachment``, type-specific keys); ValueError naming a bad key."""
        raise NotImplementedError(f"{cls.__name__}.from_config")

    def attach(self, model: Any) -> None:
        """Attach to a body model (Klampt link/rigid object, or a mesh object)."""

    # -- measurement contract -------------------------------------------------
    def measurement_names(self) -> List[str]:
        """One name per measurement entry."""
        return []

    def reading_frame(self) -> Optional[np.ndarray]:
        """``(4, 4)`` float64 sensor -> body transform (m) of the values, or None for the body frame."""
        return None

    def measurement_errors(self) -> Optional[List[float]]:
        """Standard deviation of each entry, or None for isotropic/unknown."""
        return None

    def predict(self, state: SimState) -> torch.Tensor:
        """Predicted measurement, ``(#meas,)`` of the state's dtype/device."""
        with torch.no_grad():
            return self.predict_torch(state)

    def predict_torch(self, state: SimState) -> torch.Tensor:
        """Differentiable prediction, ``(#meas,)`` of the state's dtype/device."""
        raise NotImplementedError

    def measurement_force_jacobian(self, state: SimState) -> Dict[Pair, torch.Tensor]:
        """Seed-form dense Jacobians ``{(sensor_body, other): Tensor[#meas, N, 3]}``."""
        return self.sparse_force_jacobian(state).to_pair_dict()

    def sparse_force_jacobian(self, state: SimState) -> SparseJacobian:
        """COO Jacobian (nonzeros only) over the contacts of ``contact_bodies(state)`` concatenated, from
        the seed-form dense dict of :meth:`measurement_force_jacobian`."""
        pairs, dense = self.contact_bodies(state), self.measurement_force_jacobian(state)
        m, offsets = len(self.measurement_names()), [0]
        empty_i = torch.zeros(0, dtype=torch.int64, device=state.device)
        rows, cols, vals = [empty_i], [empty_i], [torch.zeros(0, dtype=state.dtype, device=state.device)]
        for pair in pairs:
            n = dense[pair].shape[1]
            flat = dense[pair].reshape(m, 3 * n)
            r, c = flat.nonzero(as_tuple=True)
            rows.append(r)
            cols.append(c + 3 * offsets[-1])
            vals.append(flat[r, c])
            offsets.append(offsets[-1] + n)
        return SparseJacobian(torch.cat(rows), torch.cat(cols), torch.cat(vals), (m, 3 * offsets[-1]),
                              list(pairs), offsets)

    def update(self, state: SimState) -> None:
        """Advance internal state (stateful sensors); no-op by default."""

    def contact_bodies(self, state: SimState) -> List[Pair]:
        """Pairs ``(sensor_body, other_body)`` in the order of the Jacobian blocks."""
        return [(self.attachModelName, b) for b in state.bodies_in_contact(self.attachModelName)]

    def in_contact(self, state: SimState) -> bool:
        """True when something touches what this sensor senses (default: a contact on its body);
        ValueError naming a body not in the state."""
        return any(len(c) > 0 for c in state.contact_states_on_body(self.attachModelName))

    # -- calibration and internal state -------------------------------------------
    def set_calibration(self, calib_dict: dict) -> None:
        """Apply a calibration dict (e.g. ``{'tare': array}``)."""

    def get_calibration(self) -> dict:
        """Current calibration dict (empty when uncalibrated)."""
        return {}

    def reset(self) -> None:
        """Reset internal state of a stateful sensor."""

    def get_internal_state(self) -> dict:
        """Extra internal state (stateful sensors)."""
        return {}

    def set_internal_state(self, state: dict) -> None:
        """Restore internal state from ``get_internal_state()``."""


_wrap_state_methods(BaseSensor)
