"""Core speed: PtrBuffer writes against the spellings engines use today.

Targets (issue #2), measured side by side in one run:
- fill from 10,000 tensors <= 1.5x ``torch.tensor([t.data_ptr() ...], dtype=torch.uint64)``
  and >= 30x faster than a per-element torch setitem loop;
- ``buf[i] = p`` with a DevicePtr in hand >= 5x faster than torch setitem of an int;
- ``fill_strided`` of 10,000 entries <= 2x plain uint64 numpy ``base + idx * stride``;
- GPU (when present): ``to_device`` of a 72-entry table (one copy) against 72
  element-wise device setitems (vLLM's spec-decode tables today).

``--baseline DIR`` also times another version of the core side by side (issue #12: no
regression from the table base): DIR is a checkout of the repository (e.g.
``git worktree add /tmp/old 2e17400``); its ``devptr`` core modules are loaded as a
separate package, ``devptr_base``, and every devptr case runs for both versions, in
alternation within each timing round (:func:`benchmarks._harness.host_interleaved`), so
a load on the machine hits both alike.

Prints a markdown report; ``--out FILE`` also appends it.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import torch

import devptr
from benchmarks import _harness as H
from devptr import DevicePtr, Encoding, PtrBuffer

N = 10_000


def _us(t: H.Timing) -> float:
    return t.median_ns / 1000


def _row(name: str, ours: H.Timing, base: H.Timing, target: str) -> str:
    ratio = ours.median_ns / base.median_ns
    return f"| {name} | {_us(ours):.2f} | {_us(base):.2f} | {ratio:.3f} | {target} |"


def load_baseline(checkout: Path) -> ModuleType:
    """``checkout``'s core modules (``devptr/_*.py``, ``__init__``, ``testing``) as ``devptr_base``.

    Copied to a temporary directory with ``devptr`` renamed in their imports; the core
    imports nothing above itself, so the copy is complete.
    """
    tmp = Path(tempfile.mkdtemp(prefix="devptr_base_"))
    dst = tmp / "devptr_base"
    dst.mkdir()
    src = checkout / "devptr"
    for path in [*src.glob("_*.py"), src / "testing.py", src / "py.typed"]:
        if not path.exists():
            continue
        text = path.read_text()
        if path.suffix == ".py":
            text = re.sub(r"\bdevptr\b", "devptr_base", text)
        (dst / path.name).write_text(text)
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # submodules load lazily
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module("devptr_base")
    finally:
        sys.path.remove(str(tmp))


def devptr_cases(dp: ModuleType, ts: list[torch.Tensor]) -> dict[str, Callable[[], object]]:
    """The hot calls of the core, built on the devptr module ``dp`` (this one or a baseline)."""
    p = dp.DevicePtr(ts[0].data_ptr())
    big = dp.PtrBuffer(N, pin_memory=False)
    small = dp.PtrBuffer(64, pin_memory=False)
    mirrored = dp.PtrBuffer(72, device="cpu", pin_memory=False)
    mirrored.fill(0, ts[:72])
    i64 = torch.zeros(64, dtype=torch.int64)
    base = dp.DevicePtr(2**63 + 2**20)
    idx_u = np.random.default_rng(0).integers(0, 4096, N).astype(np.uint64)
    store = dp.store

    def buf_set() -> None:
        small[5] = p

    def store_one() -> None:
        store(i64, 5, p)

    return {
        "fill": lambda: big.fill(0, ts),
        "setitem": buf_set,
        "store1": store_one,
        "to_device72": lambda: mirrored.to_device(72),
        "strided": lambda: big.fill_strided(0, base, idx_u, 2 * 1024 * 1024),
    }


CASE_NAMES = {
    "fill": "fill(0, 10k tensors)",
    "setitem": "buf[i] = DevicePtr",
    "store1": "store(int64 CPU tensor, i, DevicePtr) (scalar fast path)",
    "to_device72": "to_device(72) into a CPU mirror",
    "strided": "fill_strided 10k uint64 idx (checked)",
}
NUMBER = {"fill": 20, "setitem": 20_000, "store1": 20_000, "to_device72": 2_000, "strided": 500}


def cpu_rows() -> list[str]:
    ts = [torch.empty(4) for _ in range(N)]
    cases = devptr_cases(devptr, ts)
    fill = H.host(cases["fill"], number=NUMBER["fill"])
    tensor_ctor = H.host(
        lambda: torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64), number=NUMBER["fill"]
    )
    i64 = torch.zeros(N, dtype=torch.int64)

    def setitem_loop() -> None:
        for k, t in enumerate(ts):
            i64[k] = t.data_ptr()

    loop = H.host(setitem_loop, number=1, repeat=3)
    small_t = torch.zeros(64, dtype=torch.int64)
    raw = ts[0].data_ptr()

    def torch_set() -> None:
        small_t[5] = raw

    one = H.host_interleaved({"buf": cases["setitem"], "torch": torch_set}, number=NUMBER["setitem"])
    idx = np.random.default_rng(0).integers(0, 4096, N).astype(np.int32)
    idx_u = idx.astype(np.uint64)
    b_u, s_u = np.uint64(2**63 + 2**20), np.uint64(2 * 1024 * 1024)
    buf = PtrBuffer(N, pin_memory=False)
    base = DevicePtr(2**63 + 2**20)
    strided = H.host_interleaved(
        {
            "u64": cases["strided"],
            "i32": lambda: buf.fill_strided(0, base, idx, 2 * 1024 * 1024),
            "numpy": lambda: b_u + idx_u * s_u,
        },
        number=NUMBER["strided"],
    )
    return [
        "| case | devptr (us) | baseline (us) | ratio | target |",
        "|---|---|---|---|---|",
        _row("fill(0, 10k tensors) vs torch.tensor([data_ptr...], uint64)", fill, tensor_ctor, "<= 1.5"),
        _row("fill(0, 10k tensors) vs int64 setitem loop", fill, loop, "<= 0.033 (30x faster)"),
        _row("buf[i] = DevicePtr vs torch int64 t[i] = int", one["buf"], one["torch"], "<= 0.2 (5x faster)"),
        _row(
            "fill_strided 10k uint64 idx (checked) vs numpy uint64 base+idx*stride",
            strided["u64"],
            strided["numpy"],
            "<= 2",
        ),
        _row(
            "fill_strided 10k int32 idx (checked, cast) vs the same numpy",
            strided["i32"],
            strided["numpy"],
            "(info)",
        ),
    ]


def baseline_rows(checkout: Path) -> list[str]:
    """This core against ``checkout``'s, case by case, interleaved in every round."""
    old = load_baseline(checkout)
    ts = [torch.empty(4) for _ in range(N)]
    new_cases, old_cases = devptr_cases(devptr, ts), devptr_cases(old, ts)
    rows = [
        f"| case (this core vs `{checkout.name}`) | this: median (min) us | baseline: median (min) us "
        "| ratio of medians | ratio of minima |",
        "|---|---|---|---|---|",
    ]
    for key, label in CASE_NAMES.items():
        # many short interleaved rounds: on a loaded machine the minima see its quiet moments
        number = max(NUMBER[key] // 4, 5)
        t = H.host_interleaved({"new": new_cases[key], "old": old_cases[key]}, number=number, repeat=24)
        new, old = t["new"], t["old"]
        rows.append(
            f"| {label} | {_us(new):.2f} ({new.min_ns / 1000:.2f}) "
            f"| {_us(old):.2f} ({old.min_ns / 1000:.2f}) "
            f"| {new.median_ns / old.median_ns:.3f} | {new.min_ns / old.min_ns:.3f} |"
        )
    return rows


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

    def elementwise() -> None:
        for k, v in enumerate(ptrs):
            table[k] = v

    t_ours = H.cuda_events(lambda: buf.to_device(n), number=200)
    t_elem = H.cuda_events(elementwise, number=20)
    ok = buf.device(Encoding.I64).tolist() == ptrs
    return [
        "| case (H2D, 72 entries) | devptr to_device (us) | 72 device setitems (us) | ratio |",
        "|---|---|---|---|",
        f"| wall time per table, CUDA events | {_us(t_ours):.1f} | {_us(t_elem):.1f} | "
        f"{t_ours.median_ns / t_elem.median_ns:.3f} |",
        f"\ndevice table bit-exact after to_device: {ok}; copies per to_device: 1",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", help="also append the markdown report here")
    ap.add_argument("--baseline", type=Path, help="a checkout whose core is timed side by side")
    ap.add_argument("--only-baseline", action="store_true", help="skip the issue #2 targets")
    args = ap.parse_args()
    parts = [f"### torch {torch.__version__}", "", H.header()]
    if not args.only_baseline:
        parts += [*cpu_rows(), "", *gpu_rows(), ""]
    if args.baseline is not None:
        parts += [*baseline_rows(args.baseline), ""]
    report = "\n".join(parts)
    print(report)
    if args.out:
        with open(args.out, "a") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
