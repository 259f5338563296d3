"""devptr.adapters.mamba_spec_decode against vLLM 0.33.0's ``MambaSpecDecodeGPUContext``.

Same model, state tensors and per-group block tables go to vLLM's
``initialize_from_forward_context`` and to the adapter's; then the same requests (source
and destination block columns, accepted-token biases) go to vLLM's
``run_fused_precopy`` (its ``precopy_mamba_align_fused_kernel``) and to the adapter's:

- the pointer tables (state base addresses, block-table addresses) are bit-identical,
  below and at or above 2**63 (vLLM stores two's complement in int64 through
  ``_reinterpret_u64_as_i64``, which torch 2.13 and 2.14 both accept);
- the per-state metadata describes the same copies (the columns are split differently:
  compared as byte counts);
- the copied memory is identical, SD and DS conv layouts.
"""

from __future__ import annotations

import os
import random

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from support import vllm_stand_ins as vs
from support.vllm_mamba import Model, random_model

from devptr import Encoding
from devptr.adapters.mamba_spec_decode import MambaSpecDecodeMetadata
from devptr.testing import high_addresses

pytestmark = pytest.mark.vllm  # needs vLLM 0.33.0's sources (support.opt_in)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SIGN = 1 << 63
COLS = 6


def _block_tables(model: Model, seed: int, reqs: int) -> list[torch.Tensor]:
    rng = random.Random(seed)
    tables = []
    for _ in model.mamba_group_ids:
        ids = rng.sample(range(model.num_blocks), reqs * COLS)
        tables.append(torch.tensor(ids, dtype=torch.int32).reshape(reqs, COLS).to(DEVICE))
    return tables


def _inputs(model: Model, seed: int, reqs: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dst cols, src cols, token biases): moves with a bias, fresh (-1) and same-column rows."""
    rng = random.Random(seed)
    dst, src, bias = [], [], []
    for _ in range(reqs):
        case = rng.choice(["move", "move", "move", "fresh", "same"])
        s = rng.randint(0, 1)
        b = rng.randint(0, model.min_width - 1)
        d = rng.randint(s + 1, COLS - 1) if case == "move" else s
        b = min(b, COLS - 1 - s)
        src.append(-1 if case == "fresh" else s)
        dst.append(d)
        bias.append(b)
    def t(v: list[int]) -> torch.Tensor:
        return torch.tensor(v, dtype=torch.int32, device=DEVICE)
    return t(dst), t(src), t(bias)


def _build(vllm, model: Model, tables: list[torch.Tensor], reqs: int):  # type: ignore[no-untyped-def]
    theirs = vllm.MambaSpecDecodeGPUContext.create(
        reqs, model.config, model.funcs_by_type, DEVICE, vs.buffer_factory(DEVICE)
    )
    theirs.initialize_from_forward_context(model.config, model.context, model.funcs_by_type, tables)
    ours = MambaSpecDecodeMetadata.create(
        reqs, model.groups, model.funcs_by_layer, DEVICE if DEVICE.type == "cuda" else None,
        mamba_group_ids=model.mamba_group_ids, conv_state_dim_first=model.dim_first, pin_memory=False,
    )
    ours.initialize_from_forward_context(model.groups, model.context, model.funcs_by_layer, tables)
    return theirs, ours


def _assert_tables_match(theirs, ours: MambaSpecDecodeMetadata, dim_first: bool) -> None:  # type: ignore[no-untyped-def]
    n = ours.num_states
    assert theirs.num_states == n and theirs.num_groups == ours.num_groups
    assert torch.equal(theirs.state_base_addrs.cpu(), ours.state_base_addrs.host(Encoding.I64)[:n])
    assert torch.equal(theirs.block_table_ptrs.cpu(), ours.block_table_ptrs.host(Encoding.I64))
    assert theirs.block_table_stride_req == ours.block_table_stride_req
    v = {k: getattr(theirs, f"state_{k}").cpu().tolist() for k in (
        "block_strides", "elem_sizes", "inner_sizes", "conv_widths", "group_indices",
        "dim_row_count", "dim_row_stride")}
    for k in range(n):
        row = ours.state_meta_row(k)
        assert row["block_stride"] == v["block_strides"][k]
        assert row["group"] == v["group_indices"][k]
        assert row["conv_width"] == v["conv_widths"][k]
        inner_bytes = v["inner_sizes"][k] * v["elem_sizes"][k]
        if row["conv_width"] == 0:
            assert row["copy_bytes"] == inner_bytes  # whole block, natural size (not the page)
        elif dim_first:
            assert (row["rows"], row["row_stride"], row["token_bytes"]) == (
                v["dim_row_count"][k], v["dim_row_stride"][k], v["elem_sizes"][k])
        else:
            assert row["token_bytes"] == inner_bytes and v["dim_row_count"][k] == 0


@pytest.mark.parametrize(("seed", "dim_first"), [(0, False), (1, False), (2, True)])
def test_tables_and_precopy_match_vllm(seed: int, dim_first: bool) -> None:
    vllm = vs.load_mamba_utils("DS" if dim_first else None)
    reqs = 4
    model = random_model(vllm, seed, num_blocks=reqs * COLS, device=DEVICE, dim_first=dim_first, max_layers=2)
    tables = _block_tables(model, seed, reqs)
    theirs, ours = _build(vllm, model, tables, reqs)
    _assert_tables_match(theirs, ours, dim_first)

    dst, src, bias = _inputs(model, 50 + seed, reqs)
    before = model.snapshot()
    theirs.run_fused_precopy(reqs, dst, src, bias, None)
    after_vllm = model.snapshot()
    assert not model.equal(before), "the case copies nothing"
    model.restore(before)
    ours.run_fused_precopy(reqs, dst, src, bias, None)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert model.equal(after_vllm), "devptr's precopy differs from vLLM's fused kernel"


@pytest.mark.parametrize("seed", [5, 6])
def test_high_addresses_bit_identical(seed: int) -> None:
    vllm = vs.load_mamba_utils()
    model = random_model(vllm, seed, num_blocks=48, device=DEVICE, max_layers=4)
    tables = _block_tables(model, seed, 8)
    with high_addresses(host=True):
        theirs, ours = _build(vllm, model, tables, 8)
        expect = [t.data_ptr() for t in tables]
    _assert_tables_match(theirs, ours, False)
    assert ours.block_table_ptrs.host(Encoding.U64).tolist() == expect
    assert all(a >= SIGN for a in ours.state_base_addrs.host(Encoding.U64).tolist())
    assert all(a < 0 for a in theirs.state_base_addrs.tolist())  # vLLM: two's complement int64
