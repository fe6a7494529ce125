"""Child ROS processes the demo starts and always stops (no zombies, no orphans left running).

Each child runs in its own session / process group, so a Ctrl-C in the
terminal reaches only the demo, which then stops the children in order:
SIGINT (rclpy shuts down cleanly), then SIGTERM, then SIGKILL, each after a
grace period, and reaps the process (``wait``) so no zombie remains.  The
whole group is signalled, so anything a child spawned in its group goes too.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence


def default_sigint() -> None:
    """Restore the default SIGINT action in a child (run between fork and exec).

    A program started from a background job inherits SIGINT as *ignored*, and
    Python then installs no KeyboardInterrupt handler: the graceful stop
    (SIGINT first) would be lost and every child would end by SIGTERM.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ManagedProcess:
    """One child process with its output in a log file.

    Args:
        name: label for messages (e.g. ``sensor_node``).
        cmd: argv of the child.
        env: its full environment.
        log_path: file receiving the child's stdout and stderr (overwritten).
        cwd: working directory (default: the demo's).
    """

    def __init__(self, name: str, cmd: Sequence[str], env: Dict[str, str], log_path: Path,
                 cwd: Optional[Path] = None) -> None:
        self.name = name
        self.cmd: List[str] = [str(c) for c in cmd]
        self.env = env
        self.log_path = Path(log_path)
        self.cwd = cwd
        self.proc: Optional[subprocess.Popen] = None
        self.started_at: Optional[float] = None

    def start(self) -> None:
        """Start the child in a new session.

        Raises:
            RuntimeError: already started.
            OSError: the executable cannot be run.
        """
        if self.proc is not None:
            raise RuntimeError(f"{self.name} already started (pid {self.proc.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            # One line: the command, shell-quoted, newlines escaped.
            log.write(("$ " + shlex.join(self.cmd).replace("\n", "\\n") + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=self.cwd, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=default_sigint)
        self.started_at = time.monotonic()

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

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace_int_s: float = 5.0, grace_term_s: float = 3.0) -> Optional[int]:
        """Stop the child (and its process group) and reap it.  Safe to call twice.

        SIGINT, wait ``grace_int_s``; SIGTERM, wait ``grace_term_s``; SIGKILL, wait.
        Each signal goes to the child's whole process group.

        Returns:
            The child's exit code (negative = killed by that signal), ``None``
            if it was never started.
        """
        if self.proc is None:
            return None
        # Signal only while the child is not yet reaped: until then its pid (= its
        # process group id) cannot belong to anybody else, even if it has exited.
        if self.proc.returncode is None:
            for sig, grace in ((signal.SIGINT, grace_int_s), (signal.SIGTERM, grace_term_s),
                               (signal.SIGKILL, 10.0)):
                self._signal_group(sig)
                try:
                    self.proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        return self.proc.wait()

    def tail(self, lines: int = 15) -> str:
        """Last ``lines`` lines of the child's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])
