"""Exception types of the sensor models and the world: the message names the value for people, the
attributes for code; both subclass ``ValueError``, the seed's error for bad configuration and input."""
from __future__ import annotations

from typing import Any, Optional


class SettingError(ValueError):
    """A configuration value a sensor model (or a mesh builder) rejects (the seed raises ``ValueError``):
    ``setting`` (the config key at fault), ``value`` as given, ``reason`` (a short word such as
    ``'unknown_key'``, or None), ``expected`` (what would be accepted, or None)."""

    def __init__(self, message: str, setting: str, value: Any, reason: Optional[str] = None,
                 expected: Any = None) -> None:
        super().__init__(message)
        self.setting, self.value, self.reason, self.expected = setting, value, reason, expected


class InputError(ValueError):
    """An argument a call rejects, nothing changed (the seed raises ``ValueError``): ``argument`` (parameter
    or field at fault), ``value`` (or its offending part), ``reason`` (a short word such as ``'shape'``),
    ``expected`` (what would be accepted, or None)."""

    def __init__(self, message: str, argument: str, value: Any, reason: str, expected: Any = None) -> None:
        super().__init__(message)
        self.argument, self.value, self.reason, self.expected = argument, value, reason, expected


__all__ = ["InputError", "SettingError"]
