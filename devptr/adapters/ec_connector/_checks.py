"""Checks shared by the EC descriptor tables and the swap paths."""

from __future__ import annotations

import numpy as np
import torch

from devptr._convert import U64Array
from devptr._errors import AddressOverflowError
from devptr._ptr import ADDR_LIMIT

_U64_MAX = np.uint64(ADDR_LIMIT - 1)
_ONE = np.uint64(1)
_max = np.maximum.reduce


def default_device() -> torch.device:
    """The current accelerator device, or the CPU when torch sees none."""
    acc = getattr(torch, "accelerator", None)
    if acc is not None and acc.is_available():
        dev = acc.current_accelerator()
        index = getattr(acc, "current_device_index", None) or getattr(acc, "current_device_idx", None)
        if dev is not None:
            return torch.device(dev.type, index()) if index is not None else torch.device(dev.type)
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def check_extent(addrs: U64Array, nbytes: U64Array, what: str, max_bytes: int | None = None) -> None:
    """Raise :class:`AddressOverflowError` when ``addr + nbytes`` passes 2**64 for an entry.

    Fast path: one or two reductions (``max(addrs) + max(nbytes) <= 2**64`` clears every
    entry); only when that bound fails is each entry checked, to name the first bad copy.
    """
    if addrs.size == 0:
        return
    top = int(_max(nbytes)) if max_bytes is None else max_bytes
    if int(_max(addrs)) + top <= ADDR_LIMIT:
        return
    # addr + nbytes <= 2**64  <=>  nbytes - 1 <= MAX - addr   (for nbytes > 0; uint64 math)
    with np.errstate(over="ignore"):
        bad = (nbytes - _ONE) > (_U64_MAX - addrs)
    bad &= nbytes != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise AddressOverflowError(
            f"copy {i}: {what} {int(addrs[i]):#x} + {int(nbytes[i])} bytes leaves [0, 2**64)"
        )
