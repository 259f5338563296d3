"""ECCPUWorker save/load round trips on the CPU, coalescing, buffer reuse, bad input."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from devptr import AddressRangeError, CapacityError, DevicePtr, Encoding, PtrTypeError, ptr_tensor
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    ECCPUWorker,
    coalesce_runs,
    register_swap_op,
    unregister_swap_op,
)
from devptr.adapters.ec_connector._swap import host_copy
from devptr.testing import real_address

BLOCK = 1000  # deliberately not a power of two
NUM_BLOCKS = 400


def _outputs(rng: np.random.Generator, count: int, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    out = {}
    for k in range(count):
        rows = int(rng.integers(1, 40))
        cols = int(rng.integers(1, 97))
        out[f"mm{k}"] = torch.randn(rows, cols).to(dtype)
    return out


def _allocate(
    rng: np.random.Generator, outputs: dict[str, torch.Tensor], free: list[int], block: int = BLOCK
) -> dict[str, list[int]]:
    """Ascending block ids per output, with gaps so runs break (like EmbeddingCache)."""
    saves = {}
    for name, t in outputs.items():
        need = max(1, math.ceil(t.numel() * t.element_size() / block))
        ids = []
        while len(ids) < need:
            ids.append(free.pop(0))
            if rng.random() < 0.3 and len(free) > 1:
                free.pop(0)  # a hole: the next block starts a new run
        saves[name] = ids
    return saves


def _step(
    worker: ECCPUWorker, outputs: dict[str, torch.Tensor], saves: dict[str, list[int]], dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    for name in outputs:
        worker.save_caches(outputs, name, saves)
    worker.flush_saves()
    loads = {name: (i, saves[name], list(outputs[name].shape)) for i, name in enumerate(outputs)}
    loaded: dict[str, torch.Tensor] = {}
    worker.start_load_caches(loaded, loads)
    return loaded


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.uint8])
def test_round_trip_many_items_odd_sizes_reusing_buffers(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(11)
    region = torch.zeros(NUM_BLOCKS, BLOCK, dtype=torch.int8)
    pool = DescriptorBufferPool("cpu", min_capacity=NUM_BLOCKS)  # every request fits
    worker = ECCPUWorker(region, dtype=dtype, device="cpu", pool=pool)
    for step in range(4):
        outputs = _outputs(rng, 12, dtype)
        free = list(range(NUM_BLOCKS))
        rng.shuffle(free[: NUM_BLOCKS // 2])  # some steps start from unsorted pools
        free = sorted(free) if step % 2 == 0 else free
        saves = _allocate(rng, outputs, free)
        saves = {k: sorted(v) for k, v in saves.items()}
        loaded = _step(worker, outputs, saves, dtype)
        for name, t in outputs.items():
            raw = t.contiguous().view(torch.uint8).reshape(-1)
            ids = saves[name]
            got = region[ids].view(torch.uint8).reshape(-1)[: raw.numel()]
            assert torch.equal(got, raw), f"step {step}: region bytes of {name}"
            assert loaded[name].dtype == dtype and loaded[name].shape == t.shape
            assert torch.equal(loaded[name].view(torch.uint8), t.view(torch.uint8)), name
        done = worker.build_connector_worker_meta()
        assert done is not None
        assert sorted(done.completed_saves) == sorted(outputs)
        assert sorted(done.completed_loads) == list(range(len(outputs)))
    assert pool.allocated == 2  # one save + one load buffer, reused every step
    assert worker.pool.held == 0
    worker.shutdown()


def test_partial_last_block_leaves_padding_untouched() -> None:
    region = torch.full((8, 64), 0x55, dtype=torch.int8)
    worker = ECCPUWorker(region, dtype=torch.uint8, device="cpu")
    out = {"a": torch.arange(100, dtype=torch.uint8)}  # 1 full block + 36 bytes
    worker.save_caches(out, "a", {"a": [2, 3]})
    worker.flush_saves()
    flat = region.view(torch.uint8).reshape(-1)
    assert torch.equal(flat[128:228], out["a"])
    assert (flat[228:256] == 0x55).all() and (flat[:128] == 0x55).all()


class Recorder:
    """A stand-in CPU op: records each batch (int64 like CUDA's op), then copies on the host."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[int], list[int], list[int]]] = []

    def __call__(self, src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, _any: bool) -> None:
        assert src.dtype == dst.dtype == sizes.dtype == torch.int64
        self.batches.append((src.tolist(), dst.tolist(), sizes.tolist()))
        u = [t.numpy().view(np.uint64) for t in (src, dst, sizes)]
        host_copy(u[0], u[1], u[2])


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    register_swap_op("cpu", rec)
    yield rec
    unregister_swap_op("cpu")


def test_one_descriptor_per_run(recorder: Recorder) -> None:
    region = torch.zeros(32, 16, dtype=torch.uint8)
    worker = ECCPUWorker(region, dtype=torch.uint8, device="cpu")
    outs = {"a": torch.arange(70, dtype=torch.uint8), "b": torch.arange(20, dtype=torch.uint8)}
    saves = {"a": [3, 4, 5, 9, 10], "b": [20, 21]}
    worker.save_caches(outs, "a", saves)
    worker.save_caches(outs, "b", saves)
    worker.flush_saves()
    ((src, dst, sizes),) = recorder.batches
    base_a, base_b, reg = outs["a"].data_ptr(), outs["b"].data_ptr(), region.data_ptr()
    assert src == [base_a, base_a + 48, base_b]
    assert dst == [reg + 3 * 16, reg + 9 * 16, reg + 20 * 16]
    assert sizes == [48, 22, 20]  # 70 = 48 + 22: the last run is partial
    loaded: dict[str, torch.Tensor] = {}
    worker.start_load_caches(loaded, {"b": (1, [20, 21], [20]), "a": (0, [3, 4, 5, 9, 10], [70])})
    src, dst, sizes = recorder.batches[1]
    assert src == [reg + 3 * 16, reg + 9 * 16, reg + 20 * 16]  # sorted by first block
    assert sizes == [48, 32, 32]  # loads copy whole blocks
    assert dst[1] - dst[0] == 48 and dst[2] - dst[1] == 32
    assert torch.equal(loaded["a"], outs["a"]) and torch.equal(loaded["b"], outs["b"])


def test_non_save_rank_saves_nothing(recorder: Recorder) -> None:
    worker = ECCPUWorker(
        torch.zeros(4, 8, dtype=torch.int8), dtype=torch.uint8, device="cpu", is_save_rank=False
    )
    worker.save_caches({"a": torch.ones(8, dtype=torch.uint8)}, "a", {"a": [0]})
    worker.flush_saves()
    assert recorder.batches == [] and worker.build_connector_worker_meta() is None


def test_high_addresses_through_an_xpu_style_op() -> None:
    """Under high_addresses() every address has bit 63 set: the XPU op gets uint64 and the
    bytes still arrive (the stand-in translates back before copying)."""
    seen: list[torch.dtype] = []

    def xpu_op(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, _any: bool) -> None:
        if not src.dtype == dst.dtype == sizes.dtype == torch.uint64:
            raise RuntimeError("XPU swap_blocks_batch needs uint64 tensors")
        seen.append(src.dtype)
        s = ptr_tensor([real_address(DevicePtr(a)) for a in src.tolist()], encoding=Encoding.U64).numpy()
        d = ptr_tensor([real_address(DevicePtr(a)) for a in dst.tolist()], encoding=Encoding.U64).numpy()
        assert all(a >= 1 << 63 for a in src.tolist() + dst.tolist())
        host_copy(s, d, sizes.numpy())

    register_swap_op("xpu", xpu_op)
    try:
        from devptr.testing import high_addresses

        region = torch.zeros(16, 32, dtype=torch.int8)
        pool = DescriptorBufferPool("cpu", backend="xpu")
        outs = {"x": torch.randn(5, 7)}
        with high_addresses(host=True):
            worker = ECCPUWorker(region, dtype=torch.float32, device="cpu", pool=pool)
            worker.save_caches(outs, "x", {"x": [4, 5, 7, 8, 9]})
            worker.flush_saves()
            loaded: dict[str, torch.Tensor] = {}
            worker.start_load_caches(loaded, {"x": (0, [4, 5, 7, 8, 9], [5, 7])})
        assert seen == [torch.uint64, torch.uint64]
        assert torch.equal(loaded["x"], outs["x"])
    finally:
        unregister_swap_op("xpu")


def test_bad_worker_input() -> None:
    with pytest.raises(PtrTypeError, match="region"):
        ECCPUWorker(torch.zeros(4, 8), dtype=torch.float32, device="cpu")
    region = torch.zeros(4, 8, dtype=torch.int8)
    worker = ECCPUWorker(region, dtype=torch.uint8, device="cpu")
    with pytest.raises(CapacityError, match="blocks"):
        worker.save_caches({"a": torch.ones(17, dtype=torch.uint8)}, "a", {"a": [0, 1]})
    with pytest.raises(CapacityError, match="outside the region"):
        worker.save_caches({"a": torch.ones(16, dtype=torch.uint8)}, "a", {"a": [3, 4]})
    with pytest.raises(PtrTypeError, match="contiguous"):
        worker.save_caches({"a": torch.ones(4, 4, dtype=torch.uint8).t()}, "a", {"a": [0, 1]})
    with pytest.raises(CapacityError, match="needs"):
        worker.start_load_caches({}, {"a": (0, [0], [9])})
    with pytest.raises(CapacityError, match="outside the region"):
        worker.start_load_caches({}, {"a": (0, [4], [1])})
    assert not region.any() and worker.pool.held == 0


# -- coalesce_runs ------------------------------------------------------------------------
def _runs_by_hand(ids: list[int]) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    for slot, b in enumerate(ids):
        if runs and b == runs[-1][1] + runs[-1][2]:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((slot, b, 1))
    return runs


@given(st.lists(st.integers(0, 50), max_size=60))
def test_coalesce_runs_matches_a_loop(ids: list[int]) -> None:
    slots, first, count = coalesce_runs(ids)
    assert list(zip(slots.tolist(), first.tolist(), count.tolist(), strict=True)) == _runs_by_hand(ids)


def test_coalesce_runs_rejects_bad_ids() -> None:
    with pytest.raises(AddressRangeError):
        coalesce_runs([1, -1])
    with pytest.raises(PtrTypeError):
        coalesce_runs([1.0, 2.0])  # type: ignore[list-item]
