"""Which engine runs an EC swap batch on a CUDA device: the SM kernel or the copy engines.

Two engines move the bytes of a batch of descriptors on CUDA:

``kernel``
    ``devptr.kernels.batch_memcpy``: the descriptors go to the device in one copy, one
    launch copies every block on the multiprocessors (pinned host memory is reached
    through unified addressing).
``copy_engine``
    The copy engines, through the CUDA runtime's batched call ``cudaMemcpyBatchAsync``
    (CUDA 12.8 and later) on the host tables as they are: one native call for the whole
    batch, the way vLLM's C++ ``swap_blocks_batch`` makes it. Where the runtime has no
    batched call, ``cudaMemcpyAsync`` per descriptor (``copy_engine_loop``). On the legacy
    default stream (which the batched call refuses) the copies run on a side stream
    ordered after and before the current stream's work by events.
``copy_engine`` on ``k`` streams
    The batch cut in ``k`` parts, one batched call each, on the current stream and side
    streams joined by events: the runtime's call costs about 1 us of host time per
    descriptor and its copies start when it returns, so the first part's copies start
    after a ``k``-th of that time.
``split``
    Both at once: the first ``fraction`` of the descriptors on the copy engines (side
    stream), the rest on the SM kernel (current stream), joined by events; for block
    sizes where the copy engines' per-descriptor cost leaves the link idle part of the time.

Neither wins everywhere: the SM kernel has no per-descriptor cost (small blocks), the copy
engines move large blocks over PCIe with fewer bytes of overhead and leave the SMs free.
Where they cross depends on the device and its link, so the choice is made from
**crossovers measured on the device** (:func:`calibrate`: each engine timed on scratch
buffers for block sizes of 4 KiB to 4 MiB and each direction), once per device and kept
for the process; :func:`choose` then picks, for a batch, the engine that was faster at the
measured block size nearest (on a log scale) to the batch's mean bytes per descriptor.
Every choice is kept (:func:`last_choice`) and logged at DEBUG level on the
``devptr.ec`` logger; ``path="kernel"`` or ``path="copy_engine"`` on the swap entry points
overrides it. Nothing here runs without CUDA; the CUDA runtime library is the one the
process (torch) already loaded, opened with ``ctypes``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import importlib
import logging
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import torch

from devptr import DevicePtr, StateError, addresses
from devptr._core_api import U64, U64Array

Engine = Literal["kernel", "copy_engine", "copy_engine_loop", "split"]
Direction = Literal["H2D", "D2H", "D2D", "H2H"]

LOG = logging.getLogger("devptr.ec")
_cuda: Any = torch.cuda  # its Stream/Event/init are untyped on some torch releases

KIB = 1024
CALIBRATION_BLOCKS: tuple[int, ...] = (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1024 * KIB, 4096 * KIB)
"""Block sizes :func:`calibrate` times by default."""
CALIBRATION_BYTES = 32 * 1024 * KIB
"""Bytes per timed batch in :func:`calibrate`."""
CALIBRATION_LARGE_BYTES = 4 * CALIBRATION_BYTES
"""Bytes per timed batch where :func:`calibrate` times a contested block size again."""
CONTESTED = 0.10
"""Engines whose rates at a block size differ by at most this share of the faster are
*contested* there: :func:`calibrate` times them on a second, larger batch, and
:func:`choose` compares them at the batch's own bytes."""
CALIBRATION_BATCHES = 4
"""Batches :func:`calibrate` runs back to back per timed sample (the steady state of a loop)."""
CALIBRATION_STREAMS: tuple[int, ...] = (2, 4)
"""Stream counts :func:`calibrate` times the copy engines on, besides one stream."""

_SONAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so")
_MEMCPY_DEFAULT = 4  # cudaMemcpyDefault: the direction from unified addressing
_ORDER_STREAM, _ORDER_ANY = 1, 3  # cudaMemcpySrcAccessOrderStream / ...Any
_MEM_TYPE_DEVICE, _MEM_TYPE_MANAGED = 2, 3  # cudaMemoryType


