"""Validation helpers shared by the sensor models (private to ``vsf_sensor_ros.sensor``)."""
from __future__ import annotations

import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np
import torch

from .base_sensor import ContactState, SimState, check_rigid_values, rigid_transform
from .errors import InputError, SettingError


_NUMPY_DTYPES = (torch.float32, torch.float64)


def numpy_pose(state: SimState, name: str) -> Optional[Tuple[np.ndarray, np.ndarray, torch.Tensor]]:
    """``(R (3, 3), t (3,), T)`` of body ``name`` as numpy views (checked in plain Python, cheaper than
    torch), or None when ``T`` is not a float32/float64 CPU tensor; raises as :func:`.rigid_transform`."""
    T = state.body_transforms.get(name)
    if not isinstance(T, torch.Tensor) or T.shape != (4, 4):
        rigid_transform(state, name)                    # raises the shared message (an unknown body too)
    if not T.is_cpu or T.dtype not in _NUMPY_DTYPES:
        return None
    Tn = T.detach().numpy() if T.requires_grad else T.numpy()
    check_rigid_values(Tn.ravel().tolist(), name, T.dtype, T)   # every call: a pose may change in place
    return Tn[:3, :3], Tn[:3, 3], T


def contacts_on(state: SimState, name: str, sensor: str, dtype: torch.dtype, device: torch.device
                ) -> Tuple[List[Tuple[str, str]], List[ContactState], List[int]]:
    """``(pairs (name, *), their contact states, offsets [0, n_0, n_0 + n_1, ...])`` in one pass; ValueError:
    an unknown body, a pair whose contacts are not ``dtype`` on ``device`` (the state's; never converted)."""
    if name not in state.body_transforms:
        state.bodies_in_contact(name)                   # raises ValueError naming unknown bodies
    pairs, states, offsets = [], [], [0]
    for pair, c in state.contacts.items():
        if pair[0] == name:
            if c.forces.dtype != dtype or c.forces.device != device:
                raise ValueError(f"sensor {sensor!r}: contacts {pair} are {c.forces.dtype} on "
                                 f"{c.forces.device} but the state is {dtype} on {device}")
            pairs.append(pair)
            states.append(c)
            offsets.append(offsets[-1] + c.forces.shape[0])   # (len(c): two Python calls)
    return pairs, states, offsets


def check_config_keys(cls_name: str, type_name: str, name: str, config: Mapping[str, Any],
                      allowed: Iterable[str], needs_attachment: bool = True) -> Optional[str]:
    """Check a sensor config's keys (``type`` = ``type_name``, ``attachment``, ``allowed``); ``attachment``
    stripped (None if absent and not ``needs_attachment``).  SettingError: ``'unknown_key'`` (the first),
    ``'wrong_type'``, ``'missing'``."""
    allowed_all = set(allowed) | {"attachment", "type"}
    unknown = sorted((k for k in config if k not in allowed_all), key=str)
    if unknown:
        listed = ", ".join(repr(str(k)) for k in unknown)
        raise SettingError(f"{cls_name} {name!r}: unknown config key(s) {listed}; "
                           f"allowed: {', '.join(sorted(allowed_all))}", str(unknown[0]), config[unknown[0]],
                           "unknown_key", sorted(allowed_all))
    if "type" in config and config["type"] != type_name:
        raise SettingError(f"{cls_name} {name!r}: config 'type' is {config['type']!r}, "
                           f"expected {type_name!r}", "type", config["type"], "wrong_type", type_name)
    body = config.get("attachment")
    if body is None and not needs_attachment:
        return None
    if not isinstance(body, str) or not body.strip():
        raise SettingError(f"{cls_name} {name!r}: config needs 'attachment' (a body name), got {body!r}",
                           "attachment", body, "missing")
    return body.strip()


def check_model_name(model: Any, expected: str, sensor: str) -> None:
    """Warn when a model's ``getName()`` is not ``expected`` (the seed attaches it anyway; so does this)."""
    get = getattr(model, "getName", None)
    if callable(get):
        got = get()
        if got != expected:
            warnings.warn(f"sensor {sensor!r} is attached to body {expected!r} but was given the model "
                          f"of body {got!r}; using its mesh, contacts are read from {expected!r}",
                          stacklevel=3)


def as_vector(value: Any, label: str, length: Optional[int]) -> np.ndarray:
    """``value`` (array-like, tensor or scalar when ``length == 1``) as a finite float64 ``(length,)`` copy.
    InputError (``argument`` ``label``): ``'not_numeric'``, ``'shape'`` (``expected`` ``(length,)``) or
    ``'not_finite'``."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{label} must be numeric, got {value!r}", label, value, "not_numeric") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or (length is not None and arr.shape[0] != length):
        want = f"({length},)" if length is not None else "1-D"
        raise InputError(f"{label} must have shape {want}, got {arr.shape}", label, arr.shape, "shape",
                         (length,) if length is not None else None)
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{label} has non-finite entries: {arr.tolist()[:8]}", label, arr.tolist(),
                         "not_finite")
    return arr


def parse_tare(calib: Mapping[str, Any], sensor: str, length: Optional[int],
               allow_gain: bool = False) -> Dict[str, np.ndarray]:
    """The present entries of ``{'tare', 'tare_sim_avg'}`` (and ``'gain'`` > 0 with ``allow_gain``) as float64
    ``(length,)`` arrays.  InputError: ``'calib'`` with ``'type'``, ``'unknown_key'`` or ``'needs_tare'``;
    an entry as :func:`as_vector`, or ``'not_positive'`` (gain)."""
    if not isinstance(calib, Mapping):
        raise InputError(f"sensor {sensor!r}: calibration must be a dict, got {type(calib).__name__}",
                         "calib", type(calib).__name__, "type")
    known = ("tare", "tare_sim_avg", "gain") if allow_gain else ("tare", "tare_sim_avg")
    unknown = sorted(str(k) for k in calib if k not in known)
    if unknown:
        raise InputError(f"sensor {sensor!r}: unknown calibration key(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(map(repr, known))}", "calib", unknown[0], "unknown_key", known)
    out: Dict[str, np.ndarray] = {}
    for key in ("gain", "tare", "tare_sim_avg")[0 if allow_gain else 1:]:
        if calib.get(key) is None:
            continue
        if key == "tare_sim_avg" and "tare" not in out:
            raise InputError(f"sensor {sensor!r}: calibration has 'tare_sim_avg' but no 'tare'",
                             "calib", "tare_sim_avg", "needs_tare", "tare")
        label = f"sensor {sensor!r}: calibration {key!r}"
        out[key] = value = as_vector(calib[key], label, length)
        if key == "gain" and not np.all(value > 0):
            raise InputError(f"{label} must be > 0, got {value.tolist()[:8]}", label, value.tolist(),
                             "not_positive")
    return out
