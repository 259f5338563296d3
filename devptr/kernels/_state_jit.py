# Triton kernels: parameters carry no Python annotations (Triton reads annotations as
# specialisation hints), so mypy cannot type these bodies.
# mypy: disable-error-code="no-untyped-def,untyped-decorator"
"""Triton device code for Mamba state-block copies (see ``_state_copy.py``).

Imported only through :func:`devptr.kernels._runtime.jit_module`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from devptr.kernels._copy_jit import _copy_segment


@triton.jit
def _shift_rows(src, dst, rows, row_stride, elem_bytes, bias, ntok, ROW_BLOCK: tl.constexpr):
    """Dim-first conv windows: for each of ``rows`` rows, token ``k + bias`` -> token ``k``.

    Lanes own rows; each lane walks its row's tokens upwards, so a left shift inside one
    block never reads a byte it already overwrote.
    """
    sp = src.to(tl.pointer_type(tl.uint8))
    dp = dst.to(tl.pointer_type(tl.uint8))
    lanes = tl.arange(0, ROW_BLOCK).to(tl.int64)
    for rb in range(0, rows, ROW_BLOCK):
        rr = rb + lanes
        m = rr < rows
        row = rr * row_stride
        for k in range(0, ntok):
            for b in range(0, elem_bytes):
                x = tl.load(sp + row + (k + bias) * elem_bytes + b, mask=m)
                tl.store(dp + row + k * elem_bytes + b, x, mask=m)


@triton.jit
def _state_step(
    req,
    base,
    block_stride,
    table,
    conv_width,
    token_bytes,
    copy_bytes,
    rows,
    row_stride,
    t,
    tiles,
    src_cols_ptr,
    dst_cols_ptr,
    token_bias_ptr,
    block_table_stride,
    SKIP_SAME_BLOCK: tl.constexpr,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
    ROW_BLOCK: tl.constexpr,
    SLICE: tl.constexpr,
):
    """Program ``t`` of ``tiles``' share of one state's copy for request slot ``req``
    (``req >= 0``): reads the request's columns and bias, then its block-table entries."""
    src_col = tl.load(src_cols_ptr + req).to(tl.int64)
    dst_col = tl.load(dst_cols_ptr + req).to(tl.int64)
    bias = tl.load(token_bias_ptr + req).to(tl.int64)
    if SKIP_SAME_BLOCK:
        skip = (src_col < 0) | (src_col == dst_col)
    else:
        skip = (src_col < 0) | ((src_col == dst_col) & (bias == 0))
    if not skip:
        conv = conv_width > 0
        bt = table.to(tl.pointer_type(tl.int32)) + req * block_table_stride
        # conv windows read block column src, whole-block states column src + bias
        src_block = tl.load(bt + tl.where(conv, src_col, src_col + bias)).to(tl.int64)
        dst_block = tl.load(bt + dst_col).to(tl.int64)
        src0 = base + (src_block * block_stride).to(tl.uint64)
        dst = base + (dst_block * block_stride).to(tl.uint64)
        if conv & (rows > 1):
            if t == 0:
                _shift_rows(src0, dst, rows, row_stride, token_bytes, bias, conv_width - bias, ROW_BLOCK)
        else:
            src = src0 + tl.where(conv, bias * token_bytes, 0).to(tl.uint64)
            size = tl.where(conv, (conv_width - bias) * token_bytes, copy_bytes)
            _copy_segment(src, dst, size, t, tiles, CHUNK, BYTE_CHUNK, SLICE)


