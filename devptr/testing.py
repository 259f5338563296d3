"""Helpers for testing pointer code without Intel XPU hardware.

- :class:`FakeTensor`: an object whose ``data_ptr()`` returns a chosen address.
- XPU-like address constants (bit 63 set, 8-byte aligned unless stated).
- :func:`high_addresses`: a context manager (and the ``high_addresses_mode`` pytest
  fixture) that runs code "as if" every tensor address had bit 63 set, by flipping bit 63
  of what ``Tensor.data_ptr()`` and ``UntypedStorage.data_ptr()`` return. Use it for host
  paths that build tables; translate back with :func:`real_address` before dereferencing.
- :func:`encoding_environment`: run a block with another ``DEVPTR_ENCODING`` (devptr reads
  the variable once, at first use).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Final

import torch

from devptr._errors import AddressRangeError, PtrTypeError, describe
from devptr._ptr import ADDR_LIMIT, SIGN_BIT, DevicePtr

XPU_BASE: Final = 0xFFFF81AB54E01000
"""A Level Zero USM device address as seen on Intel XPU."""
SIGN_BIT_ADDR: Final = SIGN_BIT
"""2**63: the smallest address an int64 cannot hold."""
TOP_ALIGNED: Final = ADDR_LIMIT - 8
"""2**64 - 8: the highest 8-byte-aligned address."""
SIGN_BIT_PLUS_42: Final = SIGN_BIT + 42
"""(1 << 63) + 42: high and deliberately unaligned."""
HIGH_ADDRESSES: Final[tuple[int, ...]] = (SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, XPU_BASE, TOP_ALIGNED)
"""Addresses at or above 2**63 every pointer path must store bit-exactly."""
PATTERN_ADDRESSES: Final[tuple[int, ...]] = (
    0,
    1,
    1 << 47,
    SIGN_BIT - 1,
    SIGN_BIT,
    TOP_ALIGNED,
    ADDR_LIMIT - 1,
)
"""The boundary classes: null, tiny, CUDA-like, int64 max, 2**63, top aligned, 2**64-1."""


class FakeTensor:
    """Stands in for a tensor on the host path: ``data_ptr()`` returns ``addr``.

    ``addr`` may be given unsigned (``2**64 - 8``) or as a signed int64 (``-8``) to mimic
    backends that report two's complement. ``nbytes`` sizes the fake storage for code
    that asks (``untyped_storage().nbytes()``).
    """

    __slots__ = ("_addr", "nbytes")

    def __init__(self, addr: int, nbytes: int = 0) -> None:
        if type(addr) is not int:
            raise PtrTypeError(f"addr must be an int (got {describe(addr)})")
        if not -SIGN_BIT <= addr < ADDR_LIMIT:
            raise AddressRangeError(f"addr must fit 64 bits (got {addr:#x})")
        self._addr = addr
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        return self._addr

    def untyped_storage(self) -> FakeTensor:
        return self

    def __repr__(self) -> str:
        return f"FakeTensor({self._addr:#x})"


def fake_tensors(base: int = XPU_BASE, count: int = 4, stride: int = 1 << 20) -> list[FakeTensor]:
    """``count`` fakes at ``base, base + stride, ...`` (all below 2**64)."""
    return [FakeTensor(base + k * stride) for k in range(count)]


@contextlib.contextmanager
def encoding_environment(value: str | None) -> Iterator[None]:
    """Run a block with ``DEVPTR_ENCODING`` set to ``value`` (None: unset), then restore it.

    devptr reads the variable once, at the first :func:`devptr.encoding_for`; this sets
    it, re-reads it (:func:`devptr._encoding.reload_environment`), and on exit restores
    the previous value and the :func:`devptr.register_backend` registry. For tests and
    tools in one process; not for concurrent threads.
    """
    from devptr import _encoding

    old_env = os.environ.get(_encoding.ENV_VAR)
    with _encoding._lock:
        old_reg = dict(_encoding._registered)
    _set_env(_encoding.ENV_VAR, value)
    try:
        _encoding.reload_environment()
        yield
    finally:
        _set_env(_encoding.ENV_VAR, old_env)
        with _encoding._lock:
            _encoding._registered.clear()
            _encoding._registered.update(old_reg)
        _encoding.reload_environment()


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


_lock = threading.Lock()
_depth = 0
_saved: dict[str, Callable[..., int]] = {}


def real_address(ptr: DevicePtr) -> DevicePtr:
    """Undo :func:`high_addresses`' bit flip: the address the memory really has."""
    return DevicePtr(ptr.addr ^ SIGN_BIT)


@contextlib.contextmanager
def high_addresses() -> Iterator[None]:
    """Inside the block, ``Tensor.data_ptr()`` and ``UntypedStorage.data_ptr()`` report
    every address with bit 63 flipped (so CPU/CUDA addresses look like XPU ones).

    Only for host-side table building: never hand such an address to a kernel; use
    :func:`real_address` to translate back. Re-entrant; not for concurrent threads.
    """
    global _depth
    with _lock:
        if _depth == 0:
            for cls in (torch.Tensor, torch.UntypedStorage):
                orig = cls.data_ptr
                _saved[cls.__name__] = orig

                def flipped(self: object, _orig: Callable[..., int] = orig) -> int:
                    return _orig(self) ^ SIGN_BIT

                cls.data_ptr = flipped  # type: ignore[method-assign]
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                torch.Tensor.data_ptr = _saved.pop("Tensor")  # type: ignore[method-assign]
                torch.UntypedStorage.data_ptr = _saved.pop("UntypedStorage")  # type: ignore[method-assign]


try:  # the fixture, when pytest is importable (test environments)
    import pytest

    @pytest.fixture
    def high_addresses_mode() -> Iterator[None]:
        """Pytest fixture form of :func:`high_addresses`."""
        with high_addresses():
            yield

except ImportError:  # pragma: no cover - pytest absent at runtime
    pass
