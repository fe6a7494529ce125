"""Keep a ROS 2 session on this host (the distribution's loopback-discovery variable) and on a free
``ROS_DOMAIN_ID`` leased with an ``fcntl`` lock (docs/install.md: discovery and domain IDs), and the exit
codes of the demo's commands around it."""
from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Iterator, Mapping, Optional, TextIO, Tuple

# 0..101 map to UDP ports below the ephemeral range; 0 is everybody's default
FIRST_DOMAIN_ID = 1
LAST_DOMAIN_ID = 101

_LOCK_PREFIX = "vsf_sensor_ros_domain_"
_held: Dict[int, TextIO] = {}

#: The variables that confine discovery: the Iron-and-newer one, then Humble's.
DISCOVERY_RANGE_VAR = "ROS_AUTOMATIC_DISCOVERY_RANGE"
LOCALHOST_ONLY_VAR = "ROS_LOCALHOST_ONLY"
DISCOVERY_VARS = (DISCOVERY_RANGE_VAR, LOCALHOST_ONLY_VAR)

# Distributions released before Iron (2023) read ROS_LOCALHOST_ONLY only.
_PRE_RANGE_DISTROS = frozenset({"ardent", "bouncy", "crystal", "dashing", "eloquent",
                                "foxy", "galactic", "humble"})
# rclpy's major version per distribution: Humble 3.x, Iron 4.x, Jazzy 7.x, Kilted 9.x.
_FIRST_RANGE_RCLPY_MAJOR = 4


def has_discovery_range(environ: Optional[Mapping[str, str]] = None,
                        rclpy_version: Optional[str] = None) -> Optional[bool]:
    """Whether the distribution reads ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (Iron and newer): by the rclpy
    major version (``rclpy_version``, default installed; ``""`` unknown), else ``ROS_DISTRO``; else None."""
    if rclpy_version is None:
        try:
            rclpy_version = importlib.metadata.version("rclpy")
        except importlib.metadata.PackageNotFoundError:
            rclpy_version = ""
    major = rclpy_version.split(".", 1)[0]
    if major.isdigit():
        return int(major) >= _FIRST_RANGE_RCLPY_MAJOR
    distro = (os.environ if environ is None else environ).get("ROS_DISTRO", "").strip().lower()
    if distro:
        return distro not in _PRE_RANGE_DISTROS
    return None


def discovery_env(environ: Optional[Mapping[str, str]] = None,
                  rclpy_version: Optional[str] = None) -> Dict[str, str]:
    """``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` (Iron and newer), ``ROS_LOCALHOST_ONLY=1`` (Humble), or
    both when :func:`has_discovery_range` cannot tell."""
    has_range = has_discovery_range(environ, rclpy_version)
    env: Dict[str, str] = {}
    if has_range is not False:
        env[DISCOVERY_RANGE_VAR] = "LOCALHOST"
    if has_range is not True:
        env[LOCALHOST_ONLY_VAR] = "1"
    return env


def _lock_dir(lock_dir: Optional[str]) -> Path:
    return Path(lock_dir if lock_dir is not None else tempfile.gettempdir())


def free_domain_id(lock_dir: Optional[str] = None, first: int = FIRST_DOMAIN_ID,
                   last: int = LAST_DOMAIN_ID) -> int:
    """Lease a ``ROS_DOMAIN_ID`` in ``first..last`` whose lock file in ``lock_dir`` (default the temp dir)
    locks, from an offset of the pid, until :func:`release_domain_id` or exit.  Raises ValueError: a bound
    outside ``0..232`` or ``first > last``; RuntimeError: every id is leased."""
    if not (0 <= first <= last <= 232):
        raise ValueError(f"domain id range must satisfy 0 <= first <= last <= 232, got {first}..{last}")
    directory = _lock_dir(lock_dir)
    directory.mkdir(parents=True, exist_ok=True)
    span = last - first + 1
    start = os.getpid() % span
    for k in range(span):
        domain_id = first + (start + k) % span
        if domain_id in _held:
            continue
        handle = open(directory / f"{_LOCK_PREFIX}{domain_id}.lock", "a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        _held[domain_id] = handle
        return domain_id
    raise RuntimeError(f"all ROS domain ids {first}..{last} are leased (lock files in {directory})")


def release_domain_id(domain_id: int) -> None:
    """End this process's lease on ``domain_id``.  Raises ValueError: no such lease."""
    handle = _held.pop(domain_id, None)
    if handle is None:
        raise ValueError(f"this process holds no lease on ROS domain id {domain_id}")
    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    handle.close()


def held_domain_ids() -> FrozenSet[int]:
    """Domain ids this process leases (never handed out again, whatever the ``lock_dir``)."""
    return frozenset(_held)


def localhost_env(domain_id: int, base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """``base`` (default ``os.environ``) on ``domain_id`` with :func:`discovery_env` only, no
    ``ROS_STATIC_PEERS``.  Raises ValueError: ``domain_id`` outside ``0..232``."""
    if not (0 <= int(domain_id) <= 232):
        raise ValueError(f"ROS_DOMAIN_ID must be in 0..232, got {domain_id}")
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(int(domain_id))
    for key in DISCOVERY_VARS:
        env.pop(key, None)
    env.update(discovery_env(env))
    env.pop("ROS_STATIC_PEERS", None)
    return env


_ENV_KEYS = ("ROS_DOMAIN_ID", "ROS_STATIC_PEERS") + DISCOVERY_VARS   # what a lease sets in os.environ


def _set_environ(values: Mapping[str, Optional[str]]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def apply_localhost_env(domain_id: int) -> None:
    """Set :func:`localhost_env` in this process's ``os.environ`` (before ``rclpy.init()``)."""
    env = localhost_env(domain_id)
    _set_environ({k: env.get(k) for k in _ENV_KEYS})


@contextlib.contextmanager
def isolated_domain(sigterm: bool = True) -> Iterator[int]:
    """A :func:`free_domain_id` applied to this process, released on exit with the environment put
    back (a released id may be leased by another process); with ``sigterm`` a SIGTERM raises
    KeyboardInterrupt (children stopped as on Ctrl-C)."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt) if sigterm else None
    saved = {k: os.environ.get(k) for k in _ENV_KEYS}
    domain_id = free_domain_id()
    apply_localhost_env(domain_id)
    try:
        yield domain_id
    finally:
        release_domain_id(domain_id)
        _set_environ(saved)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def run_isolated(body: Callable[[int], int], failures: Tuple[type, ...], what: str, logs: Path,
                 sigterm: bool = True) -> int:
    """The exit code of ``body(domain_id)`` in an :func:`isolated_domain`: 1 when it raises one of
    ``failures`` (printed as ``<what> FAILED``, pointing at ``logs``), 130 on Ctrl-C (children stopped)."""
    try:
        with isolated_domain(sigterm) as domain_id:
            return body(domain_id)
    except failures as exc:
        print(f"\n{what} FAILED: {exc}\n(children's output: {logs})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: children stopped", file=sys.stderr)
        return 130


def usage_error(usage: Callable[[], Any], exc: BaseException) -> int:
    """Exit code 2 of a bad command line, after ``usage()`` and ``error: <exc>`` on stderr."""
    usage()
    print(f"error: {exc}", file=sys.stderr)
    return 2
