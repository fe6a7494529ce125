"""Every private rclpy API use and every ROS 2 distribution guard of the package, in one place, so
that a public way in a later rclpy changes only this file (distributions: docs/install.md)."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from rclpy.node import Node
from rclpy.parameter import Parameter

try:
    # rcl's error (a parameter file rcl cannot parse) lives only in the private pybind module
    from rclpy._rclpy_pybind11 import RCLError
except ImportError:  # pragma: no cover - a future rclpy that moves it
    RCLError = RuntimeError  # type: ignore[misc,assignment]

try:
    # the same module's error for an argument after --ros-args that is no ROS argument (e.g. the
    # second word of an unquoted `-p colour_topic:=bad topic`)
    from rclpy._rclpy_pybind11 import UnknownROSArgsError
except ImportError:  # pragma: no cover - a future rclpy that moves it
    UnknownROSArgsError = RCLError  # type: ignore[misc,assignment]


def parameter_override(node: Node, name: str) -> Optional[Parameter]:
    """The value given for ``name`` in a parameter file / ``-p`` / ``parameter_overrides``, or None
    (the private ``Node._parameter_overrides``: no public getter before declaring)."""
    return node._parameter_overrides.get(name)


def parameter_override_names(node: Node) -> List[str]:
    """Every parameter name given to ``node`` (:func:`parameter_override`'s overrides)."""
    return list(node._parameter_overrides)


def replace_parameter_override(node: Node, name: str, value: Any) -> None:
    """Replace the override of ``name`` (the int -> double leniency: rclpy would refuse
    ``measured_scale: 100`` for a double at declaration)."""
    node._parameter_overrides[name] = Parameter(name, value=value)


def add_parameter_callbacks(node: Node, pre_set: Callable[[List[Parameter]], List[Parameter]],
                            on_set: Callable[[List[Parameter]], Any],
                            post_set: Callable[[List[Parameter]], None]) -> bool:
    """Register the parameter callbacks the distribution has (pre- and post-set: Iron and newer);
    True when ``post_set`` was registered (else the caller applies at the end of ``on_set``)."""
    if hasattr(node, "add_pre_set_parameters_callback"):      # Iron and newer
        node.add_pre_set_parameters_callback(pre_set)
    node.add_on_set_parameters_callback(on_set)
    if hasattr(node, "add_post_set_parameters_callback"):     # Iron and newer
        node.add_post_set_parameters_callback(post_set)
        return True
    return False
