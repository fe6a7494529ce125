"""What the Klampt pad and the Isaac load sensor share: readings ``raw + (tare - tare_sim_avg)`` whose first
entry, a 0/1 contact indicator, keeps offset 0 (a zero error does not make a sensor detect contact)."""
from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from ._punyo_common import parse_tare
from .base_sensor import BaseSensor, Pair, SimState, rigid_transform


class IndicatorTareMixin(BaseSensor):
    """Base of the indicator-first sensors: tare offset, state checks and the Jacobian's two forms.

    The host calls ``_init_tare()`` in its constructor, adds ``_offset(dtype, device)`` (or
    ``calibration_offset()``) to its raw reading, and gives ``_jacobian_all(state)`` -> dense
    ``(#meas, N, 3)`` over its body's pairs, the pairs and their offsets (:meth:`_pairs_offsets`).
    """

    def _check_state(self, state: SimState) -> List[Pair]:
        """The body's contact pairs, after checking its transform and that the contacts share the state's
        dtype / device (never converted); ValueError naming the pair."""
        rigid_transform(state, self.attachModelName)   # unknown body, non-finite / non-rigid / not (4, 4)
        pairs = self.contact_bodies(state)
        for pair in pairs:
            c = state.contacts[pair]
            if c.points.dtype != state.dtype or c.points.device != state.device:
                raise ValueError(f"{self.type_name} {self.name!r}: contacts {pair} are {c.points.dtype} on "
                                 f"{c.points.device} but the state is {state.dtype} on {state.device}; "
                                 "convert them first")
        return pairs

    @staticmethod
    def _pairs_offsets(state: SimState, pairs: List[Pair]) -> List[int]:
        return list(itertools.accumulate((len(state.contacts[pair]) for pair in pairs), initial=0))

    def _jacobian_all(self, state: SimState) -> Tuple[torch.Tensor, List[Pair], List[int]]:
        raise NotImplementedError

    def measurement_force_jacobian(self, state: SimState) -> Dict[Pair, torch.Tensor]:
        """Seed-form ``{(body, other): Tensor[#meas, N_pair, 3]}`` (world force columns); ValueError as
        ``predict``."""
        J, pairs, offsets = self._jacobian_all(state)
        return {pair: J[:, offsets[p]:offsets[p + 1]] for p, pair in enumerate(pairs)}

    def _init_tare(self) -> None:
        self._calib: Dict[str, np.ndarray] = {}
        self._offset_cache: Dict[Tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def set_calibration(self, calib_dict: dict) -> None:
        """Set ``{'tare': (#meas,), 'tare_sim_avg': (#meas,)}`` (``{}`` clears).  ValueError (previous kept):
        not a dict, unknown keys, ``tare_sim_avg`` without ``tare``, wrong length, non-finite values."""
        self._calib = parse_tare(calib_dict, self.name, len(self.measurement_names()))
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
