"""Write a migrated file back without ever leaving it lost, partial or clobbered.

:func:`write_back` writes the new text to a temporary file in the same folder (same
filesystem), with the original's permission bits (and owner, where allowed), flushes it to
disk and renames it over the original: a reader, a crash, a full disk or a Ctrl-C sees the
old file or the new one, never a mix. It refuses (and writes nothing) when the file changed
since it was read (its stat stamp or its bytes), when it is read-only (no write bit set:
respected even for root, as an editor would), or when the text cannot be encoded in the
file's encoding. A symlink is written through (its target is replaced, the link stays).
SIGINT is held back during the few system calls between creating the temporary file and
the rename, so an interrupt leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from devptr.lint.engine import Stamp
from devptr.lint.engine._files import digest, read_bytes
from devptr.lint.engine._pool import sigint_held
from devptr.lint.errors import SourceError
from devptr.migrate.errors import WriteRefusedError


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _unchanged(real: Path, stamp: Stamp, sha: str) -> os.stat_result:
    try:
        st = os.stat(real)
    except OSError as exc:
        raise WriteRefusedError(f"not written: {exc.strerror or exc}") from exc
    if Stamp.of(st) != stamp:
        raise WriteRefusedError(
            "changed on disk since it was read (size or modification time); not written, "
            "run devptr migrate again"
        )
    try:
        data, _ = read_bytes(real)
    except SourceError as exc:
        raise WriteRefusedError(f"not written: {exc}") from exc
    if digest(data) != sha:
        raise WriteRefusedError(
            "content changed since it was read; not written, run devptr migrate again"
        )
    return st


def write_back(path: Path, text: str, *, encoding: str, stamp: Stamp, sha: str) -> None:
    """Replace the file at ``path`` (read as ``stamp``/``sha``) with ``text`` atomically.

    Raises
    ------
    WriteRefusedError
        A ``ValueError``: the file is left as it was (see the module docstring).
    """
    real = Path(os.path.realpath(path))
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise WriteRefusedError(
            f"not written: the migrated text cannot be encoded as {encoding} ({exc.reason})"
        ) from exc
    st = _unchanged(real, stamp, sha)
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise WriteRefusedError("read-only (no write permission bit); not written")
    with sigint_held():
        try:
            fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".devptr")
        except OSError as exc:
            raise WriteRefusedError(f"not written: {exc.strerror or exc}; unchanged") from exc
        try:
            try:
                _write_all(fd, data)
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if hasattr(os, "fchown"):
                    with contextlib.suppress(OSError):  # only root may give files away
                        os.fchown(fd, st.st_uid, st.st_gid)
                os.fsync(fd)
            finally:
                os.close(fd)
            if Stamp.of(os.stat(real)) != stamp:  # last look, just before the rename
                raise WriteRefusedError(
                    "changed on disk while being migrated; not written, run devptr migrate again"
                )
            os.replace(tmp, real)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise WriteRefusedError(f"not written: {exc.strerror or exc}; unchanged") from exc
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
