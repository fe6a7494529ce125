"""The calibration file on disk: reading it and the guarded save (no ROS).  Anyone on the domain can call
``save_calibration``: a save writes only the path fixed at start, never a foreign file, atomically."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import yaml

from .calibration import HEADER, file_text, parse_file

# A file larger than this is not one the node wrote (a calibration of the real Punyo is ~40 kB).
MAX_CHECKED_BYTES = 64 * 1024 * 1024


class SaveRefused(ValueError):
    """``save_calibration`` declined to write; the message says why and that nothing changed."""


@dataclass(frozen=True)
class CalibrationStore:
    """The calibration file fixed at start: ``path`` (absolute, None when ``calibration_file`` is empty);
    ``create_dirs``: a save may create missing parent directories."""

    path: Optional[Path]
    create_dirs: bool = False

    def load(self) -> Dict[str, Dict[str, Any]]:
        """The file's ``sensors`` entries (``{}``: unset or missing); ValueError: not a regular file,
        unreadable, or as :func:`~.calibration.parse_file`."""
        if self.path is None or not os.path.lexists(self.path):
            return {}
        if not self.path.is_file():
            raise ValueError(f"is {_file_kind(self.path)}, not a calibration file")
        try:
            return parse_file(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"unreadable calibration: {exc}") from None

    def save(self, entries: Mapping[str, Dict[str, Any]]) -> str:
        """Write ``{'sensors': entries}`` to :attr:`path` (a link followed); the answer text.  SaveRefused
        (nothing changed): no path or entries, missing directory, foreign file, no backup, an OS error."""
        path = self.path
        if path is None:
            raise SaveRefused("parameter calibration_file is empty")
        if not entries:
            # an empty file would wipe a calibration saved earlier (e.g. before a restart)
            raise SaveRefused(f"no sensor is calibrated; {path} left unchanged")
        target = write_target(path)
        checked = self._check_target(target)
        text = file_text(entries)
        try:
            if not target.parent.is_dir():
                target.parent.mkdir(parents=True, exist_ok=True)   # only with create_dirs (checked above)
            how = _atomic_write(target, text, checked)
        except OSError as exc:
            raise SaveRefused(f"cannot write {target}: {exc}") from None
        shown = str(path) if target == path else f"{path} (a link to {target})"
        return f"wrote calibration of {len(entries)} sensors to {shown}{how}"

    def _check_target(self, path: Path) -> Optional[os.stat_result]:
        """Refuse a missing directory (unless allowed) and any existing file at ``path`` (the
        :func:`write_target`) that is not ours; its ``stat``, None when it does not exist yet."""
        parent = path.parent
        if not parent.is_dir():
            if parent.exists():
                raise SaveRefused(f"refused: {parent} is not a directory; {path} not written")
            if not self.create_dirs:
                raise SaveRefused(f"refused: directory {parent} does not exist and calibration_create_dirs "
                                  f"is false; nothing was created")
            return None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SaveRefused(f"refused: cannot inspect {path}: {exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise SaveRefused(f"refused: {path} exists and is not a regular file; left unchanged")
        why = foreign_reason(path, st.st_size)
        if why is not None:
            raise SaveRefused(f"refused: {path} exists and is not a calibration file written by "
                              f"vsf_sensor_ros ({why}); left unchanged")
        return st


def write_target(path: Path) -> Path:
    """The file a save of ``path`` writes: the end of a chain of symbolic links (which may not exist
    yet), else ``path`` as given (links among its directories are left to the file system)."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def foreign_reason(path: Path, size: int) -> Optional[str]:
    """Why an existing regular file is not a calibration file this package wrote, or None when it is:
    first line :data:`HEADER`, then YAML with a ``sensors`` mapping; or empty (``size`` 0: a placeholder
    for a container's single-file mount)."""
    if size == 0:
        return None
    if size > MAX_CHECKED_BYTES:
        return f"{size} bytes, larger than any calibration"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CHECKED_BYTES)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"unreadable as text: {exc}"
    first = text.split("\n", 1)[0].rstrip("\r")
    if first != HEADER:
        return f"first line is not {HEADER!r}"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "not valid YAML"
    if not isinstance(data, dict) or not isinstance(data.get("sensors"), dict):
        return "no 'sensors' mapping"
    return None


