"""Demo children are always stopped and reaped, escalating SIGINT -> SIGTERM -> SIGKILL."""
import os
import signal
import subprocess
import sys
import time

import pytest

from vsf_sensor_ros.demo.processes import ManagedProcess

IGNORE_INT = ("import signal, time, sys\n"
              "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
IGNORE_INT_AND_TERM = IGNORE_INT.replace(
    "time.sleep", "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep")


def wait_for_log(proc, text, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        # Skip the first line: the logged command line contains the script text.
        if text in proc.log_path.read_text().split("\n", 1)[-1]:
            return True
        time.sleep(0.02)
    return False


def reaped(pid):
    """True when ``pid`` is no longer a child of this process (not even a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_sigint_stops_a_cooperative_child_and_it_is_reaped(tmp_path):
    script = "import time; print('ready', flush=True); time.sleep(60)"
    p = ManagedProcess("sleeper", [sys.executable, "-c", script], dict(os.environ), tmp_path / "sleeper.log")
    p.start()
    assert wait_for_log(p, "ready")
    t0 = time.monotonic()
    code = p.stop(grace_int_s=5.0, grace_term_s=5.0)
    # Python's default SIGINT handling: KeyboardInterrupt, then it ends itself by SIGINT (-2), quickly.
    assert code == -2 and time.monotonic() - t0 < 4.0
    assert reaped(p.pid)
    assert p.stop() == -2  # second stop is harmless
    assert p.log_path.read_text().startswith("$ ")  # command line logged first


def test_child_ignoring_sigint_gets_sigterm_after_the_grace(tmp_path):
    p = ManagedProcess("stubborn", [sys.executable, "-c", IGNORE_INT], dict(os.environ), tmp_path / "s.log")
    p.start()
    assert wait_for_log(p, "ready")
    t0 = time.monotonic()
    assert p.stop(grace_int_s=0.5, grace_term_s=5.0) == -15  # killed by SIGTERM
    assert 0.4 < time.monotonic() - t0 < 4.0
    assert reaped(p.pid)


def test_child_ignoring_sigint_and_sigterm_is_killed(tmp_path):
    p = ManagedProcess("very_stubborn", [sys.executable, "-c", IGNORE_INT_AND_TERM], dict(os.environ),
                       tmp_path / "v.log")
    p.start()
    assert wait_for_log(p, "ready")
    assert p.stop(grace_int_s=0.3, grace_term_s=0.3) == -9
    assert reaped(p.pid)


def test_exited_child_reports_its_code_and_log_tail(tmp_path):
    script = "import sys; print('line1'); print('boom'); sys.exit(3)"
    p = ManagedProcess("crasher", [sys.executable, "-c", script], dict(os.environ), tmp_path / "c.log")
    assert p.poll() is None and p.stop() is None  # not started yet
    p.start()
    end = time.monotonic() + 10
    while p.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    assert p.poll() == 3 and not p.running()
    assert p.tail(2) == "line1\nboom"
    assert p.stop() == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_ends_when_its_parent_is_killed(tmp_path):
    # a parent that starts a sleeping child, prints its pid and waits: killed with SIGKILL, it cannot stop it
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from vsf_sensor_ros.demo.processes import ManagedProcess\n"
        "p = ManagedProcess('sleeper', [sys.executable, '-c', 'import time; time.sleep(60)'], "
        f"dict(os.environ), Path({str(tmp_path / 'sleeper.log')!r}))\n"
        "p.start()\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(child, 0)                        # running
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    end = time.monotonic() + 10.0
    while time.monotonic() < end:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail(f"child {child} outlived its killed parent")
