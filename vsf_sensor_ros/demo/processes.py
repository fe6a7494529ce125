"""Child processes the demo and the tests start and always stop: each in its own process group (Ctrl-C
reaches only the parent), stopped with SIGINT, SIGTERM, SIGKILL and reaped, and ended with their parent."""
from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

PACKAGE_ROOT = Path(__file__).resolve().parents[2]     # the checkout (or prefix) holding the package


def child_env(base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """``base`` (default ``os.environ``) with :data:`PACKAGE_ROOT` first on ``PYTHONPATH``, unbuffered
    output (a complete log when the child dies), no ANSI colours."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    return env


def module_command(module: str, ros_args: Sequence[str] = ()) -> List[str]:
    """argv running ``python -m module --ros-args *ros_args`` with this interpreter."""
    return [sys.executable, "-m", module, "--ros-args", *[str(a) for a in ros_args]]


# prctl(PR_SET_PDEATHSIG) looked up here, not in the forked child (no loader work between fork and exec)
_PRCTL = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def default_sigint() -> None:
    """Default SIGINT in a child (between fork and exec): a background job's is ignored.  On Linux the
    child also gets SIGINT (what :meth:`ManagedProcess.stop` sends first, a clean rclpy shutdown) when its
    parent dies, killed or not: no node outlives a killed demo or test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGINT))


class ManagedProcess:
    """Child ``name`` running ``cmd`` in ``env`` (and ``cwd``), stdout and stderr in ``log_path``."""

    def __init__(self, name: str, cmd: Sequence[str], env: Dict[str, str], log_path: Path,
                 cwd: Optional[Path] = None) -> None:
        self.name = name
        self.cmd: List[str] = [str(c) for c in cmd]
        self.env = env
        self.log_path = Path(log_path)
        self.cwd = cwd
        self.proc: Optional[subprocess.Popen] = None
        self._header_bytes = 0

    def start(self) -> None:
        """Start the child in a new session.  Raises RuntimeError: already started; OSError."""
        if self.proc is not None:
            raise RuntimeError(f"{self.name} already started (pid {self.proc.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            header = ("$ " + shlex.join(self.cmd).replace("\n", "\\n") + "\n").encode()
            log.write(header)
            log.flush()
            self._header_bytes = len(header)
            self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=self.cwd, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=default_sigint)

    @property
    def pid(self) -> Optional[int]:
        """Process id, ``None`` before :meth:`start`."""
        return None if self.proc is None else self.proc.pid

    def poll(self) -> Optional[int]:
        """Exit code if the child has exited (it is reaped), else ``None`` (also before start)."""
        return None if self.proc is None else self.proc.poll()

    def running(self) -> bool:
        """True while the child has been started and has not exited."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_int_s: float = 5.0, grace_term_s: float = 3.0) -> Optional[int]:
        """Stop the process group (SIGINT, ``grace_int_s``; SIGTERM, ``grace_term_s``; SIGKILL), reap it;
        the exit code (negative: killed), None if never started.  Idempotent."""
        if self.proc is None:
            return None
        # signal only before the reaping: until then its pid (= group id) is nobody else's
        if self.proc.returncode is None:
            for sig, grace in ((signal.SIGINT, grace_int_s), (signal.SIGTERM, grace_term_s),
                               (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, sig)
                try:
                    self.proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        return self.proc.wait()

    def output(self) -> str:
        """Everything the child printed so far (the log without its command line)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._header_bytes)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 15) -> str:
        """Last ``lines`` lines of what the child printed (for error messages)."""
        return "\n".join(self.output().rstrip().splitlines()[-lines:])
