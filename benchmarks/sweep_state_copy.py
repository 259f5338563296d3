# Triton kernels: parameters carry no Python annotations (Triton reads annotations as
# specialisation hints), so mypy cannot type these bodies.
# mypy: disable-error-code="no-untyped-def,untyped-decorator"
"""Issue 25 item 1, one GPU round: candidate state-copy structures side by side (H200).

The batch of ``bench_state_copy.py`` (36 layers x (48 KiB conv + 2 MiB temporal), block
column 0 -> 1, bias 0) at 1/2/8/32 requests; in the same run, each checked bit for bit
before it is timed (``triton.testing.do_bench`` medians, variants taking turns):

- vLLM 0.33.0's ``precopy_mamba_align_fused_kernel`` (read from the wheel at run time);
- ``copy_state_blocks`` at its defaults and at other (tiles, step, warps) with one step a
  program;
- ``work list``: a prototype grid over busy programs only (one record per step of one
  request: base, block stride, block-table address, offset, bytes), no idle programs and no
  per-state metadata loads; with and without streaming cache hints;
- table-free Triton copies of the same bytes between two contiguous buffers (one program per
  step; persistent programs; TMA tensor-descriptor copies): the ceilings of each structure;
- ``copy_`` of the same bytes.

    python benchmarks/sweep_state_copy.py --out DIR --vllm-file PATH
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from benchmarks.bench_convention_gpu import find_vllm_file
from benchmarks.bench_state_copy import (
    Model,
    check,
    devptr_call,
    load_vllm_precopy,
    planned_call,
    vllm_call,
)
from devptr._encoding import Encoding
from devptr.kernels import _state_jit as J
from devptr.kernels import copy_state_blocks_planned, state_copy_config, state_copy_plan
from devptr.kernels._copy_jit import _copy_segment, _memmove_kind
from devptr.kernels._state_jit import _load_record, _shift_rows

KIB = 1024


@triton.jit
def _load_stream(p, m, EVICT: tl.constexpr):
    if EVICT:
        return tl.load(p, mask=m, eviction_policy="evict_first")
    return tl.load(p, mask=m)


@triton.jit
def _store_stream(p, x, m, EVICT: tl.constexpr):
    if EVICT:
        tl.store(p, x, mask=m, cache_modifier=".cs")
    else:
        tl.store(p, x, mask=m)


@triton.jit
def _wl_kernel(
    work_ptr, src_cols_ptr, dst_cols_ptr, idx_ptr, bt_stride, CHUNK: tl.constexpr, EVICT: tl.constexpr
):
    """Grid (items, reqs): record i = [base, block_stride, table, offset, bytes, 0, 0, 0]."""
    i = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1)
    req = tl.load(idx_ptr + r).to(tl.int64)
    rec = work_ptr + i * 8
    base = tl.load(rec).to(tl.uint64, bitcast=True)
    stride = tl.load(rec + 1)
    table = tl.load(rec + 2).to(tl.uint64, bitcast=True)
    off = tl.load(rec + 3)
    nbytes = tl.load(rec + 4)
    src_col = tl.load(src_cols_ptr + req).to(tl.int64)
    dst_col = tl.load(dst_cols_ptr + req).to(tl.int64)
    if (src_col >= 0) & (src_col != dst_col):
        bt = table.to(tl.pointer_type(tl.int32)) + req * bt_stride
        sb = tl.load(bt + src_col).to(tl.int64)
        db = tl.load(bt + dst_col).to(tl.int64)
        sp = tl.multiple_of((base + (sb * stride + off).to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        dp = tl.multiple_of((base + (db * stride + off).to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        o = tl.arange(0, CHUNK // 8)
        m = o < nbytes // 8
        _store_stream(dp + o, _load_stream(sp + o, m, EVICT), m, EVICT)


@triton.jit
def _wl2_kernel(
    work_ptr,
    src_cols_ptr,
    dst_cols_ptr,
    idx_ptr,
    tables_ptr,
    bt_stride,
    bases_ptr,
    meta_ptr,
    CHUNK: tl.constexpr,
):
    """Grid (items, reqs): record i = int32 [state, step]; the state's facts from its tables."""
    i = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1)
    req = tl.load(idx_ptr + r).to(tl.int64)
    s = tl.load(work_ptr + 2 * i).to(tl.int64)
    step = tl.load(work_ptr + 2 * i + 1).to(tl.int64)
    src_col = tl.load(src_cols_ptr + req).to(tl.int64)
    dst_col = tl.load(dst_cols_ptr + req).to(tl.int64)
    base = tl.load(bases_ptr + s).to(tl.uint64, bitcast=True)
    meta = meta_ptr + s * 7
    stride = tl.load(meta)
    nbytes = tl.load(meta + 3)
    table = tl.load(tables_ptr + tl.load(meta + 6)).to(tl.uint64, bitcast=True)
    if (src_col >= 0) & (src_col != dst_col):
        bt = table.to(tl.pointer_type(tl.int32)) + req * bt_stride
        sb = tl.load(bt + src_col).to(tl.int64)
        db = tl.load(bt + dst_col).to(tl.int64)
        off = step * CHUNK
        sp = tl.multiple_of((base + (sb * stride + off).to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        dp = tl.multiple_of((base + (db * stride + off).to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        o = tl.arange(0, CHUNK // 8)
        m = o < (nbytes - off) // 8
        tl.store(dp + o, tl.load(sp + o, mask=m), mask=m)


@triton.jit
def _flat_kernel(src, dst, n_el, CHUNK: tl.constexpr, EVICT: tl.constexpr):
    p = tl.program_id(0).to(tl.int64)
    o = p * (CHUNK // 8) + tl.arange(0, CHUNK // 8)
    m = o < n_el
    _store_stream(dst + o, _load_stream(src + o, m, EVICT), m, EVICT)


@triton.jit
def _flat_persistent(src, dst, n_el, CHUNK: tl.constexpr):
    p = tl.program_id(0).to(tl.int64)
    g = tl.num_programs(0)
    steps = tl.cdiv(n_el, CHUNK // 8)
    for c in range(p, steps, g):
        o = c * (CHUNK // 8) + tl.arange(0, CHUNK // 8)
        m = o < n_el
        tl.store(dst + o, tl.load(src + o, mask=m), mask=m)


@triton.jit
def _tma_flat(src, dst, rows, BM: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    sd = tl.make_tensor_descriptor(src, shape=[rows, BN], strides=[BN, 1], block_shape=[BM, BN])
    dd = tl.make_tensor_descriptor(dst, shape=[rows, BN], strides=[BN, 1], block_shape=[BM, BN])
    p = tl.program_id(0)
    g = tl.num_programs(0)
    nblk = tl.cdiv(rows, BM)
    for b in tl.range(p, nblk, g, num_stages=STAGES):
        dd.store([b * BM, 0], sd.load([b * BM, 0]))


@triton.jit
def _empty_kernel(x):
    pass


# -- third round (issue 25): fewer dependent loads before each program's data ---------------
@triton.jit
def _copy_step(src, dst, size, t, tiles, CHUNK: tl.constexpr, BYTE_CHUNK: tl.constexpr):
    """Program ``t`` of ``tiles``' share of a ``size``-byte copy (:func:`_copy_segment`), with
    a straight path for the common case: disjoint, both ends 16-byte aligned, and this
    program's share one full ``CHUNK``-byte step (``t * CHUNK + CHUNK <= size`` and no
    later step of its own, ``tiles * CHUNK >= size``): one 16-byte-access load and store."""
    off = t * CHUNK
    fast = (
        ((((src | dst) & 15) == 0) & (off + CHUNK <= size) & (tiles * CHUNK >= size))
        & (_memmove_kind(src, dst, size) == 1)
    )
    if fast:
        sp = tl.multiple_of((src + off.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        dp = tl.multiple_of((dst + off.to(tl.uint64)).to(tl.pointer_type(tl.uint64)), 16)
        o = tl.arange(0, CHUNK // 8)
        tl.store(dp + o, tl.load(sp + o))
    else:
        _copy_segment(src, dst, size, t, tiles, CHUNK, BYTE_CHUNK)


@triton.jit
def _state_item(
    src_block,
    dst_block,
    bias,
    base,
    block_stride,
    conv_width,
    token_bytes,
    copy_bytes,
    rows,
    row_stride,
    t,
    tiles,
    CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr,
    ROW_BLOCK: tl.constexpr,
):
    """Program ``t`` of ``tiles``' share of one state's copy, its blocks resolved."""
    conv = conv_width > 0
    src0 = base + (src_block * block_stride).to(tl.uint64)
    dst = base + (dst_block * block_stride).to(tl.uint64)
    if conv & (rows > 1):
        if t == 0:
            _shift_rows(src0, dst, rows, row_stride, token_bytes, bias, conv_width - bias, ROW_BLOCK)
    else:
        src = src0 + tl.where(conv, bias * token_bytes, 0).to(tl.uint64)
        size = tl.where(conv, (conv_width - bias) * token_bytes, copy_bytes)
        _copy_step(src, dst, size, t, tiles, CHUNK, BYTE_CHUNK)


@triton.jit
def _copy_state_plan_loop_kernel(
    records_ptr,
    n_records,
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
    """(b) Grid ``(programs, num_reqs)``: program ``(q, r)`` does plan records ``q, q + programs,
    ...`` for request row ``r`` (``programs <= n_records``).

    The request's columns and bias are read once; its block-table entries once per block
    table (one cache for conv windows, one for whole-block states: each is re-read only
    when a record names another table). The next record's words are loaded at the top of
    each iteration, in flight with the current data, so after the first record the data
    is the only load on the critical path.
    """
    q = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1)
    step = tl.num_programs(0).to(tl.int64)
    if HAS_IDX_MAPPING:
        req = tl.load(idx_mapping_ptr + r).to(tl.int64)
    else:
        req = r.to(tl.int64)
    base, block_stride, table, copy_bytes, widths, token_bytes, row_stride, share = _load_record(
        records_ptr, q
    )
    if req >= 0:
        src_col = tl.load(src_cols_ptr + req).to(tl.int64)
        dst_col = tl.load(dst_cols_ptr + req).to(tl.int64)
        bias = tl.load(token_bias_ptr + req).to(tl.int64)
        if SKIP_SAME_BLOCK:
            skip = (src_col < 0) | (src_col == dst_col)
        else:
            skip = (src_col < 0) | ((src_col == dst_col) & (bias == 0))
        if not skip:
            row = req * block_table_stride
            conv_table = table ^ table  # 0: no table cached yet
            whole_table = conv_table
            conv_src = src_col
            conv_dst = src_col
            whole_src = src_col
            whole_dst = src_col
            for i in range(q, n_records, step):
                nxt = tl.minimum(i + step, n_records - 1)
                n_base, n_stride, n_table, n_bytes, n_widths, n_token, n_row_stride, n_share = (
                    _load_record(records_ptr, nxt)
                )
                conv_width = widths & 0xFFFFFFFF
                rows = widths >> 32
                t = share & 0xFFFFFFFF
                tiles = share >> 32
                bt = table.to(tl.pointer_type(tl.int32)) + row
                if conv_width > 0:
                    if table != conv_table:
                        conv_src = tl.load(bt + src_col).to(tl.int64)
                        conv_dst = tl.load(bt + dst_col).to(tl.int64)
                        conv_table = table
                    src_block = conv_src
                    dst_block = conv_dst
                else:
                    if table != whole_table:
                        whole_src = tl.load(bt + src_col + bias).to(tl.int64)
                        whole_dst = tl.load(bt + dst_col).to(tl.int64)
                        whole_table = table
                    src_block = whole_src
                    dst_block = whole_dst
                _state_item(
                    src_block, dst_block, bias, base, block_stride, conv_width, token_bytes,
                    copy_bytes, rows, row_stride, t, tiles, CHUNK, BYTE_CHUNK, ROW_BLOCK,
                )
                base = n_base
                block_stride = n_stride
                table = n_table
                copy_bytes = n_bytes
                widths = n_widths
                token_bytes = n_token
                row_stride = n_row_stride
                share = n_share


@triton.jit
def _resolve_kernel(
    scratch, tables_ptr, n_groups, src_cols_ptr, dst_cols_ptr, bias_ptr, idx_ptr, bt_stride,
    SKIP_SAME_BLOCK: tl.constexpr, G: tl.constexpr,
):
    """(a), first launch. Grid (reqs,): row r of ``scratch`` ([reqs, 4, G] int64) gets, per
    group, the conv source block, the whole-block source block, the destination block and
    the bias (-1: nothing to copy for this request)."""
    r = tl.program_id(0)
    req = tl.load(idx_ptr + r).to(tl.int64)
    g = tl.arange(0, G)
    gm = g < n_groups
    tab = tl.load(tables_ptr + g, mask=gm, other=0).to(tl.uint64, bitcast=True)
    reqc = tl.maximum(req, 0)
    src_col = tl.load(src_cols_ptr + reqc).to(tl.int64)
    dst_col = tl.load(dst_cols_ptr + reqc).to(tl.int64)
    bias = tl.load(bias_ptr + reqc).to(tl.int64)
    if SKIP_SAME_BLOCK:
        skip = (req < 0) | (src_col < 0) | (src_col == dst_col)
    else:
        skip = (req < 0) | (src_col < 0) | ((src_col == dst_col) & (bias == 0))
    bt = tab.to(tl.pointer_type(tl.int32)) + reqc * bt_stride
    m = g < tl.where(skip, 0, n_groups)
    sc = tl.load(bt + src_col, mask=m, other=0).to(tl.int64)
    sw = tl.load(bt + src_col + bias, mask=m, other=0).to(tl.int64)
    d = tl.load(bt + dst_col, mask=m, other=0).to(tl.int64)
    row = scratch + r.to(tl.int64) * (4 * G)
    tl.store(row + g, sc, mask=gm)
    tl.store(row + G + g, sw, mask=gm)
    tl.store(row + 2 * G + g, d, mask=gm)
    tl.store(row + 3 * G + g, tl.where(skip, -1, bias) + g * 0, mask=gm)


@triton.jit
def _resolved_copy_kernel(records_ptr, scratch, CHUNK: tl.constexpr, BYTE_CHUNK: tl.constexpr):
    """(a), second launch. Grid (records, reqs), one group: the record (word 2: group 0) and
    the request's resolved blocks load together, then the data (two dependent levels)."""
    i = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1).to(tl.int64)
    base, block_stride, _g, copy_bytes, widths, token_bytes, row_stride, share = _load_record(
        records_ptr, i
    )
    row = scratch + r * 4
    sc = tl.load(row)
    sw = tl.load(row + 1)
    d = tl.load(row + 2)
    bias = tl.load(row + 3)
    if bias >= 0:
        conv_width = widths & 0xFFFFFFFF
        sb = tl.where(conv_width > 0, sc, sw)
        _state_item(
            sb, d, bias, base, block_stride, conv_width, token_bytes, copy_bytes,
            widths >> 32, row_stride, share & 0xFFFFFFFF, share >> 32, CHUNK, BYTE_CHUNK, 128,
        )


@triton.jit
def _planned_fast_kernel(
    records_ptr, src_cols_ptr, dst_cols_ptr, bias_ptr, idx_ptr, bt_stride, CHUNK: tl.constexpr,
    BYTE_CHUNK: tl.constexpr, PAIR: tl.constexpr,
):
    """The shipped planned kernel (skip_same_block, idx_mapping) with the straight 4 KiB path
    of ``_copy_step``; ``PAIR``: each program does records 2i and 2i + 1 (one chain)."""
    i = tl.program_id(0).to(tl.int64)
    r = tl.program_id(1)
    req = tl.load(idx_ptr + r).to(tl.int64)
    j = i * 2 if PAIR else i
    base, block_stride, table, copy_bytes, widths, token_bytes, row_stride, share = _load_record(
        records_ptr, j
    )
    if PAIR:
        base2, stride2, table2, bytes2, widths2, token2, row_stride2, share2 = _load_record(
            records_ptr, j + 1
        )
    if req >= 0:
        src_col = tl.load(src_cols_ptr + req).to(tl.int64)
        dst_col = tl.load(dst_cols_ptr + req).to(tl.int64)
        bias = tl.load(bias_ptr + req).to(tl.int64)
        if (src_col >= 0) & (src_col != dst_col):
            conv_width = widths & 0xFFFFFFFF
            bt = table.to(tl.pointer_type(tl.int32)) + req * bt_stride
            sb = tl.load(bt + tl.where(conv_width > 0, src_col, src_col + bias)).to(tl.int64)
            db = tl.load(bt + dst_col).to(tl.int64)
            if PAIR:
                conv2 = widths2 & 0xFFFFFFFF
                bt2 = table2.to(tl.pointer_type(tl.int32)) + req * bt_stride
                sb2 = tl.load(bt2 + tl.where(conv2 > 0, src_col, src_col + bias)).to(tl.int64)
                db2 = tl.load(bt2 + dst_col).to(tl.int64)
            _state_item(
                sb, db, bias, base, block_stride, conv_width, token_bytes, copy_bytes,
                widths >> 32, row_stride, share & 0xFFFFFFFF, share >> 32, CHUNK, BYTE_CHUNK, 128,
            )
            if PAIR:
                _state_item(
                    sb2, db2, bias, base2, stride2, conv2, token2, bytes2, widths2 >> 32,
                    row_stride2, share2 & 0xFFFFFFFF, share2 >> 32, CHUNK, BYTE_CHUNK, 128,
                )


def work_list(m: Model, chunk: int, interleave: bool) -> torch.Tensor:
    """One record per step of one request's copies (state-major, or step-major)."""
    per_state = []
    for s, nbytes in zip(m.states, m.copy_bytes, strict=True):
        stride = s.stride(0) * s.element_size()
        recs = []
        for off in range(0, nbytes, chunk):
            recs.append(
                [s.data_ptr(), stride, m.block_table.data_ptr(), off, min(chunk, nbytes - off), 0, 0, 0]
            )
        per_state.append(recs)
    rows: list[list[int]] = []
    if interleave:
        depth = max(len(r) for r in per_state)
        for k in range(depth):
            rows += [r[k] for r in per_state if k < len(r)]
    else:
        for r in per_state:
            rows += r
    return torch.tensor(rows, dtype=torch.int64, device=m.device)


def wl_call(
    m: Model, reqs: int, wl: torch.Tensor, chunk: int, warps: int, evict: bool
) -> Callable[[], object]:
    grid = (wl.shape[0], reqs)

    def run() -> object:
        return _wl_kernel[grid](
            wl,
            m.src_cols,
            m.dst_cols,
            m.idx,
            m.block_table.stride(0),
            CHUNK=chunk,
            EVICT=evict,
            num_warps=warps,
        )

    return run


def wl2_call(m: Model, reqs: int, chunk: int, warps: int) -> Callable[[], object]:
    pairs = [[s, k] for s, nb in enumerate(m.copy_bytes) for k in range(-(-nb // chunk))]
    wl = torch.tensor(pairs, dtype=torch.int32, device=m.device)
    bases, tables = m.v_bases, m.v_tables
    meta = m.meta.host(Encoding.I64).to(m.device)
    grid = (wl.shape[0], reqs)

    def run() -> object:
        return _wl2_kernel[grid](
            wl,
            m.src_cols,
            m.dst_cols,
            m.idx,
            tables,
            m.block_table.stride(0),
            bases,
            meta,
            CHUNK=chunk,
            num_warps=warps,
        )

    return run


def flat_call(a: torch.Tensor, b: torch.Tensor, chunk: int, warps: int, evict: bool) -> Callable[[], object]:
    a8, b8 = a.view(torch.int64), b.view(torch.int64)
    n = a8.numel()
    grid = (triton.cdiv(n * 8, chunk),)
    return lambda: _flat_kernel[grid](a8, b8, n, CHUNK=chunk, EVICT=evict, num_warps=warps)


def persistent_call(
    a: torch.Tensor, b: torch.Tensor, chunk: int, warps: int, programs: int
) -> Callable[[], object]:
    a8, b8 = a.view(torch.int64), b.view(torch.int64)
    n = a8.numel()
    return lambda: _flat_persistent[(programs,)](a8, b8, n, CHUNK=chunk, num_warps=warps)


def tma_call(
    a: torch.Tensor, b: torch.Tensor, bm: int, bn: int, programs: int, stages: int
) -> Callable[[], object]:
    a4, b4 = a.view(torch.int32), b.view(torch.int32)
    rows = a4.numel() // bn
    return lambda: _tma_flat[(programs,)](a4, b4, rows, BM=bm, BN=bn, STAGES=stages, num_warps=4)


def class_call(m: Model, reqs: int, warps: int, with_idx: bool = True) -> Callable[[], object]:
    """(d): ``copy_state_blocks_planned(by_class=True)``: the class kernel (state and step
    from the program id, one facts row per state, states sorted by their programs)."""
    plan = _plan(m, 4096)
    idx = m.idx if with_idx else None

    def run() -> object:
        copy_state_blocks_planned(
            plan, m.block_table.stride(0), m.src_cols, m.dst_cols, m.bias, reqs,
            idx_mapping=idx, skip_same_block=True, num_warps=warps, by_class=True,
        )
        return None

    return run


def no_idx_call(m: Model, reqs: int) -> Callable[[], object]:
    """Diagnostic: the shipped planned kernel without ``idx_mapping`` (one load level less;
    the bench's mapping is the identity, so the copies are the same)."""
    plan = _plan(m, 4096)

    def run() -> object:
        copy_state_blocks_planned(
            plan, m.block_table.stride(0), m.src_cols, m.dst_cols, m.bias, reqs, skip_same_block=True
        )
        return None

    return run


def _plan(m: Model, chunk: int) -> Any:
    if chunk not in m.plans:
        m.plans[chunk] = state_copy_plan(m.bases, m.meta, m.tables, chunk=chunk)
    return m.plans[chunk]


def loop_call(m: Model, reqs: int, programs: int, warps: int, chunk: int = 4096) -> Callable[[], object]:
    """(b): the loop kernel, ``programs`` per request."""
    return direct_call(m, reqs, warps, None, programs, chunk)


def direct_call(
    m: Model,
    reqs: int,
    warps: int,
    maxnreg: int | None,
    programs: int | None = None,
    chunk: int = 4096,
) -> Callable[[], object]:
    """The planned kernel (``programs`` None) or the loop kernel launched straight through
    ``kernel[grid]``, with a register cap (``maxnreg``: more programs resident per SM)."""
    recs = _plan(m, chunk).records
    n = recs.shape[0]
    kw: dict[str, Any] = dict(
        HAS_IDX_MAPPING=True, SKIP_SAME_BLOCK=True, CHUNK=chunk, BYTE_CHUNK=1024, ROW_BLOCK=128,
        num_warps=warps, maxnreg=maxnreg,
    )
    cols = (m.src_cols, m.dst_cols, m.bias, m.idx, m.block_table.stride(0))
    if programs is None:
        return lambda: J._copy_state_plan_kernel[(n, reqs)](recs, *cols, **kw)
    grid = (min(programs, n), reqs)
    return lambda: _copy_state_plan_loop_kernel[grid](recs, n, *cols, **kw)


def resolved_call(
    m: Model, reqs: int, warps: int, chunk: int = 4096, copy_only: bool = False
) -> Callable[[], object]:
    """(a): a first launch resolves each request's blocks into scratch (allocated here,
    once), the second copies with two dependent load levels (both launches timed).
    ``copy_only`` (diagnostic): the second launch alone, on scratch resolved once here."""
    recs = _plan(m, chunk).records.clone()
    recs[:, 2] = 0  # group index instead of the table address (one group)
    scratch = torch.zeros(m.max_reqs * 4, dtype=torch.int64, device=m.device)
    tables = m.v_tables
    grid = (recs.shape[0], reqs)

    def resolve() -> None:
        _resolve_kernel[(reqs,)](
            scratch, tables, 1, m.src_cols, m.dst_cols, m.bias, m.idx, m.block_table.stride(0),
            SKIP_SAME_BLOCK=True, G=1, num_warps=1,
        )

    def run() -> object:
        if not copy_only:
            resolve()
        return _resolved_copy_kernel[grid](recs, scratch, CHUNK=chunk, BYTE_CHUNK=1024, num_warps=warps)

    if copy_only:
        resolve()

    return run


def fast_call(m: Model, reqs: int, warps: int, pair: bool, chunk: int = 4096) -> Callable[[], object]:
    """(c): the planned kernel with the straight 4 KiB path, one record or two a program."""
    recs = _plan(m, chunk).records
    n = recs.shape[0]
    if pair and n % 2:
        raise ValueError("pairs need an even record count")
    grid = (n // 2 if pair else n, reqs)

    def run() -> object:
        return _planned_fast_kernel[grid](
            recs, m.src_cols, m.dst_cols, m.bias, m.idx, m.block_table.stride(0),
            CHUNK=chunk, BYTE_CHUNK=1024, PAIR=pair, num_warps=warps,
        )

    return run


def third_round(m: Model, r: int, kernel: Any, sms: int) -> dict[str, Callable[[], object]]:
    """The third round's variants (issue 25): shipped kernels and (a), (b), (c)."""
    fns: dict[str, Callable[[], object]] = {
        "vLLM fused": vllm_call(kernel, m, r),
        "planned (shipped: c4K w2)": planned_call(m, r),
    }
    for chunk, warps in ((8192, 2), (8192, 4), (16384, 4)):
        fns[f"planned c{chunk // KIB}K w{warps}"] = planned_call(m, r, chunk, warps)
    for warps in (2, 4):
        fns[f"(a) resolve + copy w{warps}"] = resolved_call(m, r, warps)
    for per_sm, warps in ((8, 2), (16, 2), (24, 2), (32, 2), (8, 4), (16, 4)):
        fns[f"(b) loop {per_sm}/SM w{warps}"] = loop_call(m, r, max(1, sms * per_sm // r), warps)
    fns["(b) loop 8/SM w4 c8K"] = loop_call(m, r, max(1, sms * 8 // r), 4, 8192)
    for per_sm, warps, cap in ((16, 2, 64), (24, 2, 40), (8, 4, 64), (12, 4, 40)):
        fns[f"(b) loop {per_sm}/SM w{warps} maxnreg {cap}"] = direct_call(
            m, r, warps, cap, max(1, sms * per_sm // r)
        )
    for warps, cap in ((2, 40), (2, 32), (4, 32)):
        fns[f"(c) planned w{warps} maxnreg {cap}"] = direct_call(m, r, warps, cap)
    for warps, pair in ((2, False), (4, False), (2, True), (4, True)):
        fns[f"(c) planned straight w{warps}{' pairs' if pair else ''}"] = fast_call(m, r, warps, pair)
    for warps in (2, 4):
        fns[f"(d) classes w{warps}"] = class_call(m, r, warps)
    fns["(d) classes w2, no idx_mapping (diagnostic)"] = class_call(m, r, 2, with_idx=False)
    fns["planned, no idx_mapping (diagnostic)"] = no_idx_call(m, r)
    fns["(a) copy launch alone w2 (diagnostic)"] = resolved_call(m, r, 2, copy_only=True)
    return fns


def first_flats(a: torch.Tensor, b: torch.Tensor, sms: int) -> dict[str, Callable[[], object]]:
    """The first round's table-free copies of the same bytes."""
    flats: dict[str, Callable[[], object]] = {}
    for chunk, warps, evict in (
        (4096, 4, False),
        (4096, 4, True),
        (8192, 4, False),
        (16384, 4, False),
        (16384, 8, False),
        (16384, 8, True),
    ):
        flats[f"flat c{chunk // KIB}K w{warps}{' evict' if evict else ''}"] = flat_call(
            a, b, chunk, warps, evict
        )
    for per_sm in (8, 16):
        flats[f"flat persistent c16K w4 {per_sm}/SM"] = persistent_call(a, b, 16384, 4, sms * per_sm)
    for bm, bn, per_sm, stages in ((64, 64, 2, 3), (32, 64, 4, 3), (64, 64, 4, 4)):
        flats[f"flat TMA {bm}x{bn} i32 {per_sm}/SM s{stages}"] = tma_call(
            a, b, bm, bn, sms * per_sm, stages
        )
    return flats


def first_round(
    m: Model, r: int, kernel: Any, wls: dict[tuple[int, bool], torch.Tensor]
) -> dict[str, Callable[[], object]]:
    """The first round's variants (table-driven kernels and work-list prototypes)."""
    device = m.device
    fns: dict[str, Callable[[], object]] = {
        "vLLM fused": vllm_call(kernel, m, r),
        "devptr defaults": devptr_call(m, r, **state_copy_config(m.copy_bytes, r, device)),
    }
    for tiles, chunk, warps in (
        (512, 4096, 8),
        (256, 8192, 4),
        (256, 8192, 8),
        (128, 16384, 4),
        (128, 16384, 8),
        (64, 32768, 8),
    ):
        fns[f"devptr t{tiles} c{chunk // KIB}K w{warps}"] = devptr_call(
            m, r, tiles=tiles, chunk=chunk, num_warps=warps, slices=False
        )
    for chunk, warps, evict, il in (
        (4096, 4, False, False),
        (4096, 4, True, False),
        (4096, 4, False, True),
        (4096, 2, False, False),
        (8192, 4, False, False),
        (8192, 4, True, False),
        (16384, 4, False, False),
        (16384, 8, False, False),
        (16384, 8, True, False),
        (16384, 4, False, True),
    ):
        name = (
            f"worklist c{chunk // KIB}K w{warps}{' evict' if evict else ''}{' interleaved' if il else ''}"
        )
        fns[name] = wl_call(m, r, wls[(chunk, il)], chunk, warps, evict)
    for chunk, warps in ((4096, 4), (16384, 4), (16384, 8)):
        fns[f"worklist2 [state, step] c{chunk // KIB}K w{warps}"] = wl2_call(m, r, chunk, warps)
    return fns


def check_only(args: argparse.Namespace) -> int:
    """Every variant of ``--set third`` checked bit for bit against vLLM's kernel's result
    on a smaller batch (``--layers``, 1 MiB temporal states), on the CPU under the Triton
    interpreter where there is no GPU (2 "SMs": the loop kernels deal many records)."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kernel = load_vllm_precopy(find_vllm_file(args.vllm_file))
    reqs = [int(x) for x in args.reqs.split(",")]
    m = Model(device, args.layers, 48, 1, blocks=4 * max(reqs), max_reqs=max(reqs))
    bad_total = 0
    for r in reqs:
        fns = third_round(m, r, kernel, 2)
        if args.only:
            keep = ("vLLM fused", *args.only.split(","))
            fns = {k: f for k, f in fns.items() if any(x in k for x in keep)}
        bad = [k for k, f in fns.items() if not check(m, r, f)]
        print(f"{r} request(s): {len(fns) - len(bad)} of {len(fns)} bit-identical; wrong: {bad}", flush=True)
        bad_total += len(bad)
    return 1 if bad_total else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--vllm-file", default=None)
    ap.add_argument("--reqs", default="1,2,8,32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rep-ms", type=int, default=25)
    ap.add_argument("--set", choices=("first", "third"), default="third", help="which round's variants")
    ap.add_argument(
        "--check-only", action="store_true", help="bit-identity checks only (CPU: TRITON_INTERPRET=1)"
    )
    ap.add_argument("--layers", type=int, default=36)
    ap.add_argument("--only", default="", help="comma-separated parts of the variant names to run")
    args = ap.parse_args(argv)
    if args.check_only:
        return check_only(args)
    device = torch.device("cuda")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    kernel = load_vllm_precopy(find_vllm_file(args.vllm_file))
    reqs = [int(x) for x in args.reqs.split(",")]
    m = Model(device, args.layers, 48, 2, blocks=4 * max(reqs), max_reqs=max(reqs))
    third = args.set == "third"
    wls = {} if third else {(c, il): work_list(m, c, il) for c in (4096, 8192, 16384) for il in (False, True)}
    results: dict[str, Any] = {
        "meta": {**H.meta(), "machine": H.machine_line()}, "sms": sms, "set": args.set, "cases": []
    }
    for r in reqs:
        nbytes = m.bytes_moved(r)
        a = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=device)
        b = torch.empty_like(a)
        fns = third_round(m, r, kernel, sms) if third else first_round(m, r, kernel, wls)
        if args.only:
            keep = ("vLLM fused", "planned (shipped: c4K w2)", *args.only.split(","))
            fns = {k: f for k, f in fns.items() if any(x in k for x in keep)}
        ok = {}
        for k, f in fns.items():
            try:
                ok[k] = check(m, r, f)
            except Exception:
                traceback.print_exc()
                ok[k] = False
        flats: dict[str, Callable[[], object]] = {"copy_": lambda a=a, b=b: b.copy_(a)}
        if third:
            for warps in (2, 4):
                flats[f"flat c4K w{warps}"] = flat_call(a, b, 4096, warps, False)
        else:
            flats.update(first_flats(a, b, sms))
        for k, f in flats.items():
            try:
                b.fill_(0x5A)
                f()
                torch.cuda.synchronize()
                ok[k] = bool(torch.equal(a, b))
            except Exception:
                traceback.print_exc()
                ok[k] = False
            fns[k] = f
        fns["empty launch"] = lambda a=a: _empty_kernel[(1,)](a)
        ok["empty launch"] = True
        regs = {}
        for k, f in fns.items():
            got = f() if ok[k] else None
            if hasattr(got, "n_regs"):
                regs[k] = {"regs": got.n_regs, "spills": got.n_spills}
        torch.cuda.synchronize()
        samples: dict[str, list[float]] = {k: [] for k in fns if ok[k]}
        for _ in range(args.rounds):
            for k in samples:
                samples[k] += list(H.triton_bench(fns[k], rep_ms=args.rep_ms).samples_ns)
        vllm_us = statistics.median(samples["vLLM fused"]) * 1e-3
        cont_us = statistics.median(samples["copy_"]) * 1e-3
        rows = []
        for k in fns:
            if k not in samples:
                rows.append({"kernel": k, "correct": False})
                continue
            us = statistics.median(samples[k]) * 1e-3
            rows.append(
                {
                    "kernel": k,
                    "correct": True,
                    "us": us,
                    "vllm_over": vllm_us / us,
                    "contig_over": cont_us / us,
                }
            )
        results["cases"].append({"reqs": r, "bytes": nbytes, "rows": rows, "registers": regs})
        print("registers:", regs)
        print(f"## {r} request(s), {nbytes / 2**20:.1f} MiB")
        for row in sorted(rows, key=lambda x: x.get("us", 1e9)):
            if row["correct"]:
                print(
                    f"{row['kernel']:45s} {row['us']:8.1f} us  vLLM/this {row['vllm_over']:.3f}"
                    f"  copy_/this {row['contig_over']:.3f}"
                )
            else:
                print(f"{row['kernel']:45s} WRONG or failed")
        sys.stdout.flush()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sweep_state_copy.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
