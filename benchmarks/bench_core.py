"""Core speed: PtrBuffer writes against the spellings engines use today.

Targets (issue #2), measured side by side in one run:
- fill from 10,000 tensors <= 1.5x ``torch.tensor([t.data_ptr() ...], dtype=torch.uint64)``
  and >= 30x faster than a per-element torch setitem loop;
- ``buf[i] = p`` with a DevicePtr in hand >= 5x faster than torch setitem of an int;
- ``fill_strided`` of 10,000 entries <= 2x plain uint64 numpy ``base + idx * stride``;
- GPU (when present): ``to_device`` of a 72-entry table (one copy) against 72
  element-wise device setitems (vLLM's spec-decode tables today).

Prints a markdown report; ``--out FILE`` also writes it.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from benchmarks._timing import command_line, header, per_call_us
from devptr import DevicePtr, Encoding, PtrBuffer


def _row(name: str, ours: float, base: float, target: str) -> str:
    return f"| {name} | {ours:.2f} | {base:.2f} | {ours / base:.3f} | {target} |"


def cpu_rows() -> list[str]:
    n = 10_000
    ts = [torch.empty(4) for _ in range(n)]
    buf = PtrBuffer(n, pin_memory=False)
    fill = per_call_us(lambda: buf.fill(0, ts), number=20)
    tensor_ctor = per_call_us(lambda: torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64), number=20)
    i64 = torch.zeros(n, dtype=torch.int64)

    def setitem_loop() -> None:
        for k, t in enumerate(ts):
            i64[k] = t.data_ptr()

    loop = per_call_us(setitem_loop, number=1, repeat=3)

    p = DevicePtr(ts[0].data_ptr())
    raw = p.addr
    small = PtrBuffer(64, pin_memory=False)
    small_t = torch.zeros(64, dtype=torch.int64)

    def buf_set() -> None:
        small[5] = p

    def torch_set() -> None:
        small_t[5] = raw

    one_buf = per_call_us(buf_set, number=20_000)
    one_torch = per_call_us(torch_set, number=20_000)

    base = DevicePtr(2**63 + 2**20)
    idx = np.random.default_rng(0).integers(0, 4096, n).astype(np.int32)
    stride = 2 * 1024 * 1024
    idx_u = idx.astype(np.uint64)
    b_u, s_u = np.uint64(base.addr), np.uint64(stride)
    strided = per_call_us(lambda: buf.fill_strided(0, base, idx_u, stride), number=500)
    strided_i32 = per_call_us(lambda: buf.fill_strided(0, base, idx, stride), number=500)
    plain = per_call_us(lambda: b_u + idx_u * s_u, number=500)
    return [
        "| case | devptr (us) | baseline (us) | ratio | target |",
        "|---|---|---|---|---|",
        _row("fill(0, 10k tensors) vs torch.tensor([data_ptr...], uint64)", fill, tensor_ctor, "<= 1.5"),
        _row("fill(0, 10k tensors) vs int64 setitem loop", fill, loop, "<= 0.033 (30x faster)"),
        _row("buf[i] = DevicePtr vs torch int64 t[i] = int", one_buf, one_torch, "<= 0.2 (5x faster)"),
        _row("fill_strided 10k uint64 idx (checked) vs numpy uint64 base+idx*stride", strided, plain, "<= 2"),
        _row("fill_strided 10k int32 idx (checked, cast) vs the same numpy", strided_i32, plain, "(info)"),
    ]


def gpu_rows() -> list[str]:
    if not torch.cuda.is_available():
        return ["(no GPU: to_device comparison not run)"]
    n = 72
    dev = torch.device("cuda")
    src = [torch.empty(1024, device=dev) for _ in range(n)]
    buf = PtrBuffer(n, device=dev)
    buf.fill(0, src)
    table = torch.zeros(n, dtype=torch.int64, device=dev)
    ptrs = [DevicePtr.of(t).encode(Encoding.I64) for t in src]

    def ours() -> None:
        buf.to_device(n)

    def elementwise() -> None:
        for k, v in enumerate(ptrs):
            table[k] = v

    def timed(fn: object, reps: int) -> float:
        assert callable(fn)
        fn()
        torch.cuda.synchronize()
        best = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            best.append(start.elapsed_time(end) * 1000 / reps)
        return sorted(best)[len(best) // 2]

    t_ours = timed(ours, 200)
    t_elem = timed(elementwise, 20)
    ok = buf.device(Encoding.I64).tolist() == ptrs
    return [
        "| case (H2D, 72 entries) | devptr to_device (us) | 72 device setitems (us) | ratio |",
        "|---|---|---|---|",
        f"| wall time per table, CUDA events | {t_ours:.1f} | {t_elem:.1f} | {t_ours / t_elem:.3f} |",
        f"\ndevice table bit-exact after to_device: {ok}; copies per to_device: 1",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", help="also write the markdown report here")
    args = ap.parse_args()
    report = "\n".join(
        [f"### torch {torch.__version__}", "", header(command_line()), *cpu_rows(), "", *gpu_rows(), ""]
    )
    print(report)
    if args.out:
        with open(args.out, "a") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
