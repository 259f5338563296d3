"""devptr: device pointers as a typed, checked value.

Addresses are held as unsigned 64-bit values (:class:`DevicePtr`), stored in uint64
host memory (:class:`PtrBuffer`, :class:`PtrTable`) and handed to each consumer in the
encoding it reads (:class:`Encoding`: int64 two's complement for CUDA/ROCm ops, uint64
for XPU), bit-exactly on every supported torch version.

Names are imported on first use (PEP 562), so tools that need only part of the package
(``devptr check``, the mypy plugin) do not pay for importing torch.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

# The public API, written once: these imports are what type checkers see (``X as X`` is an
# explicit re-export), and at run time :func:`_read_exports` reads the same statements to
# build the lazy table and ``__all__``.
if _typing.TYPE_CHECKING:
    from devptr._buffer import PtrBuffer as PtrBuffer
    from devptr._checked import checked as checked
    from devptr._encoding import Encoding as Encoding
    from devptr._encoding import encoding_for as encoding_for
    from devptr._encoding import register_backend as register_backend
    from devptr._errors import AddressOverflowError as AddressOverflowError
    from devptr._errors import AddressRangeError as AddressRangeError
    from devptr._errors import CapacityError as CapacityError
    from devptr._errors import CheckedModeError as CheckedModeError
    from devptr._errors import DevPtrError as DevPtrError
    from devptr._errors import InvalidValueError as InvalidValueError
    from devptr._errors import LengthMismatchError as LengthMismatchError
    from devptr._errors import PtrTypeError as PtrTypeError
    from devptr._errors import StaleBufferError as StaleBufferError
    from devptr._errors import StateError as StateError
    from devptr._errors import UnknownBackendError as UnknownBackendError
    from devptr._pool import PtrBufferPool as PtrBufferPool
    from devptr._ptr import DevicePtr as DevicePtr
    from devptr._ptr import SupportsDataPtr as SupportsDataPtr
    from devptr._ptr import extent_of as extent_of
    from devptr._sizes import SizeBuffer as SizeBuffer
    from devptr._store import addresses as addresses
    from devptr._store import ptr_tensor as ptr_tensor
    from devptr._store import store as store
    from devptr._table import Column as Column
    from devptr._table import PtrTable as PtrTable

__version__ = "0.1.0"


def _read_exports() -> dict[str, str]:
    """Public name -> its core module, read from the ``TYPE_CHECKING`` block above."""
    import ast
    import pathlib

    tree = ast.parse(pathlib.Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test).endswith("CHECKING"))
    return {
        alias.asname or alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
    }


_HOMES: dict[str, str] = _read_exports()

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'devptr' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API (``__all__``) and ``__version__``; not the helpers of this module."""
    return sorted([*__all__, "__version__"])
