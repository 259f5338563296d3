"""Exchanging device addresses between ranks over ``torch.distributed``, bit-exactly.

An address at or above 2**63 (Intel XPU) does not fit an int64, and the collectives have
no dependable uint64 support (gloo has none). So each address travels as the int64 whose
64 bits are the address (two's complement, :attr:`devptr.Encoding.I64`): a collective
only moves those bits, and the receiver reads them back through a uint64 view. No Python
int of 2**63 or more ever meets an int64 container.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.distributed as dist

from devptr import DevicePtr, Encoding, LengthMismatchError, PtrTypeError, ptr_tensor
from devptr._core_api import describe


def _collective_device(group: dist.ProcessGroup | None) -> torch.device:
    """CPU for gloo (and mixed backends that include it), the current GPU for NCCL alone."""
    backend = str(dist.get_backend(group)).lower()
    if "gloo" in backend or ("cuda" not in backend and "nccl" not in backend):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def all_gather_ptrs(
    ptrs: Sequence[DevicePtr], group: dist.ProcessGroup | None = None
) -> list[list[DevicePtr]]:
    """Every rank's ``ptrs``, in rank order of ``group``; collective over ``group``.

    Parameters
    ----------
    ptrs
        This rank's addresses (DevicePtrs; any value in ``[0, 2**64)``). Every rank must
        pass the same number; a mismatch raises :class:`LengthMismatchError` on every rank.
    group
        The process group (default: the world). gloo exchanges host tensors, NCCL device
        tensors of the current CUDA device.

    Returns
    -------
    list of list of DevicePtr
        ``result[r]`` is rank ``r``'s list, bit for bit as rank ``r`` passed it.

    Notes
    -----
    Two collectives: the counts (so a mismatch fails loudly instead of hanging), then the
    addresses as one int64 tensor per rank holding the addresses' 64 bits. The tensors
    are built here and copied to the collective's device; nothing the caller owns is
    touched.
    """
    items = list(ptrs)
    for p in items:
        if type(p) is not DevicePtr:
            raise PtrTypeError(f"all_gather_ptrs() takes DevicePtrs (got {describe(p)})")
    world = dist.get_world_size(group)
    dev = _collective_device(group)

    count = torch.tensor([len(items)], dtype=torch.int64, device=dev)
    counts = [torch.empty_like(count) for _ in range(world)]
    dist.all_gather(counts, count, group=group)
    sizes = [int(c.item()) for c in counts]
    if any(s != len(items) for s in sizes):
        raise LengthMismatchError(f"ranks passed different numbers of addresses: {sizes}")

    local = ptr_tensor(items, encoding=Encoding.I64).to(dev)
    parts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(parts, local, group=group)
    out: list[list[DevicePtr]] = []
    for part in parts:
        bits = part.cpu().numpy().view(np.uint64)
        out.append([DevicePtr(a) for a in bits.tolist()])
    return out
