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
def _edges(src, dst, size, head, body):
    """The bytes before ``head`` and from ``head + body`` to ``size`` (fewer than 16 each),
    through a 16-lane byte copy."""
    lane = tl.arange(0, 16).to(tl.int64)
    src8 = src.to(tl.pointer_type(tl.uint8))
    dst8 = dst.to(tl.pointer_type(tl.uint8))
    hm = lane < head
    tl.store(dst8 + lane, tl.load(src8 + lane, mask=hm), mask=hm)
    tail = head + body + lane
    tm = tail < size
    tl.store(dst8 + tail, tl.load(src8 + tail, mask=tm), mask=tm)


@triton.jit
def _steps(full, g, split, SLICE: tl.constexpr):
    """Program ``g`` of ``split``'s full steps ``range(lo, hi, step)`` of ``full``, and
    whether it also owns the partial step ``full``: round-robin (``SLICE`` false: steps
    ``g, g + split, ...``) or one contiguous slice of ``cdiv(full, split)`` steps each."""
    if SLICE:
        per = (full + split - 1) // split
        lo = g * per
        hi = tl.minimum(lo + per, full)
        step = 1
        owns_rest = g == split - 1
    else:
        lo = g
        hi = full
        step = split
        owns_rest = g == full % split
    return lo, hi, step, owns_rest


