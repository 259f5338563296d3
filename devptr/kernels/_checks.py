"""Checked mode for copy kernels: refuse segments that leave their storage, before launch."""

from __future__ import annotations

import bisect

import torch

from devptr import _checked
from devptr._errors import CheckedModeError
from devptr._ptr import unsigned_address

_MAX_LISTED = 5


def _u64(t: torch.Tensor) -> list[int]:
    host = t.detach().to("cpu")
    if host.dtype == torch.uint64:
        host = host.view(torch.int64)
    return [unsigned_address(v) for v in host.tolist()]


class _Extents:
    """The extents checked mode recorded, searchable by any address inside them."""

    def __init__(self) -> None:
        self._exact = _checked.extents()
        spans = sorted(set(self._exact.values()))
        self._starts = [s for s, _ in spans]
        self._spans = spans

    def find(self, addr: int) -> tuple[int, int] | None:
        hit = self._exact.get(addr)
        if hit is not None:
            return hit
        for k in range(bisect.bisect_right(self._starts, addr) - 1, -1, -1):
            start, end = self._spans[k]
            if addr < end:
                return start, end
        return None


def check_segments(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor) -> None:
    """Raise :class:`CheckedModeError` if a segment reads or writes outside the storage
    recorded (by :meth:`devptr.DevicePtr.of` in checked mode) for its address.

    Reads the tables back to the host (a device sync). Addresses with no recorded storage
    are not checked. Negative sizes are refused.
    """
    s_list, d_list = _u64(src), _u64(dst)
    z = sizes.detach().to("cpu")
    z_list = (z.view(torch.int64) if z.dtype == torch.uint64 else z.to(torch.int64)).tolist()
    ext = _Extents()
    problems: list[str] = []
    for i, (s, d, size) in enumerate(zip(s_list, d_list, z_list, strict=True)):
        if size < 0:
            problems.append(f"segment {i}: negative size {size}")
            continue
        if size == 0:
            continue
        for role, addr in (("src", s), ("dst", d)):
            span = ext.find(addr)
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