def _atomic_write(path: Path, text: str, checked: Optional[os.stat_result] = None) -> str:
    """Write ``text`` beside ``path`` (temporary file, fsync, verify), rename it over (``checked``: its stat
    before, or None); ``""`` or the note of an in-place write (``EBUSY``: a bind mount).  OSError: ``path``
    as it was; SaveRefused: from :func:`_write_in_place`."""
    data = text.encode("utf-8")
    # replacing our own file keeps its permissions
    mode = stat.S_IMODE(checked.st_mode) if checked is not None else 0o644
    try:
        _replace(path, data, mode)
        return ""
    except OSError as exc:
        # a single-file bind mount is a mount point: it cannot be renamed over
        if exc.errno != errno.EBUSY or checked is None:
            raise
    return _write_in_place(path, data, checked)


def _replace(path: Path, data: bytes, mode: Optional[int] = None) -> None:
    """Write ``data`` to a fresh temporary file beside ``path``, fsync; with ``mode``, read it back
    (:func:`_verify_written`) and chmod it; rename it over ``path``.  OSError: the temporary file is gone,
    ``path`` as it was."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            _verify_written(Path(tmp), data)
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _verify_written(path: Path, data: bytes) -> None:
    """Read ``path`` back: exactly ``data``, and a calibration file of ours (else ``OSError``)."""
    with open(path, "rb") as f:
        back = f.read(len(data) + 1)
    if back != data:
        raise OSError(errno.EIO, f"read back {len(back)} bytes that differ from the {len(data)} written",
                      str(path))
    why = foreign_reason(path, len(data))
    if why is not None:
        raise OSError(errno.EIO, f"written file does not read as a calibration file ({why})", str(path))


def _write_in_place(path: Path, data: bytes, checked: os.stat_result) -> str:
    """Copy ``data`` into the existing file ``path`` (no rename possible) after keeping it as ``<name>.bak``;
    the same file as checked, no link followed; a failed read-back restores it.  The note `` in place``.
    SaveRefused: changed since checked, no backup, or the write failed (restored); OSError: cannot open."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "r+b") as f:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino) or not stat.S_ISREG(now.st_mode):
            raise SaveRefused(f"refused: {path} was replaced while saving; left unchanged")
        old = f.read(MAX_CHECKED_BYTES + 1)
        if old and (old.split(b"\n", 1)[0].rstrip(b"\r") != HEADER.encode()):
            raise SaveRefused(f"refused: {path} changed while saving and is no longer ours; left unchanged")
        backup = None
        if old:
            try:
                backup = _write_backup(path, old)
            except (OSError, SaveRefused) as exc:
                raise SaveRefused(f"refused: {path} can only be written in place (a mount point) and its "
                                  f"backup cannot be kept: {exc}; left unchanged") from None
        also = f" (also in {backup})" if backup else ""
        try:
            _overwrite(f, data)
            f.seek(0)
            why = None if f.read(len(data) + 1) == data else f"refused: {path} did not read back as written"
        except OSError as exc:
            why = f"cannot write {path} in place: {exc}"
        if why is not None:
            _overwrite(f, old, best_effort=True)
            raise SaveRefused(f"{why}; previous content restored{also}")
    kept = f"; previous content kept in {backup}" if backup else ""
    return f" in place (a mount point: no rename possible){kept}"


def _write_backup(path: Path, old: bytes) -> Path:
    """Keep ``old`` as ``<name>.bak`` beside ``path`` atomically; SaveRefused: a foreign ``.bak``; OSError."""
    bak = path.with_name(path.name + ".bak")
    try:
        st = os.lstat(bak)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise SaveRefused(f"{bak} exists and is not a regular file")
        why = foreign_reason(bak, st.st_size)
        if why is not None:
            raise SaveRefused(f"{bak} exists and is not ours ({why})")
    _replace(bak, old)
    return bak


def _overwrite(f: Any, data: bytes, best_effort: bool = False) -> None:
    """Make the open file ``f`` hold exactly ``data``, on disk; ``best_effort`` (putting the old content
    back): an OSError is swallowed (the ``.bak`` copy remains)."""
    try:
        f.seek(0)
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
    except OSError:
        if not best_effort:
            raise


def _file_kind(path: Path) -> str:
    """What is at ``path`` in words ('a directory', 'a FIFO', ..., 'a broken symbolic link')."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a broken symbolic link"
    for test, text in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return text
    return "not a regular file"


__all__ = ["CalibrationStore", "SaveRefused", "foreign_reason", "write_target"]