@triton.jit
def _copy_state_blocks_kernel(
    src_cols_ptr,
    dst_cols_ptr,
    token_bias_ptr,
    idx_mapping_ptr,
    block_table_ptrs,
    block_table_stride,
    state_base_addrs_ptr,
    state_meta_ptr,
    HAS_IDX_MAPPING: tl.constexpr,
    SKIP_SAME_BLOCK: tl.constexpr,
    NCOLS: tl.constexpr,
    COL_BLOCK_STRIDE: tl.constexpr,
    COL_CONV_WIDTH: tl.constexpr,
    COL_TOKEN_BYTES: tl.constexpr,
    COL_COPY_BYTES: tl.constexpr,
    COL_ROWS: tl.constexpr,
    COL_ROW_STRIDE: tl.constexpr,
    COL_GROUP: tl.constexpr,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
    ROW_BLOCK: tl.constexpr,
    SLICE: tl.constexpr,
):
    """Grid ``(num_reqs, num_states, tiles)``; see :func:`copy_state_blocks`.

    ``state_meta_ptr`` rows hold ``NCOLS`` int64 words; ``COL_*`` name the columns (the
    :class:`StateMeta` declaration, passed in by the launcher).
    """
    r = tl.program_id(0)
    s = tl.program_id(1).to(tl.int64)
    t = tl.program_id(2)
    tiles = tl.num_programs(2)
    # Loads that depend only on the program's state come first and unconditionally, so
    # they are in flight together with the request's (three dependent levels before the
    # first byte moves: request and state facts, block-table entries, data).
    if HAS_IDX_MAPPING:
        req = tl.load(idx_mapping_ptr + r).to(tl.int64)
    else:
        req = r.to(tl.int64)
    base = tl.load(state_base_addrs_ptr + s).to(tl.uint64, bitcast=True)
    meta = state_meta_ptr + s * NCOLS
    block_stride = tl.load(meta + COL_BLOCK_STRIDE).to(tl.int64)
    conv_width = tl.load(meta + COL_CONV_WIDTH).to(tl.int64)
    token_bytes = tl.load(meta + COL_TOKEN_BYTES).to(tl.int64)
    copy_bytes = tl.load(meta + COL_COPY_BYTES).to(tl.int64)
    rows = tl.load(meta + COL_ROWS).to(tl.int64)
    row_stride = tl.load(meta + COL_ROW_STRIDE).to(tl.int64)
    group = tl.load(meta + COL_GROUP).to(tl.int64)
    table = tl.load(block_table_ptrs + group).to(tl.uint64, bitcast=True)
    # Programs with nothing to copy leave before the request's loads. With round-robin
    # steps, program t copies only when t < the segment's steps; the segment's bytes are
    # at most the larger of copy_bytes and the whole conv window. Dim-first conv windows
    # use program 0 alone. (Contiguous slices are sized from the actual bytes: no bound.)
    if (conv_width > 0) & (rows > 1):
        busy = t == 0
    elif SLICE:
        busy = True
    else:
        bound = tl.maximum(copy_bytes, conv_width * token_bytes)
        busy = t < (bound + CHUNK - 1) // CHUNK
    if (req >= 0) & busy:
        _state_step(
            req, base, block_stride, table, conv_width, token_bytes, copy_bytes, rows, row_stride,
            t, tiles, src_cols_ptr, dst_cols_ptr, token_bias_ptr, block_table_stride,
            SKIP_SAME_BLOCK, CHUNK, BYTE_CHUNK, ROW_BLOCK, SLICE,
        )


@triton.jit
def _copy_state_plan_kernel(
    records_ptr,
    src_cols_ptr,
    dst_cols_ptr,
    token_bias_ptr,
    idx_mapping_ptr,
    block_table_stride,
    HAS_IDX_MAPPING: tl.constexpr,
    SKIP_SAME_BLOCK: tl.constexpr,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
    ROW_BLOCK: tl.constexpr,
):
    """Grid ``(records, num_reqs)``: program ``(i, r)`` does plan record ``i`` for request
    row ``r`` (see :class:`StateCopyPlan`).

    A record holds eight int64 words, every fact of one program's share of one state:
    base, block stride, block-table address, copy bytes, ``conv_width | rows << 32``,
    token bytes, row stride, ``t | tiles << 32``. They are loaded together with the
    request's index, so the data is three dependent load levels away (request columns,
    block-table entries, data), and the grid holds only programs that have a step to copy.
    """
    i = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1)
    if HAS_IDX_MAPPING:
        req = tl.load(idx_mapping_ptr + r).to(tl.int64)
    else:
        req = r.to(tl.int64)
    base, block_stride, table, copy_bytes, widths, token_bytes, row_stride, share = _load_record(
        records_ptr, i
    )
    conv_width = widths & 0xFFFFFFFF
    rows = widths >> 32
    t = share & 0xFFFFFFFF
    tiles = share >> 32
    if req >= 0:
        _state_step(
            req, base, block_stride, table, conv_width, token_bytes, copy_bytes, rows, row_stride,
            t, tiles, src_cols_ptr, dst_cols_ptr, token_bias_ptr, block_table_stride,
            SKIP_SAME_BLOCK, CHUNK, BYTE_CHUNK, ROW_BLOCK, False,
        )


