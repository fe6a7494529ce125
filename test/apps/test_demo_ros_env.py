"""ROS domain leases keep parallel sessions apart; the env keeps discovery on loopback."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vsf_sensor_ros.apps.ros_env import free_domain_id, localhost_env, release_domain_id

ROOT = Path(__file__).resolve().parents[2]


def test_two_leases_in_one_process_get_different_ids(tmp_path):
    a = free_domain_id(lock_dir=str(tmp_path), first=5, last=6)
    b = free_domain_id(lock_dir=str(tmp_path), first=5, last=6)
    try:
        assert {a, b} == {5, 6}
        # Range of two ids, both leased: a third lease is impossible.
        with pytest.raises(RuntimeError, match="5..6"):
            free_domain_id(lock_dir=str(tmp_path), first=5, last=6)
    finally:
        release_domain_id(a)
        release_domain_id(b)


def test_id_leased_by_another_process_is_skipped_and_freed_when_it_exits(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from vsf_sensor_ros.apps.ros_env import free_domain_id
            print(free_domain_id(lock_dir={str(tmp_path)!r}, first=7, last=7), flush=True)
            sys.stdin.readline()
        """)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "7"
        # The only id in range 7..7 belongs to the other process.
        with pytest.raises(RuntimeError):
            free_domain_id(lock_dir=str(tmp_path), first=7, last=7)
        # With 7..8 we get the one the other process does not hold.
        got = free_domain_id(lock_dir=str(tmp_path), first=7, last=8)
        assert got == 8
        release_domain_id(got)
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    # The kernel dropped the holder's lock when it exited: 7 is free again.
    again = free_domain_id(lock_dir=str(tmp_path), first=7, last=7)
    assert again == 7
    release_domain_id(again)


def test_release_then_lease_again_returns_the_same_id(tmp_path):
    a = free_domain_id(lock_dir=str(tmp_path), first=9, last=9)
    release_domain_id(a)
    assert free_domain_id(lock_dir=str(tmp_path), first=9, last=9) == 9
    release_domain_id(9)


def test_bad_range_and_unknown_release_raise_value_error(tmp_path):
    with pytest.raises(ValueError, match="233"):
        free_domain_id(lock_dir=str(tmp_path), first=1, last=233)
    with pytest.raises(ValueError, match="10..3"):
        free_domain_id(lock_dir=str(tmp_path), first=10, last=3)
    with pytest.raises(ValueError, match="42"):
        release_domain_id(42)


def test_localhost_env_sets_domain_and_loopback_discovery_without_touching_base():
    base = {"PATH": "/bin", "ROS_DOMAIN_ID": "0", "ROS_STATIC_PEERS": "192.168.1.5"}
    env = localhost_env(17, base)
    assert env["ROS_DOMAIN_ID"] == "17"
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["ROS_LOCALHOST_ONLY"] == "1"
    assert "ROS_STATIC_PEERS" not in env
    assert env["PATH"] == "/bin"
    assert base["ROS_DOMAIN_ID"] == "0"  # caller's mapping unchanged
    with pytest.raises(ValueError, match="300"):
        localhost_env(300)
