"""``batch_memcpy``: copy many byte segments whose addresses come from tables."""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable

import torch

from devptr import Column, Encoding, InvalidValueError, PtrBuffer, PtrTable, PtrTypeError, SizeBuffer
from devptr._core_api import IdentityCache, describe, index_value
from devptr._core_api import checked_registry as _checked
from devptr.kernels import _runtime, _tables
from devptr.kernels._checks import check_segments
from devptr.kernels._launch import FastKernel, arg_key, table_view


class MemmoveKind(enum.IntEnum):
    """How :func:`batch_memcpy` copies one segment (decided on the device, unsigned)."""

    NONE = 0
    """Zero bytes, or source and destination are the same address."""
    PARALLEL = 1
    """Disjoint ranges: split over programs, in 16-byte accesses when source and
    destination agree modulo 16, else in aligned 16-byte stores of funnel-shifted
    8-byte source words."""
    FORWARD = 2
    """Destination below an overlapping source: one program copies low to high."""
    BACKWARD = 3
    """Destination above an overlapping source: one program copies high to low."""


CHUNK = 4096
"""Bytes one program moves per step on the 16-byte path (also the step of overlapping copies)."""
MIN_CHUNK = 1024
"""Smallest step the launcher picks by itself for batches of small segments."""
BYTE_CHUNK = 1024
"""Bytes one program moves per step on the byte path (kept small: every byte lane holds a
64-bit address in registers, and registers bound how many programs run at once)."""
PROGRAMS_PER_UNIT = 12
"""Programs per multiprocessor the launcher aims for when it splits large segments."""
MAX_SPLIT = 256
"""Most programs one segment is split over."""
NUM_WARPS = 4
"""Warps per program."""
ONE_STEP_WARPS = 1
"""Warps per program when every segment fits in one step (the largest size is known and at
most :data:`CHUNK`): one warp keeps 16-byte accesses at 1-2 KiB steps, where four warps
leave lanes idle, and puts more programs in flight for batches of small segments
(``benchmarks/results/kernels.md``, "third round")."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def split_factor(n: int, device: torch.device, max_size: int | None, chunk: int = CHUNK) -> int:
    """Programs per segment: about ``PROGRAMS_PER_UNIT`` per multiprocessor in all (at least one
    per segment), no more than the largest segment has chunks."""
    units = _runtime.multiprocessor_count(device)
    g = max(1, units * PROGRAMS_PER_UNIT // max(n, 1))
    if max_size is not None:
        g = min(g, max(1, _cdiv(max_size, chunk)))
    return min(g, MAX_SPLIT)


def default_warps(max_size: int | None) -> int:
    """Warps per program for a batch whose largest segment is ``max_size`` bytes (None:
    unknown): :data:`ONE_STEP_WARPS` when every segment fits in one :data:`CHUNK` step,
    else :data:`NUM_WARPS`."""
    return ONE_STEP_WARPS if max_size is not None and max_size <= CHUNK else NUM_WARPS


_KERNEL = FastKernel("_copy_jit", "_batch_memcpy_kernel")


def _live(table: object) -> object:
    return table.device_type  # type: ignore[attr-defined]  # raises once released to a pool


def _addr_view(table: object) -> torch.Tensor:
    return _tables.address_table(table, "table")


def _size_view(table: object) -> torch.Tensor:
    return _tables.size_table(table)


def _fast_tables(
    src: object, dst: object, sizes: object, n: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, torch.device] | None:
    """The common case, checked cheaply: three devptr buffers (views remembered by
    identity), one device, ``n`` within every capacity. None: take the general path (which
    also produces the errors)."""
    if type(src) is not PtrBuffer or type(dst) is not PtrBuffer or type(sizes) is not SizeBuffer:
        return None
    s, ds = table_view(src, _addr_view, _live)
    d, dd = table_view(dst, _addr_view, _live)
    z, dz = table_view(sizes, _size_view, _live)
    if not ds == dd == dz:
        return None
    count = z.shape[0] if n is None else n
    if type(count) is not int or not 0 <= count <= s.shape[0] or count > d.shape[0] or count > z.shape[0]:
        return None
    if n is None and not s.shape[0] == d.shape[0] == count:
        return None
    return s, d, z, count, ds


def _segment_tables(
    src: object, dst: object, sizes: object, n: int | None
) -> tuple[dict[str, torch.Tensor], int, torch.device]:
    """Validate the three launcher tables: (tables by name, segment count, their device)."""
    tables = {
        "src": _tables.address_table(src, "src"),
        "dst": _tables.address_table(dst, "dst"),
        "sizes": _tables.size_table(sizes),
    }
    count = _tables.segment_count(n, tables)
    return tables, count, _tables.same_device(tables)


def batch_memcpy(
    src: object,
    dst: object,
    sizes: object,
    n: int | None = None,
    *,
    max_size: int | None = None,
    split: int | None = None,
    chunk: int | None = None,
    byte_chunk: int = BYTE_CHUNK,
    num_warps: int | None = None,
) -> None:
    """Copy ``sizes[i]`` bytes from ``src[i]`` to ``dst[i]`` for ``i < n``, on the device.

    One kernel launch, asynchronous on the current stream; nothing is copied on the host
    and nothing is allocated (CUDA-graph capturable, except in checked mode).

    Parameters
    ----------
    src, dst
        Address tables: :class:`devptr.PtrBuffer` (its device mirror when it has one, as
        its last ``to_device`` left it; else its host entries) or 1-D ``torch.int64`` /
        ``torch.uint64`` tensors of any stride (either encoding: both are read as
        unsigned). The addresses may point at device memory or at pinned host memory the
        device can reach.
    sizes
        Byte counts: a :class:`SizeBuffer` or a 1-D int32/int64/uint64 tensor (negative
        counts copy nothing; checked mode refuses them). Zero-size segments are allowed.
    n
        Segments to copy; ``None`` means every entry (the three tables must then have one
        length). Validated against each table's capacity.
    max_size
        Optional upper bound on the byte counts, used only to size the grid when the
        sizes live on the device (never needed for correctness).
    split, chunk, byte_chunk, num_warps
        Tuning knobs (programs per segment; bytes per step on the 16-byte and byte
        paths; warps per program, a power of two from 1 to 32). Defaults suit an H200:
        ``chunk`` is :data:`CHUNK`, or the largest size rounded up to a power of two (at
        least :data:`MIN_CHUNK`) when that is smaller and known; ``num_warps`` is
        :data:`ONE_STEP_WARPS` when the largest size is known and at most :data:`CHUNK`,
        else :data:`NUM_WARPS`.

    Notes
    -----
    Each segment has memmove semantics: when its source and destination overlap, one
    program copies it in the safe direction (decided with unsigned comparisons, correct
    for addresses at or above 2**63). Disjoint segments are split over several programs
    and use 16-byte accesses when source and destination share their offset modulo 16,
    and otherwise aligned 16-byte stores of funnel-shifted aligned 8-byte source words
    (head and tail bytes apart).
    Segments that overlap *each other* have no defined order. In checked mode
    (:func:`devptr.checked`) every segment is first compared with the storage extents
    recorded for its addresses and a :class:`devptr.CheckedModeError` is raised before
    launch if one would leave its storage (this reads the tables back: a device sync).
    """
    fast = _fast_tables(src, dst, sizes, n)
    if fast is None:
        tables, count, device = _segment_tables(src, dst, sizes, n)
        s, d, z = tables["src"], tables["dst"], tables["sizes"]
    else:
        s, d, z, count, device = fast
    _launch_segments(
        s, d, z, count, device, lambda: _tables.host_hint(sizes, count),
        max_size, split, chunk, byte_chunk, num_warps,
    )


def batch_memcpy_columns(
    src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, n: int, *, max_size: int
) -> None:
    """:func:`batch_memcpy` over three column views a caller built and checked itself
    (devptr's adapters: the EC connector's descriptor columns), with O(1) checks only.

    ``src``/``dst``: 1-D int64/uint64 address tensors, ``sizes``: 1-D int32/int64/uint64
    byte counts, all on one device with at least ``n`` entries; ``max_size``: the largest of
    the first ``n`` byte counts (it sizes the grid and picks the warps, as in
    :func:`batch_memcpy`). The byte counts and addresses are not read back: a caller
    holding other tables calls :func:`batch_memcpy`. Knobs: ``batch_memcpy``'s defaults.
    """
    seen = _CHECKED_COLUMNS.get(src)
    if (
        seen is not None
        and seen[0]() is dst
        and seen[1]() is sizes
        and type(n) is int
        and 0 <= n <= seen[2]
        and type(max_size) is int
        and max_size >= 0
    ):  # the same three views as a checked call (remembered by identity, weakly)
        count, top, device = n, max_size, seen[3]
    else:
        count, top, device = _check_columns(src, dst, sizes, n, max_size)
    _launch_segments(src, dst, sizes, count, device, lambda: top, top, None, None, BYTE_CHUNK, None)


_Checked = tuple["weakref.ref[torch.Tensor]", "weakref.ref[torch.Tensor]", int, torch.device]
_CHECKED_COLUMNS: IdentityCache[torch.Tensor, _Checked] = IdentityCache()
"""Column views :func:`batch_memcpy_columns` checked, remembered weakly (keeping none alive):
``src -> (dst, sizes, capacity, device)``."""


def _check_columns(
    src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, n: object, max_size: object
) -> tuple[int, int, torch.device]:
    """The O(1) checks of :func:`batch_memcpy_columns`: (count, largest size, device)."""
    for name, t in (("src", src), ("dst", dst), ("sizes", sizes)):
        if type(t) is not torch.Tensor:
            raise PtrTypeError(f"{name} must be a 1-D tensor (got {describe(t)})")
    tables = {  # the launchers' own dtype and rank checks
        "src": _tables.address_table(src, "src"),
        "dst": _tables.address_table(dst, "dst"),
        "sizes": _tables.size_table(sizes),
    }
    device = _tables.same_device(tables)
    capacity = min(src.shape[0], dst.shape[0], sizes.shape[0])
    count = index_value(n, "n", capacity)
    top = index_value(max_size, "max_size", None)
    _CHECKED_COLUMNS.put(src, (weakref.ref(dst), weakref.ref(sizes), capacity, device))
    return count, top, device


def batch_memcpy_table(
    table: PtrTable,
    n: int | None = None,
    *,
    max_size: int | None = None,
    split: int | None = None,
    chunk: int | None = None,
    byte_chunk: int = BYTE_CHUNK,
    num_warps: int | None = None,
) -> None:
    """:func:`batch_memcpy` driven by one :class:`devptr.PtrTable` of :data:`SEGMENT_COLUMNS`.

    The three tables of a batch in one record per segment (``src``, ``dst``: addresses;
    ``size``: bytes), so preparing a batch is one ``fill`` and one ``to_device`` (one
    host-to-device copy where three buffers need three). Reads the table's device mirror
    when it has one (as its last ``to_device`` left it), else its host records; ``n``:
    the first ``n`` records (default: all). Same semantics and knobs as
    :func:`batch_memcpy`.
    """
    if type(table) is not PtrTable:
        raise PtrTypeError(f"table must be a PtrTable with SEGMENT_COLUMNS (got {describe(table)})")
    (s, d, z), device = _segment_columns(table)
    count = table.capacity if n is None else index_value(n, "n", table.capacity)

    def hint() -> int | None:
        return int(table.column("size")[:count].max()) if count else 0

    _launch_segments(s, d, z, count, device, hint, max_size, split, chunk, byte_chunk, num_warps)


SEGMENT_COLUMNS: tuple[tuple[str, Column], ...] = (
    ("src", Column.PTR),
    ("dst", Column.PTR),
    ("size", Column.INT),
)
"""Columns of a :func:`batch_memcpy_table` table: ``PtrTable(n, SEGMENT_COLUMNS, device=...)``."""

_SegmentViews = tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.device]
_COLUMNS: IdentityCache[PtrTable, _SegmentViews] = IdentityCache()
"""Each segment table's column views, kept as long as the table (the one cache policy)."""


