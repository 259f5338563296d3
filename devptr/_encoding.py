"""How an address is encoded in a 64-bit integer container, per backend.

:class:`Encoding`, :func:`encoding_for` and the ``DEVPTR_ENCODING`` parser are the
vendorable module's (:mod:`devptr.vendor.ptrtable`); this module adds the checked
:func:`register_backend` and :func:`reload_environment`.

``DEVPTR_ENCODING`` is ``U64`` or ``I64`` (every backend) or ``xpu=U64,cuda=I64`` (per
backend: torch's lower-case device types, or names given to :func:`register_backend`
first). It is read once, at the first :func:`encoding_for`; a value that is not exactly
that (``XPU=I64``, ``cuda:0=U64``, ``cdua=U64``, ``U65``) raises
:class:`UnknownBackendError` naming the variable and its value.
"""

from __future__ import annotations

import threading

from devptr._errors import PtrTypeError, UnknownBackendError, describe
from devptr.vendor.ptrtable import BACKENDS, ENV_VAR, Encoding, encoding_for, use_environment

_lock = threading.Lock()


def register_backend(name: str, encoding: Encoding) -> None:
    """Declare (or override) the default encoding of a backend's consumers.

    ``name`` is a device type such as ``"xpu"`` or an out-of-tree backend's registered name
    (it then also becomes valid in ``DEVPTR_ENCODING``, read at the first lookup).
    """
    if not isinstance(name, str):
        raise PtrTypeError(f"backend name must be a str (got {describe(name)})")
    if not name or ":" in name:
        raise UnknownBackendError(
            f"backend name must be a device type such as 'xpu' (got {describe(name)})"
        )
    if not isinstance(encoding, Encoding):
        raise PtrTypeError(f"encoding must be an Encoding (got {describe(encoding)})")
    with _lock:
        BACKENDS[name] = encoding


def reload_environment() -> None:
    """Re-read ``DEVPTR_ENCODING`` now (it is read once, at the first :func:`encoding_for`).

    For tests and tools that change the environment variable inside one process; see
    :func:`devptr.testing.encoding_environment` for a context manager that also restores
    it. Raises :class:`UnknownBackendError` for an invalid value.
    """
    use_environment(ENV_VAR)


__all__ = ["BACKENDS", "ENV_VAR", "Encoding", "encoding_for", "register_backend", "reload_environment"]