class _MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _MemcpyAttributes(ctypes.Structure):
    """``cudaMemcpyAttributes`` (CUDA 12.8+): access order, location hints, flags."""

    _fields_ = [
        ("srcAccessOrder", ctypes.c_int),
        ("srcLocHint", _MemLocation),
        ("dstLocHint", _MemLocation),
        ("flags", ctypes.c_uint),
    ]


class _PointerAttributes(ctypes.Structure):
    """``cudaPointerAttributes``: its first field, and room for the rest (the struct has
    grown reserved words across CUDA releases; the runtime writes all of them)."""

    _fields_ = [("type", ctypes.c_int), ("rest", ctypes.c_byte * 252)]


class CudaRuntime:
    """The process's CUDA runtime library, with the three calls the engines need."""

    def __init__(self, lib: ctypes.CDLL, version: int) -> None:
        self.lib = lib
        self.version = version
        self.has_batch = version >= 12080 and hasattr(lib, "cudaMemcpyBatchAsync")
        self._fail_idx = version < 13000  # 12.8/12.9 take a failIdx argument before the stream
        self._attrs = {
            order: _MemcpyAttributes(order, _MemLocation(), _MemLocation(), 0)
            for order in (_ORDER_STREAM, _ORDER_ANY)
        }
        self._zero = ctypes.c_size_t(0)
        self._fail = ctypes.c_size_t(0)

    def batch(self, dst: U64Array, src: U64Array, sizes: U64Array, stream: int, any_order: bool) -> None:
        """``cudaMemcpyBatchAsync`` over three contiguous uint64 arrays (no copies made)."""
        attr = self._attrs[_ORDER_ANY if any_order else _ORDER_STREAM]
        n = int(sizes.shape[0])
        args: list[object] = [
            ctypes.c_void_p(dst.ctypes.data),
            ctypes.c_void_p(src.ctypes.data),
            ctypes.c_void_p(sizes.ctypes.data),
            ctypes.c_size_t(n),
            ctypes.byref(attr),
            ctypes.byref(self._zero),
            ctypes.c_size_t(1),
        ]
        if self._fail_idx:
            args.append(ctypes.byref(self._fail))
        args.append(ctypes.c_void_p(stream))
        _check(self.lib.cudaMemcpyBatchAsync(*args), "cudaMemcpyBatchAsync")

    def loop(self, dst: U64Array, src: U64Array, sizes: U64Array, stream: int) -> None:
        """``cudaMemcpyAsync`` per descriptor."""
        fn = self.lib.cudaMemcpyAsync
        st = ctypes.c_void_p(stream)
        for d, s, k in zip(dst.tolist(), src.tolist(), sizes.tolist(), strict=True):
            if k:
                _check(
                    fn(ctypes.c_void_p(d), ctypes.c_void_p(s), ctypes.c_size_t(k), _MEMCPY_DEFAULT, st),
                    "cudaMemcpyAsync",
                )

    def on_device(self, addr: int) -> bool:
        """Whether ``addr`` is device (or managed) memory, by ``cudaPointerGetAttributes``."""
        attrs = _PointerAttributes()
        _check(
            self.lib.cudaPointerGetAttributes(ctypes.byref(attrs), ctypes.c_void_p(addr)),
            "cudaPointerGetAttributes",
        )
        return attrs.type in (_MEM_TYPE_DEVICE, _MEM_TYPE_MANAGED)


def _check(err: int, what: str) -> None:
    if err:
        raise StateError(f"{what} failed with CUDA error {err}")


_runtime: list[CudaRuntime | None] = []
_lock = threading.Lock()


def cuda_runtime() -> CudaRuntime | None:
    """The CUDA runtime library already loaded by torch (by its soname), or None."""
    with _lock:
        if not _runtime:
            _runtime.append(_load())
        return _runtime[0]


def _load() -> CudaRuntime | None:
    if not torch.cuda.is_available():
        return None
    _cuda.init()
    for name in _SONAMES:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.cudaRuntimeGetVersion(ctypes.byref(version)) == 0:
            return CudaRuntime(lib, version.value)
    return None


