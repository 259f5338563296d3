"""devptr.adapters.mamba_copy against vLLM 0.33.0's own ``v1/worker/mamba_utils.py``.

Same model, same state tensors, same requests (block ids, src/dest block indices, accept
biases) go to vLLM's ``MambaCopyBuffers`` / ``collect_mamba_copy_meta`` /
``do_mamba_copy_block`` (its ``batch_memcpy`` Triton kernel) and to the adapter:

- below 2**63 the three tables are bit-identical and the copied memory is identical;
- with every address at or above 2**63 (:func:`devptr.testing.high_addresses`) vLLM's
  numpy-uint64 writes handle them too: both tables stay bit-identical (torch 2.13, 2.14).

vLLM's files come from the 0.33.0 wheel (``tools.wheel_sources``), executed unmodified by
``support.vllm_load``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any kernel is compiled

from support import vllm_stand_ins as vs
from support.vllm_mamba import Model, Request, random_model, random_requests

from devptr.adapters.mamba_copy import MambaCopyBuffers, collect_mamba_copy_meta, do_mamba_copy_block
from devptr.testing import high_addresses

pytestmark = pytest.mark.vllm  # needs vLLM 0.33.0's sources (support.opt_in)

SIGN = np.uint64(1 << 63)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture(scope="module")
def vllm() -> object:
    return vs.load_mamba_utils()


def _vllm_tables(vllm, model: Model, reqs: list[Request]):  # type: ignore[no-untyped-def]
    make = vs.buffer_factory(DEVICE)
    bufs = vllm.MambaCopyBuffers.create(len(reqs), model.config, model.funcs_by_type, make)
    assert bufs.mamba_group_ids == model.mamba_group_ids
    for r in reqs:
        vllm.collect_mamba_copy_meta(
            bufs, model.config, model.funcs_by_type, bufs.mamba_group_ids,
            r.src, r.dest, r.bias, r.state, model.context,
        )
    n = bufs.offset
    sizes = bufs.sizes.np[:n].astype(np.int64)
    return bufs, (bufs.src_ptrs.np[:n].copy(), bufs.dst_ptrs.np[:n].copy(), sizes)


def _our_tables(model: Model, reqs: list[Request]):  # type: ignore[no-untyped-def]
    bufs = MambaCopyBuffers.create(
        len(reqs), model.groups, model.funcs_by_layer, model.mamba_group_ids,
        device=DEVICE if DEVICE.type == "cuda" else None, pin_memory=False,
    )
    for r in reqs:
        collect_mamba_copy_meta(
            bufs, model.groups, model.funcs_by_layer, model.mamba_group_ids,
            r.src, r.dest, r.bias, r.state, model.context,
        )
    n = bufs.offset
    src, dst, sizes = (b.numpy()[:n].copy() for b in (bufs.src_ptrs, bufs.dst_ptrs, bufs.sizes))
    return bufs, (src, dst, sizes)


def _assert_same(theirs, ours) -> None:  # type: ignore[no-untyped-def]
    for name, a, b in zip(("src", "dst", "sizes"), theirs, ours, strict=True):
        assert a.shape == b.shape, name
        assert np.array_equal(a, b), f"{name}: vLLM {a.tolist()} != devptr {b.tolist()}"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tables_and_copies_match_vllm(vllm: object, seed: int) -> None:
    model = random_model(vllm, seed, num_blocks=30, device=DEVICE)
    reqs = random_requests(model, 100 + seed, count=5)
    v_bufs, theirs = _vllm_tables(vllm, model, reqs)
    o_bufs, ours = _our_tables(model, reqs)
    assert theirs[0].size > 0
    _assert_same(theirs, ours)

    before = model.snapshot()
    vllm.do_mamba_copy_block(v_bufs)  # type: ignore[attr-defined]
    after_vllm = model.snapshot()
    assert not model.equal(before), "the case copies nothing"
    model.restore(before)
    do_mamba_copy_block(o_bufs)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert model.equal(after_vllm), "devptr's copies differ from vLLM's batch_memcpy"


@pytest.mark.parametrize("seed", [3, 4])
def test_high_addresses_bit_identical(vllm: object, seed: int) -> None:
    model = random_model(vllm, seed, num_blocks=48, device=DEVICE, max_layers=4)
    reqs = random_requests(model, 200 + seed, count=8)
    _, low = _vllm_tables(vllm, model, reqs)
    with high_addresses(host=True):
        _, theirs = _vllm_tables(vllm, model, reqs)
        _, ours = _our_tables(model, reqs)
    _assert_same(theirs, ours)
    assert (theirs[0] >= SIGN).all() and (theirs[1] >= SIGN).all()
    assert np.array_equal(theirs[0], low[0] ^ SIGN) and np.array_equal(theirs[1], low[1] ^ SIGN)


def test_many_requests_and_layers_tables_match(vllm: object) -> None:
    """A larger batch, tables only: 3 groups of up to 8 layers, 16 requests."""
    model = random_model(vllm, 9, num_blocks=16 * 6, device=DEVICE, max_groups=3, max_layers=8)
    reqs = random_requests(model, 309, count=16)
    _, theirs = _vllm_tables(vllm, model, reqs)
    _, ours = _our_tables(model, reqs)
    assert theirs[0].size >= 16
    _assert_same(theirs, ours)
