"""A signal while the ``sensor_node`` program is still importing ends it quietly, exit code 0.

Importing torch, Klampt and rclpy takes about a second; Python's own SIGINT handler would meanwhile
turn a Ctrl-C into a ``KeyboardInterrupt`` traceback.  Imported first by
:mod:`vsf_sensor_ros.ros.sensor_node`, this module installs, **only when the process is that
program** (``python -m vsf_sensor_ros.ros.sensor_node`` or the ``sensor_node`` executable), SIGINT
and SIGTERM handlers that end the process at once with exit code 0 -- the same code as a signal
once the node runs.  :func:`restore` puts Python's defaults back before ``rclpy.init`` installs
rclpy's own handlers.  Imported anywhere else (tests, the apps), it changes nothing.
"""
from __future__ import annotations

import os
import signal
import sys
from typing import Any

PROGRAM = "vsf_sensor_ros.ros.sensor_node"


def _is_the_program() -> bool:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(spec, "name", None) == PROGRAM or os.path.basename(sys.argv[0] if sys.argv else "") \
        == "sensor_node"


def _quiet_exit(signum: int, frame: Any) -> None:
    os._exit(0)


def restore() -> None:
    """Python's default SIGINT (``KeyboardInterrupt``) and SIGTERM handlers again."""
    if INSTALLED:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


INSTALLED = _is_the_program()
if INSTALLED:
    signal.signal(signal.SIGINT, _quiet_exit)
    signal.signal(signal.SIGTERM, _quiet_exit)

__all__ = ["restore"]