def _segment_columns(
    table: PtrTable,
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.device]:
    """The three column views of a segment table (checked and made once per table)."""
    hit = _COLUMNS.get(table)
    if hit is not None:
        return hit
    if list(table.columns.items()) != list(SEGMENT_COLUMNS):
        want = [c for c, _ in SEGMENT_COLUMNS]
        raise PtrTypeError(f"table columns must be {want} (got {list(table.columns)})")
    t = table.device(Encoding.I64) if table.device_type is not None else table.host(Encoding.I64)
    cols = (t[:, 0], t[:, 1], t[:, 2])
    return _COLUMNS.put(table, (cols, t.device))


def _launch_segments(
    s: torch.Tensor,
    d: torch.Tensor,
    z: torch.Tensor,
    count: int,
    device: torch.device,
    host_hint: Callable[[], int | None],
    max_size: int | None,
    split: int | None,
    chunk: int | None,
    byte_chunk: int,
    num_warps: int | None,
) -> None:
    """Check the knobs, pick the launch configuration and launch (tables already checked)."""
    if chunk is not None and (type(chunk) is not int or chunk < 256 or chunk & (chunk - 1)):
        raise _knob_error("chunk", chunk, "a power of two >= 256")
    if byte_chunk != BYTE_CHUNK and (
        type(byte_chunk) is not int or byte_chunk < 16 or byte_chunk & (byte_chunk - 1)
    ):
        raise _knob_error("byte_chunk", byte_chunk, "a power of two >= 16")
    if num_warps is not None and (
        type(num_warps) is not int or not 1 <= num_warps <= 32 or num_warps & (num_warps - 1)
    ):
        raise _knob_error("num_warps", num_warps, "a power of two in [1, 32]")
    if _checked.ENABLED and _checked.is_enabled():
        check_segments(s[:count], d[:count], z[:count])
    if count == 0:
        return
    if device.type != "cuda":
        _runtime.check_launch_device(device, _KERNEL.jit_module())
    hint: int | None = None
    if split is None or chunk is None or num_warps is None:
        hint = max_size if max_size is not None else host_hint()
    if num_warps is None:
        num_warps = default_warps(hint)
    if chunk is None:
        chunk = CHUNK if hint is None else max(MIN_CHUNK, min(CHUNK, 1 << max(hint - 1, 1).bit_length()))
    if split is None:
        split = split_factor(count, device, hint, chunk)
    elif type(split) is not int or not 1 <= split <= 65535:
        raise _knob_error("split", split, "an int in [1, 65535]")
    ss, ds, zs = s.stride(0), d.stride(0), z.stride(0)
    sp, dp, zp = s.data_ptr(), d.data_ptr(), z.data_ptr()
    key = (
        device.index,
        s.dtype,
        d.dtype,
        z.dtype,
        not sp & 15,
        not dp & 15,
        not zp & 15,
        arg_key(ss),
        arg_key(ds),
        arg_key(zs),
        arg_key(split),
        chunk,
        byte_chunk,
        num_warps,
    )
    _KERNEL.launch(
        device,
        (count, split, 1),
        key,
        (s, d, z, ss, ds, zs, split),
        {"CHUNK": chunk, "BYTE_CHUNK": byte_chunk},
        num_warps,
        (sp, dp, zp, ss, ds, zs, split),
    )


