"""``base + index * stride + offset`` in uint64, overflow-checked, never float."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from devptr._convert import U64, U64Array, uint_array
from devptr._errors import (
    AddressOverflowError,
    AddressRangeError,
    LengthMismatchError,
    PtrTypeError,
    describe,
)
from devptr._ptr import ADDR_LIMIT, DevicePtr

_MAX = ADDR_LIMIT - 1


def strided_addresses(
    base: DevicePtr,
    index: object,
    stride: object,
    offset: object = 0,
    *,
    out: U64Array | None = None,
) -> U64Array:
    """Compute ``base + index * stride + offset`` element-wise as uint64.

    ``index`` is a 1-D array or sequence of non-negative integers (any integer dtype);
    ``stride`` and ``offset`` are non-negative ints or arrays of the same length. Every
    result is checked to lie in ``[0, 2**64)`` *before* anything is written to ``out``;
    :class:`AddressOverflowError` otherwise.
    """
    if not isinstance(base, DevicePtr):
        raise PtrTypeError(f"base must be a DevicePtr (got {describe(base)})")
    fast = _fast_path(base, index, stride, offset, out)
    if fast is not None:
        return fast
    idx, _ = uint_array(index, "index")
    n = idx.shape[0]
    strd, _ = uint_array(stride, "stride", scalar=True)
    offs, _ = uint_array(offset, "offset", scalar=True)
    for name, arr in (("stride", strd), ("offset", offs)):
        if arr.ndim not in (0, 1) or (arr.ndim == 1 and arr.shape[0] != n):
            raise LengthMismatchError(f"{name} must be an int or have {n} entries (got shape {arr.shape})")
    if out is not None and out.shape != (n,):
        raise LengthMismatchError(f"{n} addresses do not fit {out.shape[0]} slots")
    if n == 0:
        return out if out is not None else np.empty(0, dtype=U64)

    # room[i] = MAX - base - offset[i]: the most index*stride may add.
    b = base.addr
    if offs.ndim == 0:
        o = int(offs)
        if b + o > _MAX:
            raise AddressOverflowError(f"base {base!r} + offset {o} leaves [0, 2**64)")
        room: npt.NDArray[np.uint64] | int = _MAX - b - o
    else:
        omax = int(offs.max())
        if b + omax > _MAX:
            raise AddressOverflowError(f"base {base!r} + offset {omax} leaves [0, 2**64)")
        room = np.uint64(_MAX - b) - offs
    if strd.ndim == 0 and isinstance(room, int):
        s = int(strd)
        imax = int(idx.max())
        if s and imax > room // s:
            raise AddressOverflowError(
                f"{base!r} + index {imax} * stride {s} + offset leaves [0, 2**64) "
                f"(got {b + imax * s + (_MAX - b - room):#x})"
            )
    else:
        s_arr = np.broadcast_to(strd, (n,))
        nz = s_arr != 0
        limit = np.zeros(n, dtype=U64)
        np.floor_divide(np.broadcast_to(np.asarray(room, dtype=U64), (n,)), s_arr, out=limit, where=nz)
        bad = nz & (idx > limit)
        if bad.any():
            i = int(np.argmax(bad))
            raise AddressOverflowError(
                f"{base!r} + index {int(idx[i])} * stride {int(s_arr[i])} + offset "
                f"leaves [0, 2**64) at entry {i}"
            )
    res = out if out is not None else np.empty(n, dtype=U64)
    np.multiply(idx, strd, out=res, dtype=U64, casting="unsafe")
    if offs.ndim == 0:
        np.add(res, np.uint64(b + int(offs)), out=res)
    else:
        np.add(res, offs, out=res)
        np.add(res, np.uint64(b), out=res)
    return res


def _scalar(value: object) -> int | None:
    """``value`` as a Python int when it is a non-bool integer scalar, else None."""
    if type(value) is int:
        return value
    if isinstance(value, np.integer):
        return int(value)
    return None


def _fast_path(
    base: DevicePtr, index: object, stride: object, offset: object, out: U64Array | None
) -> U64Array | None:
    """The common case without temporaries: an integer ndarray index, scalar stride/offset.

    Validates with two reductions (min/max) and Python-int bounds, then computes in place
    into ``out`` with uint64 ufunc loops (no int->float promotion). None when not applicable.
    """
    s, o = _scalar(stride), _scalar(offset)
    if s is None or o is None or not isinstance(index, np.ndarray) or index.ndim != 1:
        return None
    kind = index.dtype.kind
    if kind not in "iu" or index.size == 0:
        return None
    n = index.shape[0]
    if out is not None and out.shape != (n,):
        raise LengthMismatchError(f"{n} addresses do not fit {out.shape[0]} slots")
    if s < 0 or o < 0:
        raise AddressRangeError(f"stride and offset must be non-negative (got {s}, {o})")
    if kind == "i":
        lo = int(index.min())
        if lo < 0:
            raise AddressRangeError(f"index must be non-negative (got {lo})")
    hi = int(index.max())
    top = base.addr + hi * s + o
    if top > _MAX:
        raise AddressOverflowError(
            f"{base!r} + index {hi} * stride {s} + offset {o} leaves [0, 2**64) (got {top:#x})"
        )
    res = out if out is not None else np.empty(n, dtype=U64)
    np.multiply(index, np.uint64(s), out=res, dtype=U64, casting="unsafe")
    np.add(res, np.uint64(base.addr + o), out=res)
    return res
