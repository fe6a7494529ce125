"""The calibrator contract and the tare against a contact-free simulation (seed: ``base_calibrator``)."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ._punyo_common import as_vector
from .base_sensor import BaseSensor, SimState, as_sim_state
from .errors import InputError, SettingError

__all__ = ["BaseCalibrator", "TareCalibrator", "TareSimulator"]


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
    is cleared (``'gain'`` kept) and restored on error; ``contact_scope='sensor'`` stops on
    ``sensor.in_contact`` only."""

    CONTACT_SCOPES = ("any", "sensor")
    #: the calibration key every sensor here reads its tare from
    OUTPUT_KEYS = ("tare",)

    def __init__(self, num_samples: int = 10, output_key: str = "tare", contact_scope: str = "any") -> None:
        """SettingError (``setting`` the argument, ``reason`` ``'invalid'``, ``expected`` the accepted values
        where few): a negative/non-integer ``num_samples``, ``output_key`` not in ``OUTPUT_KEYS``, a
        ``contact_scope`` not in ``CONTACT_SCOPES``."""
        if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 0:
            raise SettingError(f"TareCalibrator: num_samples must be an integer >= 0, got {num_samples!r}",
                               "num_samples", num_samples, "invalid")
        if output_key not in self.OUTPUT_KEYS:
            raise SettingError(f"TareCalibrator: output_key must be the calibration key the sensors read "
                               f"({', '.join(map(repr, self.OUTPUT_KEYS))}), got {output_key!r}",
                               "output_key", output_key, "invalid", self.OUTPUT_KEYS)
        if contact_scope not in self.CONTACT_SCOPES:
            raise SettingError(f"TareCalibrator: contact_scope must be 'any' or 'sensor', "
                               f"got {contact_scope!r}", "contact_scope", contact_scope, "invalid",
                               self.CONTACT_SCOPES)
        self.num_samples: int = int(num_samples)
        self.output_key: str = output_key
        self.contact_scope: str = contact_scope

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "TareCalibrator":
        """Build from ``{'type', 'num_samples', 'output_key', 'contact_scope'}`` (all optional); SettingError:
        unknown keys (``setting`` the first, ``reason`` ``'unknown_key'``), bad values."""
        allowed = {"type", "num_samples", "output_key", "contact_scope"}
        unknown = sorted(str(k) for k in config if k not in allowed)
        if unknown:
            raise SettingError(f"TareCalibrator: unknown config key(s) {', '.join(map(repr, unknown))}; "
                               f"allowed: {', '.join(sorted(allowed))}", unknown[0], config[unknown[0]],
                               "unknown_key", sorted(allowed))
        if config.get("type", "TareCalibrator") != "TareCalibrator":
            raise SettingError(f"TareCalibrator: config 'type' is {config['type']!r}", "type", config["type"],
                               "wrong_type", "TareCalibrator")
        return cls(config.get("num_samples", 10), config.get("output_key", "tare"),
                   config.get("contact_scope", "any"))

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
        observations: List[np.ndarray] = []
        for i in range(nsamples):                      # validate before touching anything
            obs = observation_sequence[i]
            if sensor.name not in obs:
                raise InputError(f"observation {i} has no entry for sensor {sensor.name!r}; "
                                 f"keys: {sorted(obs)}", "observation_sequence", sorted(obs),
                                 "missing_sensor", sensor.name)
            observations.append(as_vector(obs[sensor.name], f"observation {i} of sensor {sensor.name!r}",
                                          n_meas))
        previous: Dict[str, Any] = sensor.get_calibration()
        sensor.set_calibration({})
        try:
            used = nsamples
            obs_sum = np.zeros(n_meas)
            sim_sum = np.zeros(n_meas)
            for i in range(nsamples):                  # one simulator step per sample, as the seed
                sim.step(command_sequence[i], dt=0.1)
                st = sim.state()
                if sensor.in_contact(st) if self.contact_scope == "sensor" else _has_contact(st):
                    if i == 0:
                        warnings.warn(f"TareCalibrator: contact at the first sample while taring sensor "
                                      f"{sensor.name!r}; using it anyway, check the command sequence",
                                      stacklevel=2)
                    else:
                        used = i
                        break
                obs_sum += observations[i]
                measured = sim.measurements()
                if sensor.name not in measured:
                    raise InputError(f"TareCalibrator: the simulator's measurements at sample {i} have no "
                                     f"entry for sensor {sensor.name!r}; keys: {sorted(map(str, measured))}",
                                     "sim", sorted(map(str, measured)), "missing_sensor", sensor.name)
                sim_sum += as_vector(measured[sensor.name],
                                     f"simulated measurement {i} of sensor {sensor.name!r}", n_meas)
            kept = {k: previous[k] for k in ("gain",) if k in previous}    # a GainCalibrator result
            sensor.set_calibration({**kept, self.output_key: obs_sum / used, "tare_sim_avg": sim_sum / used})
        except BaseException:
            sensor.set_calibration(previous)
            raise
        return used


def _has_contact(state: SimState) -> bool:
    """True when any pair of the state holds at least one contact."""
    return any(len(c) > 0 for c in as_sim_state(state).contacts.values())
