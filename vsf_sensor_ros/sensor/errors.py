"""Exception types of the sensor models and the world: the message names the value for people, the
attributes for code; both subclass ``ValueError``, the seed's error for bad configuration and input."""
from __future__ import annotations

from typing import Any, Optional


class SettingError(ValueError):
    """A configuration value a sensor model (or a mesh builder) rejects; the seed raises ``ValueError``.

    Attributes:
        setting: the configuration key at fault (``'fSaturation'``, ``'radius'``, ``'base_normal_local'``,
            ...), as named in ``sensor_from_config``.
        value: the rejected value, as given.
        reason: a short machine word (``'unknown_key'``, ``'not_positive'``, ``'not_finite'``, ...), or None.
        expected: what would have been accepted (the known names, a limit), or None.
    """

    def __init__(self, message: str, setting: str, value: Any, reason: Optional[str] = None,
                 expected: Any = None) -> None:
        super().__init__(message)
        self.setting, self.value, self.reason, self.expected = setting, value, reason, expected


class InputError(ValueError):
    """An argument a call rejects (an array, a state, a body or joint name, a URI); nothing was changed.
    The seed raises ``ValueError`` here too.

    Attributes:
        argument: the parameter or field at fault (``'points'``, ``'elems2'``, ``'body'``, ``'names'``, ...).
        value: the rejected value, or its offending part (an entry, an index, a name).
        reason: a short machine word (``'shape'``, ``'not_finite'``, ``'dtype'``, ``'unknown_body'``,
            ``'duplicate'``, ...).
        expected: what would have been accepted (a shape, the known names), or None.
    """

    def __init__(self, message: str, argument: str, value: Any, reason: str, expected: Any = None) -> None:
        super().__init__(message)
        self.argument, self.value, self.reason, self.expected = argument, value, reason, expected


__all__ = ["InputError", "SettingError"]
