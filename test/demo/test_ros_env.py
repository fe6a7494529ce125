"""ROS domain leases keep parallel sessions apart; the env keeps discovery on loopback."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vsf_sensor_ros.demo.ros_env import (discovery_env, free_domain_id, has_discovery_range, held_domain_ids,
                                         isolated_domain, localhost_env, release_domain_id)

ROOT = Path(__file__).resolve().parents[2]


def unheld_ids(count, held=None):
    """``count`` consecutive domain ids none of which this process leases.

    The ROS test session (test/ros/conftest.py) holds one id, ``1 + pid % 101``,
    for the whole run, and a process never hands out an id it holds, whatever
    lock directory is asked for; tests that lease fixed ids would fail whenever
    the session's id falls among them.
    """
    held = held_domain_ids() if held is None else held
    for first in range(1, 102 - count + 1):
        ids = list(range(first, first + count))
        if not held.intersection(ids):
            return ids
    raise AssertionError(f"no {count} consecutive unheld ids among 1..101 (held: {sorted(held)})")


@pytest.fixture
def ids(tmp_path_factory):
    """Three consecutive unheld ids, chosen while this process holds a lease the
    way the ROS test session does (id 2 in another lock directory), so every
    run meets the case that used to fail about 5 runs in 101."""
    session_dir = tmp_path_factory.mktemp("session_locks")
    held = [] if 2 in held_domain_ids() else [free_domain_id(lock_dir=str(session_dir), first=2, last=2)]
    try:
        chosen = unheld_ids(3)
        assert 2 not in chosen
        yield chosen
    finally:
        for i in held:
            release_domain_id(i)


def test_an_id_this_process_holds_is_never_leased_again_even_in_another_lock_dir(tmp_path):
    # The session-style lease lives in one directory, the test's leases in another.
    session_dir = tmp_path / "session"
    first = unheld_ids(2)[0]
    mine = free_domain_id(lock_dir=str(session_dir), first=first, last=first)
    try:
        assert mine == first and first in held_domain_ids()
        with pytest.raises(RuntimeError, match=f"{first}..{first}"):
            free_domain_id(lock_dir=str(tmp_path), first=first, last=first)
        other = free_domain_id(lock_dir=str(tmp_path), first=first, last=first + 1)
        assert other == first + 1
        release_domain_id(other)
        # The helper the lease tests use steps around it.
        assert first not in unheld_ids(3)
    finally:
        release_domain_id(mine)
    assert first not in held_domain_ids()


def test_unheld_ids_skips_every_held_id():
    assert unheld_ids(3, held=frozenset({1, 3, 7})) == [4, 5, 6]
    assert unheld_ids(2, held=frozenset()) == [1, 2]
    with pytest.raises(AssertionError):
        unheld_ids(2, held=frozenset(range(1, 102, 2)))


def test_two_leases_in_one_process_get_different_ids(tmp_path, ids):
    lo, hi = ids[0], ids[1]
    a = free_domain_id(lock_dir=str(tmp_path), first=lo, last=hi)
    b = free_domain_id(lock_dir=str(tmp_path), first=lo, last=hi)
    try:
        assert {a, b} == {lo, hi}
        # Range of two ids, both leased: a third lease is impossible.
        with pytest.raises(RuntimeError, match=f"{lo}..{hi}"):
            free_domain_id(lock_dir=str(tmp_path), first=lo, last=hi)
    finally:
        release_domain_id(a)
        release_domain_id(b)


def test_id_leased_by_another_process_is_skipped_and_freed_when_it_exits(tmp_path, ids):
    x, y = ids[0], ids[1]
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from vsf_sensor_ros.demo.ros_env import free_domain_id
            print(free_domain_id(lock_dir={str(tmp_path)!r}, first={x}, last={x}), flush=True)
            sys.stdin.readline()
        """)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == str(x)
        # The only id in range x..x belongs to the other process.
        with pytest.raises(RuntimeError):
            free_domain_id(lock_dir=str(tmp_path), first=x, last=x)
        # With x..y we get the one the other process does not hold.
        got = free_domain_id(lock_dir=str(tmp_path), first=x, last=y)
        assert got == y
        release_domain_id(got)
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    # The kernel dropped the holder's lock when it exited: x is free again.
    again = free_domain_id(lock_dir=str(tmp_path), first=x, last=x)
    assert again == x
    release_domain_id(again)


