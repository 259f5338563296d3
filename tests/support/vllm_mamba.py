"""Random hybrid-Mamba models and requests, shared by the vLLM differential tests.

A model is a list of KV-cache groups (group 0 attention, the others Mamba2 layers with a
conv and a temporal state, or short-conv layers with a conv state only), real state
tensors (random dtypes, some temporal states with padded page strides), and the objects
both vLLM's code and devptr's adapters take: vLLM's ``KVCacheConfig`` stand-in and copy
functions keyed by Mamba type, the adapters' layer names and copy functions keyed by layer.
"""

from __future__ import annotations

import dataclasses
import random
import types
from typing import Any

import torch

from support import vllm_stand_ins as vs

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.uint8)


@dataclasses.dataclass
class Model:
    groups: list[list[str]]
    mamba_group_ids: list[int]
    config: vs.KVCacheConfig
    funcs_by_type: dict[vs.MambaType, tuple[Any, ...]]
    funcs_by_layer: dict[str, tuple[Any, ...]]
    context: dict[str, vs.Attention]
    roots: list[torch.Tensor]  # every tensor whose memory the states view
    num_blocks: int
    min_width: int
    dim_first: bool

    def snapshot(self) -> list[torch.Tensor]:
        return [r.clone() for r in self.roots]

    def restore(self, snap: list[torch.Tensor]) -> None:
        for r, s in zip(self.roots, snap, strict=True):
            r.copy_(s)

    def equal(self, snap: list[torch.Tensor]) -> bool:
        pairs = zip(self.roots, snap, strict=True)
        return all(torch.equal(r.view(torch.uint8), s.view(torch.uint8)) for r, s in pairs)


def _rand(
    rng: random.Random, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    return torch.randint(0, 250, shape, generator=g).to(dtype).to(device)


def random_model(
    vllm_mod: types.ModuleType,
    seed: int,
    *,
    num_blocks: int,
    device: torch.device | str = "cpu",
    dim_first: bool = False,
    max_groups: int = 3,
    max_layers: int = 3,
) -> Model:
    """A random hybrid model whose copy functions are vLLM's own (``vllm_mod``'s names)."""
    rng = random.Random(seed)
    dev = torch.device(device)
    conv_f, temp_f = vllm_mod.get_conv_copy_spec, vllm_mod.get_temporal_copy_spec
    funcs_by_type = {vs.MambaType.MAMBA2: (conv_f, temp_f), vs.MambaType.SHORT_CONV: (conv_f,)}
    groups: list[list[str]] = [["attn.0"]]
    specs: list[object] = [object()]
    context: dict[str, vs.Attention] = {"attn.0": vs.Attention([torch.zeros(1, device=dev)])}
    funcs_by_layer: dict[str, tuple[Any, ...]] = {}
    roots: list[torch.Tensor] = []
    min_width = 1 << 30
    for g in range(1, 1 + rng.randint(1, max_groups)):
        mtype = rng.choice([vs.MambaType.MAMBA2, vs.MambaType.MAMBA2, vs.MambaType.SHORT_CONV])
        names = [f"g{g}.{mtype.value}.{k}" for k in range(rng.randint(1, max_layers))]
        groups.append(names)
        specs.append(vs.MambaSpec(mamba_type=mtype))
        for name in names:
            width, dim = rng.randint(3, 5), rng.choice([8, 24, 40, 17])
            min_width = min(min_width, width)
            conv_shape = (num_blocks, dim, width) if dim_first else (num_blocks, width, dim)
            conv = _rand(rng, conv_shape, rng.choice(DTYPES), dev)
            states = [conv]
            roots.append(conv)
            if mtype is vs.MambaType.MAMBA2:
                inner = (rng.randint(1, 3), rng.choice([4, 8]), rng.choice([8, 16, 5]))
                dtype = rng.choice(DTYPES)
                elems = inner[0] * inner[1] * inner[2]
                pad = rng.choice([0, 0, 8, 24])  # padded page stride (as_strided-style)
                root = _rand(rng, (num_blocks, elems + pad), dtype, dev)
                roots.append(root)
                states.append(root[:, :elems].unflatten(1, inner))
            context[name] = vs.Attention(states)
            funcs_by_layer[name] = funcs_by_type[mtype]
    config = vs.KVCacheConfig([vs.KVCacheGroupSpec(n, s) for n, s in zip(groups, specs, strict=True)])
    return Model(
        groups, list(range(1, len(groups))), config, funcs_by_type, funcs_by_layer, context, roots,
        num_blocks, min_width, dim_first,
    )


@dataclasses.dataclass
class Request:
    block_ids: list[list[int]]
    src: int
    dest: int
    bias: int

    @property
    def state(self) -> vs.CachedRequestState:
        return vs.CachedRequestState(self.block_ids)


IDS_PER_REQ = 6


def random_requests(model: Model, seed: int, count: int) -> list[Request]:
    """Requests whose writes never touch another request's reads or writes.

    Cases: a move to a later block with an accept bias, a shift inside the same block
    (src == dest, bias > 0), a no-op (src == dest, bias 0), and source blocks shared
    read-only with the previous request.
    """
    rng = random.Random(seed)
    n_groups = len(model.groups)
    assert model.num_blocks >= count * IDS_PER_REQ
    perms = [rng.sample(range(model.num_blocks), count * IDS_PER_REQ) for _ in range(n_groups)]
    reqs: list[Request] = []
    for r in range(count):
        ids = [p[r * IDS_PER_REQ : (r + 1) * IDS_PER_REQ] for p in perms]
        ids[0] = []  # the attention group's blocks are not read
        bias = rng.randint(0, model.min_width - 1)
        case = rng.choice(["move", "move", "same", "noop"])
        src = rng.randint(0, 1)
        if case == "move":
            dest = rng.randint(src + 1, IDS_PER_REQ - 1)
        else:
            dest = src
            bias = 0 if case == "noop" else max(bias, 1)
        if src + bias >= IDS_PER_REQ:
            bias = IDS_PER_REQ - 1 - src
        req = Request(ids, src, dest, bias)
        prev = reqs[-1] if reqs else None
        if prev is not None and case == "move" and prev.dest != prev.src and rng.random() < 0.5:
            for g in model.mamba_group_ids:  # share prev's source block (read-only for both)
                if prev.block_ids[g][prev.src] not in (prev.block_ids[g][prev.dest],):
                    ids[g][src] = prev.block_ids[g][prev.src]
        reqs.append(req)
    _check_disjoint(model, reqs)
    return reqs


def _check_disjoint(model: Model, reqs: list[Request]) -> None:
    for g in model.mamba_group_ids:
        for i, a in enumerate(reqs):
            if a.src == a.dest and a.bias == 0:
                continue
            w = a.block_ids[g][a.dest]
            for j, b in enumerate(reqs):
                if i == j or (b.src == b.dest and b.bias == 0):
                    continue
                touched = {b.block_ids[g][b.src], b.block_ids[g][b.src + b.bias], b.block_ids[g][b.dest]}
                assert w not in touched, "generated requests race"
