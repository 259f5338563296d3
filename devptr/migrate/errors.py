"""The errors of the migrate layer (``devptr migrate``), in one module.

Each is a :class:`~devptr.DevPtrError` and a built-in family (README "Errors"); the
errors of the files and selections it reads are the lint layer's
(:mod:`devptr.lint.errors`).
"""

from __future__ import annotations

from devptr._errors import DevPtrError


class WriteRefusedError(DevPtrError, ValueError):
    """A migrated file was not written; the message says why and that it is unchanged."""


__all__ = ["WriteRefusedError"]
