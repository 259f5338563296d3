"""Settings of the project being migrated: its configured line length.

Read from the nearest ``ruff.toml``/``.ruff.toml`` (``line-length``) or ``pyproject.toml``
(``[tool.ruff] line-length``, else ``[tool.black] line-length``) in the file's folder or
above; 88 (ruff's and black's default) when none sets it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from devptr.lint._config import load_toml
from devptr.migrate._base import DEFAULT_LINE_LENGTH


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return load_toml(path)
    except (OSError, UnicodeDecodeError, ValueError):  # TOMLDecodeError is a ValueError
        return None


def _length(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@functools.lru_cache(maxsize=256)
def _folder_length(folder: Path) -> int | None:
    """The line length configured in ``folder`` itself, or None."""
    for name in ("ruff.toml", ".ruff.toml"):
        data = _read(folder / name) if (folder / name).is_file() else None
        if data is not None and (found := _length(data.get("line-length"))) is not None:
            return found
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        tool = (_read(pyproject) or {}).get("tool", {})
        for section in ("ruff", "black"):
            table = tool.get(section, {}) if isinstance(tool, dict) else {}
            found = _length(table.get("line-length")) if isinstance(table, dict) else None
            if found is not None:
                return found
    return None


def line_length_for(path: Path) -> int:
    """The line length that applies to ``path`` (a file or folder)."""
    folder = path.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        found = _folder_length(candidate)
        if found is not None:
            return found
    return DEFAULT_LINE_LENGTH
