"""Exception types of the sensor models, so callers tell causes apart by type, not by message text.

They subclass ``ValueError``, the seed's error for bad configuration.
"""
from __future__ import annotations

from typing import Any


class SettingError(ValueError):
    """A configuration value a sensor model rejects.

    Attributes:
        setting: the configuration key at fault (``'fSaturation'``, ``'radius'``, ``'base_normal_local'``,
            ...), as named in ``sensor_from_config``.
        value: the rejected value, as given.
    """

    def __init__(self, message: str, setting: str, value: Any) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


__all__ = ["SettingError"]
