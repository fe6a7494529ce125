"""Klampt-style tactile patch sensor (seed: Klampt ``ContactSensor``, ``Cpp/Sensing/ForceSensors.cpp``);
equations and the deliberate differences: docs/python_api.md."""
from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from ._punyo_common import check_config_keys
from .base_sensor import Pair, SimState, rigid_transform
from .errors import InputError, SettingError
from .indicator_tare import IndicatorTareMixin

# Klampt's Settings() map, in its (sorted) order.
SETTING_NAMES: Tuple[str, ...] = (
    "Tsensor", "enabled", "fResolution", "fSaturation", "fSensitivity", "fVariance",
    "falloffCoefficient", "hasForce", "link", "patchMax", "patchMin", "patchTolerance", "rate")

_AXES = ("force_x", "force_y", "force_z")
_FLAGS = {"hasForce": 3, "enabled": 1}                      # flag settings: count
# numeric settings: (count, must be >= 0, must be finite)
_NUMERIC = {"patchMin": (2, False, True), "patchMax": (2, False, True), "fResolution": (3, True, True),
            "fVariance": (3, True, True), "fSaturation": (3, True, False), "patchTolerance": (1, True, True),
            "fSensitivity": (1, True, True), "falloffCoefficient": (1, True, True), "rate": (1, True, True)}
# ASCII float syntax only, as C++ streams read (Python's float() also takes other scripts' digits)
_NUMBER = re.compile(r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$",
                     re.IGNORECASE | re.ASCII)


def format_klampt_float(value: float) -> str:
    """``value`` as Klampt's ``stringstream`` prints it (``%g``), with more digits only when 6 would round."""
    v = float(value)
    if not math.isfinite(v):
        return "%g" % v
    for digits in range(6, 18):
        text = "%.*g" % (digits, v)
        if float(text) == v:
            return text
    return repr(v)


def _rejected(name: str, value: Any, reason: str) -> SettingError:
    """A rejected setting; its ``reason`` alone lets ``setSetting`` restate it with the raw string."""
    return SettingError(f"ContactSensor setting {name!r}: value {value!r} rejected: {reason}", name, value,
                        reason)


def _unknown(name: str) -> ValueError:
    return SettingError(f"ContactSensor has no setting {name!r}; settings: {', '.join(SETTING_NAMES)}",
                        name, None)


def _parse_numbers(name: str, text: str, count: int) -> List[float]:
    tokens = text.split()
    if len(tokens) != count:
        raise _rejected(name, text, f"expected {count} number(s), got {len(tokens)}")
    for tok in tokens:
        if not _NUMBER.match(tok):
            raise _rejected(name, text, f"{tok!r} is not a number")
    return [float(tok) for tok in tokens]


def _parse_string(name: str, text: str) -> Any:
    """Klampt string of a known setting other than ``link`` -> typed value (not yet range-checked)."""
    if name in _FLAGS:
        tokens = text.split()
        if len(tokens) != _FLAGS[name] or any(tok not in ("0", "1") for tok in tokens):
            raise _rejected(name, text, f"expected {_FLAGS[name]} flag(s), each 0 or 1")
        return [tok == "1" for tok in tokens]
    if name == "Tsensor":
        vals = _parse_numbers(name, text, 12)       # rows of R, then t, as Klampt prints them
        return np.vstack([np.c_[np.reshape(vals[:9], (3, 3)), vals[9:]], [0.0, 0.0, 0.0, 1.0]])
    return _parse_numbers(name, text, _NUMERIC[name][0])


