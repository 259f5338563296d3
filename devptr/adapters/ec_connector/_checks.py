"""Checks shared by the EC descriptor tables and the swap paths."""

from __future__ import annotations

import numpy as np

from devptr import AddressOverflowError
from devptr._core_api import ADDR_LIMIT, U64Array
from devptr._core_api import current_device as default_device  # the core's one resolver

_U64_MAX = np.uint64(ADDR_LIMIT - 1)
_ONE = np.uint64(1)
_max = np.maximum.reduce

__all__ = ["check_extent", "default_device"]


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
