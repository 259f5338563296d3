"""devptr.adapters.ec_connector against vLLM 0.33.0's EC CPU connector worker.

vLLM's ``descriptor_buffers.py`` and ``worker/__init__.py`` (``ECCPUWorker``) run
unmodified; only its platform, its ``swap_blocks_batch`` op (here: the C++ op's dtype
contract plus a ``memmove`` per descriptor) and its shared region are stand-ins. The same
encoder outputs, block ids (runs, gaps, partial last blocks) and loads go to both workers:

- the descriptor tables handed to ``swap_blocks_batch`` are bit-identical (int64 on the
  CUDA platform, uint64 on XPU), saved region bytes and loaded tensors identical;
- with device addresses at or above 2**63 (the region stays host memory) vLLM's uint64
  arithmetic handles them: the tables are still bit-identical on torch 2.13 and 2.14;
- ``DescriptorBuffers.add_copies`` writes the same bits as vLLM's for uint64 input, and
  vLLM's int64 alias (CUDA platform) rejects a list of Python ints >= 2**63.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from support import vllm_stand_ins as vs

from devptr import DevicePtr
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    ECCPUWorker,
    register_swap_op,
    unregister_swap_op,
)
from devptr.testing import table_bits

pytestmark = pytest.mark.vllm  # needs vLLM 0.33.0's sources (support.opt_in)

SIGN = 1 << 63
DTYPE = torch.bfloat16


def _case(seed: int):  # type: ignore[no-untyped-def]
    """Encoder outputs and their region blocks: ascending ids, random gaps, partial tails."""
    rng = random.Random(seed)
    bs = rng.choice([64, 128, 256])
    outputs: dict[str, torch.Tensor] = {}
    saves: dict[str, list[int]] = {}
    nxt = 0
    g = torch.Generator().manual_seed(seed)
    for k in range(rng.randint(3, 6)):
        hidden = rng.choice([8, 24, 40])
        tokens = rng.randint(1, 30)
        nbytes = tokens * hidden * 2
        need = -(-nbytes // bs) + rng.randint(0, 1)  # sometimes one spare block
        ids = []
        for _ in range(need):
            nxt += 1 if rng.random() < 0.7 else rng.randint(2, 4)  # runs with gaps
            ids.append(nxt)
        name = f"mm{k}"
        outputs[name] = torch.randn(tokens, hidden, generator=g).to(DTYPE)
        saves[name] = ids
    region = torch.zeros(nxt + 3, bs, dtype=torch.int8)
    return region, outputs, saves


@contextlib.contextmanager
def _our_op(op: vs.SwapOp) -> Iterator[None]:
    register_swap_op("cpu", op)
    try:
        yield
    finally:
        unregister_swap_op("cpu")


def _run_vllm(platform: vs.Platform, region: torch.Tensor, outputs, saves, loads, copy=vs.host_memmove):  # type: ignore[no-untyped-def]
    swap = vs.SwapOp(platform, copy)
    mod = vs.load_ec_worker(platform, swap, vs.SharedRegion(region))
    worker = mod.ECCPUWorker(vs.vllm_config(DTYPE))
    meta = vs.ConnectorMetadata(saves=saves)
    cache = {k: v.as_subclass(vs.EncoderOutput) for k, v in outputs.items()}
    for name in saves:
        worker.save_caches(cache, name, meta)
    worker.flush_saves()
    region_after = region.clone()
    loaded: dict[str, torch.Tensor] = {}
    worker.start_load_caches(loaded, vs.ConnectorMetadata(loads=loads))
    done = worker.build_connector_worker_meta()
    return swap.calls, region_after, loaded, (done.completed_saves, done.completed_loads)


def _run_ours(region: torch.Tensor, outputs, saves, loads, copy=vs.host_memmove):  # type: ignore[no-untyped-def]
    swap = vs.SwapOp(vs.Platform(xpu=False), copy)  # the CPU backend's encoding: int64
    with _our_op(swap):
        worker = ECCPUWorker(region, dtype=DTYPE, device="cpu")
        for name in saves:
            worker.save_caches(outputs, name, saves)
        worker.flush_saves()
        region_after = region.clone()
        loaded: dict[str, torch.Tensor] = {}
        worker.start_load_caches(loaded, loads)
        done = worker.build_connector_worker_meta()
    assert done is not None
    return swap.calls, region_after, loaded, (done.completed_saves, done.completed_loads)


def _assert_calls_match(
    theirs: list[vs.SwapCall], ours: list[vs.SwapCall], *, relative_dst_on_load: bool
) -> None:
    assert len(theirs) == len(ours) == 2  # one save batch, one load batch
    for k, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        assert a.is_src_access_order_any == b.is_src_access_order_any
        assert table_bits(a.src) == table_bits(b.src), f"call {k}: src"
        assert a.sizes.tolist() == b.sizes.tolist(), f"call {k}: sizes"
        if k == 1 and relative_dst_on_load:  # each worker allocates its own load buffer
            da, db = table_bits(a.dst), table_bits(b.dst)
            assert [x - da[0] for x in da] == [x - db[0] for x in db]
        else:
            assert table_bits(a.dst) == table_bits(b.dst), f"call {k}: dst"
        if a.src.dtype == b.src.dtype:  # same encoding: the very same tensors
            assert torch.equal(a.src, b.src) and torch.equal(a.sizes, b.sizes)


def _loads(outputs, saves):  # type: ignore[no-untyped-def]
    return {name: (100 + k, ids, tuple(outputs[name].shape)) for k, (name, ids) in enumerate(saves.items())}


@pytest.mark.parametrize("xpu", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_save_load_flow_matches_vllm(seed: int, xpu: bool) -> None:
    region, outputs, saves = _case(seed)
    loads = _loads(outputs, saves)
    theirs = _run_vllm(vs.Platform(xpu=xpu), region, outputs, saves, loads)
    region.zero_()
    ours = _run_ours(region, outputs, saves, loads)
    t_calls, o_calls = theirs[0], ours[0]
    assert t_calls[0].src.dtype == (torch.uint64 if xpu else torch.int64)
    _assert_calls_match(t_calls, o_calls, relative_dst_on_load=True)
    assert torch.equal(theirs[1], ours[1]), "saved region bytes differ"
    assert theirs[1].any()
    for name, out in outputs.items():
        assert torch.equal(theirs[2][name], out) and torch.equal(ours[2][name], out), name
    assert theirs[3] == ours[3]
    sizes = t_calls[0].sizes.tolist()
    assert any(s % region.shape[1] for s in sizes), "no partial last block in this case"


@contextlib.contextmanager
def _device_addresses_high(host: torch.Tensor, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every tensor outside ``host`` reports its address with bit 63 flipped (XPU-like
    device memory); the host region keeps its real address."""
    lo = host.data_ptr()
    hi = lo + host.numel() * host.element_size()
    real = torch.Tensor.data_ptr

    def data_ptr(self: torch.Tensor) -> int:
        a = real(self)
        return a if lo <= a < hi else a ^ SIGN

    with monkeypatch.context() as m:
        m.setattr(torch.Tensor, "data_ptr", data_ptr)
        yield