def test_release_then_lease_again_returns_the_same_id(tmp_path, ids):
    z = ids[2]
    a = free_domain_id(lock_dir=str(tmp_path), first=z, last=z)
    release_domain_id(a)
    assert free_domain_id(lock_dir=str(tmp_path), first=z, last=z) == z
    release_domain_id(z)


@pytest.mark.parametrize("call, named", [
    (lambda d: free_domain_id(lock_dir=d, first=1, last=233), "233"),
    (lambda d: free_domain_id(lock_dir=d, first=10, last=3), "10..3"),
])
def test_bad_range_and_unknown_release_raise_value_error(tmp_path, call, named):
    with pytest.raises(ValueError, match=named):
        call(str(tmp_path))


def test_releasing_an_id_not_held_raises_value_error_naming_it():
    free = min(set(range(233)) - held_domain_ids())      # the session holds an id of its own
    with pytest.raises(ValueError, match=rf"\b{free}\b"):
        release_domain_id(free)


@pytest.mark.parametrize("rclpy_version, distro, expected", [
    ("3.3.16", "", {"ROS_LOCALHOST_ONLY": "1"}),                            # Humble
    ("4.1.7", "", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}),          # Iron
    ("7.1.6", "humble", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}),    # Jazzy: rclpy wins
    ("9.1.2", "", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}),          # Kilted
    ("", "Humble", {"ROS_LOCALHOST_ONLY": "1"}),                            # no metadata: ROS_DISTRO
    ("", "jazzy", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}),
    ("", "", {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOCALHOST_ONLY": "1"}),  # unknown: both
])
def test_discovery_env_sets_only_the_variable_the_distribution_reads(rclpy_version, distro, expected):
    environ = {"ROS_DISTRO": distro} if distro else {}
    assert discovery_env(environ, rclpy_version) == expected
    assert has_discovery_range(environ, rclpy_version) == (
        None if len(expected) == 2 else "ROS_AUTOMATIC_DISCOVERY_RANGE" in expected)


def test_localhost_env_sets_domain_and_loopback_discovery_without_touching_base():
    base = {"PATH": "/bin", "ROS_DOMAIN_ID": "0", "ROS_STATIC_PEERS": "192.168.1.5",
            "ROS_LOCALHOST_ONLY": "0", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}
    env = localhost_env(17, base)
    assert env["ROS_DOMAIN_ID"] == "17"
    # The installed rclpy (Jazzy, Kilted or a sourced install) decides which one is set.
    wanted = discovery_env()
    for key in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"):
        assert env.get(key) == wanted.get(key)
    assert env.get("ROS_STATIC_PEERS") is None
    assert env["PATH"] == "/bin"
    assert base["ROS_DOMAIN_ID"] == "0"  # caller's mapping unchanged
    with pytest.raises(ValueError, match="300"):
        localhost_env(300)


def test_a_ros_process_started_with_localhost_env_prints_no_discovery_deprecation_warning():
    # Jazzy and Kilted warn twice per process ("ROS_LOCALHOST_ONLY is deprecated",
    # "'localhost_only' is enabled ... will be ignored") when ROS_LOCALHOST_ONLY is
    # set; localhost_env must drop it there even when the caller's shell sets it.
    pytest.importorskip("rclpy")
    domain = free_domain_id()
    try:
        base = dict(os.environ, ROS_LOCALHOST_ONLY="1")
        res = subprocess.run(
            [sys.executable, "-c", "import rclpy; rclpy.init(); n = rclpy.create_node('env_probe'); "
                                   "n.destroy_node(); rclpy.shutdown()"],
            cwd=ROOT, env=localhost_env(domain, base), capture_output=True, text=True, timeout=60)
    finally:
        release_domain_id(domain)
    assert res.returncode == 0, res.stderr
    assert "ROS_LOCALHOST_ONLY" not in res.stderr and "localhost_only" not in res.stderr, res.stderr


def test_isolated_domain_applies_a_leased_id_and_puts_the_environment_back(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "7")
    monkeypatch.setenv("ROS_STATIC_PEERS", "10.0.0.9")
    before = dict(os.environ)
    with isolated_domain(sigterm=False) as domain_id:
        assert os.environ["ROS_DOMAIN_ID"] == str(domain_id) != "7"
        assert "ROS_STATIC_PEERS" not in os.environ
        assert domain_id in held_domain_ids()
    # the id is released, so the environment must not keep pointing at it
    assert domain_id not in held_domain_ids()
    assert dict(os.environ) == before