def _normalise(name: str, value: Any) -> Any:
    """Typed (or Klampt string) value -> canonical stored value, range-checked; ValueError naming it."""
    if name not in SETTING_NAMES:
        raise _unknown(name)
    if isinstance(value, str) and name != "link":
        value = _parse_string(name, value)
    if name == "link":
        if not isinstance(value, str) or not value.strip():
            raise _rejected(name, value, "expected a non-empty body name")
        return value.strip()
    if name == "Tsensor":
        try:
            T = np.array(value, dtype=np.float64).reshape(4, 4)
        except (TypeError, ValueError):
            raise _rejected(name, value, "expected a 4x4 matrix or 16 row-major numbers") from None
        if not np.isfinite(T).all():
            raise _rejected(name, value, "non-finite entry")
        if not np.allclose(T[3], [0.0, 0.0, 0.0, 1.0], atol=1e-9, rtol=0):
            raise _rejected(name, value, "last row must be 0 0 0 1")
        R = T[:3, :3]
        if not np.allclose(R @ R.T, np.eye(3), atol=1e-6, rtol=0) or np.linalg.det(R) <= 0:
            raise _rejected(name, value, "rotation part is not a proper rotation (R R^T = I, det R = +1)")
        T[3] = [0.0, 0.0, 0.0, 1.0]
        return T
    if name in _FLAGS:
        flags = np.asarray(value, dtype=object).reshape(-1)
        count = _FLAGS[name]
        if flags.shape != (count,) or not all(isinstance(f, (bool, np.bool_)) or f in (0, 1) for f in flags):
            raise _rejected(name, value, f"expected {count} bool(s)")
        out = tuple(bool(f) for f in flags)
        return out if name == "hasForce" else out[0]
    count, non_negative, finite = _NUMERIC[name]
    if count == 1 and isinstance(value, bool):
        raise _rejected(name, value, "expected a number, got a bool")
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise _rejected(name, value, f"expected {count} numbers") from None
    if arr.shape != (count,):
        raise _rejected(name, value, f"expected {count} numbers, got {arr.size}")
    if np.isnan(arr).any():
        raise _rejected(name, value, "NaN")
    vals = tuple(float(v) for v in arr)
    if non_negative and any(v < 0 for v in vals):
        raise _rejected(name, value, "must be finite and >= 0" if count == 1 else "must be >= 0")
    if finite and not all(math.isfinite(v) for v in vals):
        raise _rejected(name, value, "must be finite and >= 0" if count == 1 else "must be finite")
    return vals[0] if count == 1 else vals


def _format(name: str, value: Any) -> str:
    if name == "link":
        return value
    if name == "enabled":
        return "1" if value else "0"
    if name == "hasForce":
        return "".join("1 " if f else "0 " for f in value)   # Klampt's array macro: trailing space
    if name == "Tsensor":
        return "\n".join(" ".join(map(format_klampt_float, row)) for row in (*value[:3, :3], value[:3, 3]))
    if isinstance(value, tuple):
        return " ".join(format_klampt_float(v) for v in value)
    return format_klampt_float(value)


def _defaults() -> Dict[str, Any]:
    # Klampt's ContactSensor() constructor plus SensorBase (rate 0, enabled).
    return {"link": "", "Tsensor": np.eye(4), "patchMin": (0.0, 0.0), "patchMax": (0.0, 0.0),
            "patchTolerance": 0.001, "hasForce": (False, False, False),
            "fResolution": (0.0, 0.0, 0.0), "fVariance": (0.0, 0.0, 0.0), "fSensitivity": 0.0,
            "fSaturation": (math.inf, math.inf, math.inf), "falloffCoefficient": 0.0,
            "enabled": True, "rate": 0.0}


def _setting_property(name: str, doc: str) -> property:
    def fget(self: "ContactSensor") -> Any:
        v = self._cfg[name]
        return v.copy() if isinstance(v, np.ndarray) else v

    def fset(self: "ContactSensor", value: Any) -> None:
        self.configure(**{name: value})

    return property(fget, fset, doc=doc)


