"""Turning launcher arguments (PtrBuffers, SizeBuffers, tensors) into kernel tables."""

from __future__ import annotations

import torch

from devptr import CapacityError, LengthMismatchError, PtrBuffer, PtrTypeError, SizeBuffer
from devptr._core_api import describe, index_value

_ADDR_DTYPES = (torch.int64, torch.uint64)
_SIZE_DTYPES = (torch.int32, torch.int64, torch.uint64)


def address_table(table: object, where: str) -> torch.Tensor:
    """A 1-D int64/uint64 tensor of addresses from a PtrBuffer or a tensor (no copy).

    A PtrBuffer contributes its device mirror when it has one (what its last
    ``to_device`` copied), else its host entries. Tensors are used as given (any stride).
    """
    if isinstance(table, PtrBuffer):  # the table base's views: mirror when there is one
        return table.device() if table.device_type is not None else table.host()
    if isinstance(table, torch.Tensor):
        if table.dtype not in _ADDR_DTYPES or table.dim() != 1:
            raise PtrTypeError(
                f"{where}: an address table must be a 1-D torch.int64 or torch.uint64 tensor "
                f"(got {table.dtype}, {table.dim()}-D)"
            )
        return table
    raise PtrTypeError(f"{where} must be a PtrBuffer or an address tensor (got {describe(table)})")


def size_table(table: object, where: str = "sizes") -> torch.Tensor:
    """A 1-D integer tensor of byte counts from a SizeBuffer or a tensor (no copy)."""
    if isinstance(table, SizeBuffer):
        return table.device() if table.device_type is not None else table.host()
    if isinstance(table, torch.Tensor):
        if table.dtype not in _SIZE_DTYPES or table.dim() != 1:
            raise PtrTypeError(
                f"{where}: a size table must be a 1-D int32, int64 or uint64 tensor "
                f"(got {table.dtype}, {table.dim()}-D)"
            )
        return table
    if isinstance(table, PtrBuffer):
        raise PtrTypeError(f"{where}: sizes are byte counts, not addresses; use a SizeBuffer")
    raise PtrTypeError(f"{where} must be a SizeBuffer or an integer tensor (got {describe(table)})")


def segment_count(n: object, tables: dict[str, torch.Tensor]) -> int:
    """Validate ``n`` against every table's length (``None``: all, lengths must agree)."""
    lengths = {k: int(t.shape[0]) for k, t in tables.items()}
    if n is None:
        if len(set(lengths.values())) > 1:
            raise LengthMismatchError(f"tables differ in length {lengths}; pass n")
        return next(iter(lengths.values()))
    n = index_value(n, "n", None)
    short = {k: v for k, v in lengths.items() if v < n}
    if short:
        raise CapacityError(f"n={n} exceeds the capacity of {short}")
    return n


def same_device(tables: dict[str, torch.Tensor]) -> torch.device:
    """The one device every table lives on."""
    devices = {k: t.device for k, t in tables.items()}
    first = next(iter(devices.values()))
    if any(d != first for d in devices.values()):
        raise PtrTypeError(f"tables must be on one device (got {devices})")
    return first


def host_hint(table: object, n: int) -> int | None:
    """The largest of the first ``n`` byte counts when it is known without a device read."""
    if n == 0:
        return 0
    if isinstance(table, SizeBuffer):
        return int(table.numpy()[:n].max())
    if isinstance(table, torch.Tensor) and table.device.type == "cpu":
        t = table[:n]
        if t.dtype == torch.uint64:
            t = t.view(torch.int64)
        return int(t.max())
    return None