_GRANULE = 21  # 2 MiB: no device allocation and host mapping share one (a direction hint)
_directions: dict[tuple[int, int], Direction] = {}


def direction(rt: CudaRuntime, src: int, dst: int) -> Direction:
    """A batch's direction from its first descriptor (batches are one direction).

    Remembered per pair of 2 MiB address granules (two ``cudaPointerGetAttributes`` calls,
    about 4.5 us on an H200's host, are made once per pair). The direction only picks the
    engine: both engines copy correctly whatever memory the addresses point at, so a
    granule re-used by another kind of memory after a free costs speed, never bytes.
    """
    key = (src >> _GRANULE, dst >> _GRANULE)
    hit = _directions.get(key)
    if hit is not None:
        return hit
    s = "D" if rt.on_device(src) else "H"
    d = "D" if rt.on_device(dst) else "H"
    if len(_directions) >= 4096:
        _directions.clear()
    found: Direction = f"{s}2{d}"  # type: ignore[assignment]
    _directions[key] = found
    return found


@dataclasses.dataclass(frozen=True)
class EngineChoice:
    """Which engine ran a batch, and why."""

    engine: Engine
    direction: Direction | None
    block_bytes: int
    reason: str
    fraction: float = 0.0
    """``split``: the share of the descriptors given to the copy engines."""
    streams: int = 1
    """``copy_engine``: how many streams the batch is spread over (one batched call each)."""


@dataclasses.dataclass
class Crossovers:
    """Measured throughput (GB/s, payload) per direction, block size and engine."""

    device: str
    rates: dict[str, dict[int, dict[str, float]]] = dataclasses.field(default_factory=dict)
    fractions: dict[str, dict[int, float]] = dataclasses.field(default_factory=dict)
    """``split``'s copy-engine share per direction and block size."""
    notes: list[str] = dataclasses.field(default_factory=list)
    total: int = CALIBRATION_BYTES
    """The bytes of each batch behind :attr:`rates`."""
    large: dict[str, dict[int, dict[str, float]]] = dataclasses.field(default_factory=dict)
    """The contested block sizes (:data:`CONTESTED`) timed again on batches of
    :attr:`large_total` bytes: GB/s per direction, block size and engine."""
    large_total: int = 0
    """The bytes of each batch behind :attr:`large` (0: none timed)."""
    _memo: dict[tuple[str, int, int], tuple[Engine, float, str, int] | None] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    _picked: dict[tuple[int, int, int, int], EngineChoice] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    """:func:`choose`'s choices from these rates, by source and destination granule, block
    size and batch size class."""

    def best(
        self, direction: str, block_bytes: int, total: int | None = None
    ) -> tuple[Engine, float, str, int] | None:
        """The fastest engine at the measured block size nearest to ``block_bytes``:
        ``(engine, split fraction, reason, streams)``.

        Where that block size was contested and timed at two batch sizes, the engines are
        compared at ``total`` (the batch's bytes; None: :attr:`total`), each one's time
        taken as a fixed cost per batch plus a cost per byte fitted to its two
        measurements. Remembered per direction, block size and power of two of ``total``.
        """
        key = (direction, block_bytes, (self.total if total is None else total).bit_length())
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= 256:
                self._memo.clear()
            hit = self._memo[key] = self._best(direction, block_bytes, total)
        return hit

    def _best(
        self, direction: str, block_bytes: int, total: int | None
    ) -> tuple[Engine, float, str, int] | None:
        table = self.rates.get(direction)
        if not table:
            return None
        size = min(table, key=lambda b: abs(math.log2(b) - math.log2(max(block_bytes, 1))))
        row = table[size]
        shown = ", ".join(f"{e} {v:.1f}" for e, v in sorted(row.items()))
        why = f"measured at {size // KIB} KiB blocks on {self.device}: {shown} GB/s"
        big = self.large.get(direction, {}).get(size)
        if big and self.large_total > self.total:
            at = self.total if total is None else max(int(total), 1)
            row = {e: fitted_rate(row[e], big[e], self.total, self.large_total, at) for e in row if e in big}
            again = ", ".join(f"{e} {v:.1f}" for e, v in sorted(big.items()))
            fit = ", ".join(f"{e} {v:.1f}" for e, v in sorted(row.items()))
            why += (
                f" on {self.total >> 20} MiB batches; {again} GB/s on {self.large_total >> 20} MiB;"
                f" fitted at this batch's {at / (1 << 20):.1f} MiB: {fit} GB/s"
            )
        key = max(row, key=lambda e: row[e])
        engine, streams = engine_key(key)
        frac = self.fractions.get(direction, {}).get(size, 0.0) if engine == "split" else 0.0
        return engine, frac, why, streams


