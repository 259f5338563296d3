"""``copy_state_blocks``: Mamba state copies between block-table columns, on the device.

For every request ``r`` (or ``idx_mapping[r]``) and state ``s`` (one tensor of one layer):

- conv window state (``conv_width > 0``): the window shifted by ``token_bias`` accepted
  tokens, ``state[bt[src_col], bias:] -> state[bt[dst_col], :conv_width - bias]``
  (state-first layout: one contiguous range with memmove semantics; dim-first layout:
  ``rows`` rows of ``row_stride`` bytes, each shifted);
- whole-block state (``conv_width == 0``): ``state[bt[src_col + bias]] -> state[bt[dst_col]]``
  (``copy_bytes`` bytes, split over ``tiles`` programs);

where ``state[b]`` is at ``state_base_addrs[s] + b * block_stride`` and ``bt`` is row ``r``
of the int32 block table whose address is ``block_table_ptrs[group]``. Requests with
``src_col < 0`` are skipped, and so are those with ``src_col == dst_col`` (always when
``skip_same_block``, else only when the bias is 0).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import torch

from devptr import (
    CapacityError,
    Column,
    Encoding,
    InvalidValueError,
    LengthMismatchError,
    PtrBuffer,
    PtrTable,
    PtrTypeError,
)
from devptr._core_api import describe, index_value, uint_value
from devptr.kernels import _runtime, _tables
from devptr.kernels._launch import FastKernel, arg_key, table_view
from devptr.kernels._memcpy import BYTE_CHUNK, CHUNK, NUM_WARPS


class StateMeta(enum.IntEnum):
    """Columns of the per-state metadata table (int64 each, in this order)."""

    BLOCK_STRIDE = 0
    """Bytes between consecutive blocks of the state tensor."""
    CONV_WIDTH = 1
    """Tokens in a conv window; 0 marks a whole-block (temporal) state."""
    TOKEN_BYTES = 2
    """Bytes between tokens of the window (state-first: a token row; dim-first: one element)."""
    COPY_BYTES = 3
    """Whole-block states: bytes copied per block (the natural size, not the page stride)."""
    ROWS = 4
    """Dim-first conv windows: rows per block; 1 for every other state."""
    ROW_STRIDE = 5
    """Dim-first conv windows: bytes between rows; 0 otherwise."""
    GROUP = 6
    """Index into ``block_table_ptrs`` of the state's block-table group."""


STATE_META_COLUMNS: tuple[tuple[str, Column], ...] = tuple(
    (m.name.lower(), Column.INT) for m in StateMeta
)
"""``PtrTable`` columns for :class:`StateMeta`: ``PtrTable(n, STATE_META_COLUMNS, ...)``."""

_INT_DTYPES = (torch.int32, torch.int64)
_KERNEL = FastKernel("_state_jit", "_copy_state_blocks_kernel")
_PLAN_KERNEL = FastKernel("_state_jit", "_copy_state_plan_kernel")
_CLASS_KERNEL = FastKernel("_state_jit", "_copy_state_class_kernel")

_META_CONSTANTS: dict[str, int] = {
    "NCOLS": len(StateMeta),
    **{f"COL_{m.name}": int(m) for m in StateMeta},
}
"""The :class:`StateMeta` columns as the kernel's constexprs (the kernel holds no copy)."""


class StateCopyConfig(TypedDict):
    """Launch knobs of :func:`copy_state_blocks` (keyword arguments)."""

    tiles: int
    chunk: int
    num_warps: int
    slices: bool


MAX_TILES = 512
"""Most programs sharing one state's copy."""
STATE_CHUNK = 4096
"""Bytes one program moves per step in state copies."""


