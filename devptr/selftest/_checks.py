"""The checks of ``devptr selftest``, each on the accelerator it finds (or the CPU).

Every check returns a :class:`Result`: ``pass``, ``FAIL`` (with what differed) or ``skip``
(with why: no such backend feature, or CPU-only). Nothing is mocked: tensors are real
allocations on the device, kernels are compiled for it (or interpreted on a CPU).
"""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import numpy as np
import torch

from devptr import DevicePtr, Encoding, PtrBuffer, SizeBuffer, encoding_for, ptr_tensor, store
from devptr._core_api import reachable_device
from devptr.testing import HIGH_ADDRESSES

Status = Literal["pass", "FAIL", "skip"]
SIGN_BIT: Final = 1 << 63


@attrs.frozen
class Result:
    """One check's outcome: ``name``, ``status`` and a one-line ``detail``."""

    name: str
    status: Status
    detail: str


@attrs.frozen
class Target:
    """The device the checks run on, and how kernels run there."""

    device: torch.device
    backend: str
    """``cuda``, ``hip`` (ROCm builds of torch report device type ``cuda``), ``xpu`` or ``cpu``."""
    interpreted: bool
    """Whether Triton kernels run in the interpreter (CPU) rather than compiled."""
    name: str


def find_target(device: str | None = None) -> Target:
    """The first accelerator torch sees (``xpu``, then ``cuda``/HIP), else the CPU.

    ``device`` goes through the core's resolver (:func:`devptr._storage.reachable_device`):
    a name torch does not know is an :class:`~devptr.UnknownBackendError`, a device this
    machine cannot reach (no driver, no such index, a build without it) a
    :class:`~devptr.StateError`; ``devptr selftest`` prints either on one line (exit 2).
    """
    if device is not None:
        dev = reachable_device(device)
    elif hasattr(torch, "xpu") and torch.xpu.is_available():
        dev = torch.device("xpu", 0)
    elif torch.cuda.is_available():
        dev = torch.device("cuda", 0)
    else:
        dev = torch.device("cpu")
    if dev.type == "cuda":
        backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
        name = torch.cuda.get_device_name(dev)
    elif dev.type == "xpu":  # pragma: no cover - no XPU in CI
        backend, name = "xpu", str(torch.xpu.get_device_name(dev))
    else:
        backend, name = "cpu", "CPU (Triton interpreter)"
    return Target(dev, backend, dev.type == "cpu", name)


