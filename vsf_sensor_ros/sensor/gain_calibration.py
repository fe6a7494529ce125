"""Gain calibration on top of a tare: a real Punyo's pressure rises less than the seed's ``F·n / A`` (the
membrane carries part of the load); :class:`GainCalibrator` fits that gain (docs/real_data.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ._punyo_common import as_vector
from .base_calibrator import BaseCalibrator
from .base_sensor import BaseSensor
from .base_sensor import SimState
from .errors import InputError, SettingError

__all__ = ["GainCalibrator", "GainFit"]


@dataclass
class GainFit:
    """Result of the last :meth:`GainCalibrator.fit`: ``gain`` ``(#meas,)`` float64 (written to the
    calibration), ``samples`` used, ``relative_std_error`` ``(#meas,)`` (NaN where kept), ``fitted``
    ``(#meas,)`` bool, ``rms_before`` / ``rms_after`` of measured − predicted change (gain 1 / fitted)."""

    gain: np.ndarray
    samples: int
    relative_std_error: np.ndarray
    fitted: np.ndarray
    rms_before: float
    rms_after: float
    extra: Dict[str, Any] = field(default_factory=dict)


class GainCalibrator(BaseCalibrator):
    """Least-squares gain on the contact-driven change of a reading, on top of its tare, into
    ``calibration['gain']``: per entry ``y = offset + k x``, ``k = Σ x (y − offset) / Σ x²`` over contact
    samples (one gain, or each excited entry with ``per_measurement``)."""

    def __init__(self, min_samples: int = 10, min_excitation: float = 1e-9,
                 max_relative_error: float = 0.2, per_measurement: bool = False) -> None:
        """SettingError (``setting`` the argument, ``reason`` ``'invalid'``): ``min_samples < 2``, a
        negative/non-finite ``min_excitation``, a non-positive ``max_relative_error``."""
        if isinstance(min_samples, bool) or not isinstance(min_samples, (int, np.integer)) or min_samples < 2:
            raise SettingError(f"GainCalibrator: min_samples must be an integer >= 2, got {min_samples!r}",
                               "min_samples", min_samples, "invalid", 2)
        if not (isinstance(min_excitation, (int, float)) and math.isfinite(min_excitation)
                and min_excitation >= 0):
            raise SettingError(f"GainCalibrator: min_excitation must be finite and >= 0, "
                               f"got {min_excitation!r}", "min_excitation", min_excitation, "invalid")
        if not (isinstance(max_relative_error, (int, float)) and max_relative_error > 0):
            raise SettingError(f"GainCalibrator: max_relative_error must be > 0, got {max_relative_error!r}",
                               "max_relative_error", max_relative_error, "invalid")
        self.min_samples = int(min_samples)
        self.min_excitation = float(min_excitation)
        self.max_relative_error = float(max_relative_error)
        self.per_measurement = bool(per_measurement)
        self.last_fit: Optional[GainFit] = None

    def compatible(self, sensor: BaseSensor) -> bool:
        """True for sensors that apply a ``'gain'`` calibration entry (``supports_gain``)."""
        return bool(getattr(sensor, "supports_gain", False))

    def calibrate(self, sensor: BaseSensor, sim: Any, command_sequence: Sequence[Any],
                  observation_sequence: Sequence[Mapping[str, Any]]) -> int:
        """Seed-style entry: step ``sim`` per command (``dt`` = 0.1 s), collect states, then :meth:`fit`.

        Raises:
            ValueError: fewer commands than observations, or as :meth:`fit`.
        """
        n = len(observation_sequence)
        if len(command_sequence) < n:
            raise ValueError(f"GainCalibrator: {n} observations need {n} commands, "
                             f"got {len(command_sequence)}")
        states: List[SimState] = []
        for i in range(n):
            sim.step(command_sequence[i], dt=0.1)
            states.append(sim.state())
        return self.fit(sensor, states, observation_sequence)

    def fit(self, sensor: BaseSensor, states: Sequence[SimState],
            observation_sequence: Sequence[Any]) -> int:
        """Fit and set the gain from states and observations (``{name: obs}`` or ``(#meas,)``); the contact
        samples used.  Unchanged on error: InputError (``'too_few_contacts'``); ValueError: incompatible,
        mismatch, bad observation, nothing excited, gain <= 0, relative error too large."""
        if not self.compatible(sensor):
            raise ValueError(f"GainCalibrator: sensor {sensor.name!r} ({type(sensor).__name__}) does not "
                             "apply a 'gain' calibration entry")
        if len(states) != len(observation_sequence):
            raise ValueError(f"GainCalibrator: {len(states)} states but {len(observation_sequence)} "
                             "observations")
        n_meas = len(sensor.measurement_names())
        if n_meas == 0:
            raise ValueError(f"sensor {sensor.name!r} reports no measurements (attach it first)")
        contact = [i for i, st in enumerate(states) if sensor.in_contact(st)]
        if len(contact) < self.min_samples:
            raise InputError(f"GainCalibrator: sensor {sensor.name!r} has {len(contact)} contact samples "
                             f"of {len(states)}; at least {self.min_samples} are needed", "states",
                             len(contact), "too_few_contacts", self.min_samples)
        ys = []
        for i in contact:
            obs = observation_sequence[i]
            if isinstance(obs, Mapping):
                if sensor.name not in obs:
                    raise ValueError(f"observation {i} has no entry for sensor {sensor.name!r}; "
                                     f"keys: {sorted(map(str, obs))}")
                obs = obs[sensor.name]
            ys.append(as_vector(obs, f"observation {i} of sensor {sensor.name!r}", n_meas))
        previous = sensor.get_calibration()
        base = {k: v for k, v in previous.items() if k != "gain"}
        prev_gain = np.asarray(previous.get("gain", np.ones(n_meas)), dtype=np.float64)
        try:
            sensor.set_calibration(base)
            with_offset = np.stack([_vec(sensor.predict(states[i])) for i in contact])
            sensor.set_calibration({})
            raw = np.stack([_vec(sensor.predict(states[i])) for i in contact])
        finally:
            sensor.set_calibration(previous)
        x = raw
        y = np.stack(ys) - (with_offset - raw)
        fit = self._solve(sensor.name, x, y, prev_gain)
        sensor.set_calibration({**base, "gain": fit.gain})
        self.last_fit = fit
        return fit.samples

    def _solve(self, name: str, x: np.ndarray, y: np.ndarray, prev_gain: np.ndarray) -> GainFit:
        n, m = x.shape
        excitation = np.sqrt((x ** 2).mean(axis=0))
        if self.per_measurement:
            fitted = excitation > self.min_excitation
            sxx, sxy = (x ** 2).sum(axis=0), (x * y).sum(axis=0)
            dof = n - 1
        else:
            total = float(np.sqrt((x ** 2).mean()))
            fitted = np.full(m, total > self.min_excitation)
            sxx = np.full(m, (x ** 2).sum())
            sxy = np.full(m, (x * y).sum())
            dof = n * m - 1
        if not fitted.any():
            raise ValueError(f"GainCalibrator: sensor {name!r}: the predicted change is below "
                             f"min_excitation={self.min_excitation:g} over all {n} contact samples "
                             f"(largest RMS {excitation.max():.3g}); nothing to fit")
        gain = prev_gain.copy()
        gain[fitted] = sxy[fitted] / sxx[fitted]
        bad = fitted & ~(np.isfinite(gain) & (gain > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"GainCalibrator: sensor {name!r}: fitted gain {gain[i]:.4g} for entry {i} "
                             "is not positive: the measured change does not follow the predicted one")
        r = y - x * gain
        if self.per_measurement:
            ssr = (r ** 2).sum(axis=0)
        else:
            ssr = np.full(m, (r[:, fitted] ** 2).sum())
        rel = np.full(m, np.nan)
        rel[fitted] = np.sqrt(ssr[fitted] / max(dof, 1) / sxx[fitted]) / gain[fitted]
        worst = float(np.nanmax(rel))
        if worst > self.max_relative_error:
            raise ValueError(f"GainCalibrator: sensor {name!r}: ill-conditioned fit over {n} contact "
                             f"samples, relative standard error of the gain {worst:.3g} > max_relative_error="
                             f"{self.max_relative_error:g}")
        rms_before = float(np.sqrt(((y - x)[:, fitted] ** 2).mean()))
        rms_after = float(np.sqrt((r[:, fitted] ** 2).mean()))
        return GainFit(gain=gain, samples=n, relative_std_error=rel, fitted=fitted,
                       rms_before=rms_before, rms_after=rms_after)


def _vec(t: Any) -> np.ndarray:
    """A prediction tensor as a float64 numpy vector."""
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, dtype=np.float64).reshape(-1)