def state_copy_config(
    copy_bytes: Sequence[int], num_reqs: int = 1, device: torch.device | None = None
) -> StateCopyConfig:
    """Launch knobs of :func:`copy_state_blocks` for states that copy ``copy_bytes`` bytes
    each (per request; conv windows: the whole window).

    One step of :data:`STATE_CHUNK` bytes per program for the largest copy (``tiles``
    programs share each copy, at most :data:`MAX_TILES`; steps dealt round-robin;
    programs past a copy's last step leave at once): many small programs keep every
    multiprocessor busy to the end of the batch. On an H200 this beat fewer, larger
    programs and contiguous slices at 1 to 32 requests (``benchmarks/results/kernels.md``);
    ``num_reqs`` and ``device`` are accepted for policies that depend on them.
    """
    del num_reqs, device
    largest = max((int(b) for b in copy_bytes), default=0)
    tiles = max(1, min(MAX_TILES, -(-largest // STATE_CHUNK)))
    return {"tiles": tiles, "chunk": STATE_CHUNK, "num_warps": NUM_WARPS, "slices": False}


def _meta_tensor(meta: object) -> torch.Tensor:
    if isinstance(meta, PtrTable):
        if list(meta.columns) != [name for name, _ in STATE_META_COLUMNS]:
            raise PtrTypeError(f"state_meta columns must be {[n for n, _ in STATE_META_COLUMNS]}")
        if meta.device_type is None:  # no device mirror: the host table (CPU interpreter)
            return meta.host(Encoding.I64)
        return meta.device(Encoding.I64)
    if isinstance(meta, torch.Tensor) and meta.dtype == torch.int64 and meta.dim() == 2:
        if meta.shape[1] != len(StateMeta) or not meta.is_contiguous():
            raise PtrTypeError(f"state_meta must be contiguous [num_states, {len(StateMeta)}] int64")
        return meta
    raise PtrTypeError(f"state_meta must be a PtrTable or a 2-D int64 tensor (got {describe(meta)})")


def _no_check(table: object) -> None:
    return None


def _live(table: object) -> object:
    return table.device_type  # type: ignore[attr-defined]  # raises once released to a pool


def _address_table(table: object, where: str) -> torch.Tensor:
    """:func:`_tables.address_table`, remembered by identity for PtrBuffers."""
    if type(table) is PtrBuffer:
        return table_view(table, lambda t: _tables.address_table(t, where), _live)[0]
    return _tables.address_table(table, where)


def _index_table(t: object, where: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or t.dtype not in _INT_DTYPES or t.dim() != 1:
        raise PtrTypeError(f"{where} must be a 1-D int32/int64 tensor (got {describe(t)})")
    return t


def _request_tables(
    src_cols: object,
    dst_cols: object,
    token_biases: object,
    num_reqs: int,
    idx_mapping: object | None,
) -> tuple[dict[str, torch.Tensor], int]:
    """The per-request tables by kernel argument name (``idx_mapping`` when given), each
    checked to be a 1-D integer tensor long enough for ``num_reqs`` rows."""
    per_req = {
        "src_cols": _index_table(src_cols, "src_cols"),
        "dst_cols": _index_table(dst_cols, "dst_cols"),
        "token_biases": _index_table(token_biases, "token_biases"),
    }
    num_reqs = index_value(num_reqs, "num_reqs", None)
    if idx_mapping is not None:
        idx = _index_table(idx_mapping, "idx_mapping")
        if idx.shape[0] < num_reqs:
            raise CapacityError(f"idx_mapping holds {idx.shape[0]} entries, num_reqs={num_reqs}")
        per_req["idx_mapping"] = idx
    else:
        short = {k: int(v.shape[0]) for k, v in per_req.items() if v.shape[0] < num_reqs}
        if short:
            raise CapacityError(f"num_reqs={num_reqs} exceeds the length of {short}")
    return per_req, num_reqs


def copy_state_blocks(
    state_base_addrs: object,
    state_meta: object,
    block_table_ptrs: object,
    block_table_stride: int,
    src_cols: torch.Tensor,
    dst_cols: torch.Tensor,
    token_biases: torch.Tensor,
    num_reqs: int,
    *,
    idx_mapping: torch.Tensor | None = None,
    skip_same_block: bool = False,
    tiles: int = 1,
    slices: bool = False,
    chunk: int = CHUNK,
    byte_chunk: int = BYTE_CHUNK,
    num_warps: int = NUM_WARPS,
) -> None:
    """Copy Mamba state blocks for ``num_reqs`` requests and every state (one launch).

    Parameters
    ----------
    state_base_addrs
        PtrBuffer or 1-D int64/uint64 tensor: the base address of each state tensor.
    state_meta
        PtrTable with :data:`STATE_META_COLUMNS` or a ``[num_states, 7]`` int64 tensor
        (:class:`StateMeta` columns).
    block_table_ptrs
        PtrBuffer or tensor: the address of each group's int32 block table
        ``[max_reqs, max_blocks]``, rows ``block_table_stride`` elements apart.
    src_cols, dst_cols, token_biases
        Per-request int32/int64 device tensors, indexed by request slot.
    num_reqs
        Requests (grid rows). With ``idx_mapping``, row ``r`` is request slot
        ``idx_mapping[r]`` (negative: skipped).
    skip_same_block
        Skip ``src_col == dst_col`` even with a bias (vLLM's align pre-copy).
    tiles
        Programs sharing each whole-block copy (conv windows use the first program only
        when they overlap).
    slices
        How the ``tiles`` programs share a copy: contiguous slices (True) or steps dealt
        round-robin (False).

    Notes
    -----
    Asynchronous, no host copies, no allocation (CUDA-graph capturable). PtrBuffer and
    PtrTable arguments contribute their device mirrors (as their last ``to_device`` left
    them) when they have one.
    """
    bases = _address_table(state_base_addrs, "state_base_addrs")
    if type(state_meta) is PtrTable:  # checked once, then remembered by identity
        meta = table_view(state_meta, _meta_tensor, _no_check)[0]
    else:
        meta = _meta_tensor(state_meta)
    tables_ptrs = _address_table(block_table_ptrs, "block_table_ptrs")
    if meta.shape[0] != bases.shape[0]:
        raise LengthMismatchError(
            f"{bases.shape[0]} state base addresses but {meta.shape[0]} metadata rows"
        )
    per_req, num_reqs = _request_tables(src_cols, dst_cols, token_biases, num_reqs, idx_mapping)
    src_c, dst_c, bias_c = per_req["src_cols"], per_req["dst_cols"], per_req["token_biases"]
    block_table_stride = uint_value(block_table_stride, "block_table_stride")
    if type(tiles) is not int or not 1 <= tiles <= 65535:
        raise InvalidValueError(f"tiles must be an int in [1, 65535] (got {tiles!r})")
    device = _tables.same_device(
        {"state_base_addrs": bases, "state_meta": meta, "block_table_ptrs": tables_ptrs, **per_req}
    )
    num_states = int(bases.shape[0])
    if num_reqs == 0 or num_states == 0:
        return
    if device.type != "cuda":
        _runtime.check_launch_device(device, _KERNEL.jit_module())
    args = (
        src_c,
        dst_c,
        bias_c,
        per_req.get("idx_mapping", src_c),
        tables_ptrs,
        block_table_stride,
        bases,
        meta,
    )
    meta_kw = {
        "HAS_IDX_MAPPING": idx_mapping is not None,
        "SKIP_SAME_BLOCK": skip_same_block,
        **_META_CONSTANTS,
        "CHUNK": chunk,
        "BYTE_CHUNK": byte_chunk,
        "ROW_BLOCK": 128,
        "SLICE": bool(slices),
    }
    key = (device.index, *map(arg_key, args), *meta_kw.values(), num_warps)
    raw = tuple(a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args)
    _KERNEL.launch(device, (num_reqs, num_states, tiles), key, args, meta_kw, num_warps, raw)


PLAN_WORDS = 8
"""int64 words per :class:`StateCopyPlan` record (see ``_copy_state_plan_kernel``)."""
PLAN_NUM_WARPS = 2
"""Warps per program of :func:`copy_state_blocks_planned`: with one 4 KiB step a program,
2 warps beat 4 at 1 to 32 requests on an H200 (and 8 lost by 25-35%;
``benchmarks/results/kernels.md``)."""
_I32_LIMIT = 1 << 31
MAX_CLASSES = 4
"""Most state classes (distinct programs-per-state counts) the class kernel decodes."""


@dataclass(frozen=True)
class StateCopyPlan:
    """The busy programs of one request's state copies, one record each, on the device
    (and the same facts per state, for the class kernel).

    Made by :func:`state_copy_plan` from the state tables as they are when it is called
    (their addresses and metadata are copied into the records: make a new plan when the
    states are re-allocated); used by :func:`copy_state_blocks_planned`.
    """

    records: torch.Tensor
    """``[programs, PLAN_WORDS]`` int64 records (device tensor)."""
    num_states: int
    chunk: int
    """Bytes each program moves per step."""
    facts: torch.Tensor
    """``[num_states, PLAN_WORDS]`` int64: each state's record head (its first seven words,
    the eighth 0), the states sorted by ``tiles`` (device tensor; the class kernel's)."""
    classes: tuple[tuple[int, int, int], ...]
    """``(first program, first facts row, tiles)`` of each run of states with the same
    ``tiles`` in :attr:`facts` (the class kernel takes at most :data:`MAX_CLASSES`)."""


def _host_addresses(table: object, where: str) -> tuple[list[int], torch.device]:
    """An address table's values (int64 bit patterns) read on the host, and its device:
    a PtrBuffer's host entries (never its mirror), or a tensor's values (a copy to the host
    when it is on the device)."""
    if isinstance(table, PtrBuffer):
        dev = table.device_type
        return [int(v) for v in table.host(Encoding.I64).tolist()], dev or torch.device("cpu")
    t = _tables.address_table(table, where)
    host = t.detach().to("cpu")
    if host.dtype == torch.uint64:
        host = host.view(torch.int64)
    return [int(v) for v in host.tolist()], t.device


def state_copy_plan(
    state_base_addrs: object,
    state_meta: object,
    block_table_ptrs: object,
    *,
    chunk: int = STATE_CHUNK,
    device: torch.device | str | None = None,
) -> StateCopyPlan:
    """A :class:`StateCopyPlan` for :func:`copy_state_blocks_planned` (same tables as
    :func:`copy_state_blocks`; read once here, on the host).

    Each state's copy is shared by ``min(MAX_TILES, cdiv(bytes, chunk))`` programs (steps
    dealt round-robin; dim-first conv windows: one program), and the plan holds one record
    per such program, so the launch has no idle programs and no per-state metadata loads.
    PtrBuffer and PtrTable arguments contribute their host entries (what was filled, whether
    or not it was copied to the device yet); tensors on the device are read back (a sync).
    ``device``: where the records go (default: the state base table's device: its mirror's
    for a PtrBuffer, the CPU for host-only tables). Make the plan once, not per step.
    """
    if type(chunk) is not int or chunk < 256 or chunk & (chunk - 1):
        raise InvalidValueError(f"chunk must be a power of two >= 256 (got {chunk!r})")
    bases, bases_dev = _host_addresses(state_base_addrs, "state_base_addrs")
    tables, _ = _host_addresses(block_table_ptrs, "block_table_ptrs")
    if isinstance(state_meta, PtrTable):
        _meta_tensor(state_meta)  # checks the columns
        meta_t = state_meta.host(Encoding.I64)
    else:
        meta_t = _meta_tensor(state_meta)
    if meta_t.shape[0] != len(bases):
        raise LengthMismatchError(f"{len(bases)} state base addresses but {meta_t.shape[0]} metadata rows")
    if device is None:
        device = bases_dev
    meta = meta_t.detach().to("cpu").reshape(-1, len(StateMeta)).tolist()
    records: list[list[int]] = []
    heads: list[tuple[int, list[int]]] = []
    for s, (base, row) in enumerate(zip(bases, meta, strict=True)):
        stride, width, token, nbytes, rows, row_stride, group = (int(row[m]) for m in StateMeta)
        if not 0 <= group < len(tables):
            raise InvalidValueError(f"state {s}: group {group} has no block table ({len(tables)} given)")
        in_range = 0 <= width < _I32_LIMIT and 0 <= rows < _I32_LIMIT
        if not in_range or min(stride, token, nbytes, row_stride) < 0:
            facts = dict(zip(StateMeta, row, strict=True))
            raise InvalidValueError(f"state {s}: metadata out of range ({facts})")
        if width > 0 and rows > 1:
            tiles = 1
        else:
            tiles = max(1, min(MAX_TILES, -(-max(nbytes, width * token) // chunk)))
        head = [base, stride, tables[group], nbytes, width | rows << 32, token, row_stride]
        records += [[*head, t | tiles << 32] for t in range(tiles)]
        heads.append((tiles, head))
    out = torch.tensor(records, dtype=torch.int64).reshape(-1, PLAN_WORDS).to(device)
    heads.sort(key=lambda h: h[0])  # stable: state order within a class
    classes: list[tuple[int, int, int]] = []
    first_program = 0
    for k, (tiles, _) in enumerate(heads):
        if not classes or classes[-1][2] != tiles:
            classes.append((first_program, k, tiles))
        first_program += tiles
    rows_t = torch.tensor([[*h, 0] for _, h in heads], dtype=torch.int64).reshape(-1, PLAN_WORDS)
    return StateCopyPlan(out, len(bases), chunk, rows_t.to(device), tuple(classes))


def copy_state_blocks_planned(
    plan: StateCopyPlan,
    block_table_stride: int,
    src_cols: torch.Tensor,
    dst_cols: torch.Tensor,
    token_biases: torch.Tensor,
    num_reqs: int,
    *,
    idx_mapping: torch.Tensor | None = None,
    skip_same_block: bool = False,
    byte_chunk: int = BYTE_CHUNK,
    num_warps: int = PLAN_NUM_WARPS,
    by_class: bool = True,
) -> None:
    """:func:`copy_state_blocks` driven by a :class:`StateCopyPlan` (one launch).

    Same copies and semantics as :func:`copy_state_blocks` with the tables the plan was
    made from; the grid is ``(plan programs, num_reqs)``, each program's state facts read
    from its record. Asynchronous, no host copies, no allocation (CUDA-graph capturable).
    On an H200 this is faster than :func:`copy_state_blocks` at every batch of the
    36-layer Mamba pre-copy (``benchmarks/results/kernels.md``).

    ``by_class`` (default): the class kernel (same grid and copies): each program finds its
    state and step from its program id (:attr:`StateCopyPlan.classes`, passed as launch
    arguments) and reads its state's facts row, shared by the state's programs, instead of
    a record of its own. On that H200 it was 0.2-1.3% faster at 1 and 2 requests and 1% at
    8 and 32 (same results file). ``by_class=False``, and plans with more than
    :data:`MAX_CLASSES` classes, use the record kernel.
    """
    if type(plan) is not StateCopyPlan:
        raise PtrTypeError(f"plan must be a StateCopyPlan from state_copy_plan (got {describe(plan)})")
    per_req, num_reqs = _request_tables(src_cols, dst_cols, token_biases, num_reqs, idx_mapping)
    block_table_stride = uint_value(block_table_stride, "block_table_stride")
    device = _tables.same_device({"plan": plan.records, **per_req})
    programs_n = int(plan.records.shape[0])  # busy programs (either kernel)
    if num_reqs == 0 or programs_n == 0:
        return
    if num_reqs > 65535:
        raise CapacityError(f"num_reqs={num_reqs} exceeds 65535 (the grid's second axis)")
    by_class = bool(by_class) and len(plan.classes) <= MAX_CLASSES
    kernel = _CLASS_KERNEL if by_class else _PLAN_KERNEL
    if device.type != "cuda":
        _runtime.check_launch_device(device, kernel.jit_module())
    src_c = per_req["src_cols"]
    head: tuple[object, ...] = (plan.records,)
    if by_class:  # the class kernel: state and step from the program id
        pad = [(_I32_LIMIT - 1, 0, 1)] * (MAX_CLASSES - len(plan.classes))
        cls = [*plan.classes, *pad]
        head = (
            plan.facts,
            *(c[0] for c in cls[1:]),
            *(c[1] for c in cls[1:]),
            *(c[2] for c in cls),
        )
    args = (
        *head,
        src_c,
        per_req["dst_cols"],
        per_req["token_biases"],
        per_req.get("idx_mapping", src_c),
        block_table_stride,
    )
    meta_kw = {
        "HAS_IDX_MAPPING": idx_mapping is not None,
        "SKIP_SAME_BLOCK": skip_same_block,
        "CHUNK": plan.chunk,
        "BYTE_CHUNK": byte_chunk,
        "ROW_BLOCK": 128,
    }
    key = (device.index, *map(arg_key, args), *meta_kw.values(), num_warps)
    raw = tuple(a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args)
    kernel.launch(device, (programs_n, num_reqs, 1), key, args, meta_kw, num_warps, raw)