@triton.jit
def _copy_aligned(
    src,
    dst,
    size,
    g,
    split,
    T: tl.constexpr,
    ELEM: tl.constexpr,
    ALIGN: tl.constexpr,
    CHUNK: tl.constexpr,
    SLICE: tl.constexpr = False,
):
    """Copy ``size`` bytes between disjoint ranges with ``src % ALIGN == dst % ALIGN``.

    Bytes before the first ``ALIGN`` boundary of ``dst`` and after the last one (fewer than
    16) go through a 16-lane byte copy (program ``g == 0``); the body moves ``ELEM`` bytes a
    lane (``T``: the unsigned type of that width) from ``ALIGN``-aligned addresses, ``CHUNK``
    bytes per step, steps dealt to the ``split`` programs of the segment round-robin or in
    contiguous slices (``SLICE``, :func:`_steps`). The launcher uses ``(uint64, 8, 16)``:
    16-byte accesses.
    """
    head = tl.minimum(((ALIGN - (dst & (ALIGN - 1))) & (ALIGN - 1)).to(tl.int64), size)
    body = ((size - head) // ALIGN) * ALIGN
    if g == 0:
        _edges(src, dst, size, head, body)
    ELEMS: tl.constexpr = CHUNK // ELEM
    sp = tl.multiple_of((src + head.to(tl.uint64)).to(tl.pointer_type(T)), ALIGN)
    dp = tl.multiple_of((dst + head.to(tl.uint64)).to(tl.pointer_type(T)), ALIGN)
    n_el = body // ELEM
    full = n_el // ELEMS
    offs = tl.arange(0, ELEMS)
    lo, hi, step, owns_rest = _steps(full, g, split, SLICE)
    for c in range(lo, hi, step):
        o = c * ELEMS + offs
        tl.store(dp + o, tl.load(sp + o))
    if (n_el > full * ELEMS) & owns_rest:
        o = full * ELEMS + offs
        if ALIGN > ELEM:
            m = o < tl.multiple_of(n_el, ALIGN // ELEM)
        else:
            m = o < n_el
        tl.store(dp + o, tl.load(sp + o, mask=m), mask=m)


@triton.jit
def _copy_shifted(src, dst, size, g, split, CHUNK: tl.constexpr, SLICE: tl.constexpr = False):
    """Copy ``size`` bytes between disjoint ranges whose offsets differ modulo 16.

    Stores stay 16-byte aligned on the destination (head and tail bytes, fewer than 16
    each, through a 16-lane byte copy by program ``g == 0``); each destination word of 8
    bytes is built from the two aligned 8-byte source words that hold its bytes (a funnel
    shift by ``8 * ((src - dst) % 8)`` bits, the same for the whole segment). Every source
    word read holds at least one byte of the segment, so no read leaves the aligned
    8-byte units the segment touches. ``CHUNK`` bytes per step, steps dealt to the
    ``split`` programs as in :func:`_copy_aligned`.
    """
    head = tl.minimum(((16 - (dst & 15)) & 15).to(tl.int64), size)
    body = ((size - head) // 16) * 16
    if g == 0:
        _edges(src, dst, size, head, body)
    ELEMS: tl.constexpr = CHUNK // 8
    s0 = src + head.to(tl.uint64)
    lo_bits = (s0 & 7).to(tl.uint64) * 8
    hi_bits = 64 - lo_bits
    sp = tl.multiple_of((s0 - (s0 & 7)).to(tl.pointer_type(tl.uint64)), 8)
    dp = tl.multiple_of((dst + head.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
    n_el = tl.multiple_of(body // 8, 2)
    full = n_el // ELEMS
    offs = tl.arange(0, ELEMS)
    lo, hi, step, owns_rest = _steps(full, g, split, SLICE)
    if lo_bits == 0:  # offsets agree modulo 8: whole source words
        for c in range(lo, hi, step):
            o = c * ELEMS + offs
            tl.store(dp + o, tl.load(sp + o))
        if (n_el > full * ELEMS) & owns_rest:
            o = full * ELEMS + offs
            m = o < n_el
            tl.store(dp + o, tl.load(sp + o, mask=m), mask=m)
    else:
        for c in range(lo, hi, step):
            o = c * ELEMS + offs
            w0 = tl.load(sp + o)
            w1 = tl.load(sp + o + 1)
            tl.store(dp + o, (w0 >> lo_bits) | (w1 << hi_bits))
        if (n_el > full * ELEMS) & owns_rest:
            o = full * ELEMS + offs
            m = o < n_el
            w0 = tl.load(sp + o, mask=m)
            w1 = tl.load(sp + o + 1, mask=m)
            tl.store(dp + o, (w0 >> lo_bits) | (w1 << hi_bits), mask=m)


@triton.jit
def _step(sp, dp, o, m):
    """One ordered step of a memmove: every lane loads, a barrier, every lane stores."""
    x = tl.load(sp + o, mask=m)
    tl.debug_barrier()
    tl.store(dp + o, x, mask=m)


@triton.jit
def _move(src, dst, size, FORWARD: tl.constexpr, CHUNK: tl.constexpr, BYTE_CHUNK: tl.constexpr):
    """memmove of one overlapping segment by one program, in the safe direction.

    ``FORWARD`` (``dst`` below ``src``): low to high; else high to low. Each step loads,
    waits for every lane (a barrier), then stores; a store can only land on source bytes
    that this or an earlier step has read. With ``src % 16 == dst % 16`` the body moves in
    16-byte accesses, ``CHUNK`` bytes a step (head and tail bytes in their own steps);
    otherwise one byte per lane, ``BYTE_CHUNK`` bytes a step.
    """
    s8 = src.to(tl.pointer_type(tl.uint8))
    d8 = dst.to(tl.pointer_type(tl.uint8))
    if ((src ^ dst) & 15) == 0:
        lane = tl.arange(0, 16).to(tl.int64)
        head = tl.minimum(((16 - (dst & 15)) & 15).to(tl.int64), size)
        body = ((size - head) // 16) * 16
        tail = head + body + lane
        ELEMS: tl.constexpr = CHUNK // 8
        sp = tl.multiple_of((src + head.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        dp = tl.multiple_of((dst + head.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        n_el = tl.multiple_of(body // 8, 2)
        wide_steps = (n_el + ELEMS - 1) // ELEMS
        eoffs = tl.arange(0, ELEMS)
        if FORWARD:
            _step(s8, d8, lane, lane < head)
            for k in range(0, wide_steps):
                eo = k * ELEMS + eoffs
                _step(sp, dp, eo, eo < n_el)
            _step(s8, d8, tail, tail < size)
        else:
            _step(s8, d8, tail, tail < size)
            for k in range(0, wide_steps):
                eo = (wide_steps - 1 - k) * ELEMS + eoffs
                _step(sp, dp, eo, eo < n_el)
            _step(s8, d8, lane, lane < head)
    else:
        byte_steps = (size + BYTE_CHUNK - 1) // BYTE_CHUNK
        boffs = tl.arange(0, BYTE_CHUNK)
        for j in range(0, byte_steps):
            if FORWARD:
                bo = j * BYTE_CHUNK + boffs
            else:
                bo = (byte_steps - 1 - j) * BYTE_CHUNK + boffs
            _step(s8, d8, bo, bo < size)


@triton.jit
def _copy_segment(
    src, dst, size, g, split, CHUNK: tl.constexpr, BYTE_CHUNK: tl.constexpr, SLICE: tl.constexpr = False
):
    """Copy one segment with memmove semantics; program ``g`` of ``split`` takes its share.

    ``src``/``dst``: uint64 addresses; ``size``: non-negative int64 byte count. Disjoint
    ranges are shared by the ``split`` programs (16-byte accesses when ``src`` and ``dst`` share
    their offset modulo 16, 4-byte words when they share it modulo 4, bytes otherwise);
    overlapping ranges go to program 0 alone (:func:`_move`).
    """
    kind = _memmove_kind(src, dst, size)
    if kind == 1:
        if ((src ^ dst) & 15) == 0:
            _copy_aligned(src, dst, size, g, split, tl.uint64, 8, 16, CHUNK, SLICE)
        else:
            _copy_shifted(src, dst, size, g, split, CHUNK, SLICE)
    elif kind == 2:
        if g == 0:
            _move(src, dst, size, True, CHUNK, BYTE_CHUNK)
    elif kind == 3:
        if g == 0:
            _move(src, dst, size, False, CHUNK, BYTE_CHUNK)


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
    split,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
):
    """Grid ``(n, split)``: program ``(i, g)`` copies its share of segment ``i``.

    Tables: ``src_ptrs``/``dst_ptrs`` int64 or uint64 addresses (bitcast to uint64),
    ``sizes_ptr`` int32/int64/uint64 byte counts (negative counts copy nothing).
    """
    i = tl.program_id(0).to(tl.int64)
    g = tl.program_id(1)
    src = tl.load(src_ptrs + i * src_stride).to(tl.uint64, bitcast=True)
    dst = tl.load(dst_ptrs + i * dst_stride).to(tl.uint64, bitcast=True)
    size = tl.maximum(tl.load(sizes_ptr + i * size_stride).to(tl.int64), 0)
    _copy_segment(src, dst, size, g, split, CHUNK, BYTE_CHUNK)
