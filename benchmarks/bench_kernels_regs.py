"""Registers of the compiled batch_memcpy kernel, without a GPU.

Compiles ``devptr.kernels._copy_jit._batch_memcpy_kernel`` for an NVIDIA target (default
sm_90, the H200) with Triton's own ``ptxas`` and reads the resource usage with the
``cuobjdump`` Triton ships. Registers per thread bound how many programs a multiprocessor
holds, so a code path that raises them costs every case of the kernel; this is how the
word paths of ``_copy_segment`` were chosen.

Run: ``PYTHONPATH=. python benchmarks/bench_kernels_regs.py [--arch 90]`` (prints one line
per launch signature the launcher uses: strided and contiguous tables).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from devptr.kernels import _runtime


def resource_usage(arch: int, contiguous: bool) -> str:
    jit = _runtime.jit_module("_copy_jit")
    stride = "constexpr" if contiguous else "i32"
    sig = {
        "src_ptrs": "*i64",
        "dst_ptrs": "*i64",
        "sizes_ptr": "*i64",
        "src_stride": stride,
        "dst_stride": stride,
        "size_stride": stride,
        "split": "i32",
        "CHUNK": "constexpr",
        "BYTE_CHUNK": "constexpr",
    }
    consts: dict[str, int] = {"CHUNK": 4096, "BYTE_CHUNK": 1024}
    if contiguous:
        consts.update(src_stride=1, dst_stride=1, size_stride=1)
    aligned = {(k,): [["tt.divisibility", 16]] for k in range(3)}
    src = ASTSource(jit._batch_memcpy_kernel, sig, constexprs=consts, attrs=aligned)
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(kernel.asm["cubin"])
        out = subprocess.run([tool, "--dump-resource-usage", path], capture_output=True, text=True).stdout
    return next((line.strip() for line in out.splitlines() if "REG:" in line), out.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args()
    for contiguous in (False, True):
        label = "contiguous tables" if contiguous else "strided tables"
        print(f"sm_{args.arch}, {label}: {resource_usage(args.arch, contiguous)}")


if __name__ == "__main__":
    main()
