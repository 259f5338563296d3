"""Mamba align-mode state copy (vLLM ``v1/worker/mamba_utils.py``) on devptr tables.

Same names and call shapes as vLLM: :class:`MambaCopyBuffers`, :func:`collect_mamba_copy_meta`,
:func:`do_mamba_copy_block` and :func:`batch_memcpy`. Differences:

- addresses live in :class:`devptr.PtrBuffer` (uint64 on the host, bit-exact for XPU
  addresses at or above 2**63), byte counts in a :class:`devptr.kernels.SizeBuffer`;
- ``collect_mamba_copy_meta`` computes a request's entries for every layer at once with
  uint64 arithmetic (``base + block * stride``) from each state tensor's geometry,
  measured once per ``forward_context``, instead of indexing tensors and writing one
  numpy scalar per entry; copy functions other than the two known ones are called as
  vLLM does;
- the flush moves each table with one host-to-device copy and runs
  :func:`devptr.kernels.batch_memcpy` (memmove per segment, 16-byte accesses).

Config objects are replaced by plain values (see :mod:`devptr.adapters._mamba_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import numpy.typing as npt
import torch

from devptr import DevicePtr, PtrBuffer
from devptr._errors import CapacityError, PtrTypeError
from devptr._ptr import unsigned_address
from devptr.adapters._mamba_layout import (
    CONV,
    TEMPORAL,
    CopyFunc,
    MambaCopySpec,
    block_ids_of,
    copy_kind,
    funcs_for,
    geometry,
    get_conv_copy_spec,
    get_temporal_copy_spec,
    layer_states,
    walk,
)
from devptr.kernels import SizeBuffer, batch_memcpy

U64 = np.uint64


class _Plan:
    """Per-entry geometry of one request's copies, as arrays (built once per model)."""

    def __init__(
        self,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int],
        forward_context: Mapping[str, object],
    ) -> None:
        rows: list[tuple[int, int, int, int, int, int, int, int, int]] = []
        self.generic: list[tuple[int, int, object, object]] = []  # (entry, group pos, state, func)
        for k, (pos, _gid, layer, s_idx, func) in enumerate(
            walk(kv_cache_groups, mamba_group_ids, copy_funcs)
        ):
            state = layer_states(forward_context, layer)[s_idx]
            kind = copy_kind(func)
            if kind is None:
                self.generic.append((k, pos, state, func))
                rows.append((0, 0, 0, 0, 0, 0, 0, pos, 0))
                continue
            g = geometry(state)
            rows.append(
                (
                    g.base.addr,
                    g.block_stride,
                    g.token_stride,
                    g.token_bytes,
                    g.width,
                    g.block_bytes,
                    1 if kind == CONV else 0,
                    pos,
                    g.num_blocks,
                )
            )
        arr = np.array(rows, dtype=np.uint64).reshape(-1, 9)
        self.entries = arr.shape[0]
        base, stride, tok_stride, tok_bytes, width, block_bytes = (arr[:, k] for k in range(6))
        is_conv = arr[:, 6].astype(bool)
        group = arr[:, 7].astype(np.intp)
        known = np.ones(self.entries, dtype=bool)
        for k, *_ in self.generic:
            known[k] = False
        self.base, self.stride = base, stride
        # per entry: which of the request's 2 * groups block ids is its source
        # (conv windows read column src, temporal states column src + bias)
        self.src_sel = group * 2 + (~is_conv).astype(np.intp)
        self.group = group
        self.conv_shift = np.where(is_conv, tok_stride, U64(0))  # bytes per accepted token
        self.conv_tok = np.where(is_conv, tok_bytes, U64(0)).astype(np.int64)
        self.size0 = np.where(is_conv, width * tok_bytes, block_bytes).astype(np.int64)
        conv_widths = width[is_conv & known]
        self.min_width = int(conv_widths.min()) if conv_widths.size else 1 << 62
        # the fewest blocks among the known states reading each (group, column kind)
        self.limit = [1 << 62] * (2 * len(mamba_group_ids))
        self.dst_limit = [1 << 62] * len(mamba_group_ids)
        for k in np.flatnonzero(known).tolist():
            nb = int(arr[k, 8])
            sel = int(self.src_sel[k])
            self.limit[sel] = min(self.limit[sel], nb)
            self.dst_limit[int(group[k])] = min(self.dst_limit[int(group[k])], nb)
        self.key = (id(forward_context), tuple(mamba_group_ids))

    def compute(
        self,
        block_ids: Sequence[Sequence[int]],
        mamba_group_ids: Sequence[int],
        src: int,
        dest: int,
        bias: int,
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        cols: list[int] = []
        dsts: list[int] = []
        for pos, gid in enumerate(mamba_group_ids):
            ids = block_ids[gid]
            col = (ids[src], ids[src + bias] if src + bias < len(ids) else -1)
            for j in (0, 1):
                if not 0 <= col[j] < self.limit[2 * pos + j]:
                    if self.limit[2 * pos + j] == 1 << 62 and col[j] == -1:
                        continue  # no state of this group reads that column
                    raise CapacityError(
                        f"group {gid}: block id {col[j]} outside the {self.limit[2 * pos + j]} "
                        "blocks of its states"
                    )
            cols += col
            d = ids[dest]
            if not 0 <= d < self.dst_limit[pos]:
                raise CapacityError(f"group {gid}: block id {d} outside its states' blocks")
            dsts.append(d)
        if bias < 0 or (bias > self.min_width and self.min_width < 1 << 62):
            raise CapacityError(f"accept_token_bias {bias} outside [0, {self.min_width}]")
        sb = np.array(cols, dtype=np.int64).astype(U64)[self.src_sel]
        db = np.array(dsts, dtype=np.int64).astype(U64)[self.group]
        ub = U64(bias)
        src_addr = self.base + sb * self.stride + ub * self.conv_shift
        dst_addr = self.base + db * self.stride
        sizes = self.size0 - np.int64(bias) * self.conv_tok
        for k, pos, state, func in self.generic:
            gid = mamba_group_ids[pos]
            spec = cast(CopyFunc, func)(state, block_ids[gid], src, bias + 1)
            src_addr[k] = _spec_start(spec).addr
            dst_addr[k] = DevicePtr.of(state[block_ids[gid][dest]]).addr  # type: ignore[index]
            sizes[k] = int(spec.num_elements) * int(state.element_size())  # type: ignore[attr-defined]
        return src_addr, dst_addr, sizes


def _spec_start(spec: object) -> DevicePtr:
    if isinstance(spec, MambaCopySpec):
        return spec.start
    raw = getattr(spec, "start_addr", None)  # vLLM's MambaCopySpec: an int from data_ptr()
    if type(raw) is int:
        return DevicePtr(unsigned_address(raw, "start_addr"))
    raise PtrTypeError(f"a copy function returned {spec!r}: expected a MambaCopySpec")


class MambaCopyBuffers:
    """Host/device tables for the align-mode state copies of up to ``max_num_reqs`` requests.

    Attributes
    ----------
    src_ptrs, dst_ptrs
        :class:`devptr.PtrBuffer` of ``max_num_reqs * entries_per_req`` addresses (host
        uint64, pinned when possible, plus a device mirror).
    sizes
        :class:`devptr.kernels.SizeBuffer` of byte counts, same capacity.
    offset
        Entries collected since the last reset (vLLM sets it to 0 each step).
    """

    def __init__(
        self,
        src_ptrs: PtrBuffer,
        dst_ptrs: PtrBuffer,
        sizes: SizeBuffer,
        mamba_group_ids: list[int],
        entries_per_req: int,
    ) -> None:
        self.src_ptrs = src_ptrs
        self.dst_ptrs = dst_ptrs
        self.sizes = sizes
        self.mamba_group_ids = mamba_group_ids
        self.entries_per_req = entries_per_req
        self.offset = 0
        self._plan: _Plan | None = None

    @classmethod
    def create(
        cls,
        max_num_reqs: int,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int] | None = None,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> MambaCopyBuffers:
        """Allocate tables for ``max_num_reqs`` requests.

        ``kv_cache_groups[gid]``: layer names of group ``gid``; ``copy_funcs``: layer name
        -> copy functions; ``mamba_group_ids``: the Mamba groups (default: all);
        ``device``: where the device mirrors live (None: host-only, for CPU runs).
        """
        gids = list(range(len(kv_cache_groups))) if mamba_group_ids is None else list(mamba_group_ids)
        per_req = sum(len(funcs_for(copy_funcs, layer)) for gid in gids for layer in kv_cache_groups[gid])
        n = max_num_reqs * per_req
        return cls(
            PtrBuffer(n, device=device, pin_memory=pin_memory),
            PtrBuffer(n, device=device, pin_memory=pin_memory),
            SizeBuffer(n, device=device, pin_memory=pin_memory),
            gids,
            per_req,
        )

    def reset_plan(self) -> None:
        """Forget the measured state geometry (call after re-allocating state tensors)."""
        self._plan = None


def collect_mamba_copy_meta(
    copy_bufs: MambaCopyBuffers,
    kv_cache_groups: Sequence[Sequence[str]],
    mamba_state_copy_funcs: object,
    mamba_group_ids: Sequence[int],
    src_block_idx: int,
    dest_block_idx: int,
    accept_token_bias: int,
    req_state: object,
    forward_context: Mapping[str, object],
) -> None:
    """Append one request's copies (every layer, every state) at ``copy_bufs.offset``.

    For conv window states the source is ``state[block_ids[src_block_idx], bias:]``; for
    temporal states ``state[block_ids[src_block_idx + bias]]``; the destination is
    ``state[block_ids[dest_block_idx]]`` (``bias = accept_token_bias``). Nothing is
    copied between devices; entries are written to the host tables only, validated whole
    first (a failing call writes nothing and leaves ``offset`` unchanged).
    """
    if src_block_idx == dest_block_idx and accept_token_bias == 0:
        return
    plan = copy_bufs._plan
    if plan is None or plan.key != (id(forward_context), tuple(mamba_group_ids)):
        plan = _Plan(kv_cache_groups, mamba_state_copy_funcs, mamba_group_ids, forward_context)
        copy_bufs._plan = plan
    src, dst, sizes = plan.compute(
        block_ids_of(req_state), mamba_group_ids, src_block_idx, dest_block_idx, accept_token_bias
    )
    off = copy_bufs.offset
    if off + plan.entries > copy_bufs.src_ptrs.capacity:
        raise CapacityError(
            f"{plan.entries} entries at offset {off} exceed capacity {copy_bufs.src_ptrs.capacity}"
        )
    copy_bufs.src_ptrs.fill(off, src)
    copy_bufs.dst_ptrs.fill(off, dst)
    copy_bufs.sizes.writable()[off : off + plan.entries] = sizes
    copy_bufs.offset = off + plan.entries


def do_mamba_copy_block(copy_bufs: MambaCopyBuffers) -> None:
    """Run the collected copies: one host-to-device copy per table, one kernel launch."""
    n = copy_bufs.offset
    if n == 0:
        return
    if copy_bufs.src_ptrs.device_type is not None:
        copy_bufs.src_ptrs.to_device(n)
        copy_bufs.dst_ptrs.to_device(n)
        copy_bufs.sizes.to_device(n)
    batch_memcpy(copy_bufs.src_ptrs, copy_bufs.dst_ptrs, copy_bufs.sizes, n)


__all__ = [
    "TEMPORAL",
    "MambaCopyBuffers",
    "MambaCopySpec",
    "batch_memcpy",
    "collect_mamba_copy_meta",
    "do_mamba_copy_block",
    "get_conv_copy_spec",
    "get_temporal_copy_spec",
]
