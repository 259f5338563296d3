"""Checked mode for copy kernels: refuse segments that leave their storage, before launch."""

from __future__ import annotations

import torch

from devptr import CheckedModeError
from devptr._core_api import checked_registry, unsigned_address

_MAX_LISTED = 5


def _u64(t: torch.Tensor) -> list[int]:
    host = t.detach().to("cpu")
    if host.dtype == torch.uint64:
        host = host.view(torch.int64)
    return [unsigned_address(v) for v in host.tolist()]


def check_segments(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor) -> None:
    """Raise :class:`CheckedModeError` if a segment reads or writes outside the storage
    recorded (by :meth:`devptr.DevicePtr.of` in checked mode) for its address.

    Reads the tables back to the host (a device sync). Addresses with no recorded storage
    are not checked. Negative sizes are refused.
    """
    s_list, d_list = _u64(src), _u64(dst)
    z = sizes.detach().to("cpu")
    z_list = (z.view(torch.int64) if z.dtype == torch.uint64 else z.to(torch.int64)).tolist()
    problems: list[str] = []
    for i, (s, d, size) in enumerate(zip(s_list, d_list, z_list, strict=True)):
        if size < 0:
            problems.append(f"segment {i}: negative size {size}")
            continue
        if size == 0:
            continue
        for role, addr in (("src", s), ("dst", d)):
            span = checked_registry.find(addr)
            if span is None:
                continue
            start, end = span
            if addr + size > end:
                problems.append(
                    f"segment {i}: {role} {addr:#x} + {size} bytes ends at {addr + size:#x}, "
                    f"{addr + size - end} bytes past its storage [{start:#x}, {end:#x})"
                )
        if len(problems) >= _MAX_LISTED:
            break
    if problems:
        more = " (first few listed)" if len(problems) >= _MAX_LISTED else ""
        raise CheckedModeError(
            "batch_memcpy refused before launch, segments outside their storage"
            f"{more}:\n  " + "\n  ".join(problems)
        )


__all__ = ["check_segments"]
