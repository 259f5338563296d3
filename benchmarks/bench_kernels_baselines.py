"""Baselines for ``bench_kernels_gpu.py``: today's vLLM design, re-implemented here.

``vllm_style_batch_memcpy`` follows the design of vLLM v0.33's ``batch_memcpy_kernel``
(one program per segment, one byte per lane, 1024-byte steps, a barrier between load and
store when the destination sits below an overlapping source). Written for this
benchmark; no vLLM code is used.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _vllm_style_kernel(src_ptrs, dst_ptrs, sizes_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.load(src_ptrs + pid).to(tl.uint64, bitcast=True)
    dst = tl.load(dst_ptrs + pid).to(tl.uint64, bitcast=True)
    size = tl.load(sizes_ptr + pid).to(tl.int64)
    usize = size.to(tl.uint64)
    left_overlap = (dst < src) & (dst + usize > src)
    sp = src.to(tl.pointer_type(tl.uint8))
    dp = dst.to(tl.pointer_type(tl.uint8))
    offs = tl.arange(0, BLOCK)
    for i in range(0, size, BLOCK):
        m = (i + offs) < size
        x = tl.load(sp + i + offs, mask=m)
        if left_overlap:
            tl.debug_barrier()
        tl.store(dp + i + offs, x, mask=m)


def vllm_style_batch_memcpy(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor) -> None:
    """One program per segment, byte copies in 1024-byte steps (vLLM v0.33's design)."""
    _vllm_style_kernel[(src.shape[0],)](src, dst, sizes, BLOCK=1024)