def fitted_rate(small: float, large: float, small_total: int, large_total: int, total: int) -> float:
    """An engine's rate (GB/s) on a batch of ``total`` bytes, from its rates on batches of
    ``small_total`` and ``large_total`` bytes: its time taken as ``fixed + bytes / peak``
    through the two measurements (a fixed cost below 0 is read as none, a rate that falls
    with the batch's size as the larger batch's rate)."""
    t_small, t_large = small_total / small, large_total / large
    if large <= small or t_large <= t_small:
        return large
    peak = (large_total - small_total) / (t_large - t_small)
    fixed = max(0.0, t_small - small_total / peak)
    return total / (fixed + total / peak)


def contested(row: dict[str, float]) -> bool:
    """Whether the fastest engine of a measured ``row`` is within :data:`CONTESTED` of the
    fastest engine of the other kind (SM kernel against copy engines and split)."""
    kernel = row.get("kernel")
    others = [v for e, v in row.items() if e != "kernel"]
    if kernel is None or not others:
        return False
    other = max(others)
    return abs(other - kernel) <= CONTESTED * max(other, kernel)


def engine_key(key: str) -> tuple[Engine, int]:
    """A crossover row's key as ``(engine, streams)``: ``"copy_engine x4"`` is the copy
    engines on four streams, a plain name one stream."""
    name, _, count = key.partition(" x")
    return name, int(count) if count else 1  # type: ignore[return-value]


_crossovers: dict[int, Crossovers] = {}
_last: list[EngineChoice] = []


def crossovers(device: torch.device) -> Crossovers | None:
    """The crossovers measured for ``device`` in this process (None before :func:`calibrate`)."""
    return _crossovers.get(_index(device))


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def last_choice() -> EngineChoice | None:
    """The choice of the most recent swap that went through the dispatcher."""
    return _last[-1] if _last else None


def record(choice: EngineChoice) -> EngineChoice:
    _last[:] = [choice]
    LOG.debug(
        "EC swap: %s (%s, %d-byte blocks): %s",
        choice.engine,
        choice.direction,
        choice.block_bytes,
        choice.reason,
    )
    return choice


def kernel_copy(
    src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, n: int, max_size: int | None = None
) -> None:
    """Run ``devptr.kernels.batch_memcpy`` on descriptor tensors that live on the device.

    One launch on the current stream. ``max_size`` (the largest byte count, known on the
    host) sizes the grid. On the CPU the tensors stay on the host and the kernel runs
    under ``TRITON_INTERPRET=1`` (tests).
    """
    _kernels().batch_memcpy(src, dst, sizes, n, max_size=max_size)


def table_copy(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, n: int, max_size: int) -> None:
    """:func:`kernel_copy` for tables the adapter built and checked itself: the descriptor
    buffers' own column views (1-D uint64, contiguous, on one device, at least ``n``
    entries each; byte counts checked when stored, the largest ``max_size``).

    :func:`devptr.kernels.batch_memcpy_columns` (``batch_memcpy``'s launcher and knob
    defaults, checked mode, the cached direct launch, without its table checks, which cost
    more host time than the launch itself for these tables).
    """
    _kernels().columns(src, dst, sizes, n, max_size=max_size)


