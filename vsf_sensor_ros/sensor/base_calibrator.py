"""The calibrator contract, the tare against a contact-free simulation (seed: ``base_calibrator``) and the
gain on top of it (a real Punyo's pressure rises less than the seed's ``F·n / A``; docs/real_data.md)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from ._punyo_common import as_vector
from .base_sensor import BaseSensor, SimState, as_sim_state
from .errors import InputError, SettingError

__all__ = ["BaseCalibrator", "GainCalibrator", "GainFit", "TareCalibrator", "TareSimulator"]


class BaseCalibrator:
    """Calibrates a sensor from a data sequence (seed ``BaseCalibrator``)."""

    def compatible(self, sensor: BaseSensor) -> bool:
        """True when this calibrator can calibrate ``sensor``."""
        raise NotImplementedError

    def calibrate(self, sensor: BaseSensor, sim: Any,
                  command_sequence: List[Dict[str, Any]],
                  observation_sequence: List[Dict[str, Any]]) -> int:
        """Calibrate ``sensor`` via ``sensor.set_calibration``; return samples used."""
        raise NotImplementedError


@runtime_checkable
class TareSimulator(Protocol):
    """What :meth:`TareCalibrator.calibrate` needs of a simulator (the seed's ``QuasistaticVSFSimulator``);
    ``measurements()`` come from the same sensor object being calibrated."""

    def step(self, command: Any, dt: float) -> Any:
        """Advance the simulation by one step under ``command``."""

    def state(self) -> SimState:
        """Current simulation state."""

    def measurements(self) -> Mapping[str, Any]:
        """Predicted measurement of every sensor for the current state."""


class TareCalibrator(BaseCalibrator):
    """Mean of the first contact-free observations and simulated readings (seed): one step a sample, up to
    the first with contact, into ``{output_key, 'tare_sim_avg'}``.  Beyond the seed: the old calibration
    is cleared (``'gain'`` kept) and restored on error."""

    #: the calibration key every sensor here reads its tare from
    OUTPUT_KEYS = ("tare",)

    def __init__(self, num_samples: int = 10, output_key: str = "tare") -> None:
        """SettingError (``setting`` the argument, ``reason`` ``'invalid'``, ``expected`` the accepted values
        where few): a negative/non-integer ``num_samples``, ``output_key`` not in ``OUTPUT_KEYS``."""
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 0:
            raise SettingError(f"TareCalibrator: num_samples must be an integer >= 0, got {num_samples!r}",
                               "num_samples", num_samples, "invalid")
        if output_key not in self.OUTPUT_KEYS:
            raise SettingError(f"TareCalibrator: output_key must be the calibration key the sensors read "
                               f"({', '.join(map(repr, self.OUTPUT_KEYS))}), got {output_key!r}",
                               "output_key", output_key, "invalid", self.OUTPUT_KEYS)
        self.num_samples: int = int(num_samples)
        self.output_key: str = output_key

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "TareCalibrator":
        """Build from ``{'type', 'num_samples', 'output_key'}`` (all optional); SettingError: unknown keys
        (``setting`` the first, ``reason`` ``'unknown_key'``), bad values."""
        allowed = {"type", "num_samples", "output_key"}
        unknown = sorted(str(k) for k in config if k not in allowed)
        if unknown:
            raise SettingError(f"TareCalibrator: unknown config key(s) {', '.join(map(repr, unknown))}; "
                               f"allowed: {', '.join(sorted(allowed))}", unknown[0], config[unknown[0]],
                               "unknown_key", sorted(allowed))
        if config.get("type", "TareCalibrator") != "TareCalibrator":
            raise SettingError(f"TareCalibrator: config 'type' is {config['type']!r}", "type", config["type"],
                               "wrong_type", "TareCalibrator")
        return cls(config.get("num_samples", 10), config.get("output_key", "tare"))

    def compatible(self, sensor: BaseSensor) -> bool:
        """Every sensor can be tared (as the seed)."""
        return True

    def calibrate(self, sensor: BaseSensor, sim: TareSimulator,
                  command_sequence: Sequence[Any],
                  observation_sequence: Sequence[Mapping[str, Any]]) -> int:
        """Tare ``sensor`` from the first contact-free samples (``{name: observation}``, a command each); the
        number used.  Calibration kept on error: InputError (missing, bad observation or simulated
        measurement, too few commands); ValueError: a refused calibration."""
        nsamples = min(self.num_samples, len(observation_sequence))
        if nsamples == 0:
            return 0
        n_meas = len(sensor.measurement_names())
        if n_meas == 0:
            raise ValueError(f"sensor {sensor.name!r} reports no measurements (attach it first)")
        if len(command_sequence) < nsamples:
            raise InputError(f"TareCalibrator: {nsamples} samples need {nsamples} commands, "
                             f"got {len(command_sequence)}", "command_sequence", len(command_sequence),
                             "too_short", nsamples)
        # validated before touching anything
        observations = [_observation(sensor, observation_sequence[i], i, n_meas) for i in range(nsamples)]
        previous: Dict[str, Any] = sensor.get_calibration()
        sensor.set_calibration({})
        try:
            used = nsamples
            obs_sum = np.zeros(n_meas)
            sim_sum = np.zeros(n_meas)
            for i in range(nsamples):                  # one simulator step per sample, as the seed
                sim.step(command_sequence[i], dt=0.1)
                if any(len(c) > 0 for c in as_sim_state(sim.state()).contacts.values()):   # any pair
                    if i == 0:
                        warnings.warn(f"TareCalibrator: contact at the first sample while taring sensor "
                                      f"{sensor.name!r}; using it anyway, check the command sequence",
                                      stacklevel=2)
                    else:
                        used = i
                        break
                obs_sum += observations[i]
                sim_sum += _observation(sensor, sim.measurements(), i, n_meas, "simulated measurement", "sim")
            kept = {k: previous[k] for k in ("gain",) if k in previous}    # a GainCalibrator result
            sensor.set_calibration({**kept, self.output_key: obs_sum / used, "tare_sim_avg": sim_sum / used})
        except BaseException:
            sensor.set_calibration(previous)
            raise
        return used


def _observation(sensor: BaseSensor, obs: Any, i: int, n_meas: int, what: str = "observation",
                 argument: str = "observation_sequence") -> np.ndarray:
    """``what`` ``i`` of ``sensor`` (``{name: obs}`` or ``(#meas,)``) as a float64 vector; InputError: no
    entry for the sensor (``argument``, ``'missing_sensor'``, ``value`` the keys) or as ``as_vector``."""
    if isinstance(obs, Mapping):
        if sensor.name not in obs:
            keys = sorted(map(str, obs))
            raise InputError(f"{what} {i} has no entry for sensor {sensor.name!r}; keys: {keys}", argument,
                             keys, "missing_sensor", sensor.name)
        obs = obs[sensor.name]
    return as_vector(obs, f"{what} {i} of sensor {sensor.name!r}", n_meas)


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


class GainCalibrator(BaseCalibrator):
    """Least-squares gain on the contact-driven change of a reading, on top of its tare, into
    ``calibration['gain']``: per entry ``y = offset + k x``, ``k = Σ x (y − offset) / Σ x²`` over contact
    samples (one gain, or each excited entry with ``per_measurement``)."""

    #: an entry whose predicted change has an RMS at or below this is not excited (sensor units)
    min_excitation = 1e-9

    def __init__(self, min_samples: int = 10, max_relative_error: float = 0.2,
                 per_measurement: bool = False) -> None:
        """SettingError (``setting`` the argument, ``reason`` ``'invalid'``): ``min_samples < 2``, a
        non-positive ``max_relative_error``."""
        if isinstance(min_samples, bool) or not isinstance(min_samples, (int, np.integer)) or min_samples < 2:
            raise SettingError(f"GainCalibrator: min_samples must be an integer >= 2, got {min_samples!r}",
                               "min_samples", min_samples, "invalid", 2)
        if not (isinstance(max_relative_error, (int, float)) and max_relative_error > 0):
            raise SettingError(f"GainCalibrator: max_relative_error must be > 0, got {max_relative_error!r}",
                               "max_relative_error", max_relative_error, "invalid")
        self.min_samples = int(min_samples)
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
        ys = [_observation(sensor, observation_sequence[i], i, n_meas) for i in contact]
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
        fit = self._solve(sensor.name, raw, np.stack(ys) - (with_offset - raw), prev_gain)
        sensor.set_calibration({**base, "gain": fit.gain})
        self.last_fit = fit
        return fit.samples

    def _solve(self, name: str, x: np.ndarray, y: np.ndarray, prev_gain: np.ndarray) -> GainFit:
        n, m = x.shape
        excitation = np.sqrt((x ** 2).mean(axis=0))
        if self.per_measurement:
            fitted = excitation > self.min_excitation
            sxx, sxy, dof = (x ** 2).sum(axis=0), (x * y).sum(axis=0), n - 1
        else:           # one gain: every entry shares the sums
            fitted = np.full(m, float(np.sqrt((x ** 2).mean())) > self.min_excitation)
            sxx, sxy, dof = np.full(m, (x ** 2).sum()), np.full(m, (x * y).sum()), n * m - 1
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
        ssr = (r ** 2).sum(axis=0) if self.per_measurement else np.full(m, (r[:, fitted] ** 2).sum())
        rel = np.full(m, np.nan)
        rel[fitted] = np.sqrt(ssr[fitted] / max(dof, 1) / sxx[fitted]) / gain[fitted]
        worst = float(np.nanmax(rel))
        if worst > self.max_relative_error:
            raise ValueError(f"GainCalibrator: sensor {name!r}: ill-conditioned fit over {n} contact "
                             f"samples, relative standard error of the gain {worst:.3g} > max_relative_error="
                             f"{self.max_relative_error:g}")
        return GainFit(gain, n, rel, fitted, rms_before=float(np.sqrt(((y - x)[:, fitted] ** 2).mean())),
                       rms_after=float(np.sqrt((r[:, fitted] ** 2).mean())))


def _vec(t: Any) -> np.ndarray:
    """A prediction tensor as a float64 numpy vector."""
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, dtype=np.float64).reshape(-1)
