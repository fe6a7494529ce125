"""Keep a ROS 2 session on this host, on a domain no other session uses (discovery confined to localhost).

DDS discovery is multicast: two demos, two test sessions, or a demo and a
real robot on the same domain id see each other's topics.  Everything that
starts ROS processes here (the demo, the ROS test fixtures) therefore

* restricts discovery to loopback: ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
  (Iron and newer) and ``ROS_LOCALHOST_ONLY=1`` (Humble; ignored with a
  deprecation note by newer distributions when the range is set), and
* leases a free ``ROS_DOMAIN_ID`` with :func:`free_domain_id`.

A lease is an exclusive ``fcntl`` lock on ``<lock_dir>/vsf_sensor_ros_domain_<id>.lock``.
The kernel drops the lock when the owning process exits, however it exits
(crash, SIGKILL), so a stale lock file never blocks an id.  Lock files are
left in place (deleting them would race with another process locking them).
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import Dict, Mapping, Optional, TextIO

# Linux DDS implementations map domain ids 0..101 to UDP ports without
# clashing with the ephemeral range; 0 is everybody's default, so skip it.
FIRST_DOMAIN_ID = 1
LAST_DOMAIN_ID = 101

_LOCK_PREFIX = "vsf_sensor_ros_domain_"
_held: Dict[int, TextIO] = {}


def _lock_dir(lock_dir: Optional[str]) -> Path:
    return Path(lock_dir if lock_dir is not None else tempfile.gettempdir())


def free_domain_id(lock_dir: Optional[str] = None, first: int = FIRST_DOMAIN_ID,
                   last: int = LAST_DOMAIN_ID) -> int:
    """Lease a ``ROS_DOMAIN_ID`` no other cooperating process on this host holds.

    Tries ids ``first..last`` starting at an offset derived from the process id
    (so parallel sessions rarely contend for the same lock) and keeps the first
    one whose lock file it can lock exclusively without blocking.  The lease
    lasts until :func:`release_domain_id` or the end of this process; child
    processes do not inherit the lock (the descriptor is close-on-exec), the id
    is simply passed to them in their environment.

    Args:
        lock_dir: directory for the lock files (default: the system temp dir,
            ``/tmp`` on Linux), shared by every process that should not collide.
        first, last: inclusive id range; ``0 <= first <= last <= 232``.

    Returns:
        The leased domain id (int).

    Raises:
        ValueError: ``first``/``last`` outside ``0..232`` or ``first > last``.
        RuntimeError: every id in the range is leased.
    """
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
    """End a lease taken by :func:`free_domain_id` in this process.

    Raises:
        ValueError: this process holds no lease on ``domain_id``.
    """
    handle = _held.pop(domain_id, None)
    if handle is None:
        raise ValueError(f"this process holds no lease on ROS domain id {domain_id}")
    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    handle.close()


def localhost_env(domain_id: int, base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Environment for a ROS 2 process confined to this host on ``domain_id``.

    Args:
        domain_id: the ``ROS_DOMAIN_ID`` to use (normally from :func:`free_domain_id`).
        base: environment to start from (default: ``os.environ``); not modified.

    Returns:
        A new dict: ``base`` plus ``ROS_DOMAIN_ID``, ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
        and ``ROS_LOCALHOST_ONLY=1``.  ``ROS_STATIC_PEERS`` is cleared so no
        peer outside this host is contacted.

    Raises:
        ValueError: ``domain_id`` outside ``0..232``.
    """
    if not (0 <= int(domain_id) <= 232):
        raise ValueError(f"ROS_DOMAIN_ID must be in 0..232, got {domain_id}")
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(int(domain_id))
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOCALHOST_ONLY"] = "1"
    env.pop("ROS_STATIC_PEERS", None)
    return env


def apply_localhost_env(domain_id: int) -> None:
    """Set :func:`localhost_env` in ``os.environ`` of this process.

    Must run before ``rclpy.init()``: the domain id and discovery range are read
    when the ROS context is created.
    """
    env = localhost_env(domain_id)
    for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"):
        os.environ[key] = env[key]
    os.environ.pop("ROS_STATIC_PEERS", None)
