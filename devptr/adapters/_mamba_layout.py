"""What both Mamba adapters read from a model: state tensors, their copy kind, geometry.

vLLM passes config objects (``KVCacheConfig``, ``CachedRequestState``, attention layers);
the adapters take plain values instead:

- ``kv_cache_groups``: for each KV-cache group id, the names of its layers;
- ``mamba_state_copy_funcs``: layer name -> the copy functions of its states (a callable
  or a mapping), :func:`get_conv_copy_spec` / :func:`get_temporal_copy_spec` (vLLM's own
  functions of those names are recognised too);
- ``forward_context``: layer name -> the layer's state tensors (a sequence, or an object
  with a ``kv_cache`` attribute, as vLLM's attention layers have).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import attrs
import torch

from devptr import AddressOverflowError, DevicePtr, InvalidValueError, PtrTypeError
from devptr._core_api import ADDR_LIMIT, describe


class StateLike(Protocol):
    """What the adapters read from a state tensor (real tensors; test fakes)."""

    @property
    def shape(self) -> torch.Size: ...

    def stride(self) -> tuple[int, ...]: ...

    def element_size(self) -> int: ...

    def data_ptr(self) -> int: ...


@attrs.frozen
class MambaCopySpec:
    """One copy's source: ``num_elements`` elements from ``start``."""

    start: DevicePtr
    num_elements: int


CopyFunc = Callable[[Any, Sequence[int], int, int], Any]
"""``(state, block_ids, cur_block_idx, num_accepted_tokens) -> MambaCopySpec``."""


def get_conv_copy_spec(
    state: torch.Tensor, block_ids: Sequence[int], cur_block_idx: int, num_accepted_tokens: int
) -> MambaCopySpec:
    """Conv window state ``[blocks, width, ...]``: the window shifted by the accepted tokens."""
    src = state[block_ids[cur_block_idx], num_accepted_tokens - 1 :]
    return MambaCopySpec(DevicePtr.of(src), src.numel())


def get_temporal_copy_spec(
    state: torch.Tensor, block_ids: Sequence[int], cur_block_idx: int, num_accepted_tokens: int
) -> MambaCopySpec:
    """Temporal (SSM) state: the whole block of the last accepted token."""
    src = state[block_ids[cur_block_idx + num_accepted_tokens - 1]]
    return MambaCopySpec(DevicePtr.of(src), src.numel())


CONV = "conv"
TEMPORAL = "temporal"


def copy_kind(func: object) -> str | None:
    """``"conv"``/``"temporal"`` for the known copy functions (ours or vLLM's), else None."""
    if func is get_conv_copy_spec or getattr(func, "__name__", "") == "get_conv_copy_spec":
        return CONV
    if func is get_temporal_copy_spec or getattr(func, "__name__", "") == "get_temporal_copy_spec":
        return TEMPORAL
    return None


def funcs_for(copy_funcs: object, layer: str) -> Sequence[CopyFunc]:
    """The copy functions of ``layer`` from a callable or a mapping."""
    if isinstance(copy_funcs, Mapping):
        return tuple(copy_funcs[layer])
    if callable(copy_funcs):
        return tuple(copy_funcs(layer))
    raise PtrTypeError(f"mamba_state_copy_funcs must be a mapping or callable (got {describe(copy_funcs)})")


def layer_states(forward_context: Mapping[str, object], layer: str) -> Sequence[StateLike]:
    """The state tensors of ``layer``: ``forward_context[layer].kv_cache`` or the value itself."""
    entry = forward_context[layer]
    states = getattr(entry, "kv_cache", entry)
    if not isinstance(states, Sequence):
        raise PtrTypeError(f"layer {layer!r}: expected a sequence of state tensors (got {describe(states)})")
    return states


def walk(
    kv_cache_groups: Sequence[Sequence[str]],
    mamba_group_ids: Sequence[int],
    copy_funcs: object,
) -> Iterator[tuple[int, int, str, int, CopyFunc]]:
    """``(group position, group id, layer, state index, copy function)`` in vLLM's order."""
    for pos, gid in enumerate(mamba_group_ids):
        for layer in kv_cache_groups[gid]:
            for k, func in enumerate(funcs_for(copy_funcs, layer)):
                yield pos, gid, layer, k, func


def block_ids_of(req_state: object) -> Sequence[Sequence[int]]:
    """``req_state.block_ids`` (vLLM's CachedRequestState) or the block ids themselves."""
    ids = getattr(req_state, "block_ids", req_state)
    if not isinstance(ids, Sequence):
        raise PtrTypeError(f"expected per-group block ids (got {describe(ids)})")
    return ids


@attrs.frozen
class Geometry:
    """Byte layout of one state tensor ``[num_blocks, ...]``."""

    base: DevicePtr
    num_blocks: int
    block_stride: int
    """Bytes between blocks (the page stride)."""
    block_bytes: int
    """Natural bytes of one block (``state[0].numel() * element_size``)."""
    token_stride: int
    """Bytes between entries of dim 1 (a conv window's tokens, state-first layout)."""
    token_bytes: int
    """Natural bytes of one dim-1 entry."""
    width: int
    """Size of dim 1 (a conv window's width)."""
    elem: int


def geometry(state: StateLike) -> Geometry:
    """Measure ``state`` once; raises if its blocks would run past 2**64."""
    shape = tuple(state.shape)
    if not shape:
        raise InvalidValueError("a state tensor needs a leading block dimension")
    strides = tuple(state.stride())
    es = int(state.element_size())
    base = DevicePtr.of(state)
    block_elems = math.prod(shape[1:])
    block_stride = (strides[0] if len(shape) > 1 else block_elems) * es
    end = base.addr + (shape[0] - 1) * block_stride + block_elems * es if shape[0] else base.addr
    if end > ADDR_LIMIT:
        raise AddressOverflowError(
            f"state at {base!r}: {shape[0]} blocks of {block_stride} bytes run past 2**64"
        )
    return Geometry(
        base=base,
        num_blocks=int(shape[0]),
        block_stride=int(block_stride),
        block_bytes=int(block_elems * es),
        token_stride=int(strides[1] * es) if len(shape) > 1 else 0,
        token_bytes=int(math.prod(shape[2:]) * es) if len(shape) > 1 else 0,
        width=int(shape[1]) if len(shape) > 1 else 0,
        elem=es,
    )
