"""Mamba speculative-decoding metadata (vLLM ``MambaSpecDecodeGPUContext``) on devptr tables.

vLLM writes each state base address and block-table address into an int64 *device*
tensor, one element (one host-to-device copy) at a time, through a two's-complement helper.
:class:`MambaSpecDecodeMetadata` fills uint64 host tables instead and moves each with one
copy:

- ``state_base_addrs``: :class:`devptr.PtrBuffer`, one address per state tensor;
- ``state_meta``: :class:`devptr.PtrTable` with :data:`devptr.kernels.STATE_META_COLUMNS`
  (block stride, conv width, token bytes, copy bytes, rows, row stride, group);
- ``block_table_ptrs``: one block-table address per Mamba group.

:func:`devptr.kernels.state_copy_plan` turns them, once, into one record per copying
program, which :func:`devptr.kernels.copy_state_blocks_planned` consumes
(:meth:`run_fused_precopy`, :meth:`copy_state_blocks`). Config objects are replaced by plain values (see
:mod:`devptr.adapters._mamba_layout`). Every entry point raises
:class:`NotInitializedError` before
:meth:`~MambaSpecDecodeMetadata.initialize_from_forward_context` ran (vLLM's
``run_fused_precopy`` silently does nothing).

vLLM also fills ``aligned_index_block_table_ptrs`` (same shape as ``block_table_ptrs``,
from the per-batch-row tables of ``aligned_index_block_tables``): its only reader is
``compute_aligned_state_indices`` (``get_aligned_state_indices_multi_group_kernel``),
which gathers each group's aligned state ids for the attention metadata, outside the
state copies ported here. The adapter therefore does not build that table: a port of
that kernel would build it next to itself (``devptr.ptr_tensor(aligned_tables)``). The
``aligned_index_block_tables`` argument is still accepted and checked as vLLM checks it
(one per group, same ``stride(0)`` as the block tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from devptr import DevicePtr, InvalidValueError, LengthMismatchError, PtrBuffer, PtrTable
from devptr.adapters._errors import NotInitializedError
from devptr.adapters._mamba_layout import (
    CONV,
    copy_kind,
    funcs_for,
    geometry,
    layer_states,
    walk,
)
from devptr.kernels import (
    STATE_META_COLUMNS,
    StateCopyPlan,
    StateMeta,
    copy_state_blocks_planned,
    state_copy_plan,
)


class MambaSpecDecodeMetadata:
    """Per-state and per-group tables for the fused Mamba state copies.

    Memory: every table owns pinned host memory (when an accelerator is present) and a
    device mirror on ``device``; :meth:`initialize_from_forward_context` fills the host
    side and copies each table once. Nothing is read back.
    """

    def __init__(
        self,
        num_states: int,
        mamba_group_ids: list[int],
        block_size: int,
        device: str | torch.device | None,
        *,
        conv_state_dim_first: bool = False,
        pin_memory: bool | None = None,
    ) -> None:
        self.num_states = num_states
        self.mamba_group_ids = mamba_group_ids
        self.num_groups = len(mamba_group_ids)
        self.block_size = block_size
        self.conv_state_dim_first = conv_state_dim_first
        dev, pin = device, pin_memory
        self.state_base_addrs: PtrBuffer = PtrBuffer(num_states, device=dev, pin_memory=pin)
        self.state_meta = PtrTable(num_states, STATE_META_COLUMNS, device=dev, pin_memory=pin)
        self.block_table_ptrs: PtrBuffer = PtrBuffer(self.num_groups, device=dev, pin_memory=pin)
        self.block_table_stride_req = 0
        self.plan: StateCopyPlan | None = None
        """The states' copy plan (made by initialize_from_forward_context)."""
        self.is_initialized = False

    @classmethod
    def create(
        cls,
        max_num_reqs: int,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        device: str | torch.device | None,
        *,
        mamba_group_ids: Sequence[int] | None = None,
        block_size: int = 0,
        conv_state_dim_first: bool = False,
        pin_memory: bool | None = None,
    ) -> MambaSpecDecodeMetadata:
        """Allocate tables sized from the model layout (filled later).

        ``max_num_reqs`` is accepted for vLLM's call shape; these tables do not depend on it.
        """
        del max_num_reqs
        gids = list(range(len(kv_cache_groups))) if mamba_group_ids is None else list(mamba_group_ids)
        total = sum(1 for _ in walk(kv_cache_groups, gids, copy_funcs))
        return cls(
            total, gids, block_size, device, conv_state_dim_first=conv_state_dim_first, pin_memory=pin_memory
        )

    def initialize_from_forward_context(
        self,
        kv_cache_groups: Sequence[Sequence[str]],
        forward_context: Mapping[str, object],
        mamba_state_copy_funcs: object,
        block_tables: Sequence[torch.Tensor],
        aligned_index_block_tables: Sequence[torch.Tensor] | None = None,
    ) -> None:
        """Measure every state tensor and block table, fill the host tables, copy each once.

        Idempotent (runs once). ``block_tables[i]``: the persistent int32 block table
        ``[max_reqs, max_blocks]`` of ``mamba_group_ids[i]``; all must share ``stride(0)``.
        """
        if self.is_initialized:
            return
        aligned = list(aligned_index_block_tables or block_tables)
        if len(block_tables) != self.num_groups or len(aligned) != self.num_groups:
            raise LengthMismatchError(
                f"expected {self.num_groups} block tables (got {len(block_tables)}, {len(aligned)})"
            )
        bases: list[DevicePtr] = []
        cols: dict[str, list[int]] = {name: [] for name, _ in STATE_META_COLUMNS}
        entries = walk(kv_cache_groups, self.mamba_group_ids, mamba_state_copy_funcs)
        for pos, _gid, layer, s_idx, func in entries:
            states = layer_states(forward_context, layer)
            if len(states) < len(funcs_for(mamba_state_copy_funcs, layer)):
                raise LengthMismatchError(f"layer {layer!r}: fewer state tensors than copy functions")
            state = states[s_idx]
            kind = copy_kind(func)
            if kind is None:
                raise InvalidValueError(f"layer {layer!r}: unknown copy function {func!r}")
            g = geometry(state)
            bases.append(g.base)
            row = dict.fromkeys(cols, 0)
            row.update(block_stride=g.block_stride, copy_bytes=g.block_bytes, rows=1, group=pos)
            if kind == CONV:
                if len(tuple(state.shape)) != 3:
                    raise InvalidValueError(
                        f"layer {layer!r}: expected a 3-D conv state, got {tuple(state.shape)}"
                    )
                if self.conv_state_dim_first:  # [blocks, dim, width]: shift along the last axis
                    row.update(
                        conv_width=int(state.shape[2]),
                        token_bytes=g.elem,
                        rows=int(state.shape[1]),
                        row_stride=int(state.stride()[1]) * g.elem,
                    )
                else:  # [blocks, width, dim]: one contiguous range
                    row.update(conv_width=g.width, token_bytes=g.token_stride)
            for name in cols:
                cols[name].append(row[name])
        if len(bases) != self.num_states:
            raise LengthMismatchError(f"found {len(bases)} states, expected {self.num_states}")
        strides = {int(t.stride()[0]) for t in (*block_tables, *aligned)}
        if len(strides) > 1:
            raise InvalidValueError(f"all Mamba block tables must share stride(0) (got {sorted(strides)})")
        self.block_table_stride_req = next(iter(strides), 0)
        self.state_base_addrs.fill(0, bases)
        self.state_meta.fill(0, **{k: np.array(v, dtype=np.int64) for k, v in cols.items()})
        self.block_table_ptrs.fill(0, [DevicePtr.of(t) for t in block_tables])
        if self.state_base_addrs.device_type is not None:
            for table in (self.state_base_addrs, self.state_meta, self.block_table_ptrs):
                table.to_device()
        # from the host entries just filled: the launch reads no metadata tables
        self.plan = state_copy_plan(self.state_base_addrs, self.state_meta, self.block_table_ptrs)
        self.is_initialized = True

    def _check_initialized(self, what: str) -> StateCopyPlan:
        """The copy plan; raises :class:`NotInitializedError` before initialization."""
        if not self.is_initialized or self.plan is None:
            raise NotInitializedError(
                f"{what}() before initialize_from_forward_context(): the state and block-table "
                "addresses are not known yet"
            )
        return self.plan

    def copy_state_blocks(
        self,
        num_reqs: int,
        src_cols: torch.Tensor,
        dst_cols: torch.Tensor,
        token_biases: torch.Tensor,
        idx_mapping: torch.Tensor | None = None,
        *,
        skip_same_block: bool = False,
    ) -> None:
        """Copy every state of each request from block column ``src_cols[r]`` to ``dst_cols[r]``.

        Conv windows shift by ``token_biases[r]`` accepted tokens (also inside one block:
        memmove); whole-block states copy block ``src_cols[r] + token_biases[r]``.
        """
        plan = self._check_initialized("copy_state_blocks")
        copy_state_blocks_planned(
            plan,
            self.block_table_stride_req,
            src_cols,
            dst_cols,
            token_biases,
            num_reqs,
            idx_mapping=idx_mapping,
            skip_same_block=skip_same_block,
        )

    def run_fused_precopy(
        self,
        num_reqs: int,
        state_idx_gpu: torch.Tensor,
        src_col_gpu: torch.Tensor,
        token_bias_gpu: torch.Tensor,
        idx_mapping: torch.Tensor | None,
    ) -> None:
        """vLLM's align pre-copy: previous running block -> new block, before the forward pass.

        Skips requests with ``src_col < 0`` or ``src_col == state_idx``. Raises
        :class:`NotInitializedError` before :meth:`initialize_from_forward_context`.
        """
        self._check_initialized("run_fused_precopy")
        if num_reqs == 0:
            return
        self.copy_state_blocks(
            num_reqs, src_col_gpu, state_idx_gpu, token_bias_gpu, idx_mapping, skip_same_block=True
        )

    def state_meta_row(self, k: int) -> dict[str, int]:
        """Host metadata of state ``k`` (for inspection and tests)."""
        self._check_initialized("state_meta_row")
        row = self.state_meta[k]
        return {name: v for name, v in row.items() if isinstance(v, int)}


MambaSpecDecodeGPUContext = MambaSpecDecodeMetadata
"""vLLM's name for the same object."""

__all__ = ["MambaSpecDecodeGPUContext", "MambaSpecDecodeMetadata", "NotInitializedError", "StateMeta"]