class ContactSensor(IndicatorTareMixin):
    """Klampt ``ContactSensor``: a tactile patch on a link (seed: Klampt 0.10; docs/python_api.md).
    ``ContactSensor(name, link, **settings)``; every setting is also a typed property (units in its doc),
    validated on assignment: a rejected value raises ``ValueError`` naming it and changes nothing."""

    type_name = "ContactSensor"

    link = _setting_property("link", "Body (link) name; same as attachModelName.")
    Tsensor = _setting_property("Tsensor", "Sensor frame in the link frame, 4x4 float64.")
    patchMin = _setting_property("patchMin", "Lower patch corner (x, y) in the sensor frame, m.")
    patchMax = _setting_property("patchMax", "Upper patch corner (x, y) in the sensor frame, m.")
    patchTolerance = _setting_property("patchTolerance", "Accepted |z| in the sensor frame, m.")
    hasForce = _setting_property("hasForce", "Reported force axes (x, y, z).")
    fResolution = _setting_property("fResolution", "Quantisation step per axis, N (0 = none).")
    fVariance = _setting_property("fVariance", "Noise variance per axis, N^2.")
    fSensitivity = _setting_property("fSensitivity", "Minimum |F_z| for contact, N.")
    fSaturation = _setting_property("fSaturation", "Per-axis clamp, N (inf = none).")
    falloffCoefficient = _setting_property("falloffCoefficient", "Edge falloff exponent (0 = rigid).")
    enabled = _setting_property("enabled", "Whether the node should publish this sensor.")
    rate = _setting_property("rate", "Publishing rate hint, Hz (0 = every step).")

    def __init__(self, name: str = "", link: str = "", **settings: Any) -> None:
        self._cfg: Dict[str, Any] = _defaults()
        self._init_tare()
        super().__init__(name)
        if link:
            settings = {"link": link, **settings}
        self.configure(**settings)

    @property  # type: ignore[override]
    def attachModelName(self) -> str:
        """The link name (Klampt's ``link`` setting, by name)."""
        return self._cfg["link"]

    @attachModelName.setter
    def attachModelName(self, value: str) -> None:
        if value != self._cfg["link"]:           # (the base class sets "" first)
            self.configure(link=value)

    # -- settings --------------------------------------------------------------
    def configure(self, **settings: Any) -> None:
        """Set several typed settings at once, all validated first; ValueError (nothing changes): unknown
        name, malformed or out-of-range value, ``patchMin > patchMax``."""
        new = dict(self._cfg)
        for key, value in settings.items():
            new[key] = _normalise(key, value)
        for a in range(2):
            if new["patchMin"][a] > new["patchMax"][a]:
                key = "patchMin" if "patchMin" in settings else "patchMax"
                raise _rejected(key, settings.get(key, new[key]), f"patchMin {new['patchMin']} exceeds "
                                f"patchMax {new['patchMax']} on axis {'xy'[a]}")
        if self._calib and new["hasForce"] != self._cfg["hasForce"]:
            # the calibration's entries follow the old measurement layout
            self.set_calibration({})
        self._cfg = new

    def settings(self) -> Dict[str, str]:
        """All settings as Klampt-formatted strings (seed ``Settings()``)."""
        return {k: _format(k, self._cfg[k]) for k in SETTING_NAMES}

    def getSetting(self, name: str) -> str:
        """One setting as a Klampt-formatted string (seed ``GetSetting``); ValueError for an unknown name."""
        if name not in SETTING_NAMES:
            raise _unknown(name)
        return _format(name, self._cfg[name])

    def setSetting(self, name: str, value: str) -> None:
        """Set one setting from a Klampt-formatted string (seed ``SetSetting``); ValueError (nothing changes)
        naming setting and string: unknown name, token count, a token not an ASCII number (0/1 for flags),
        NaN or out of range."""
        if name not in SETTING_NAMES:
            raise _unknown(name)
        if not isinstance(value, str):
            raise _rejected(name, value, "setSetting takes a string")
        try:
            self.configure(**{name: value})
        except SettingError as err:          # one message, naming the string that was given
            raise _rejected(name, value, err.reason) from None

    @classmethod
    def from_config(cls, name: str, config: Dict[str, Any]) -> "ContactSensor":
        """Build from ``attachment`` (or ``link``), optional ``type``, any setting (typed or a Klampt string);
        SettingError naming the key."""
        att = check_config_keys(cls.type_name, cls.type_name, name, config, SETTING_NAMES,
                                needs_attachment=False)
        link = config.get("link")
        if att is not None and link is not None and att != link:
            raise SettingError(f"ContactSensor {name!r}: 'attachment' {att!r} and 'link' {link!r} disagree",
                               "link", link)
        body = att if att is not None else link
        if body is None:
            raise SettingError(f"ContactSensor {name!r}: config needs 'attachment' (the link name)",
                               "attachment", None)
        settings = {k: v for k, v in config.items() if k in SETTING_NAMES and k != "link"}
        return cls(name, body, **settings)

    def attach(self, model: Any) -> None:
        """Attach to a link model: takes its ``getName()``.  Nothing changes on InputError (``'model'``,
        ``'no_getName'``) or SettingError (a name that is not a non-empty string)."""
        get = getattr(model, "getName", None)
        if not callable(get):
            raise InputError(f"ContactSensor {self.name!r}: attach() needs a link model with getName() "
                             f"(e.g. a Klampt RobotModelLink), got {type(model).__name__} {model!r}",
                             "model", model, "no_getName")
        self.configure(link=get())

    # -- measurement contract -----------------------------------------------------
    def _axes(self) -> List[int]:
        return [k for k in range(3) if self._cfg["hasForce"][k]]

    def reading_frame(self) -> np.ndarray:
        """``Tsensor`` as a ``(4, 4)`` float64 sensor -> link transform: the pad's values are in it."""
        return np.array(self.Tsensor, dtype=np.float64).reshape(4, 4)

    def measurement_names(self) -> List[str]:
        """``['contact']`` plus ``force_x/force_y/force_z`` for each ``hasForce`` axis (as Klampt)."""
        return ["contact"] + [_AXES[k] for k in self._axes()]

    def measurement_errors(self) -> List[float]:
        """Standard deviation per entry: 0 for ``contact``, ``sqrt(fVariance_k)`` per force axis (N)."""
        return [0.0] + [math.sqrt(self._cfg["fVariance"][k]) for k in self._axes()]

    def sensor_transform(self, state: SimState) -> torch.Tensor:
        """Sensor frame -> world, ``(4, 4)`` of the state's dtype/device (``T_link · Tsensor``); ValueError as
        :func:`.base_sensor.rigid_transform`."""
        rigid_transform(state, self.link)
        T_link = state.body_transforms[self.link]
        return T_link @ torch.as_tensor(self._cfg["Tsensor"], dtype=T_link.dtype, device=T_link.device)

    def sample_noise(self, generator: torch.Generator, dtype: torch.dtype = torch.float64,
                     device: Optional[torch.device] = None) -> torch.Tensor:
        """One draw ``n ~ N(0, diag(fVariance))``, ``(3,)``, sensor frame, N, from seeded ``generator``."""
        std = torch.tensor(self._cfg["fVariance"], dtype=dtype, device=device).sqrt()
        return torch.randn(3, generator=generator, dtype=dtype, device=device) * std

    def _weighted(self, state: SimState, inside_only: bool = False
                  ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-contact weights (N,) (or the bool ``inside`` mask when ``inside_only``), sensor-frame
        forces (N, 3) and R_world_sensor (3, 3).
        """
        cfg = self._cfg
        pts, frc = state.contacts_on_body(self.link, local=True)
        Ts = torch.as_tensor(cfg["Tsensor"], dtype=pts.dtype, device=pts.device)
        Rs, ts = Ts[:3, :3], Ts[:3, 3]
        # row vectors: x_s = R_s^T (x_l - t_s)  ->  (x_l - t_s) @ R_s
        ps = (pts - ts) @ Rs
        fs = frc @ Rs
        x, y, z = ps[:, 0], ps[:, 1], ps[:, 2]
        (x0, y0), (x1, y1) = cfg["patchMin"], cfg["patchMax"]
        inside = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1) & (z.abs() <= cfg["patchTolerance"])
        R_link = state.body_transforms[self.link][:3, :3].to(pts.dtype)
        if inside_only:
            return inside, fs, R_link @ Rs
        w = inside.to(pts.dtype)
        area = (x1 - x0) * (y1 - y0)
        if cfg["falloffCoefficient"] > 0 and area > 0:
            base = 1.0 - 4.0 * (x - 0.5 * (x0 + x1)).abs() * (y - 0.5 * (y0 + y1)).abs() / area
            # clamp: rounding may dip below 0 at a corner; outside points are masked anyway
            w = w * base.clamp(min=0.0) ** cfg["falloffCoefficient"]
        return w.detach(), fs, R_link @ Rs

    def _process(self, F: torch.Tensor, noise: Optional[torch.Tensor]
                 ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Weighted force (3,) -> (contact flag, processed force (3,), not-clamped mask (3,))."""
        cfg = self._cfg
        dtype, device = F.dtype, F.device
        contact = (F[2].detach().abs() > cfg["fSensitivity"]).to(dtype)
        Fn = F if noise is None else F + noise
        res = torch.tensor(cfg["fResolution"], dtype=dtype, device=device)
        step = torch.where(res > 0, res, torch.ones_like(res))
        q = torch.where(res > 0, torch.sign(Fn) * torch.floor(Fn.abs() / step + 0.5) * step, Fn)
        Fq = Fn + (q - Fn).detach()            # straight-through quantisation
        sat = torch.tensor(cfg["fSaturation"], dtype=dtype, device=device)
        free = Fq.detach().abs() <= sat
        clamp_val = torch.sign(Fq.detach()) * torch.where(torch.isfinite(sat), sat, torch.zeros_like(sat))
        out = torch.where(free, Fq, clamp_val)
        return contact, out, free

    def predict_torch(self, state: SimState, noise: bool = False,
                      generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """Differentiable reading; ``noise`` adds ``N(0, fVariance)`` before quantisation (Klampt's
        order) from a seeded ``generator``.  ValueError: bad link, contacts' dtype, no generator."""
        self._check_state(state)
        w, fs, _ = self._weighted(state)
        F = (w[:, None] * fs).sum(dim=0)
        n = None
        if noise:
            if generator is None:
                raise ValueError(f"ContactSensor {self.name!r}: noise=True needs a seeded torch.Generator "
                                 "(generator=...)")
            if generator.device.type != state.device.type:
                raise ValueError(f"ContactSensor {self.name!r}: generator is on {generator.device}, "
                                 f"state on {state.device}")
            n = self.sample_noise(generator, F.dtype, F.device)
        contact, out, _ = self._process(F, n)
        reading = torch.cat([contact.reshape(1), out[self._axes()]])
        offset = self._offset(reading.dtype, reading.device)
        return reading if offset is None else reading + offset

    def predict(self, state: SimState, noise: bool = False,
                generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """``predict_torch`` without gradient tracking (same arguments and errors)."""
        with torch.no_grad():
            return self.predict_torch(state, noise=noise, generator=generator)

    def in_contact(self, state: SimState) -> bool:
        """True when a contact of the link lies inside the patch (inclusive), whatever its force."""
        self._check_state(state)
        inside, _, _ = self._weighted(state, inside_only=True)
        return bool(inside.any())

    def _jacobian_all(self, state: SimState) -> Tuple[torch.Tensor, List[Pair], List[int]]:
        """Dense ``(#meas, N, 3)`` over all contacts of the link's pairs, with pairs and offsets."""
        pairs = self._check_state(state)
        with torch.no_grad():
            w, fs, R_ws = self._weighted(state)
            F = (w[:, None] * fs).sum(dim=0)
            _, _, free = self._process(F, None)
            axes = self._axes()
            # d f_s[k] / d f_world = R_ws[:, k]; scaled by the contact weight and the clamp gate
            gate = free.to(F.dtype)[axes]                                  # (A,)
            J_force = gate[:, None, None] * w[None, :, None] * R_ws.T[axes][:, None, :]
            J = torch.cat([torch.zeros(1, len(w), 3, dtype=F.dtype, device=F.device), J_force])
        return J, pairs, self._pairs_offsets(state, pairs)
