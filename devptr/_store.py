"""Free functions for code that keeps its own containers: store, ptr_tensor, addresses.

:func:`store` is the vendorable module's (:mod:`devptr.vendor.ptrtable`): one implementation
for devptr and for engines that copy the module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch

from devptr._convert import U64, Addresses, U64Array, ptr_array
from devptr._encoding import Encoding, encoding_for
from devptr._ptr import DevicePtr
from devptr._storage import check_encoding_arg, device_unavailable, resolve_device
from devptr._strided import strided_addresses
from devptr.vendor.ptrtable import store


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


__all__ = ["addresses", "ptr_tensor", "store"]
