"""The kernel layer's errors (each a :class:`devptr.DevPtrError` of one built-in family).

Raised by the launchers and exported where users meet them: ``devptr.kernels``
(:class:`AddrParamError`, :class:`TritonUnavailableError`) and ``devptr.kernels.lamport``
(:class:`LamportTimeoutError`, also ``devptr.adapters.lamport.LamportTimeoutError``).
"""

from __future__ import annotations

from devptr import DevPtrError


class AddrParamError(DevPtrError, TypeError):
    """A kernel parameter named as an address is missing or not annotated ``tl.int64``."""


class TritonUnavailableError(DevPtrError, ImportError):
    """A devptr kernel was used, and Triton cannot be imported."""


class LamportTimeoutError(DevPtrError, TimeoutError):
    """A Lamport all-reduce gave up waiting for a peer's data, on this rank or another.

    The workspace is poisoned from then on, on every rank: later calls raise this error
    (or, on a GPU before the host has seen the timeout, write NaN) until it is rebuilt.
    Also importable as ``devptr.adapters.lamport.LamportTimeoutError``.
    """


__all__ = ["AddrParamError", "LamportTimeoutError", "TritonUnavailableError"]