def _knob_error(name: str, value: object, rule: str) -> PtrTypeError | InvalidValueError:
    """The error for a bad launch knob: a PtrTypeError for a non-int (a bool included), an
    InvalidValueError for an int outside ``rule``."""
    if type(value) is not int:
        return PtrTypeError(f"{name} must be {rule} (got {describe(value)})")
    return InvalidValueError(f"{name} must be {rule} (got {value})")


def memmove_kinds(src: object, dst: object, sizes: object, n: int | None = None) -> torch.Tensor:
    """The :class:`MemmoveKind` that :func:`batch_memcpy` would pick for each segment.

    Runs only the decision on the device (nothing is dereferenced, so any addresses, e.g.
    fakes at or above 2**63, can be inspected). Returns an int32 tensor of ``n`` kinds on
    the tables' device.
    """
    tables, count, device = _segment_tables(src, dst, sizes, n)
    out = torch.empty(count, dtype=torch.int32, device=device)
    if count == 0:
        return out
    jit = _runtime.jit_module("_copy_jit")
    _runtime.check_launch_device(device, jit)
    block = 128
    s, d, z = (t[:count].contiguous() for t in tables.values())
    with _runtime.on_device(device):
        jit._memmove_kind_kernel[(_cdiv(count, block),)](s, d, z, out, count, BLOCK=block)
    return out
