"""Free functions for code that keeps its own containers: store, ptr_tensor, addresses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch

from devptr._convert import U64, Addresses, U64Array, index_value, ptr_array
from devptr._encoding import Encoding, encoding_for
from devptr._errors import CapacityError, LengthMismatchError, PtrTypeError, describe
from devptr._ptr import DevicePtr
from devptr._storage import check_encoding_arg, device_unavailable, resolve_device
from devptr._strided import strided_addresses

Container = torch.Tensor | npt.NDArray[np.int64] | npt.NDArray[np.uint64]
"""What :func:`store` writes into: an int64/uint64 tensor (any device) or numpy array."""
Index = int | slice | tuple[int | slice, ...] | Sequence[int] | npt.NDArray[np.integer]
"""What :func:`store` takes as an index: int, slice, a tuple of them, or integer indices."""

_OK_TORCH = (torch.int64, torch.uint64)
_OK_NUMPY = (np.dtype(np.int64), np.dtype(np.uint64))


def _check_index(shape: tuple[int, ...], index: object) -> None:
    """Every index within ``[0, dim)`` and every slice bound within ``[0, dim]``.

    The rule of devptr's tables applied to the caller's container: no negative index
    (a ``-1`` slot id is a bug, not "the last entry") and no clamped slice; a
    :class:`CapacityError` before anything is written.
    """
    parts = index if type(index) is tuple else (index,)
    if len(parts) > len(shape):
        raise CapacityError(f"store(): {len(parts)} indices for a {len(shape)}-D container")
    for dim, (part, size) in enumerate(zip(parts, shape, strict=False)):
        where = "index" if len(shape) == 1 else f"index of dimension {dim}"
        if type(part) is int:
            if not 0 <= part < size:
                raise CapacityError(f"store(): {where} {part} out of range for size {size}")
        elif isinstance(part, slice):
            if part.step is not None and (type(part.step) is not int or part.step < 1):
                raise PtrTypeError(f"store(): slice steps must be positive ints (got {describe(part.step)})")
            if part.start is not None:
                index_value(part.start, f"store(): slice start of dimension {dim}", size)
            if part.stop is not None:
                index_value(part.stop, f"store(): slice stop of dimension {dim}", size)
        elif isinstance(part, np.integer) and not isinstance(part, np.bool_):
            _check_index((size,), int(part))
        elif dim == 0 and type(index) is not tuple and _index_list(part, size, where):
            return
        else:
            raise PtrTypeError(
                f"store(): an index is an int, a slice, a tuple of them or integer indices "
                f"(got {describe(part)})"
            )


def _index_list(part: object, size: int, where: str) -> bool:
    """Check integer index arrays/lists (fancy indexing on the first dimension)."""
    if isinstance(part, torch.Tensor):
        part = part.detach().cpu().numpy()
    if not isinstance(part, (list, np.ndarray)):
        return False
    arr = np.asarray(part)
    if arr.dtype.kind not in "iu" and arr.size:
        return False
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= size):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise CapacityError(f"store(): {where} {bad} out of range for size {size}")
    return True


def _values(ptrs: DevicePtr | Addresses) -> U64Array | np.uint64:
    if type(ptrs) is DevicePtr:
        return np.uint64(ptrs.addr)
    return ptr_array(ptrs)


def _check_shape(target_shape: tuple[int, ...], vals: U64Array | np.uint64) -> None:
    vshape = np.shape(vals)
    if tuple(target_shape) != vshape:
        raise LengthMismatchError(
            f"store(): the index selects shape {tuple(target_shape)}, "
            f"the addresses have shape {vshape} (no broadcasting)"
        )


def _store_one(container: object, index: int, ptr: DevicePtr) -> bool:
    """Fast path for one DevicePtr at an int index of a 1-D host container; False if not taken.

    A scalar write through a uint64 numpy view (of the array, or of the CPU tensor's memory):
    no torch integer setitem, whose sign rules differ between torch 2.13 and 2.14.
    """
    if isinstance(container, np.ndarray):
        arr = container
    elif isinstance(container, torch.Tensor) and container.is_cpu and container.dim() == 1:
        if container.dtype is not torch.int64 and container.dtype is not torch.uint64:
            return False
        arr = container.numpy()
    else:
        return False
    if arr.ndim != 1 or arr.dtype not in _OK_NUMPY:
        return False
    if index < 0:
        raise CapacityError(f"store(): index {index} out of range for size {arr.shape[0]}")
    try:
        arr.view(U64)[index] = ptr.addr
    except IndexError:  # past the end: numpy's error, reworded (nothing was written)
        raise CapacityError(f"store(): index {index} out of range for size {arr.shape[0]}") from None
    return True


def store(container: Container, index: Index, ptrs: DevicePtr | Addresses) -> None:
    """Write DevicePtr(s) bit-exactly into an int64 or uint64 tensor or numpy array.

    Works on every supported torch version (it never uses torch's integer setitem, whose
    sign rules differ between 2.13 and 2.14). int64 containers receive the two's
    complement of addresses >= 2**63, uint64 containers the address itself; both hold the
    same bits.

    Parameters
    ----------
    container
        A ``torch.int64``/``torch.uint64`` tensor (any device) or an int64/uint64 numpy
        array. Anything else raises :class:`PtrTypeError`.
    index
        An int, a slice, a tuple of them, or integer indices (a list or array) into the
        first dimension. Indices lie in ``[0, size)`` and slice bounds in ``[0, size]``:
        a negative index or an out-of-range bound is a :class:`CapacityError` (an
        IndexError) and nothing is written.
    ptrs
        A DevicePtr for a scalar target; a sequence mixing DevicePtrs and objects with
        ``data_ptr()``, or a uint64 array, of exactly the target's shape otherwise (no
        broadcasting). A raw int is a TypeError.

    Notes
    -----
    Device containers receive one synchronous host-to-device copy. Validation (types,
    shape) happens before anything is written.
    """
    if type(ptrs) is DevicePtr and type(index) is int and _store_one(container, index, ptrs):
        return
    vals = _values(ptrs)
    if isinstance(container, (np.ndarray, torch.Tensor)):
        _check_index(tuple(container.shape), index)
    if isinstance(container, np.ndarray):
        if container.dtype not in _OK_NUMPY:
            raise PtrTypeError(
                f"store() needs an int64 or uint64 container (got numpy {container.dtype})"
            )
        view = container.view(U64)
        _check_shape(np.shape(view[index]), vals)
        view[index] = vals
        return
    if isinstance(container, torch.Tensor):
        if container.dtype not in _OK_TORCH:
            raise PtrTypeError(
                f"store() needs an int64 or uint64 container (got {container.dtype})"
            )
        if container.device.type == "cpu":
            arr = (
                container.numpy().view(U64) if container.dtype == torch.int64 else container.numpy()
            )
            _check_shape(np.shape(arr[index]), vals)
            arr[index] = vals
            return
        dev = container.view(torch.int64)
        target = dev[index]
        _check_shape(tuple(target.shape), vals)
        src = torch.from_numpy(np.atleast_1d(vals).view(np.int64))  # vals: uint64 already
        dev[index] = src.reshape(target.shape).to(container.device)
        return
    raise PtrTypeError(f"store() needs a torch tensor or numpy array (got {describe(container)})")


def ptr_tensor(
    ptrs_or_tensors: Addresses,
    *,
    encoding: Encoding | None = None,
    device: str | torch.device | None = None,
) -> torch.Tensor:
    """A new 1-D tensor holding the addresses of DevicePtrs or tensors.

    ``encoding`` defaults to :func:`encoding_for` ``device`` (CPU when None), so an int64
    consumer keeps its int64 table and an XPU consumer gets uint64. The table is built on
    the host and moved with one copy when ``device`` is not the CPU.
    """
    check_encoding_arg(encoding)
    arr = ptr_array(ptrs_or_tensors, "ptrs_or_tensors")
    enc = (
        encoding if encoding is not None else encoding_for(device if device is not None else "cpu")
    )
    host = torch.from_numpy(np.array(arr, dtype=U64).view(np.int64)).view(enc.torch_dtype)
    dev = None if device is None else resolve_device(device)
    if dev is None or dev.type == "cpu":
        return host
    try:
        moved = host.view(torch.int64).to(dev)
    except (RuntimeError, AssertionError) as exc:
        raise device_unavailable(dev, exc) from None
    return moved.view(enc.torch_dtype)


def addresses(
    base: DevicePtr,
    index: Sequence[int] | npt.NDArray[np.integer] | torch.Tensor,
    stride: int | Sequence[int] | npt.NDArray[np.integer],
    offset: int | Sequence[int] | npt.NDArray[np.integer] = 0,
) -> U64Array:
    """``base + index * stride + offset`` as a new uint64 array, overflow-checked.

    ``index``: 1-D non-negative integers of any integer dtype (never float);
    ``stride``/``offset``: non-negative ints or arrays of the same length.
    Raises :class:`AddressOverflowError` when a result would leave ``[0, 2**64)``.
    """
    return strided_addresses(base, index, stride, offset)