@pytest.mark.parametrize("xpu", [False, True])
def test_high_device_addresses_bit_identical(xpu: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    region, outputs, saves = _case(7)
    loads = _loads(outputs, saves)
    with _device_addresses_high(region, monkeypatch):
        theirs = _run_vllm(vs.Platform(xpu=xpu), region, outputs, saves, loads, copy=None)
        ours = _run_ours(region, outputs, saves, loads, copy=None)
        want_src = [DevicePtr.of(v).addr for v in outputs.values()]
    _assert_calls_match(theirs[0], ours[0], relative_dst_on_load=True)
    save, load = ours[0]
    assert table_bits(save.src)[0] == want_src[0] >= SIGN  # the first output starts the first run
    assert all(a >= SIGN for a in table_bits(save.src)) and all(a >= SIGN for a in table_bits(load.dst))
    assert all(a < SIGN for a in table_bits(save.dst))  # the host region


@pytest.mark.parametrize("xpu", [False, True])
def test_add_copies_writes_vllms_bits(xpu: bool) -> None:
    mod = vs.load_ec_descriptor_buffers(vs.Platform(xpu=xpu))
    rng = np.random.default_rng(3)
    n = 9
    src = (rng.integers(0, 1 << 40, n, dtype=np.uint64) * np.uint64(8)) | np.uint64(SIGN)
    dst = rng.integers(0, 1 << 40, n, dtype=np.uint64)
    sizes = rng.integers(1, 1 << 20, n, dtype=np.int64)
    theirs = mod.DescriptorBufferPool().acquire(n + 2)
    theirs.add_copies(2, src, dst, sizes)
    ours = DescriptorBufferPool("cpu").acquire(n + 2)
    ours.add_copies(2, src, dst, sizes)
    width = torch.uint64 if xpu else torch.int64
    assert theirs.src_ptrs.dtype == width
    mine = ours.host(n + 2)
    for t, o in zip((theirs.src_ptrs, theirs.dst_ptrs, theirs.sizes), mine, strict=True):
        assert table_bits(t[2 : n + 2]) == table_bits(o[2 : n + 2])
    if not xpu:  # vLLM's int64 alias cannot take the unsigned values as Python ints
        with pytest.raises(OverflowError):
            theirs.add_copies(0, [int(v) for v in src], dst, sizes)
        ours.add_copies(0, [DevicePtr(int(v)) for v in src], dst, sizes)
        assert table_bits(ours.host(n)[0]) == src.tolist()


def _cupy_copy() -> object:
    """A ``swap_blocks_batch`` body for CUDA: one cudaMemcpyAsync per descriptor on the
    current torch stream (what vLLM's C++ op does when cuMemcpyBatchAsync is missing)."""
    cupy = pytest.importorskip("cupy")

    def copy(dst: int, src: int, n: int) -> None:
        stream = torch.cuda.current_stream().cuda_stream
        cupy.cuda.runtime.memcpyAsync(dst, src, n, cupy.cuda.runtime.memcpyDefault, stream)

    return copy


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["op", "kernel"])
def test_save_load_flow_matches_vllm_on_cuda(path: str) -> None:
    """vLLM's worker with real CUDA streams and events; ours through the same op (tables
    compared) or through its portable kernel path (memory compared)."""
    copy = _cupy_copy()
    region, outputs, saves = _case(11)
    region = region.pin_memory()
    outputs = {k: v.cuda() for k, v in outputs.items()}
    loads = _loads(outputs, saves)
    platform = vs.Platform(xpu=False, device_type="cuda", stream_module=torch.cuda)
    swap = vs.SwapOp(platform, copy)  # type: ignore[arg-type]
    mod = vs.load_ec_worker(platform, swap, vs.SharedRegion(region))
    worker = mod.ECCPUWorker(vs.vllm_config(DTYPE))
    meta = vs.ConnectorMetadata(saves=saves)
    for name in saves:
        worker.save_caches(outputs, name, meta)
    worker.flush_saves()
    torch.cuda.synchronize()
    region_vllm = region.clone()
    loaded_vllm: dict[str, torch.Tensor] = {}
    worker.start_load_caches(loaded_vllm, vs.ConnectorMetadata(loads=loads))
    torch.cuda.synchronize()

    region.zero_()
    ours_swap = vs.SwapOp(vs.Platform(xpu=False), copy)  # type: ignore[arg-type]
    if path == "op":
        register_swap_op("cuda", ours_swap)
    try:
        mine = ECCPUWorker(region, dtype=DTYPE, device="cuda", path=path)  # type: ignore[arg-type]
        for name in saves:
            mine.save_caches(outputs, name, saves)
        mine.flush_saves()
        torch.cuda.synchronize()
        assert torch.equal(region, region_vllm), "saved region bytes differ"
        loaded: dict[str, torch.Tensor] = {}
        mine.start_load_caches(loaded, loads)
        torch.cuda.synchronize()
    finally:
        if path == "op":
            unregister_swap_op("cuda")
    for name, out in outputs.items():
        assert torch.equal(loaded_vllm[name], out) and torch.equal(loaded[name], out), name
    if path == "op":
        _assert_calls_match(swap.calls, ours_swap.calls, relative_dst_on_load=True)