def _named(name: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Report a check that raises as ``FAIL`` under ``name``, with the exception and where."""

    def wrap(check: Callable[..., Result]) -> Callable[..., Result]:
        @functools.wraps(check)
        def run(target: Target, *args: Any) -> Result:
            try:
                return check(target, *args)
            except Exception as exc:  # a crash is a failed check, reported with its cause
                where = traceback.extract_tb(exc.__traceback__)[-1]
                return Result(name, "FAIL", f"{type(exc).__name__}: {exc} (at {where.name}:{where.lineno})")

        return run

    return wrap


def _bits(t: torch.Tensor) -> list[int]:
    arr = t.detach().cpu().contiguous().numpy()
    return [int(v) for v in arr.reshape(-1).view(np.uint64)]


def _sync(target: Target) -> None:
    if target.device.type == "cuda":
        torch.cuda.synchronize(target.device)
    elif target.device.type == "xpu":  # pragma: no cover
        torch.xpu.synchronize(target.device)


@_named("allocations")
def check_allocations(target: Target, count: int = 64) -> Result:
    """Real allocations: every address round-trips through ``DevicePtr.of`` and ``.signed``."""
    tensors = [torch.empty(1 << (10 + k % 12), dtype=torch.uint8, device=target.device) for k in range(count)]
    ptrs = [DevicePtr.of(t) for t in tensors]
    for t, p in zip(tensors, ptrs, strict=True):
        raw = t.data_ptr()
        if p.addr != raw % (1 << 64) or DevicePtr.from_signed(p.signed) != p:
            return Result("allocations", "FAIL", f"{raw:#x} did not round-trip ({p!r})")
    high = sum(p.addr >= SIGN_BIT for p in ptrs)
    lo, hi = min(p.addr for p in ptrs), max(p.addr for p in ptrs)
    return Result(
        "allocations",
        "pass",
        f"{count} tensors, addresses {lo:#x}..{hi:#x}, {high} of {count} with bit 63 set",
    )


@_named("tables")
def check_tables(target: Target) -> Result:
    """Bit-exact tables: real + XPU-like addresses, host and device views in both encodings,
    and ``store()`` into int64 and uint64 device tensors."""
    tensors = [torch.empty(256, device=target.device) for _ in range(4)]
    want = [DevicePtr.of(t).addr for t in tensors] + list(HIGH_ADDRESSES)
    buf: PtrBuffer[int] = PtrBuffer(len(want), device=target.device)
    buf.fill(0, tensors)
    buf.fill(len(tensors), [DevicePtr(a) for a in HIGH_ADDRESSES])
    seen: list[str] = []
    for enc in (Encoding.I64, Encoding.U64):
        for label, view in (("host", buf.host(enc)), ("device", buf.to_device(encoding=enc))):
            if view.dtype != enc.torch_dtype or _bits(view) != want:
                return Result("tables", "FAIL", f"{label} view {enc.name}: {view.dtype}, bits differ")
            seen.append(f"{label} {enc.name}")
    for dtype in (torch.int64, torch.uint64):
        dst = torch.zeros(len(want), dtype=dtype, device=target.device)
        store(dst, slice(0, len(want)), [DevicePtr(a) for a in want])
        if _bits(dst) != want:
            return Result("tables", "FAIL", f"store() into a {dtype} device tensor: bits differ")
    default = encoding_for(target.device).name
    return Result(
        "tables",
        "pass",
        f"{len(want)} entries ({len(HIGH_ADDRESSES)} >= 2**63) bit-exact in {', '.join(seen)} "
        f"and store() into int64/uint64 device tensors; backend default {default}",
    )


def _segments(target: Target) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int]]:
    sizes = [4096, 48 * 1024 + 16, 1000, 65536 + 3]
    gen = torch.Generator(device="cpu").manual_seed(0)
    srcs = [torch.randint(0, 256, (n,), dtype=torch.uint8, generator=gen).to(target.device) for n in sizes]
    dsts = [torch.zeros(n, dtype=torch.uint8, device=target.device) for n in sizes]
    return srcs, dsts, sizes


def _copy_tables(
    target: Target, srcs: list[torch.Tensor], dsts: list[torch.Tensor], sizes: list[int]
) -> tuple[PtrBuffer[int], PtrBuffer[int], SizeBuffer]:
    """Source and destination tables and byte counts, all uploaded (synchronously)."""
    n = len(sizes)
    src: PtrBuffer[int] = PtrBuffer(n, device=target.device)
    dst: PtrBuffer[int] = PtrBuffer(n, device=target.device)
    nbytes = SizeBuffer(n, device=target.device)
    src.fill(0, srcs)
    dst.fill(0, dsts)
    nbytes.fill(0, sizes)
    for table in (src, dst, nbytes):
        table.to_device(non_blocking=False)
    return src, dst, nbytes


@_named("kernels")
def check_kernels(target: Target) -> Result:
    """devptr's ``batch_memcpy`` fed both encodings, the unsigned compare on an address >= 2**63,
    and a scalar address argument read through the ``addr_jit`` rule."""
    from devptr.kernels import addr_arg, batch_memcpy
    from devptr.selftest import _kernels as k

    srcs, dsts, sizes = _segments(target)
    n = len(sizes)
    src, dst, nbytes = _copy_tables(target, srcs, dsts, sizes)
    for enc in (Encoding.I64, Encoding.U64):
        for d in dsts:
            d.zero_()
        batch_memcpy(src.to_device(encoding=enc), dst.to_device(encoding=enc), nbytes)
        _sync(target)
        if not all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True)):
            return Result("kernels", "FAIL", f"batch_memcpy with {enc.name} tables copied wrong bytes")
    pair = [DevicePtr(0x7FFF_FFFF_F000), DevicePtr(HIGH_ADDRESSES[2])]
    tab = ptr_tensor(pair, encoding=Encoding.I64, device=target.device)  # signed: the hard case
    out = torch.zeros(1, dtype=torch.int32, device=target.device)
    k._lt_kernel[(1,)](tab, out)
    if int(out.cpu()[0]) != 1:
        return Result("kernels", "FAIL", "unsigned compare: 0x7ffffffff000 < HI came out false")
    probe = torch.tensor([1234567], dtype=torch.int32, device=target.device)
    echo = torch.zeros(2, dtype=torch.int64, device=target.device)
    k._addr_echo_kernel[(1,)](addr_arg(DevicePtr.of(probe)), echo, DEREF=True)
    _sync(target)
    got = [int(v) for v in echo.cpu()]
    if got[0] % (1 << 64) != DevicePtr.of(probe).addr or got[1] != 1234567:
        return Result("kernels", "FAIL", f"scalar address argument read back {got}")
    mode = "interpreted on the CPU" if target.interpreted else f"compiled for {target.backend}"
    return Result(
        "kernels",
        "pass",
        f"batch_memcpy ({n} segments, I64 and U64 tables), unsigned compare, scalar address: {mode}",
    )


@_named("addr-arg cache")
def check_addr_cache(target: Target) -> Result:
    """One compile-cache entry for a scalar address argument across low, high (>= 2**63) and
    unaligned addresses (compiled backends); on the interpreter, Triton's specialisation key."""
    from devptr.kernels import addr_arg, compiled_variants, specialization_key
    from devptr.selftest import _kernels as k

    out = torch.zeros(2, dtype=torch.int64, device=target.device)
    values = [
        DevicePtr.of(out),
        DevicePtr(HIGH_ADDRESSES[2]),
        DevicePtr(HIGH_ADDRESSES[1]),
        DevicePtr(4096),
    ]
    keys = {specialization_key(k._addr_echo_kernel, addr_arg(p), out, DEREF=False) for p in values}
    before = compiled_variants(k._addr_echo_kernel)
    for p in values:
        k._addr_echo_kernel[(1,)](addr_arg(p), out, DEREF=False)
        _sync(target)
        if int(out.cpu()[0]) % (1 << 64) != p.addr:
            return Result("addr-arg cache", "FAIL", f"{p!r} came back as {int(out.cpu()[0]):#x}")
    after = compiled_variants(k._addr_echo_kernel)
    if len(keys) != 1:
        return Result("addr-arg cache", "FAIL", f"{len(keys)} specialisation keys: {sorted(keys)}")
    if target.interpreted:
        return Result(
            "addr-arg cache",
            "pass",
            f"1 specialisation key {next(iter(keys))} (interpreter: no compile cache)",
        )
    if after - before > 1 or after < 1:
        return Result("addr-arg cache", "FAIL", f"compiled variants went {before} -> {after}")
    return Result(
        "addr-arg cache",
        "pass",
        f"4 addresses (low, >= 2**63, unaligned, small): 1 key, {after} compiled variant(s)",
    )


@_named("graph capture")
def check_graph(target: Target) -> Result:
    """Capture ``to_device`` + ``batch_memcpy`` in a CUDA/HIP graph; replay after rewriting
    the pinned host table: the replay must use the new addresses (the H2D copy is a node)."""
    if target.device.type != "cuda":
        what = (
            "XPU graph capture is not exercised yet" if target.device.type == "xpu" else "no graph on a CPU"
        )
        return Result("graph capture", "skip", what)
    from devptr.kernels import batch_memcpy

    srcs, dsts, sizes = _segments(target)
    other = [torch.randint(0, 256, (n,), dtype=torch.uint8, device=target.device) for n in sizes]
    src, dst, nbytes = _copy_tables(target, srcs, dsts, sizes)

    def step() -> None:  # the kernel reads the device mirrors; no host work inside
        batch_memcpy(src.device(), dst.device(), nbytes, max_size=max(sizes))

    graph = _capture(step, target)
    for d in dsts:
        d.zero_()
    graph.replay()
    torch.cuda.synchronize(target.device)
    if not all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True)):
        return Result("graph capture", "FAIL", "first replay copied wrong bytes")
    src.fill(0, other)  # new addresses, uploaded outside the graph; the graph is unchanged
    src.to_device()
    graph.replay()
    torch.cuda.synchronize(target.device)
    if not all(torch.equal(s, d) for s, d in zip(other, dsts, strict=True)):
        return Result("graph capture", "FAIL", "replay did not read the re-uploaded table")
    api = "HIP graph" if target.backend == "hip" else "CUDA graph"
    return Result(
        "graph capture",
        "pass",
        f"{api}: batch_memcpy on device views captured; replay reads tables re-uploaded "
        f"between replays. to_device() inside the capture: {_to_device_in_capture(target)}",
    )


