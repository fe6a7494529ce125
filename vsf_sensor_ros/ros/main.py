"""Start, run and end a node executable: init, ``--help`` (before ``rclpy.init``), executor, exit
codes (0, or 2 on a configuration error); the ``spin_once`` loop and ``malloc_trim``:
docs/performance_notes.md."""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import signal
import sys
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Type

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, Executor, SingleThreadedExecutor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node

from ._rclpy_compat import RCLError, UnknownROSArgsError

EXECUTOR_KINDS: Tuple[str, ...] = ("auto", "events", "single_threaded")
"""The ``kind`` values of :func:`make_executor` (the ``executor`` parameter, checked at start)."""

# Longest a stop request waits for the loop: each spin_once returns after at most this long.
POLL_SEC = 0.1


def make_executor(kind: str = "auto", context: Optional[Context] = None) -> Executor:
    """The executor of ``kind`` (:data:`EXECUTOR_KINDS`; ``auto``: EventsExecutor where rclpy has it,
    else single-threaded) in ``context``; ValueError: ``events`` without the EventsExecutor."""
    if kind != "single_threaded":
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor(context=context)
        except ImportError:
            if kind == "events":
                raise ValueError("executor kind 'events' needs rclpy.experimental.EventsExecutor, "
                                 "which this rclpy does not have") from None
    return SingleThreadedExecutor(context=context)


def spin(executor: Executor, context: Optional[Context] = None, poll_sec: float = POLL_SEC) -> None:
    """Serve callbacks until ``context`` shuts down, noticed within ``poll_sec`` (s, > 0; a ``spin_once``
    loop); ``KeyboardInterrupt`` and callbacks' exceptions propagate."""
    ctx = context if context is not None else rclpy.get_default_context()
    try:
        while ctx.ok():
            executor.spin_once(timeout_sec=poll_sec)
    except ExternalShutdownException:
        pass


def spin_node(node: Node, kind: str = "auto", poll_sec: float = POLL_SEC) -> Executor:
    """:func:`spin` ``node`` on a new executor of ``kind`` (:func:`make_executor`, whose ValueError
    it raises) until SIGINT or shutdown, after :func:`release_free_heap`."""
    executor = make_executor(kind, node.context)
    executor.add_node(node)
    release_free_heap()
    try:
        spin(executor, node.context, poll_sec)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
    return executor


def usage() -> argparse.ArgumentParser:
    """``sensor_node``'s command line: only ``-h`` / ``--help`` (node-wide and common sensor parameters)."""
    from .kinds import SensorKindError, sensor_kinds
    from .parameter_table import NODE_SPECS, SENSOR_COMMON_SPECS
    try:
        types = ", ".join(sensor_kinds())
    except SensorKindError as exc:   # (a start with sensors reports it as a configuration error)
        types = str(exc)
    rows = [f"  {pre}{s.key} (default: {_shown(s.default)}{'' if s.read_only else ', live'})"
            for pre, specs in (("", NODE_SPECS), ("<s>.", SENSOR_COMMON_SPECS)) for s in specs]
    parameters = ("parameters (--ros-args -p name:=value or --params-file FILE; a sensor's type adds its "
                  "model settings):\n" + "\n".join(rows) + "\n"
                  "sensor types (<s>.type; a package adds one, docs/kinds.md): " + types + "\n")
    return argparse.ArgumentParser(
        prog="sensor_node", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Predicted tactile readings (and their force Jacobians) of the configured sensors, "
                    "live over ROS 2: contacts + joint_states (+ <s>/measured) in, <s>/predicted, "
                    "<s>/residual, <s>/measured_si, <s>/jacobian, <s>/markers and /diagnostics out; "
                    "services tare, <s>/tare, <s>/calibrate_gain, save_calibration.",
        epilog=parameters
        + "examples:\n"
          "  ros2 run vsf_sensor_ros sensor_node --ros-args --params-file config/sensor_node.yaml\n"
          "  ros2 run vsf_sensor_ros sensor_node --ros-args -p use_sim_time:=true "
          "--params-file config/kinova_punyo_real.yaml\n"
          "Parameters: ros2 param describe /sensor_node <name>; all of them: docs/parameters.md.\n"
          "Environment: VSF_ASSETS (base of relative paths, over assets_dir).")


