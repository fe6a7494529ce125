"""Tare from recorded contact-free samples through the library's ``TareCalibrator``.

The node pairs every measured message with the prediction of the same stamp
(:mod:`vsf_sensor_ros.ros.sensor_node`).  A tare then needs a simulator for
``TareCalibrator.calibrate(sensor, sim, commands, observations)``; here the
"simulator" is :class:`ReplaySimulator`, which replays the recorded
``SimState`` of each paired sample: ``step(command)`` selects sample
``command`` (an index), ``state()`` returns its ``SimState`` and
``measurements()`` the sensor's prediction for it.  The calibrator does the
arithmetic (average observation, average contact-free simulation); this
module only chooses the samples and formats the answer.

Which samples: the **most recent run of consecutive contact-free pairs**
(``not sensor.in_contact(state)`` for the paired ``SimState``: nothing
touches what the sensor senses -- its body, or its Klampt patch / Isaac
radius, so a load sensor on a box resting on a table is contact-free while
nothing presses its top), its last ``N``
samples (``N`` = ``tare_samples``), oldest first.  "Most recent" because a
tare is asked for *now*: an operator lifts the gripper off the object and
calls ``tare``, and readings from before a contact may belong to another
temperature or membrane inflation.  Fewer than ``N`` samples in that run are
used as they are, and the answer says how many.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..sensor.base_sensor import BaseSensor
from ..sensor.base_sensor import SimState


@dataclass
class PairedSample:
    """A measured message paired with the prediction of the same stamp.

    Attributes:
        stamp_ns: stamp of the contacts message (ns).
        measured: ``(#meas,)`` float64 measured vector in SI (NaN = not carried by the message).
        state: the ``SimState`` the prediction came from.
        contact_free: ``not sensor.in_contact(state)`` (see the module docstring).
    """

    stamp_ns: int
    measured: np.ndarray
    state: SimState
    contact_free: bool


class ReplaySimulator:
    """The minimal simulator ``TareCalibrator`` drives, replaying recorded states.

    Args:
        sensor: the sensor being calibrated (its ``predict`` gives ``measurements()``).
        states: recorded ``SimState`` per sample.
    """

    def __init__(self, sensor: BaseSensor, states: Sequence[SimState]) -> None:
        self._sensor = sensor
        self._states = list(states)
        self._i = 0

    def step(self, command: Any, dt: float = 0.1) -> None:
        """Advance to sample ``command`` (an int index, or a dict with key ``'sample'``)."""
        idx = command["sample"] if isinstance(command, dict) else command
        self._i = int(idx)

    def state(self) -> SimState:
        """The recorded ``SimState`` of the current sample (all its contacts).

        The node tares with ``TareCalibrator(contact_scope='sensor')``, which
        asks ``sensor.in_contact(state)`` -- the same test the node used to
        choose the samples -- instead of stopping at any contact in the world.
        """
        return self._states[self._i]

    def measurements(self) -> Dict[str, np.ndarray]:
        """``{sensor.name: prediction}`` for the current sample (float64 numpy)."""
        y = self._sensor.predict(self._states[self._i])
        return {self._sensor.name: y.detach().cpu().numpy().astype(np.float64)}


def select_samples(pairs: Sequence[PairedSample], n: int) -> Tuple[List[PairedSample], Optional[str]]:
    """The last ``n`` samples of the most recent contact-free run (oldest first).

    Returns:
        ``(samples, None)`` or ``([], reason)`` when there is nothing to use.
    """
    if not pairs:
        return [], "no measured sample paired with a prediction yet"
    end = len(pairs)
    while end > 0 and not pairs[end - 1].contact_free:
        end -= 1
    if end == 0:
        return [], f"all {len(pairs)} buffered samples have contact on what the sensor senses"
    start = end
    while start > 0 and pairs[start - 1].contact_free and end - start < n:
        start -= 1
    return list(pairs[start:end]), None


def tare_sensor(sensor: BaseSensor, samples: Sequence[PairedSample], calibrator: Any) -> int:
    """Run ``calibrator`` (a ``TareCalibrator``) over ``samples`` and apply its result.

    The previous calibration is cleared first (its ``'gain'``, fitted by
    ``<s>/calibrate_gain``, kept: a tare moves the offset, not the gain), so
    the replayed predictions are the raw (untared) model and a second tare
    does not stack on the first; on any error the previous calibration is
    restored.  Entries a
    measured message does not carry (NaN) are replaced by the sample's raw
    prediction, so the tare leaves them at zero offset.

    Returns:
        The number of samples the calibrator used.

    Raises:
        ValueError / RuntimeError: from the calibrator or the sensor
            (calibration restored).
    """
    before = sensor.get_calibration()
    sensor.set_calibration({k: before[k] for k in ("gain",) if k in before})
    try:
        return _calibrate(sensor, samples, calibrator)
    except Exception:
        sensor.set_calibration(before)
        raise


def _calibrate(sensor: BaseSensor, samples: Sequence[PairedSample], calibrator: Any) -> int:
    sim = ReplaySimulator(sensor, [s.state for s in samples])
    observations = []
    for i, s in enumerate(samples):
        obs = s.measured
        if np.isnan(obs).any():
            sim.step(i)
            pred = sim.measurements()[sensor.name]
            obs = np.where(np.isnan(obs), pred, obs)
        observations.append({sensor.name: obs})
    commands = list(range(len(samples)))
    return int(calibrator.calibrate(sensor, sim, commands, observations))


def _array(val: Any) -> np.ndarray:
    if hasattr(val, "detach"):
        val = val.detach().cpu().numpy()
    return np.asarray(val, dtype=np.float64).reshape(-1)


def effective_offset(calibration: Dict[str, Any], key: str) -> Optional[np.ndarray]:
    """What the tare adds to the raw model: ``tare − tare_sim_avg`` (``tare`` alone when no average)."""
    if key not in calibration:
        return None
    off = _array(calibration[key])
    if "tare_sim_avg" in calibration:
        off = off - _array(calibration["tare_sim_avg"])
    return off


def format_offset(calibration: Dict[str, Any], key: str, unit: str, names: Sequence[str]) -> str:
    """Human text of the effective offset: ``pressure=101325 Pa`` or a summary for long vectors."""
    arr = effective_offset(calibration, key)
    if arr is None:
        return f"(no '{key}' in calibration)"
    if arr.size <= 4:
        labels = list(names) if len(names) == arr.size else [f"[{i}]" for i in range(arr.size)]
        return ", ".join(f"{k}={v:.9g} {unit}" for k, v in zip(labels, arr))
    return f"{arr.size} entries, mean {arr.mean():.6g} {unit}, max |.| {np.abs(arr).max():.6g} {unit}"


def calibration_to_yaml(calibration: Dict[str, Any]) -> Dict[str, Any]:
    """Calibration dict -> plain lists/floats for YAML."""
    out: Dict[str, Any] = {}
    for k, v in calibration.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        if isinstance(v, np.ndarray):
            out[k] = [float(x) for x in v.reshape(-1)]
        elif isinstance(v, (np.floating, np.integer)):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def calibration_from_yaml(entry: Dict[str, Any]) -> Dict[str, Any]:
    """YAML lists -> float64 numpy arrays (scalars stay scalars)."""
    return {k: (np.asarray(v, dtype=np.float64) if isinstance(v, list) else v) for k, v in entry.items()}