def _capture(step: Callable[[], None], target: Target) -> torch.cuda.CUDAGraph:
    side = torch.cuda.Stream(target.device)  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream(target.device))
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream(target.device).wait_stream(side)
    torch.cuda.synchronize(target.device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    torch.cuda.synchronize(target.device)
    return graph


def _to_device_in_capture(target: Target) -> str:
    """What happens when ``PtrBuffer.to_device`` itself is captured, then the host is rewritten."""
    buf: PtrBuffer[int] = PtrBuffer(4, device=target.device)
    buf.fill(0, [DevicePtr(a) for a in HIGH_ADDRESSES])

    def upload() -> None:
        buf.to_device()

    try:
        graph = _capture(upload, target)
        buf.fill(0, [DevicePtr(a + 16) for a in HIGH_ADDRESSES[:3]] + [DevicePtr(64)])
        graph.replay()
        torch.cuda.synchronize(target.device)
        ok = _bits(buf.device()) == [a + 16 for a in HIGH_ADDRESSES[:3]] + [64]
        return "replay copies the rewritten host table" if ok else "replay copied stale entries"
    except Exception as exc:  # the finding is the outcome
        return f"{type(exc).__name__} ({str(exc).splitlines()[0][:80]})"


CHECKS: Final[tuple[Callable[[Target], Result], ...]] = (
    check_allocations,
    check_tables,
    check_kernels,
    check_addr_cache,
    check_graph,
)


def interpreter_env(target: Target) -> None:
    """On the CPU, run kernels in Triton's interpreter (set before the first kernel import)."""
    if target.interpreted:
        os.environ.setdefault("TRITON_INTERPRET", "1")