def parameter_usage(prog: str, description: str, parameters: Iterable[Tuple[str, Any, str]],
                    examples: Sequence[str]) -> argparse.ArgumentParser:
    """The ``-h`` / ``--help`` parser of a node executable whose settings are ROS parameters
    (``parameters``: ``(name, default, description)``; ``examples``: command lines)."""
    lines = ["parameters (set with --ros-args -p name:=value or --params-file FILE):"]
    lines += [f"  {name} (default: {_shown(default)})\n      {text}" for name, default, text in parameters]
    lines += ["examples:"] + [f"  {e}" for e in examples]
    return argparse.ArgumentParser(prog=prog, description=description, epilog="\n".join(lines),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def _shown(default: Any) -> str:
    if isinstance(default, str):
        return repr(default)
    if isinstance(default, (list, tuple)):
        # [''] is how an empty string array is declared (a ROS parameter's type comes from its default)
        return "[" + ", ".join(_shown(v) for v in default if v != "") + "]"
    return str(default)


def answer_help(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """Print the usage and raise ``SystemExit(0)`` for ``-h`` / ``--help`` outside ``--ros-args``
    (before ``rclpy.init``); other arguments are left to rclpy."""
    parser.parse_known_args(user_args(list(argv)))


def split_ros_args(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """``(outside, inside)`` the ``--ros-args ... [--]`` blocks of ``argv``, markers dropped; split by
    hand: rclpy's ``remove_ros_args`` would parse the parameter files, which ``rclpy.init`` reports."""
    out: Tuple[List[str], List[str]] = ([], [])
    in_ros = False
    for a in argv:
        if a == "--ros-args":
            in_ros = True
        elif in_ros and a == "--":
            in_ros = False
        else:
            out[in_ros].append(a)
    return out


def user_args(argv: List[str]) -> List[str]:
    """The arguments outside ``--ros-args`` blocks, program name dropped."""
    return split_ros_args(argv[1:])[0]


def parameter_file_error(exc: Exception, name: str = "sensor_node") -> str:
    """The ``[FATAL]`` line of rcl's error for a parameter file it cannot parse, with a hint when known."""
    text = " ".join(str(exc).split())
    # rcl reports every parse failure as one RCLError; this hint only adds to its text
    hint = (" (ROS 2 parameter files need one element type per list: write 0.0 not 0)"
            if "same type" in text else "")
    return f"[FATAL] [{name}]: configuration error: {text}{hint}"


def release_free_heap() -> None:
    """Return free C-heap pages to the kernel (glibc ``malloc_trim(0)``; nothing without glibc)."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_node(name: str, make_node: Callable[[], Node], args: Optional[List[str]] = None, *,
             config_errors: Tuple[Type[BaseException], ...] = (),
             spin: Callable[[Node], None] = rclpy.spin,
             finish: Optional[Callable[[Node], int]] = None,
             sigterm_as_interrupt: bool = True) -> int:
    """Init (``args``: the command line), ``make_node``, ``spin`` it, clean up; the exit code: 0 on
    a normal end (SIGINT, SIGTERM, shutdown), 2 on a configuration error (a parameter file rcl
    cannot parse, ``config_errors`` or rclpy's refusal of a parameter override by ``make_node``: one
    ``configuration error`` line), else ``finish(node)``'s after the spin.  ``sigterm_as_interrupt``:
    SIGTERM stops the spin as SIGINT where rclpy has no handler."""
    try:
        rclpy.init(args=args)
    except KeyboardInterrupt:
        return 0
    except UnknownROSArgsError as exc:   # before RCLError: a word after --ros-args that is no ROS argument
        print(f"[FATAL] [{name}]: configuration error: not ROS arguments after --ros-args: {exc} "
              "(a value with spaces needs quotes: -p 'name:=a b')", file=sys.stderr, flush=True)
        return 2
    except RCLError as exc:
        print(parameter_file_error(exc, name), file=sys.stderr, flush=True)
        return 2
    if sigterm_as_interrupt and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        node = make_node()
    except config_errors + (InvalidParameterTypeException, InvalidParameterValueException) as exc:
        # (the two rclpy ones: an override refused before a node's code runs, e.g. -p use_sim_time:=5)
        # one line: a value quoted in the message may hold a newline
        text = " ".join(str(exc).splitlines())
        rclpy.logging.get_logger(name).fatal(f"configuration error: {text}")
        rclpy.try_shutdown()
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        rclpy.try_shutdown()
        return 0
    except Exception:
        if rclpy.ok():
            raise
        # a signal shut the context down while the node was being built (rclpy's handler): the
        # endpoint being made failed (RCLError, InvalidHandle, NotInitialized); not a failure
        return 0
    code = 0
    try:
        spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RCLError:
        # a signal shut the context down between two waits of the executor (the interrupt itself
        # landed in a finaliser and was swallowed): a normal shutdown, not a failure
        if rclpy.ok():
            raise
    finally:
        if finish is not None:
            code = finish(node)
        node.destroy_node()
        rclpy.try_shutdown()
    return code


def exit_now(main: Callable[[], int]) -> None:
    """Run ``main`` and ``os._exit`` with its code (the interpreter's teardown of torch, Klampt and
    DDS took 1.5-17 s); ``KeyboardInterrupt`` exits 0, ``SystemExit`` keeps its code, else 1."""
    import traceback
    code = 1
    try:
        code = main()
    except KeyboardInterrupt:
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException:   # noqa: B902 -- reported, then the same fast exit
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