@dataclasses.dataclass(frozen=True)
class _Kernels:
    """What the swap paths use of ``devptr.kernels`` (imported on first use: it needs Triton)."""

    batch_memcpy: Callable[..., object]
    columns: Callable[..., None]


@functools.cache
def _kernels() -> _Kernels:
    """``devptr.kernels``' entry points, looked up once (a failed look-up is not kept)."""
    try:  # looked up lazily: devptr.kernels imports triton
        pub = importlib.import_module("devptr.kernels")
        found = _Kernels(pub.batch_memcpy, pub.batch_memcpy_columns)
    except (ImportError, AttributeError) as exc:
        raise StateError(
            "the portable swap path needs devptr.kernels.batch_memcpy (triton); "
            f"install devptr[kernels] or register a platform op ({exc})"
        ) from None
    return found


_side: dict[int, list[Any]] = {}


def _side_streams(device: torch.device, count: int) -> list[Any]:
    """This module's first ``count`` side streams on ``device`` (``torch.cuda.Stream``)."""
    idx = _index(device)
    have = _side.setdefault(idx, [])
    while len(have) < count:
        have.append(_cuda.Stream(torch.device("cuda", idx)))
    return have[:count]


def _side_stream(device: torch.device) -> Any:
    """This module's (first) side stream on ``device``."""
    return _side_streams(device, 1)[0]


def copy_engines(
    src: U64Array,
    dst: U64Array,
    sizes: U64Array,
    device: torch.device,
    any_order: bool = False,
    *,
    side: bool = False,
    streams: int = 1,
    has_empty: bool | None = None,
) -> None:
    """The copy engines over host uint64 tables, ordered on the current stream of ``device``.

    ``streams`` > 1: the descriptors are cut into that many contiguous parts, one batched
    call each on its own stream (the current one and side streams that wait for it and
    that it then waits for), so that several copy engines work on one batch.
    ``side`` (or a current stream that is the legacy default stream): no part runs on the
    current stream itself. ``has_empty``: whether some byte count is 0, when the caller
    knows (None: looked up here).
    """
    rt = cuda_runtime()
    if rt is None:
        raise StateError("the copy-engine path needs the CUDA runtime library (none was found)")
    s, d, k = (np.ascontiguousarray(a, dtype=U64) for a in (src, dst, sizes))
    if has_empty is None or has_empty:
        live = k != 0
        if not live.all():
            s, d, k = s[live], d[live], k[live]
    n = int(k.shape[0])
    if n == 0:
        return
    parts = max(1, min(int(streams), n))
    cur = torch.cuda.current_stream(device)
    on_cur = not side and cur.cuda_stream != 0
    if parts == 1 and on_cur:
        _copy_on(rt, d, s, k, cur.cuda_stream, any_order, False)
        return
    others = _side_streams(device, parts - 1 if on_cur else parts)
    for st in others:
        st.wait_stream(cur)
    targets = ([cur] if on_cur else []) + others
    for j, st in enumerate(targets):
        a, b = j * n // parts, (j + 1) * n // parts
        _copy_on(rt, d[a:b], s[a:b], k[a:b], st.cuda_stream, any_order, False)
    for st in others:
        cur.wait_stream(st)


def _copy_on(
    rt: CudaRuntime, d: U64Array, s: U64Array, k: U64Array, stream: int, any_order: bool, check: bool = True
) -> None:
    """One batched call (the per-descriptor loop without one). Empty copies are left out
    (``check``): the batched call refuses a zero size, and an empty tensor's address may
    be null."""
    if check:
        live = k != 0
        if not live.all():
            d, s, k = d[live], s[live], k[live]
    if not k.size:
        return
    if rt.has_batch:
        rt.batch(d, s, k, stream, any_order)
    else:
        rt.loop(d, s, k, stream)


