"""The adapter layer's errors (each a :class:`devptr.StateError`, so a ``RuntimeError``).

Exported where users meet them: ``devptr.adapters.lamport.WorkspaceClosedError`` and
``devptr.adapters.mamba_spec_decode.NotInitializedError``.
"""

from __future__ import annotations

from devptr import StaleBufferError, StateError


class NotInitializedError(StateError):
    """An adapter object was used before the call that fills its tables."""


class WorkspaceClosedError(StaleBufferError):
    """A LamportWorkspace was used after :meth:`LamportWorkspace.close`."""


__all__ = ["NotInitializedError", "WorkspaceClosedError"]
