"""Turning what callers hand us (DevicePtrs, tensors, uint64 arrays) into uint64 arrays.

Every public entry point funnels through here, so the rules are in one place: a
DevicePtr, an object with ``data_ptr()``, or a uint64 array is an address; a raw int,
a float, a bool, a numpy scalar or an int64 array is a :class:`PtrTypeError`. Integers
that are not addresses (counts, sizes, indices, strides) are validated by :func:`uint_array`
and :func:`index_value`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt
import torch

from devptr import _checked
from devptr._errors import (
    AddressRangeError,
    CapacityError,
    InvalidValueError,
    PtrTypeError,
    describe,
)
from devptr._ptr import ADDR_LIMIT, SIGN_BIT, DevicePtr, SupportsDataPtr, note_extent

U64 = np.dtype(np.uint64)
U64Array = npt.NDArray[np.uint64]

_RAW_HINT = "wrap raw addresses with DevicePtr(x) or DevicePtr.of(tensor)"


def _reject(item: object, where: str) -> PtrTypeError:
    hint = f"; {_RAW_HINT}" if isinstance(item, (int, np.integer)) else ""
    return PtrTypeError(
        f"{where} must be a DevicePtr or an object with data_ptr() (got {describe(item)}){hint}"
    )


AddressLike = DevicePtr | SupportsDataPtr
"""One address: a DevicePtr, or an object with ``data_ptr()`` (a tensor, a storage...)."""
Addresses = Sequence[AddressLike] | U64Array | torch.Tensor
"""What every call that takes many addresses accepts: a sequence mixing DevicePtrs and
objects with ``data_ptr()``, a 1-D uint64 numpy array, or a 1-D CPU ``torch.uint64``
tensor."""


def ptr_array(values: object, where: str = "ptrs") -> U64Array:
    """A 1-D uint64 array of the addresses in ``values``.

    Accepts a uint64 numpy array or CPU ``torch.uint64`` tensor (returned as is, or as a
    zero-copy view), or an iterable mixing DevicePtrs and objects with ``data_ptr()`` (a
    negative ``data_ptr()`` is decoded as two's complement). Anything else, a raw int
    included, raises :class:`PtrTypeError` naming the item and its position.
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
        return ptr_array(values.view(torch.int64).numpy().view(U64), where)
    if isinstance(values, (DevicePtr, str, bytes)) or not isinstance(values, Iterable):
        raise PtrTypeError(
            f"{where} must be a sequence of DevicePtr, tensors or a uint64 array (got {describe(values)})"
        )
    items: Sequence[object] = values if isinstance(values, (list, tuple)) else list(values)
    if not items:
        return np.empty(0, dtype=U64)
    if type(items[0]) is DevicePtr:
        try:
            addrs = [p.addr if type(p) is DevicePtr else _bad(p) for p in items]
        except _Bad:
            return _mixed(items, where)
        return np.array(addrs, dtype=U64)
    return _from_data_ptrs(items, where)


class _Bad(Exception):
    def __init__(self, item: object) -> None:
        self.item = item


def _bad(item: object) -> int:
    raise _Bad(item)


def _mixed(items: Sequence[object], where: str) -> U64Array:
    """The general path: one item at a time, so an error names the item and its position."""
    out = np.empty(len(items), dtype=U64)
    for k, o in enumerate(items):
        if isinstance(o, DevicePtr):
            out[k] = o.addr
        elif callable(getattr(o, "data_ptr", None)):
            try:
                out[k] = DevicePtr.of(o).addr  # type: ignore[arg-type]  # has data_ptr()
            except PtrTypeError as exc:  # name the item's position
                raise PtrTypeError(f"{where}[{k}]: {exc}") from None
            except AddressRangeError as exc:
                raise AddressRangeError(f"{where}[{k}]: {exc}") from None
        else:
            raise _reject(o, f"{where}[{k}]")
    return out


def _tensor_ptrs(items: Sequence[object]) -> U64Array | None:
    """Fast path for real tensors: the unbound ``Tensor.data_ptr`` rejects anything else
    (TypeError), and ``fromiter`` avoids a Python list. None when it does not apply."""
    get = torch.Tensor.data_ptr  # looked up per call: devptr.testing may patch it
    n = len(items)
    try:
        return np.fromiter(map(get, items), dtype=np.int64, count=n).view(U64)  # type: ignore[arg-type]
    except OverflowError:  # an address >= 2**63 reported unsigned
        try:
            return np.fromiter(map(get, items), dtype=U64, count=n)  # type: ignore[arg-type]
        except (OverflowError, TypeError):
            return None
    except TypeError:
        return None


def _from_data_ptrs(items: Sequence[object], where: str) -> U64Array:
    if isinstance(items[0], torch.Tensor):
        fast = _tensor_ptrs(items)
        if fast is not None:
            if _checked.ENABLED:
                _record_extents(items, fast)
            return fast
    try:
        raw = [o.data_ptr() for o in items]  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return _mixed(items, where)
    # An int64 array is the two's complement of addresses >= 2**63 (decoded by the
    # uint64 view); uint64 holds them as is; anything else takes the per-item path.
    arr = np.array(raw)  # devptr: ignore[DP002] -- dtype is inspected: int64/uint64 kept, else per-item path
    if arr.dtype == np.int64:
        out: U64Array = arr.view(U64)
    elif arr.dtype == U64:
        out = arr
    else:  # object (ints beyond 64 bits), float, bool...: per-item errors
        out = _mixed(items, where)
    if _checked.ENABLED:
        _record_extents(items, out)
    return out


def _record_extents(items: Sequence[object], addrs: U64Array) -> None:
    if not _checked.is_enabled():  # on in another thread only
        return
    for o, a in zip(items, addrs.tolist(), strict=True):
        note_extent(a, o)


_max = np.maximum.reduce
_min = np.minimum.reduce


def uint_array(
    values: object, where: str, *, below: int = ADDR_LIMIT, scalar: bool = False
) -> tuple[U64Array, int]:
    """Validate non-negative integers below ``below``: ``(uint64 array, largest value)``.

    The one validator for counts, sizes, indices, strides and offsets. Accepts Python ints
    (a lone one only with ``scalar``: then a 0-d array), sequences of ints, integer numpy
    arrays and CPU integer tensors; the result may be a zero-copy view of the input
    (non-negative int64 values have the same bits). Floats, bools, DevicePtrs and strings
    raise :class:`PtrTypeError` (a float would silently lose bits); a negative value or
    one ``>= below`` raises :class:`AddressRangeError`. The largest value is 0 when empty.
    """
    if isinstance(values, torch.Tensor):
        if values.device.type != "cpu":
            raise PtrTypeError(f"{where}: expected host values (got a tensor on {values.device})")
        values = (
            values.view(torch.int64).numpy().view(U64)
            if values.dtype == torch.uint64
            else values.detach().numpy()
        )
    if isinstance(values, (DevicePtr, bool, np.bool_, str, bytes)):
        raise PtrTypeError(f"{where} must be non-negative integers (got {describe(values)})")
    if isinstance(values, (int, np.integer)):
        if not scalar:
            raise PtrTypeError(f"{where} must be a sequence of integers (got {describe(values)})")
        v = uint_value(values, where, below)
        return np.array(v, dtype=U64), v
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    if arr.ndim != 1:
        raise PtrTypeError(f"{where} must be 1-D (got shape {arr.shape})")
    if arr.size == 0:
        return np.empty(0, dtype=U64), 0
    kind = arr.dtype.kind
    if kind == "i":
        # A negative int64 reads >= 2**63 through the uint64 view: when ``below`` is at most
        # 2**63 one reduction checks both ends (and the view is the result, no copy).
        u = arr.view(U64) if arr.dtype == np.int64 else arr.astype(np.int64).view(U64)
        if below > SIGN_BIT:
            lo = int(_min(arr))
            if lo < 0:
                raise AddressRangeError(f"{where} must be non-negative (got {lo})")
        hi = int(_max(u))
        if hi >= SIGN_BIT:
            raise AddressRangeError(f"{where} must be non-negative (got {int(_min(arr))})")
        if hi >= below:
            raise AddressRangeError(f"{where} must be below {_bound(below)} (got {hi})")
        return u, hi
    if kind == "u":
        hi = int(_max(arr))
        if hi >= below:
            raise AddressRangeError(f"{where} must be below {_bound(below)} (got {hi})")
        return (arr if arr.dtype == U64 else arr.astype(U64)), hi
    if kind == "O":
        vals = arr.tolist()
        if all(type(v) is int for v in vals):
            lo, hi = min(vals), max(vals)
            if lo < 0:
                raise AddressRangeError(f"{where} must be non-negative (got {lo})")
            if hi >= below:
                raise AddressRangeError(f"{where} must be below {_bound(below)} (got {hi})")
            return np.array(vals, dtype=U64), hi
    raise PtrTypeError(f"{where} must be integers (got dtype {arr.dtype})")


def uint_value(value: object, where: str, below: int = ADDR_LIMIT) -> int:
    """Validate one non-negative integer below ``below`` (a Python int or numpy integer;
    not a bool): :class:`PtrTypeError` for another type, :class:`AddressRangeError` out of
    range. The scalar form of :func:`uint_array`."""
    if type(value) is not int:
        if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
            raise PtrTypeError(f"{where} must be a non-negative int (got {describe(value)})")
        value = int(value)
    if not 0 <= value < below:
        raise AddressRangeError(f"{where} must be in [0, {_bound(below)}) (got {value})")
    return value


def positive_int(value: object, where: str, minimum: int = 1) -> int:
    """Validate a count or size parameter: an int (not a bool) ``>= minimum``.

    :class:`PtrTypeError` for another type, :class:`InvalidValueError` below ``minimum``.
    """
    if type(value) is not int:
        raise PtrTypeError(f"{where} must be an int >= {minimum} (got {describe(value)})")
    if value < minimum:
        raise InvalidValueError(f"{where} must be an int >= {minimum} (got {value})")
    return value


def _bound(below: int) -> str:
    return {ADDR_LIMIT: "2**64", SIGN_BIT: "2**63"}.get(below, str(below))


def index_value(value: object, where: str, upper: int | None) -> int:
    """Validate one index or count: an int in ``[0, upper]`` (``upper`` None: no bound),
    else :class:`CapacityError`; a float, a bool or another type is a :class:`PtrTypeError`."""
    if type(value) is int:
        if value >= 0 and (upper is None or value <= upper):
            return value
        span = f"[0, {upper}]" if upper is not None else "[0, inf)"
        raise CapacityError(f"{where} must be in {span} (got {value})")
    if isinstance(value, np.integer) and not isinstance(value, np.bool_):
        return index_value(int(value), where, upper)
    raise PtrTypeError(f"{where} must be an int (got {describe(value)})")