def split_copy(
    src: U64Array,
    dst: U64Array,
    sizes: U64Array,
    device_tables: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    device: torch.device,
    fraction: float,
    any_order: bool = False,
) -> None:
    """The first ``fraction`` of the descriptors on the copy engines (side stream), the
    rest on the SM kernel (current stream, from ``device_tables``: the same descriptors on
    the device), the current stream then waiting for both."""
    n = int(sizes.shape[0])
    m = min(n, max(0, round(n * fraction)))
    cur = torch.cuda.current_stream(device)
    other = _side_stream(device)
    other.wait_stream(cur)
    if m:
        rt = cuda_runtime()
        if rt is None:
            raise StateError("the copy-engine path needs the CUDA runtime library (none was found)")
        s, d, k = (np.ascontiguousarray(a[:m], dtype=U64) for a in (src, dst, sizes))
        _copy_on(rt, d, s, k, other.cuda_stream, any_order)
    if m < n:
        ds, dd, dk = device_tables
        kernel_copy(ds[m:n], dd[m:n], dk[m:n], n - m, int(sizes[m:].max()))
    cur.wait_stream(other)


def run_engine(
    engine: Engine,
    src: U64Array,
    dst: U64Array,
    sizes: U64Array,
    device: torch.device,
    any_order: bool = False,
    fraction: float = 0.5,
    streams: int = 1,
) -> None:
    """Run one batch on ``engine`` (host uint64 tables; current stream of ``device``)."""
    if engine == "kernel":
        _kernel_runner(src, dst, sizes, device)()
    elif engine == "split":
        tabs = _device_tables(src, dst, sizes, device)
        split_copy(src, dst, sizes, tabs, device, fraction, any_order)
    else:
        copy_engines(src, dst, sizes, device, any_order, streams=streams)


def copy_engine_name() -> Engine:
    """``copy_engine`` where the runtime has the batched call, else ``copy_engine_loop``."""
    rt = cuda_runtime()
    return "copy_engine" if rt is not None and rt.has_batch else "copy_engine_loop"


def calibrate(
    device: torch.device | str | None = None,
    *,
    directions: Sequence[Direction] = ("H2D", "D2H", "D2D"),
    block_sizes: Sequence[int] = CALIBRATION_BLOCKS,
    total: int = CALIBRATION_BYTES,
    repeat: int = 3,
    streams: Sequence[int] = CALIBRATION_STREAMS,
    batches: int = CALIBRATION_BATCHES,
    large_total: int | None = CALIBRATION_LARGE_BYTES,
) -> Crossovers:
    """Time the SM kernel and the copy engines on scratch buffers of ``device``; keep the result.

    For each direction and block size, one batch of ``total`` bytes in blocks of that size
    timed ``batches`` at a time back to back, as a running engine issues them (the copy
    engines' batched call takes about 1 us of host time per descriptor and returns once it
    queued them all; timed one call at a time, that host time is all exposed, and in the
    steady state of a loop it overlaps the previous batch's copies: on an H200 the copy
    engines on four streams measured 49-51 GB/s at 64-256 KiB one call at a time, 52-55
    back to back, where the SM kernel moves 51-52)
    (block ``perm[i]`` to block ``i``), each engine ``repeat`` times after a warm-up, on a
    side stream (CUDA events; the median counts): the SM kernel, the copy engines on one
    stream and on each of ``streams`` streams (row keys ``"copy_engine x2"`` ...), and
    ``split`` (the last two only where the copy engines on one stream reach half the SM
    kernel's rate: elsewhere they cannot win). Where the SM kernel and the best of the other
    engines are within :data:`CONTESTED` of each other (*contested*), the block size is
    timed again on batches of ``large_total`` bytes (None or not above ``total``: not
    done), and :func:`choose` compares the engines at each batch's own bytes
    (:meth:`Crossovers.best`): the copy engines' fixed cost per batch makes their rate
    grow with the batch where the kernel's barely moves (on an H200 at 64 KiB D2H blocks,
    copy engines 49.3-50.8 GB/s on 32 MiB batches and 55.3 on 256 MiB ones, the kernel
    51.7 and 52.4). Synchronises the device; allocates the larger of ``total`` and
    ``large_total`` bytes of device memory (twice) and of pinned host memory (once), freed
    on return. Call it outside CUDA-graph capture; :func:`choose` calls it on first use.
    """
    dev = torch.device("cuda") if device is None else torch.device(device)
    if dev.type != "cuda":
        raise StateError(f"calibrate needs a CUDA device (got {dev})")
    dev = torch.device("cuda", _index(dev))
    large = int(large_total) if large_total is not None and large_total > total else 0
    result = Crossovers(torch.cuda.get_device_name(dev), total=total, large_total=large)
    ce = copy_engine_name()
    side = _cuda.Stream(dev)
    room = max(total, large)
    with torch.cuda.device(dev), torch.cuda.stream(side):
        a = torch.empty(room, dtype=torch.uint8, device=dev)
        b = torch.empty(room, dtype=torch.uint8, device=dev)
        h = torch.empty(room, dtype=torch.uint8, pin_memory=True)
        ends = {"H": h, "D": a}
        for direc in directions:
            src_mem = ends[direc[0]]
            dst_mem = b if direc[2] == "D" else h
            if src_mem is dst_mem:
                continue
            table: dict[int, dict[str, float]] = {}
            again: dict[int, dict[str, float]] = {}
            fracs: dict[int, float] = {}
            cell = functools.partial(
                _measure_cell, src_mem, dst_mem, dev, ce, repeat, direc, result.notes, streams,
                max(1, int(batches)),
            )  # fmt: skip
            for bs in block_sizes:
                row, frac = cell(bs, total)
                if "split" in row:
                    fracs[bs] = frac
                if row:
                    table[bs] = row
                if large and contested(row):
                    again[bs] = cell(bs, large)[0]
            result.rates[direc] = table
            result.fractions[direc] = fracs
            if again:
                result.large[direc] = again
        side.synchronize()
        del a, b, h
    _crossovers[_index(dev)] = result
    LOG.debug("EC engine crossovers for %s: %s", result.device, result.rates)
    return result


