"""The files of a tree and their text, read the way Python reads them.

One walker (:func:`iter_python_files`) and one reader (:func:`read_source`), used by
``devptr check`` and ``devptr migrate`` alike:

- the walker never follows a symlink out of the paths it was given (a ``*.py`` link whose
  target lies outside them is reported and skipped; links to folders are not followed, as
  :meth:`pathlib.Path.rglob` does not), skips what is not a regular file (a FIFO, a device,
  a link to ``/dev/zero``) with a message instead of opening it, and reports a folder it
  cannot list instead of skipping it silently;
- the reader decodes with the encoding Python would use (:func:`tokenize.detect_encoding`:
  a UTF-8 BOM, a PEP 263 coding cookie, else UTF-8), keeps line ends as written, and
  records what it read (a :class:`Stamp` of the file and a digest of its bytes) so a writer
  can refuse a file that changed since.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tokenize
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, Protocol

import attrs

from devptr.lint.errors import SourceError

DEFAULT_EXCLUDE: Final[tuple[str, ...]] = (
    ".git", ".hg", ".venv", "venv", "__pycache__", "build", "dist", ".tox", ".mypy_cache",
    "node_modules",
)
"""Folder names never walked (``[tool.devptr] exclude`` adds patterns)."""


def default_excluded(path: Path) -> bool:
    """Whether a component of *path* is one of :data:`DEFAULT_EXCLUDE`."""
    return not set(path.parts).isdisjoint(DEFAULT_EXCLUDE)


class Excludes(Protocol):
    """What the walker asks of a configuration (``devptr.lint._config.Config``)."""

    def is_excluded(self, path: Path) -> bool:
        """Whether *path* is skipped."""
        ...


class DefaultExcludes:
    """The excludes without a configuration: :data:`DEFAULT_EXCLUDE` only."""

    @staticmethod
    def is_excluded(path: Path) -> bool:
        """Whether a component of *path* is one of :data:`DEFAULT_EXCLUDE`."""
        return default_excluded(path)


@attrs.frozen
class Stamp:
    """What identifies one state of a file: device, inode, size and modification time."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        """The stamp of a ``stat`` result."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@attrs.frozen
class Source:
    """One file's text and how it was stored.

    ``text`` keeps the line ends as written (``\\r\\n`` stays); a BOM is not part of it.
    ``encoding`` is :func:`tokenize.detect_encoding`'s name (``utf-8-sig`` when the file
    starts with a BOM, so encoding ``text`` with it writes the BOM back). ``stamp`` and
    ``digest`` (SHA-256 of the bytes) are the file as read.
    """

    text: str
    encoding: str
    stamp: Stamp
    digest: str


@attrs.frozen
class Problem:
    """A path the walker did not hand out: ``failed`` when the run may have missed files
    (a folder it could not list), else skipped on purpose (a link out of the tree, a FIFO)."""

    path: str
    message: str
    failed: bool


OnProblem = Callable[[Problem], None]


def digest(data: bytes) -> str:
    """The digest :class:`Source` records for ``data``."""
    return hashlib.sha256(data).hexdigest()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def read_bytes(path: Path | str) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` and its ``stat``, taken from the open file.

    Opened without blocking (``O_NONBLOCK``: a FIFO that replaced the file does not hang
    the read) and refused unless it is a regular file.

    Raises
    ------
    SourceError
        A ``ValueError``: not readable, or not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
    with open(fd, "rb", closefd=True) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"not read: {_kind(st.st_mode)}, not a regular file")
        try:
            data = f.read()
        except OSError as exc:
            raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
    return data, st


def decode_source(data: bytes) -> tuple[str, str]:
    """``(text, encoding)`` of Python source bytes, by :func:`tokenize.detect_encoding`'s rules.

    Raises
    ------
    SourceError
        A ``ValueError``: an invalid coding cookie, a BOM contradicting the cookie, or
        bytes that are not valid in the encoding.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from exc
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        why = f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not valid {encoding}"
        raise SourceError(f"cannot decode: {why}") from exc


def read_source(path: Path | str) -> Source:
    """Read and decode one Python file (see the module docstring).

    Raises
    ------
    SourceError
        A ``ValueError``: unreadable, not a regular file, or not decodable.
    """
    data, st = read_bytes(path)
    text, encoding = decode_source(data)
    return Source(text, encoding, Stamp.of(st), digest(data))


def universal_newlines(text: str) -> str:
    """``text`` with ``\\r\\n`` and ``\\r`` line ends as ``\\n`` (what ``open()`` reads)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def iter_python_files(
    paths: Sequence[Path],
    config: Excludes,
    *,
    force_exclude: bool = False,
    on_problem: OnProblem | None = None,
) -> Iterator[Path]:
    """Python files under *paths*, honouring ``[tool.devptr] exclude``, in sorted order.

    Files named explicitly are kept even if excluded, unless *force_exclude* (what
    pre-commit needs, since it passes every changed file by name); a file named
    explicitly is read even through a symlink. Under a folder, a ``*.py`` symlink whose
    target is outside *paths* is skipped (and reported), one whose target is walked anyway
    is walked once, links to folders are not followed, and anything that is not a regular
    file is skipped (reported). A folder that cannot be listed is reported as a failure.
    This is the one file walker: ``devptr check`` and ``devptr migrate`` both use it.
    """
    report: OnProblem = on_problem if on_problem is not None else (lambda _p: None)
    roots = [os.path.realpath(p) for p in paths]
    seen: set[str] = set()
    for root in paths:
        try:
            st = os.stat(root)
        except OSError as exc:
            report(Problem(str(root), f"cannot read: {exc.strerror or exc}", True))
            continue
        if not stat.S_ISDIR(st.st_mode):
            if force_exclude and config.is_excluded(root):
                continue
            if not stat.S_ISREG(st.st_mode):
                report(Problem(str(root), f"{_kind(st.st_mode)}, not a regular file", False))
                continue
            real = os.path.realpath(root)
            if real not in seen:
                seen.add(real)
                yield root
            continue
        yield from _walk(root, config, roots, seen, report)


def _walk(
    root: Path, config: Excludes, roots: Sequence[str], seen: set[str], report: OnProblem
) -> Iterator[Path]:
    found: list[tuple[Path, bool]] = []

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else root
        if not config.is_excluded(where):
            report(Problem(str(where), f"cannot read folder: {exc.strerror or exc}", True))

    for folder, dirs, files in os.walk(root, onerror=unreadable):
        dirs[:] = [d for d in dirs if d not in DEFAULT_EXCLUDE]
        base = Path(folder)
        for name in files:
            if name.endswith(".py"):
                path = base / name
                found.append((path, os.path.islink(path)))
    found.sort(key=lambda item: item[0])
    plain = {os.path.realpath(p) for p, link in found if not link}
    for path, link in found:
        if config.is_excluded(path):
            continue
        real = os.path.realpath(path)
        if link:
            if not _inside(real, roots):
                report(Problem(str(path), f"a symlink to {real}, outside the paths given",
                               False))
                continue
            if real in plain:
                continue  # its target is walked under its own name
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            report(Problem(str(path), f"{exc.strerror or exc} (a broken symlink?)", False))
            continue
        if not stat.S_ISREG(mode):
            report(Problem(str(path), f"{_kind(mode)}, not a regular file", False))
            continue
        if real in seen:
            continue
        seen.add(real)
        yield path
