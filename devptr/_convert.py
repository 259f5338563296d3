"""Turning what callers hand us (DevicePtrs, tensors, uint64 arrays) into uint64 arrays.

Every public entry point funnels through here, so the rules are in one place: a
DevicePtr, an object with ``data_ptr()``, or a uint64 array is an address; a raw int,
a float, a bool, a numpy scalar or an int64 array is a :class:`PtrTypeError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from devptr import _checked
from devptr._errors import AddressRangeError, PtrTypeError, describe
from devptr._ptr import DevicePtr

U64 = np.dtype(np.uint64)
U64Array = npt.NDArray[np.uint64]

_RAW_HINT = "wrap raw addresses with DevicePtr(x) or DevicePtr.of(tensor)"


def _reject(item: object, where: str) -> PtrTypeError:
    hint = f"; {_RAW_HINT}" if isinstance(item, (int, np.integer)) else ""
    return PtrTypeError(
        f"{where} must be a DevicePtr or an object with data_ptr() (got {describe(item)}){hint}"
    )


def ptr_array(values: object, where: str = "ptrs") -> U64Array:
    """A 1-D uint64 array of the addresses in ``values``.

    Accepts a uint64 numpy array or CPU ``torch.uint64`` tensor (returned as is, or as a
    zero-copy view), or an iterable of DevicePtrs, or of objects with ``data_ptr()`` (a
    negative ``data_ptr()`` is decoded as two's complement). Anything else, a raw int
    included, raises :class:`PtrTypeError`.
    """
    if isinstance(values, np.ndarray):
        if values.dtype != U64:
            raise PtrTypeError(
                f"{where}: an address array must have dtype uint64 (got {values.dtype}); "
                "int64 arrays are ambiguous: use devptr.addresses() or DevicePtr.from_signed()"
            )
        if values.ndim != 1:
            raise PtrTypeError(f"{where}: an address array must be 1-D (got shape {values.shape})")
        return values
    if isinstance(values, torch.Tensor):
        if values.dtype != torch.uint64 or values.device.type != "cpu":
            raise PtrTypeError(
                f"{where}: an address tensor must be a CPU torch.uint64 tensor "
                f"(got {values.dtype} on {values.device})"
            )
        return ptr_array(values.numpy(), where)
    if isinstance(values, (DevicePtr, str, bytes)) or not isinstance(values, Iterable):
        raise PtrTypeError(
            f"{where} must be a sequence of DevicePtr, tensors or a uint64 array (got {describe(values)})"
        )
    items: Sequence[Any] = values if isinstance(values, (list, tuple)) else list(values)
    if not items:
        return np.empty(0, dtype=U64)
    if type(items[0]) is DevicePtr:
        try:
            addrs = [p.addr if type(p) is DevicePtr else _bad(p) for p in items]
        except _Bad as exc:
            raise _reject(exc.item, f"{where} item") from None
        return np.array(addrs, dtype=U64)
    return _from_data_ptrs(items, where)


class _Bad(Exception):
    def __init__(self, item: object) -> None:
        self.item = item


def _bad(item: object) -> int:
    raise _Bad(item)


def _tensor_ptrs(items: Sequence[Any]) -> U64Array | None:
    """Fast path for real tensors: the unbound ``Tensor.data_ptr`` rejects anything else
    (TypeError), and ``fromiter`` avoids a Python list. None when it does not apply."""
    get = torch.Tensor.data_ptr  # looked up per call: devptr.testing may patch it
    n = len(items)
    try:
        return np.fromiter(map(get, items), dtype=np.int64, count=n).view(U64)
    except OverflowError:  # an address >= 2**63 reported unsigned
        try:
            return np.fromiter(map(get, items), dtype=U64, count=n)
        except (OverflowError, TypeError):
            return None
    except TypeError:
        return None


def _from_data_ptrs(items: Sequence[Any], where: str) -> U64Array:
    if isinstance(items[0], torch.Tensor):
        fast = _tensor_ptrs(items)
        if fast is not None:
            if _checked.ENABLED:
                _record_extents(items, fast)
            return fast
    try:
        raw = [o.data_ptr() for o in items]
    except AttributeError:
        for o in items:
            if not callable(getattr(o, "data_ptr", None)):
                raise _reject(o, f"{where} item") from None
        raise
    arr = np.array(raw)  # devptr: ignore[DP002] -- dtype is inspected: int64/uint64 kept, else per-item path
    if arr.dtype == np.int64:
        out: U64Array = arr.view(U64)  # negatives: two's complement, decoded by the view
    elif arr.dtype == U64:
        out = arr
    else:  # object (ints beyond 64 bits), float, bool...: slow path with per-item errors
        out = np.array([DevicePtr.of(o).addr for o in items], dtype=U64)
    if _checked.ENABLED:
        _record_extents(items, out)
    return out


def _record_extents(items: Sequence[Any], addrs: U64Array) -> None:
    for o, a in zip(items, addrs.tolist(), strict=True):
        extent = _checked.storage_extent(o)
        if extent is not None:
            _checked.record(a, *extent)


def ptr_list(values: object, where: str = "ptrs") -> list[DevicePtr]:
    """Like :func:`ptr_array`, as DevicePtrs."""
    return [DevicePtr(a) for a in ptr_array(values, where).tolist()]


def int_array(values: object, where: str, *, allow_scalar: bool = True) -> npt.NDArray[np.uint64]:
    """Validate non-negative integers (Python ints, any numpy/torch integer array) to uint64.

    Floats and bools raise :class:`PtrTypeError` (a float index would silently lose
    bits); negative values raise :class:`AddressRangeError`.
    """
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    if isinstance(values, bool) or isinstance(values, DevicePtr):
        raise PtrTypeError(f"{where} must be non-negative integers (got {describe(values)})")
    if isinstance(values, int):
        if not allow_scalar:
            raise PtrTypeError(f"{where} must be an array of integers (got {describe(values)})")
        if not 0 <= values < (1 << 64):
            raise AddressRangeError(f"{where} must be in [0, 2**64) (got {hex(values)})")
        return np.array(values, dtype=U64)
    arr = np.asarray(values)
    if arr.dtype == object and arr.size:
        if not all(type(v) is int for v in arr.flat):
            raise PtrTypeError(f"{where} must be integers (got dtype {arr.dtype})")
        if any(not 0 <= v < (1 << 64) for v in arr.flat):
            raise AddressRangeError(f"{where} must be in [0, 2**64)")
        return arr.astype(U64)
    if arr.size == 0:
        return arr.astype(U64)
    if arr.dtype.kind == "u":
        return arr.astype(U64, copy=False)
    if arr.dtype.kind == "i":
        if (arr < 0).any():
            bad = int(arr[arr < 0].flat[0])
            raise AddressRangeError(f"{where} must be non-negative (got {bad})")
        return arr.astype(U64)
    raise PtrTypeError(f"{where} must be integers (got dtype {arr.dtype})")
