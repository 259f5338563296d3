"""The portable kernel path (``devptr.kernels.batch_memcpy``) on the CPU, under the Triton
interpreter: run in a child process so ``TRITON_INTERPRET=1`` is set before the first launch
whatever other tests did."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

CHILD = r"""
import numpy as np
import torch
from devptr import ptr_tensor
from devptr.adapters.ec_connector import DescriptorBufferPool, ECCPUWorker, swap_blocks_batch

rng = np.random.default_rng(5)
lens = rng.integers(0, 3000, 24)
srcs = [torch.from_numpy(rng.integers(0, 256, size=int(k), dtype=np.uint8)) for k in lens]
dsts = [torch.zeros_like(s) for s in srcs]
sizes = torch.tensor([s.numel() for s in srcs])
swap_blocks_batch(ptr_tensor(srcs), ptr_tensor(dsts), sizes, device="cpu", path="kernel")
assert all(torch.equal(a, b) for a, b in zip(srcs, dsts)), "free function"

pool = DescriptorBufferPool("cpu", min_capacity=64)
region = torch.zeros(64, 1000, dtype=torch.int8)
worker = ECCPUWorker(region, dtype=torch.float32, device="cpu", pool=pool, path="kernel")
for step in range(2):
    outs = {f"m{i}": torch.randn(3 + i + step, 17) for i in range(5)}
    saves, nxt = {}, 0
    for k, v in outs.items():
        nb = -(-v.numel() * 4 // 1000)
        saves[k] = list(range(nxt, nxt + nb))
        nxt += nb + 1
    for k in outs:
        worker.save_caches(outs, k, saves)
    worker.flush_saves()
    loaded = {}
    worker.start_load_caches(loaded, {k: (i, saves[k], list(outs[k].shape)) for i, k in enumerate(outs)})
    assert all(torch.equal(loaded[k], outs[k]) for k in outs), f"worker step {step}"
    assert worker.build_connector_worker_meta() is not None
assert pool.allocated == 2, pool.allocated

# a shape swapped again on the CPU launches again: graphs are a CUDA path only
b = pool.acquire(24)
u64 = torch.uint64
b.add_copies(0, ptr_tensor(srcs).view(u64), ptr_tensor(dsts).view(u64), sizes.numpy().astype(np.uint64))
for _ in range(3):
    for d in dsts:
        d.zero_()
    b.swap(24, path="kernel")
    assert all(torch.equal(a, c) for a, c in zip(srcs, dsts)), "repeated swap"
assert b._live().derived == {}, b._live().derived
pool.release(b)
print("ok")
"""


@pytest.mark.skipif(
    torch.cuda.is_available(),
    reason=(
        "CPU-machine path (Triton interpreter); GPU machines run the compiled kernel path in "
        "test_ec_gpu.py (the GPU image's triton 3.6 interpreter fails under numpy 2.5)"
    ),
)
def test_kernel_path_round_trips_under_the_interpreter() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
