"""The errors of the lint layer (``devptr check``, the engine, the mypy plugin), in one module.

Each is a :class:`~devptr.DevPtrError` and a :class:`ValueError` (README "Errors"); the
modules that raise them re-export them under the names they always had
(``devptr.lint._selection.SelectionError``, ``devptr.lint._config.ConfigError``,
``devptr.lint.engine.SourceError``).
"""

from __future__ import annotations

from devptr._errors import DevPtrError


class SelectionError(DevPtrError, ValueError):
    """A rule selection names no rule; the message names the flag or key it came from."""


class ConfigError(SelectionError):
    """An invalid ``[tool.devptr]`` table."""


class SourceError(DevPtrError, ValueError):
    """A file that cannot be read as Python source; the message says why."""


__all__ = ["ConfigError", "SelectionError", "SourceError"]
