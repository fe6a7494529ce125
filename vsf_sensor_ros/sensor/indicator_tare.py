"""Tare offset for readings whose first entry is a contact indicator (Klampt pad, Isaac load sensor).

A prediction reads ``raw + (tare - tare_sim_avg)`` on every entry but the 0/1 indicator, which keeps offset
0: a zero error of the force channel does not make a sensor detect contact.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from ._punyo_common import parse_tare


class IndicatorTareMixin:
    """``set_calibration`` / ``get_calibration`` / ``calibration_offset`` for indicator-first readings.

    The host class provides ``name`` and ``measurement_names()``; it calls ``_init_tare()`` in its
    constructor and adds ``_offset(dtype, device)`` (or ``calibration_offset()``) to its raw reading.
    """

    name: str

    def measurement_names(self) -> List[str]:  # provided by the sensor class
        raise NotImplementedError

    def _init_tare(self) -> None:
        self._calib: Dict[str, np.ndarray] = {}
        self._offset_cache: Dict[Tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def set_calibration(self, calib_dict: dict) -> None:
        """Set ``{'tare': (#meas,), 'tare_sim_avg': (#meas,)}`` in the current measurement order.

        ``{}`` or ``{'tare': None}`` clears.  Every entry of ``tare − tare_sim_avg`` but the contact
        indicator (entry 0) is added to each prediction.

        Raises:
            ValueError: not a dict, unknown keys, ``tare_sim_avg`` without ``tare``, a length other than
                ``len(measurement_names())``, non-finite values; the sensor keeps its previous calibration.
        """
        self._calib = parse_tare(calib_dict, self.name, len(self.measurement_names()))
        self._offset_cache.clear()

    def clear_calibration(self) -> None:
        """Drop the calibration (e.g. when the measurement layout changes)."""
        self._calib = {}
        self._offset_cache.clear()

    def get_calibration(self) -> dict:
        """The calibration set last (copies of float64 arrays), ``{}`` when uncalibrated."""
        return {k: v.copy() for k, v in self._calib.items()}

    def calibration_offset(self) -> Optional[np.ndarray]:
        """What the calibration adds to a reading, ``(#meas,)`` float64 (indicator entry 0), or None."""
        if "tare" not in self._calib:
            return None
        off = self._calib["tare"] - self._calib.get("tare_sim_avg", 0.0)
        off[0] = 0.0                     # the contact indicator has no zero error
        return off

    def _offset(self, dtype: torch.dtype, device: torch.device) -> Optional[torch.Tensor]:
        """``calibration_offset()`` as a tensor of ``dtype`` on ``device`` (cached), or None."""
        if "tare" not in self._calib:
            return None
        key = (dtype, device)
        if key not in self._offset_cache:
            self._offset_cache[key] = torch.as_tensor(self.calibration_offset(), dtype=dtype, device=device)
        return self._offset_cache[key]
