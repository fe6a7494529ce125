"""Where ``save_calibration`` writes: through symbolic links, onto single-file bind mounts, over placeholders.

* A symbolic link is followed: its target gets the new calibration, the link stays a link.
* An empty placeholder (``touch``) is ours to write; a foreign non-empty file is still refused.
* A single-file bind mount cannot be renamed over (``EBUSY``): the file is written in place,
  after its previous content was kept as ``<name>.bak``; nothing is ever half-written.  Shown
  in a real mount namespace where this machine allows one (root, ``unshare``), and with the
  rename failing as the kernel makes it fail.

The expected files are the entries written by hand (``ENTRY``/``OLD``), read back with YAML.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from std_srvs.srv import Trigger

from vsf_sensor_ros.rig import calibration_file as cal_store
from vsf_sensor_ros.rig.calibration import HEADER
from vsf_sensor_ros.rig.calibration_file import CalibrationStore, SaveRefused, write_target
from vsf_sensor_ros.ros import calibration as ros_calibration
from vsf_sensor_ros.ros.parameter_table import ConfigError

from .sensor_node_scene import start_node, tare_pressure

OLD = {"pressure": {"type": "PunyoPressureSensor", "attachment": "punyo", "samples": 3,
                    "calibration": {"tare": [101320.0]}}}
ENTRY = {"pressure": {"type": "PunyoPressureSensor", "attachment": "punyo", "samples": 5,
                      "calibration": {"tare": [99000.5]}}}


def _ours(entries: dict) -> bytes:
    return (HEADER + "\n" + yaml.safe_dump({"sensors": entries}, sort_keys=True)).encode()


def _sensors(path: Path) -> dict:
    text = path.read_text()
    assert text.split("\n", 1)[0] == HEADER
    return yaml.safe_load(text)["sensors"]


def _names(d: Path) -> list:
    return sorted(p.name for p in d.iterdir())


def test_the_node_store_names_the_parameter_and_path_of_an_unreadable_file(tmp_path):
    f = tmp_path / "cal.yaml"
    f.write_text("sensors: [1]\n")
    with pytest.raises(ConfigError) as err:
        ros_calibration.CalibrationStore(f).load()
    assert (err.value.parameter, err.value.value) == ("calibration_file", str(f))
    assert "'sensors' must be a mapping" in err.value.detail
    with pytest.raises(ConfigError, match="is a directory"):
        ros_calibration.CalibrationStore(tmp_path).load()
    assert ros_calibration.CalibrationStore(tmp_path / "missing.yaml").load() == {}


# ------------------------------------------------------------------ symbolic links

def test_a_save_through_a_link_writes_the_target_and_the_link_stays(tmp_path):
    real, conf = tmp_path / "real", tmp_path / "conf"
    real.mkdir()
    conf.mkdir()
    (real / "cal.yaml").write_bytes(_ours(OLD))
    link = conf / "cal.yaml"
    link.symlink_to("../real/cal.yaml")
    msg = CalibrationStore(link).save(ENTRY)
    assert msg == f"wrote calibration of 1 sensors to {link} (a link to {real / 'cal.yaml'})"
    assert link.is_symlink() and os.readlink(link) == "../real/cal.yaml"
    assert _sensors(real / "cal.yaml") == ENTRY
    assert CalibrationStore(link).load() == ENTRY
    assert _names(real) == ["cal.yaml"] and _names(conf) == ["cal.yaml"]      # no temporary file left


def test_a_chain_of_links_and_a_link_to_a_file_not_yet_there(tmp_path):
    (tmp_path / "store").mkdir()
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    second.symlink_to(tmp_path / "store" / "cal.yaml")             # dangling: the file is created
    first.symlink_to(second)
    assert write_target(first) == tmp_path / "store" / "cal.yaml"
    CalibrationStore(first).save(ENTRY)
    assert first.is_symlink() and second.is_symlink()
    assert _sensors(tmp_path / "store" / "cal.yaml") == ENTRY
    assert (tmp_path / "store" / "cal.yaml").stat().st_mode & 0o777 == 0o644


def test_a_link_to_a_foreign_file_is_refused_and_both_are_unchanged(tmp_path):
    foreign = tmp_path / "robot.yaml"
    foreign.write_text("robot: {joints: 6}\n")
    link = tmp_path / "cal.yaml"
    link.symlink_to(foreign)
    with pytest.raises(SaveRefused, match=r"robot\.yaml"):
        CalibrationStore(link).save(ENTRY)
    assert foreign.read_text() == "robot: {joints: 6}\n" and os.readlink(link) == str(foreign)


def test_a_link_into_a_missing_directory_follows_calibration_create_dirs(tmp_path):
    link = tmp_path / "cal.yaml"
    link.symlink_to(tmp_path / "missing" / "cal.yaml")
    with pytest.raises(SaveRefused):
        CalibrationStore(link).save(ENTRY)
    assert not (tmp_path / "missing").exists()
    CalibrationStore(link, create_dirs=True).save(ENTRY)
    assert _sensors(tmp_path / "missing" / "cal.yaml") == ENTRY and link.is_symlink()


def test_a_link_loop_is_refused(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(SaveRefused):
        CalibrationStore(a).save(ENTRY)
    assert a.is_symlink() and b.is_symlink() and _names(tmp_path) == ["a.yaml", "b.yaml"]


# ------------------------------------------------------------------ placeholders and foreign files

def test_an_empty_placeholder_is_ours_to_write(tmp_path):
    f = tmp_path / "cal.yaml"
    f.touch()
    f.chmod(0o600)
    assert cal_store.foreign_reason(f, 0) is None
    CalibrationStore(f).save(ENTRY)
    assert _sensors(f) == ENTRY
    assert stat.S_IMODE(f.stat().st_mode) == 0o600                 # its permissions are kept
    assert CalibrationStore(f).load() == ENTRY


@pytest.mark.parametrize("content", [b"\n", b" ", b"robot: {}\n"])
def test_a_foreign_file_that_is_not_empty_is_still_refused(tmp_path, content):
    f = tmp_path / "cal.yaml"
    f.write_bytes(content)
    with pytest.raises(SaveRefused):
        CalibrationStore(f).save(ENTRY)
    assert f.read_bytes() == content and _names(tmp_path) == ["cal.yaml"]


# ------------------------------------------------------------------ a file that cannot be renamed over

@pytest.fixture
def rename_busy(monkeypatch):
    """``os.replace`` onto the given paths fails with EBUSY, as onto a mount point; others are real."""
    busy: set = set()
    real_replace = os.replace

    def replace(src, dst, *a, **kw):
        if os.path.abspath(dst) in busy:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(src), None, str(dst))
        return real_replace(src, dst, *a, **kw)
    monkeypatch.setattr(os, "replace", replace)
    return busy


def test_a_file_that_cannot_be_renamed_over_is_written_in_place_with_a_backup(tmp_path, rename_busy):
    f = tmp_path / "cal.yaml"
    f.write_bytes(_ours(OLD))
    f.chmod(0o640)
    inode = f.stat().st_ino
    rename_busy.add(str(f))
    msg = CalibrationStore(f).save(ENTRY)
    bak = tmp_path / "cal.yaml.bak"
    assert msg == (f"wrote calibration of 1 sensors to {f} in place (a mount point: no rename possible); "
                   f"previous content kept in {bak}")
    assert f.stat().st_ino == inode and stat.S_IMODE(f.stat().st_mode) == 0o640
    assert f.read_bytes() == _ours(ENTRY)                         # shorter or longer: nothing left over
    assert bak.read_bytes() == _ours(OLD)
    assert _names(tmp_path) == ["cal.yaml", "cal.yaml.bak"]
    # a longer content after a shorter one, and the backup replaced by the newest previous content
    longer = {**ENTRY, "second": {"type": "PunyoPressureSensor", "attachment": "punyo", "samples": 1,
                                  "calibration": {"tare": [1.0, 2.0, 3.0]}}}
    CalibrationStore(f).save(longer)
    assert f.read_bytes() == _ours(longer) and bak.read_bytes() == _ours(ENTRY)
    CalibrationStore(f).save(ENTRY)
    assert f.read_bytes() == _ours(ENTRY) and f.stat().st_size == len(_ours(ENTRY))


def test_an_empty_placeholder_that_cannot_be_renamed_over_needs_no_backup(tmp_path, rename_busy):
    f = tmp_path / "cal.yaml"
    f.touch()
    rename_busy.add(str(f))
    msg = CalibrationStore(f).save(ENTRY)
    assert msg.endswith(" in place (a mount point: no rename possible)")
    assert f.read_bytes() == _ours(ENTRY) and _names(tmp_path) == ["cal.yaml"]


@pytest.mark.parametrize("make_bak", ["foreign", "directory"])
def test_no_in_place_write_without_a_backup(tmp_path, rename_busy, make_bak):
    f = tmp_path / "cal.yaml"
    f.write_bytes(_ours(OLD))
    bak = tmp_path / "cal.yaml.bak"
    if make_bak == "foreign":
        bak.write_text("notes: keep me\n")
    else:
        bak.mkdir()
    rename_busy.add(str(f))
    with pytest.raises(SaveRefused, match=r"cal\.yaml\.bak"):
        CalibrationStore(f).save(ENTRY)
    assert f.read_bytes() == _ours(OLD)
    assert (bak.read_text() == "notes: keep me\n") if make_bak == "foreign" else bak.is_dir()
    assert _names(tmp_path) == ["cal.yaml", "cal.yaml.bak"]


def test_other_rename_errors_still_refuse_and_leave_the_file(tmp_path, monkeypatch):
    f = tmp_path / "cal.yaml"
    f.write_bytes(_ours(OLD))
    real_replace = os.replace

    def replace(src, dst, *a, **kw):
        if os.path.abspath(dst) == str(f):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(src), None, str(dst))
        return real_replace(src, dst, *a, **kw)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(SaveRefused):
        CalibrationStore(f).save(ENTRY)
    assert f.read_bytes() == _ours(OLD) and _names(tmp_path) == ["cal.yaml"]


# ------------------------------------------------------------------ a real single-file bind mount

def _can_bind_mount() -> str:
    """Empty when this process may make a mount namespace with a bind mount, else why not."""
    if os.geteuid() != 0:
        return "bind mounts need root"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    r = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return "" if r.returncode == 0 else f"no mount namespace here: {r.stderr.strip()}"


SAVE_IN_NAMESPACE = """
import sys, yaml
from pathlib import Path
from vsf_sensor_ros.rig.calibration_file import CalibrationStore
print(CalibrationStore(Path(sys.argv[1])).save(yaml.safe_load(sys.argv[2])))
"""


def _save_in_mount_namespace(host_file: Path, mount_point: Path, entries: dict) -> str:
    """``mount --bind host_file mount_point`` in a private mount namespace, then save to the mount point."""
    r = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         'mount --bind "$1" "$2" && exec "$3" -c "$4" "$2" "$5"', "sh", str(host_file), str(mount_point),
         sys.executable, SAVE_IN_NAMESPACE, yaml.safe_dump(entries)],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


@pytest.mark.skipif(bool(_can_bind_mount()), reason=_can_bind_mount() or "bind mounts work")
@pytest.mark.parametrize("host_content", ["ours", "placeholder"])
def test_a_real_single_file_bind_mount_is_written_in_place(tmp_path, host_content):
    host, ctr = tmp_path / "host", tmp_path / "container"
    host.mkdir()
    ctr.mkdir()
    host_file = host / "calibration.yaml"
    if host_content == "ours":
        host_file.write_bytes(_ours(OLD))
    else:
        host_file.touch()
    mount_point = ctr / "calibration.yaml"
    mount_point.touch()                      # the container's file the host file is mounted over
    out = _save_in_mount_namespace(host_file, mount_point, ENTRY)
    assert "in place (a mount point: no rename possible)" in out
    # seen from outside the namespace: the host's file has the new calibration, whole
    assert host_file.read_bytes() == _ours(ENTRY)
    assert mount_point.read_bytes() == b""   # the file under the mount point was never touched
    if host_content == "ours":
        assert (ctr / "calibration.yaml.bak").read_bytes() == _ours(OLD)
        assert _names(ctr) == ["calibration.yaml", "calibration.yaml.bak"]
    else:
        assert _names(ctr) == ["calibration.yaml"]
    assert _names(host) == ["calibration.yaml"]


# ------------------------------------------------------------------ through the node's service, over DDS

def _save(probe) -> Trigger.Response:
    return probe.call(Trigger, "/save_calibration", Trigger.Request())


def test_the_node_saves_through_a_link_and_into_a_placeholder(tmp_path, rclpy_context):
    """The node's tare: (101300 + 101320 + 101340) / 3 = 101320 Pa (see ``tare_pressure``)."""
    link = tmp_path / "linked.yaml"
    link.symlink_to("calibration.yaml")      # start_node writes calibration.yaml before the node starts
    extra = {"calibration_file": str(link)}
    with start_node(tmp_path, "cal_targets_probe", extra=extra) as (proc, probe, cal):
        assert tare_pressure(probe).success
        r = _save(probe)
        assert r.success is True, r.message
        assert f"{link} (a link to {cal})" in r.message
        assert link.is_symlink() and os.readlink(link) == "calibration.yaml"
        assert _sensors(cal)["pressure"]["calibration"]["tare"] == pytest.approx([101320.0], rel=1e-12)
    placeholder_dir = tmp_path / "placeholder"
    placeholder_dir.mkdir()
    placeholder = placeholder_dir / "mounted.yaml"
    placeholder.touch()
    with start_node(placeholder_dir, "cal_targets_probe",
                    extra={"calibration_file": str(placeholder)}) as (proc, probe, _):
        assert tare_pressure(probe).success
        r = _save(probe)
        assert r.success is True, r.message
        tare = _sensors(placeholder)["pressure"]["calibration"]["tare"]
        assert tare == pytest.approx([101320.0], rel=1e-12)
