# Triton kernels: parameters carry no Python annotations (Triton reads annotations as
# specialisation hints), so mypy cannot type these bodies.
# mypy: disable-error-code="no-untyped-def,untyped-decorator"
"""Triton device code shared by the copy kernels: the memmove decision and segment copies.

Imported only through :func:`devptr.kernels._runtime.jit_module` (it imports Triton).
Addresses are handled as uint64 (tables of either encoding are bitcast on load), so every
address comparison is unsigned.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _memmove_kind(src, dst, size):
    """How to copy ``size`` bytes from ``src`` to ``dst`` (scalars or tensors).

    ``src``/``dst``: 64-bit addresses of either signedness; ``size``: an integer byte count
    (negative counts as 0). Returns 0 (nothing to do), 1 (disjoint: parallel copy),
    2 (``dst`` below an overlapping ``src``: forward) or 3 (``dst`` above: backward).

    Unsigned throughout and free of wrap-around: the distance between the two addresses is
    computed as the larger minus the smaller, never ``addr + size``.
    """
    src = src.to(tl.uint64, bitcast=True)
    dst = dst.to(tl.uint64, bitcast=True)
    size = tl.maximum(size.to(tl.int64), 0).to(tl.uint64)
    dst_below = dst < src
    gap = tl.where(dst_below, src - dst, dst - src)
    overlap = gap < size
    seq = tl.where(dst_below, 2, 3)
    kind = tl.where(overlap, seq, 1)
    return tl.where((size == 0) | (gap == 0), 0, kind)


@triton.jit
def _copy_wide(src, dst, size, g, G, CHUNK: tl.constexpr):
    """Copy ``size`` bytes between disjoint ranges with ``src % 16 == dst % 16``.

    Bytes before the first 16-byte boundary of ``dst`` and after the last one go through a
    16-lane byte copy (program ``g == 0``); the body moves in 16-byte accesses, ``CHUNK``
    bytes per step, steps dealt round-robin to the ``G`` programs of the segment.
    """
    head = tl.minimum(((16 - (dst & 15)) & 15).to(tl.int64), size)
    body = ((size - head) // 16) * 16
    if g == 0:
        lane = tl.arange(0, 16).to(tl.int64)
        src8 = src.to(tl.pointer_type(tl.uint8))
        dst8 = dst.to(tl.pointer_type(tl.uint8))
        hm = lane < head
        tl.store(dst8 + lane, tl.load(src8 + lane, mask=hm), mask=hm)
        tail = head + body + lane
        tm = tail < size
        tl.store(dst8 + tail, tl.load(src8 + tail, mask=tm), mask=tm)
    ELEMS: tl.constexpr = CHUNK // 8
    sp = tl.multiple_of((src + head.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
    dp = tl.multiple_of((dst + head.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
    n_el = body // 8
    full = n_el // ELEMS
    offs = tl.arange(0, ELEMS)
    for c in range(g, full, G):
        o = c * ELEMS + offs
        tl.store(dp + o, tl.load(sp + o))
    rest_owner = full % G
    if (n_el > full * ELEMS) & (g == rest_owner):
        o = full * ELEMS + offs
        m = o < tl.multiple_of(n_el, 2)
        tl.store(dp + o, tl.load(sp + o, mask=m), mask=m)


@triton.jit
def _copy_bytes(src, dst, size, g, G, CHUNK: tl.constexpr):
    """Copy ``size`` bytes between disjoint ranges of any alignment, one byte per lane."""
    sp = src.to(tl.pointer_type(tl.uint8))
    dp = dst.to(tl.pointer_type(tl.uint8))
    n = size
    full = n // CHUNK
    offs = tl.arange(0, CHUNK)
    for c in range(g, full, G):
        o = c * CHUNK + offs
        tl.store(dp + o, tl.load(sp + o))
    if (n > full * CHUNK) & (g == full % G):
        o = full * CHUNK + offs
        m = o < n
        tl.store(dp + o, tl.load(sp + o, mask=m), mask=m)


@triton.jit
def _move_forward(src, dst, size, CHUNK: tl.constexpr):
    """memmove for ``dst`` below an overlapping ``src``: one program, low to high.

    Each step loads a chunk, waits for every lane (a barrier), then stores: a store can
    only land on source bytes of this or earlier steps, which all lanes have read.
    """
    sp = src.to(tl.pointer_type(tl.uint8))
    dp = dst.to(tl.pointer_type(tl.uint8))
    n = size
    offs = tl.arange(0, CHUNK)
    for start in range(0, n, CHUNK):
        o = start + offs
        m = o < n
        x = tl.load(sp + o, mask=m)
        tl.debug_barrier()
        tl.store(dp + o, x, mask=m)


@triton.jit
def _move_backward(src, dst, size, CHUNK: tl.constexpr):
    """memmove for ``dst`` above an overlapping ``src``: one program, high to low."""
    sp = src.to(tl.pointer_type(tl.uint8))
    dp = dst.to(tl.pointer_type(tl.uint8))
    n = size
    steps = (n + CHUNK - 1) // CHUNK
    offs = tl.arange(0, CHUNK)
    for k in range(0, steps):
        o = n - (k + 1) * CHUNK + offs
        m = o >= 0
        x = tl.load(sp + o, mask=m)
        tl.debug_barrier()
        tl.store(dp + o, x, mask=m)


@triton.jit
def _copy_segment(src, dst, size, g, G, CHUNK: tl.constexpr, BYTE_CHUNK: tl.constexpr):
    """Copy one segment with memmove semantics; program ``g`` of ``G`` takes its share.

    ``src``/``dst``: uint64 addresses; ``size``: non-negative int64 byte count. Disjoint
    ranges split over the ``G`` programs (16-byte accesses when ``src`` and ``dst`` share
    their offset modulo 16, bytes otherwise); overlapping ranges go to program 0 alone.
    """
    kind = _memmove_kind(src, dst, size)
    if kind == 1:
        if ((src ^ dst) & 15) == 0:
            _copy_wide(src, dst, size, g, G, CHUNK)
        else:
            _copy_bytes(src, dst, size, g, G, BYTE_CHUNK)
    elif kind == 2:
        if g == 0:
            _move_forward(src, dst, size, BYTE_CHUNK)
    elif kind == 3:
        if g == 0:
            _move_backward(src, dst, size, BYTE_CHUNK)


@triton.jit
def _memmove_kind_kernel(src_ptrs, dst_ptrs, sizes_ptr, kinds_ptr, n, BLOCK: tl.constexpr):
    """Write :func:`_memmove_kind` of entries ``[0, n)`` to ``kinds_ptr`` (int32); no copy."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    src = tl.load(src_ptrs + i, mask=m, other=0)
    dst = tl.load(dst_ptrs + i, mask=m, other=0)
    size = tl.load(sizes_ptr + i, mask=m, other=0).to(tl.int64)
    tl.store(kinds_ptr + i, _memmove_kind(src, dst, size).to(tl.int32), mask=m)


@triton.jit
def _batch_memcpy_kernel(
    src_ptrs,
    dst_ptrs,
    sizes_ptr,
    src_stride,
    dst_stride,
    size_stride,
    G,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
):
    """Grid ``(n, G)``: program ``(i, g)`` copies its share of segment ``i``.

    Tables: ``src_ptrs``/``dst_ptrs`` int64 or uint64 addresses (bitcast to uint64),
    ``sizes_ptr`` int32/int64/uint64 byte counts (negative counts copy nothing).
    """
    i = tl.program_id(0).to(tl.int64)
    g = tl.program_id(1)
    src = tl.load(src_ptrs + i * src_stride).to(tl.uint64, bitcast=True)
    dst = tl.load(dst_ptrs + i * dst_stride).to(tl.uint64, bitcast=True)
    size = tl.maximum(tl.load(sizes_ptr + i * size_stride).to(tl.int64), 0)
    _copy_segment(src, dst, size, g, G, CHUNK, BYTE_CHUNK)
