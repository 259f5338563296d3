"""``devptr migrate`` never loses, truncates or clobbers a file (issue 22, items 1-4, 7, 16).

Real files in a temporary tree, the real command (in process through typer's runner, or as
a subprocess where the old behaviour hung or exhausted memory). Faults that need privileges
the test may not have are made at the OS boundary: a full disk is ``os.write`` failing with
ENOSPC after a partial write, an unreadable folder is ``os.scandir`` raising EACCES.
"""

from __future__ import annotations

import errno
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import devptr.migrate._engine as engine
import devptr.migrate._runner as runner
from devptr.cli import app

STORE = (
    "import torch\n\n"
    "T = torch.zeros(4, dtype=torch.int64)\n\n\n"
    "def put(x):\n"
    "    T[0] = x.data_ptr()\n"
)
FIXED = "devptr.store(T, 0, devptr.DevicePtr.of(x))"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["migrate", *args])
    return result.exit_code, result.stderr


def _tree(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for name in names:
        (root / name).write_text(STORE)
    return root


def _no_temp_files(root: Path) -> None:
    assert [p.name for p in root.rglob("*.devptr")] == []


def test_disk_full_leaves_the_old_file_and_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 (1): on a full disk the old writer left a truncated file."""
    root = _tree(tmp_path, "a.py", "b.py")
    real_write = os.write
    calls: dict[int, int] = {}

    def full_disk(fd: int, data: Any) -> int:
        target = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else ""
        if not target.startswith(str(root)):
            return real_write(fd, data)
        calls[fd] = calls.get(fd, 0) + 1
        if calls[fd] == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])  # a partial write, then full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full_disk)
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 2
    assert (root / "a.py").read_text() == STORE and (root / "b.py").read_text() == STORE
    assert "a.py: not written: No space left on device; unchanged" in err
    assert "2 failed" in err
    _no_temp_files(root)


def _editing(monkeypatch: pytest.MonkeyPatch, edit: Callable[[Path], None]) -> None:
    """Edit the file on disk right after migrate has read and rewritten it in memory."""
    real = engine.migrate_source

    def migrate_then_edit(code: str, **kw: Any) -> engine.Outcome:
        out = real(code, **kw)
        edit(Path(kw["filename"]))
        return out

    monkeypatch.setattr(engine, "migrate_source", migrate_then_edit)


def test_a_file_edited_during_the_run_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 (2): the edit was overwritten with the rewrite of the old content."""
    root = _tree(tmp_path, "a.py")
    monkeypatch.chdir(tmp_path)
    _editing(monkeypatch, lambda p: p.write_text(STORE + "\n\ndef user_edit():\n    pass\n"))
    code, err = _invoke("tree", "--jobs", "1")
    assert code == 2
    assert "user_edit" in (root / "a.py").read_text()
    assert "tree/a.py: content changed since it was read" in err or "changed on disk" in err
    assert "1 failed" in err


def test_a_touched_file_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same bytes, a new modification time: someone saved it; do not write over it."""
    root = _tree(tmp_path, "a.py")
    monkeypatch.chdir(tmp_path)

    def touch(p: Path) -> None:
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))

    _editing(monkeypatch, touch)
    code, err = _invoke("tree", "--jobs", "1")
    assert code == 2
    assert (root / "a.py").read_text() == STORE
    assert "tree/a.py: changed on disk since it was read" in err


def test_a_file_changed_after_the_analysis_is_not_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's positions belong to the text it analysed, not to a newer one."""
    root = _tree(tmp_path, "a.py")
    edited = "# a new first line\n" + STORE
    real = runner.analyze_files

    def check_then_edit(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        (root / "a.py").write_text(edited)
        return out

    monkeypatch.setattr(runner, "analyze_files", check_then_edit)
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 2
    assert (root / "a.py").read_text() == edited
    assert "changed on disk since it was analysed" in err


def test_a_read_only_file_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    """Issue 22 (4): a read-only file aborted the run half-way (or, as root, was written)."""
    root = _tree(tmp_path, "a.py", "b.py", "c.py")
    (root / "b.py").chmod(0o444)
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 2
    assert "b.py: read-only" in err
    assert (root / "b.py").read_text() == STORE
    assert FIXED in (root / "a.py").read_text() and FIXED in (root / "c.py").read_text()
    assert "3 files scanned, 2 changed, 1 failed" in err
    assert "│     2 │" in err  # the fixes counted are those written


def test_mode_is_kept_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    root = _tree(tmp_path, "a.py")
    (root / "a.py").chmod(0o751)
    code, _ = _invoke(str(root), "--jobs", "1")
    assert code == 0
    assert FIXED in (root / "a.py").read_text()
    assert stat.S_IMODE((root / "a.py").stat().st_mode) == 0o751
    _no_temp_files(root)


def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path: Path) -> None:
    """Issue 22 (3): migrate rewrote files outside the tree it was given."""
    root = _tree(tmp_path, "a.py")
    outside = tmp_path / "elsewhere.py"
    outside.write_text(STORE)
    (root / "link.py").symlink_to(outside)
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 0
    assert outside.read_text() == STORE
    assert "link.py: skipped: a symlink to" in err and "outside the paths given" in err
    assert FIXED in (root / "a.py").read_text()


def test_a_symlink_inside_the_tree_is_migrated_once_and_stays_a_link(tmp_path: Path) -> None:
    root = _tree(tmp_path, "a.py")
    (root / "alias.py").symlink_to(root / "a.py")
    code, _ = _invoke(str(root), "--jobs", "1")
    assert code == 0
    assert (root / "alias.py").is_symlink()
    text = (root / "a.py").read_text()
    assert text.count(FIXED) == 1 and text.count("import devptr") == 1


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command, with a 2 GiB address-space cap and a time limit (reading
    /dev/zero or opening a FIFO must not take the machine down or hang the suite)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "devptr.cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=60, preexec_fn=cap, check=False)


@pytest.mark.parametrize("tool", ["check", "migrate"])
def test_fifo_and_dev_zero_are_skipped_without_opening_them(tmp_path: Path, tool: str) -> None:
    """Issue 22 (7): a FIFO named x.py blocked both tools; a link to /dev/zero grew to GBs."""
    root = _tree(tmp_path, "a.py")
    os.mkfifo(root / "fifo.py")
    (root / "zero.py").symlink_to("/dev/zero")
    explicit = tmp_path / "named.py"
    os.mkfifo(explicit)
    args = [tool, "tree", "named.py"] + (["--check"] if tool == "migrate" else [])
    done = _cli(*args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the finding of a.py; skipping is no failure
    out = done.stdout + done.stderr
    assert "fifo.py: skipped: a FIFO, not a regular file" in out
    assert "named.py: skipped: a FIFO, not a regular file" in out
    assert "zero.py: skipped: a symlink to /dev/zero" in out


def test_bom_and_latin_1_files_are_migrated_in_their_encoding(tmp_path: Path) -> None:
    """Issue 22 (16): such files (valid Python) were not analysed; now they are, and are
    written back with their BOM and in their encoding."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "bom.py").write_bytes(b"\xef\xbb\xbf" + STORE.encode())
    latin = b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n" + STORE.encode()
    (root / "latin.py").write_bytes(latin)
    (root / "crlf.py").write_bytes(STORE.replace("\n", "\r\n").encode())
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 0, err
    bom = (root / "bom.py").read_bytes()
    assert bom.startswith(b"\xef\xbb\xbfimport torch\nimport devptr\n") and FIXED.encode() in bom
    new = (root / "latin.py").read_bytes()
    assert b"NAME = '\xe9t\xe9'" in new and FIXED.encode() in new
    assert new.decode("latin-1").count("\r") == 0
    crlf = (root / "crlf.py").read_bytes()
    assert FIXED.encode() in crlf and b"\n" not in crlf.replace(b"\r\n", b"")


def test_undecodable_and_unparsable_files_fail_the_run(tmp_path: Path) -> None:
    root = _tree(tmp_path, "a.py")
    (root / "bad_utf8.py").write_bytes(b"x = '\xff'\n" + STORE.encode())
    (root / "bad_cookie.py").write_bytes(b"# coding: no-such-codec\n" + STORE.encode())
    (root / "bad_syntax.py").write_text(STORE + "def (:\n")
    code, err = _invoke(str(root), "--jobs", "1")
    assert code == 2
    assert "bad_utf8.py: cannot decode" in err
    assert "bad_cookie.py: cannot decode" in err
    assert "bad_syntax.py: parse failed" in err or "bad_syntax.py: syntax error" in err
    assert "4 files scanned, 1 changed, 3 failed" in err
    assert FIXED in (root / "a.py").read_text()


def test_an_unreadable_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 (4): both tools skipped a folder they could not list, silently."""
    root = _tree(tmp_path, "a.py")
    locked = root / "locked"
    locked.mkdir()
    (locked / "b.py").write_text(STORE)
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, err = _invoke(str(root), "--check")
    assert code == 2
    assert "locked: cannot read folder: Permission denied" in err
    result = CliRunner().invoke(app, ["check", str(root)])
    assert result.exit_code == 2
    assert "locked: error: cannot read folder: Permission denied" in result.stdout


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0 if hasattr(os, "geteuid") else True,
                    reason="mounting a small tmpfs needs root (the ENOSPC test above runs anyway)")
def test_a_really_full_disk_leaves_the_old_file(tmp_path: Path) -> None:
    """The same on a real 64 KiB tmpfs, almost filled: the old writer truncated the file,
    then ran out of space writing the new text."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "64k"):
        pytest.skip("this machine refuses to mount a tmpfs")
    try:
        root = disk / "tree"
        root.mkdir()
        body = STORE + "".join(f"\n\ndef put_{k}(x):\n    T[1] = x.data_ptr()\n" for k in range(600))
        (root / "big.py").write_text(body)
        filler = disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk, then free 4 KiB: less than the migrated file grows by
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        os.truncate(filler, max(0, filler.stat().st_size - 4096))
        code, err = _invoke(str(root), "--jobs", "1")
        assert code == 2
        assert (root / "big.py").read_text() == body
        assert "No space left on device" in err
        _no_temp_files(root)
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True, timeout=30, check=False)