@triton.jit
def _load_record(records_ptr, i):
    """The eight words of plan record ``i`` (see ``_copy_state_plan_kernel``)."""
    rec = records_ptr + i * 8
    base = tl.load(rec).to(tl.uint64, bitcast=True)
    block_stride = tl.load(rec + 1)
    table = tl.load(rec + 2).to(tl.uint64, bitcast=True)
    copy_bytes = tl.load(rec + 3)
    widths = tl.load(rec + 4)
    token_bytes = tl.load(rec + 5)
    row_stride = tl.load(rec + 6)
    share = tl.load(rec + 7)
    return base, block_stride, table, copy_bytes, widths, token_bytes, row_stride, share


@triton.jit
def _copy_state_class_kernel(
    facts_ptr,
    start1,
    start2,
    start3,
    first1,
    first2,
    first3,
    tiles0,
    tiles1,
    tiles2,
    tiles3,
    src_cols_ptr,
    dst_cols_ptr,
    token_bias_ptr,
    idx_mapping_ptr,
    block_table_stride,
    HAS_IDX_MAPPING: tl.constexpr,
    SKIP_SAME_BLOCK: tl.constexpr,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
    ROW_BLOCK: tl.constexpr,
):
    """Grid ``(busy programs, num_reqs)`` over a plan's state classes (see
    :class:`StateCopyPlan`): the states sorted by their programs each (``tiles``) into at
    most four classes, class ``k`` from program ``start_k`` and facts row ``first_k`` on
    (``start0 = first0 = 0``; unused classes start at ``2**31 - 1``).

    Program ``p`` finds its state and step by arithmetic, so its first loads are the
    request index and its state's facts row (the first seven words of a plan record,
    shared by the state's programs), in flight together; the data is three dependent
    load levels away, as in ``_copy_state_plan_kernel``, with no per-program record.
    """
    p = tl.program_id(0)
    r = tl.program_id(1)
    if HAS_IDX_MAPPING:
        req = tl.load(idx_mapping_ptr + r).to(tl.int64)
    else:
        req = r.to(tl.int64)
    c1 = p >= start1
    c2 = p >= start2
    c3 = p >= start3
    start = tl.where(c3, start3, tl.where(c2, start2, tl.where(c1, start1, 0)))
    first = tl.where(c3, first3, tl.where(c2, first2, tl.where(c1, first1, 0)))
    tiles = tl.where(c3, tiles3, tl.where(c2, tiles2, tl.where(c1, tiles1, tiles0)))
    local = p - start
    k = local // tiles
    t = (local - k * tiles).to(tl.int64)
    base, block_stride, table, copy_bytes, widths, token_bytes, row_stride, _ = _load_record(
        facts_ptr, (first + k).to(tl.int64)
    )
    if req >= 0:
        _state_step(
            req, base, block_stride, table, widths & 0xFFFFFFFF, token_bytes, copy_bytes,
            widths >> 32, row_stride, t, tiles.to(tl.int64), src_cols_ptr, dst_cols_ptr,
            token_bias_ptr, block_table_stride, SKIP_SAME_BLOCK, CHUNK, BYTE_CHUNK, ROW_BLOCK,
            False,
        )