def _measure_cell(
    src_mem: torch.Tensor,
    dst_mem: torch.Tensor,
    dev: torch.device,
    ce: Engine,
    repeat: int,
    direc: str,
    notes: list[str],
    streams: Sequence[int],
    batches: int,
    block: int,
    nbytes: int,
) -> tuple[dict[str, float], float]:
    """:func:`_measure` on one batch of ``nbytes`` in ``block``-byte blocks from
    ``src_mem`` (block ``perm[i]``) to ``dst_mem`` (block ``i``)."""
    n = max(1, nbytes // block)
    perm = np.random.default_rng(block).permutation(n)
    s = addresses(DevicePtr.of(src_mem), perm, block)
    d = addresses(DevicePtr.of(dst_mem), np.arange(n), block)
    k = np.full(n, block, dtype=U64)
    what = f"{direc} {block} B x {n}"
    return _measure(s, d, k, dev, ce, repeat, direc != "D2D", notes, what, streams, batches)


def _measure(
    s: U64Array,
    d: U64Array,
    k: U64Array,
    dev: torch.device,
    ce: Engine,
    repeat: int,
    with_split: bool,
    notes: list[str],
    what: str,
    streams: Sequence[int] = (),
    batches: int = 1,
) -> tuple[dict[str, float], float]:
    """GB/s of each engine on one batch (and of ``split``, when both ran), and the split's
    copy-engine share. The copy engines on several streams and the split are timed only
    where the copy engines on one stream reach half the kernel's rate."""
    nbytes = int(k.sum())
    row: dict[str, float] = {}

    def timed(engine: str, fn: Callable[[], object]) -> None:
        try:
            row[engine] = nbytes / _time(fn, repeat, batches) / 1e9
        except StateError as exc:
            notes.append(f"{what}, {engine}: {exc}")

    timed("kernel", _kernel_runner(s, d, k, dev))
    timed(ce, lambda: copy_engines(s, d, k, dev))
    if ce not in row or ("kernel" in row and 2 * row[ce] < row["kernel"]):
        return row, 0.0
    for m in streams:
        if m > 1:
            timed(f"{ce} x{m}", functools.partial(copy_engines, s, d, k, dev, streams=m))
    frac = 0.0
    if "kernel" in row and with_split:
        # both engines share the link: give each the share it moves alone
        frac = row[ce] / (row[ce] + row["kernel"])
        tabs = _device_tables(s, d, k, dev)
        timed("split", lambda: split_copy(s, d, k, tabs, dev, frac))
    return row, frac


def _kernel_runner(src: U64Array, dst: U64Array, sizes: U64Array, device: torch.device) -> Callable[[], None]:
    """The SM kernel on tables uploaded once (the swap path uploads them from pinned memory,
    a few microseconds for the batches calibrated here)."""
    tabs = _device_tables(src, dst, sizes, device)
    n, top = int(sizes.shape[0]), int(sizes.max())
    return lambda: kernel_copy(tabs[0], tabs[1], tabs[2], n, top)


def _device_tables(
    src: U64Array, dst: U64Array, sizes: U64Array, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    s, d, k = (
        torch.from_numpy(np.ascontiguousarray(a).view(np.int64)).to(device).view(torch.uint64)
        for a in (src, dst, sizes)
    )
    return s, d, k


def _time(fn: Callable[[], object], repeat: int, number: int = 1) -> float:
    """Median seconds per call of ``number`` back-to-back calls (CUDA events on the current
    stream, after a warm-up call), over ``repeat`` samples."""
    fn()
    times = []
    for _ in range(repeat):
        start = _cuda.Event(enable_timing=True)
        end = _cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / number)
    return float(np.median(times))


def choose(
    device: torch.device,
    src: U64Array,
    dst: U64Array,
    sizes: U64Array,
    total: int | None = None,
) -> EngineChoice:
    """The engine for one batch on ``device`` (calibrating the device on first use).

    ``total``: the batch's bytes, when the caller's validation already summed them. The
    choice is remembered with the device's crossovers, per pair of address granules (the
    direction) and block size, so a batch like an earlier one costs one look-up (a new
    :func:`calibrate` starts afresh).
    """
    n = int(sizes.shape[0])
    if total is None:
        total = int(sizes.sum())
    block = total // max(n, 1)
    if total == 0:
        return record(EngineChoice("kernel", None, 0, "no bytes to copy"))
    # an empty copy's address may be null: read the direction from a copy with bytes
    first = 0 if sizes[0] else int(np.argmax(sizes != 0))
    src0, dst0 = int(src[first]), int(dst[first])
    table = crossovers(device)
    key = (src0 >> _GRANULE, dst0 >> _GRANULE, block, total.bit_length())
    hit = table._picked.get(key) if table is not None else None
    if hit is not None and hit.engine == "kernel":  # capturable as it is: no capture check
        return record(hit)
    if torch.cuda.is_current_stream_capturing():
        return record(EngineChoice("kernel", None, block, "stream capture: the capturable kernel"))
    if hit is not None:
        return record(hit)
    rt = cuda_runtime()
    if rt is None:
        return record(EngineChoice("kernel", None, block, "no CUDA runtime library for the copy engines"))
    direc = direction(rt, src0, dst0)
    if table is None:
        table = calibrate(device)
    best = table.best(direc, block, total)
    if best is None:
        return record(EngineChoice("kernel", direc, block, f"no measurement for {direc}"))
    if len(table._picked) >= 4096:
        table._picked.clear()
    choice = table._picked[key] = EngineChoice(best[0], direc, block, best[2], best[1], best[3])
    return record(choice)


__all__ = [
    "CALIBRATION_BATCHES",
    "CALIBRATION_BLOCKS",
    "CALIBRATION_BYTES",
    "CALIBRATION_LARGE_BYTES",
    "CALIBRATION_STREAMS",
    "CONTESTED",
    "Crossovers",
    "CudaRuntime",
    "Engine",
    "EngineChoice",
    "calibrate",
    "choose",
    "copy_engine_name",
    "copy_engines",
    "crossovers",
    "cuda_runtime",
    "engine_key",
    "last_choice",
    "run_engine",
    "split_copy",
]
