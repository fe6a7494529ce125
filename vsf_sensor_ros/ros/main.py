"""Executor choice for the node: rclpy's EventsExecutor where available, spun safely.

The EventsExecutor (``rclpy.experimental``; present in Kilted's rclpy 9.x,
absent in Humble's, probed at run time rather than assumed per distribution)
dispatches ready callbacks from C++ and costs about 0.2-0.35 ms less per
message than the SingleThreadedExecutor, which rebuilds its wait set on
every ``spin_once``.  Its ``spin()`` is not used: in rclpy 9.1.2 it ran at
~90 % CPU without running a callback, kept the GIL (no other Python thread
ran) and ignored SIGINT and ``rclpy.shutdown()``.  :func:`spin` instead calls
``spin_once`` with a short timeout in a loop that ends when the context shuts
down, which serves callbacks normally and stops on SIGINT/SIGTERM or
shutdown within one timeout.  Where the EventsExecutor is absent the
SingleThreadedExecutor is used with the same loop.
"""
from __future__ import annotations

from typing import Optional, Tuple

import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, Executor, SingleThreadedExecutor
from rclpy.node import Node

from vsf_sensor_ros.ros.memory import release_free_heap

EXECUTOR_KINDS: Tuple[str, ...] = ("auto", "events", "single_threaded")
"""Accepted ``kind`` values of :func:`make_executor`."""

# Longest a stop request waits for the loop: each spin_once returns after at most this long.
POLL_SEC = 0.1


def events_executor_available() -> bool:
    """True when this rclpy has ``rclpy.experimental.EventsExecutor``."""
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError:
        return False
    return True


def make_executor(kind: str = "auto", context: Optional[Context] = None) -> Executor:
    """Create the executor to spin the node with.

    Args:
        kind: ``auto`` (EventsExecutor if this rclpy has it, else
            SingleThreadedExecutor), ``events`` (EventsExecutor, error if
            absent) or ``single_threaded``.
        context: rclpy context (default: the global one).

    Returns:
        The executor.  Spin it with :func:`spin`, never with its own
        ``spin()`` (see the module docstring).

    Raises:
        ValueError: ``kind`` not in :data:`EXECUTOR_KINDS`, or ``events``
            on an rclpy without the EventsExecutor (naming the kind).
    """
    if kind not in EXECUTOR_KINDS:
        raise ValueError(f"executor kind {kind!r} is not one of {EXECUTOR_KINDS}")
    if kind in ("auto", "events") and events_executor_available():
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    if kind == "events":
        raise ValueError("executor kind 'events' needs rclpy.experimental.EventsExecutor, "
                         "which this rclpy does not have")
    return SingleThreadedExecutor(context=context)


def spin(executor: Executor, context: Optional[Context] = None, poll_sec: float = POLL_SEC) -> None:
    """Serve callbacks until ``context`` shuts down (SIGINT/SIGTERM or ``rclpy.shutdown``).

    A ``spin_once(timeout_sec=poll_sec)`` loop: each call serves the ready
    callbacks or returns after ``poll_sec``, so shutdown is noticed within
    ``poll_sec`` (0.1 s).  Returns normally on shutdown; ``KeyboardInterrupt``
    (SIGINT under rclpy's signal handler) and exceptions raised by callbacks
    propagate.

    Args:
        executor: from :func:`make_executor` (any rclpy executor works).
        context: the nodes' context (default: the global one).
        poll_sec: longest wait in one ``spin_once`` (s, > 0).

    Raises:
        ValueError: ``poll_sec`` not positive.
    """
    if not poll_sec > 0:
        raise ValueError(f"poll_sec must be > 0, got {poll_sec}")
    ctx = context if context is not None else rclpy.get_default_context()
    try:
        while ctx.ok():
            executor.spin_once(timeout_sec=poll_sec)
    except ExternalShutdownException:
        pass


def spin_node(node: Node, kind: str = "auto", poll_sec: float = POLL_SEC,
              trim_heap: bool = True) -> Executor:
    """Add ``node`` to a new executor of ``kind`` and :func:`spin` it until shutdown.

    The console-script form: SIGINT (``KeyboardInterrupt``, raised by
    rclpy's signal handler) and external shutdown end it normally.  With
    ``trim_heap`` the start-up temporaries freed by now are first returned to
    the kernel (:func:`vsf_sensor_ros.ros.memory.release_free_heap`).

    Returns:
        The executor (already shut down), for logging which kind ran.

    Raises:
        ValueError: as :func:`make_executor`.
    """
    executor = make_executor(kind, node.context)
    executor.add_node(node)
    if trim_heap:
        release_free_heap()
    try:
        spin(executor, node.context, poll_sec)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
    return executor
