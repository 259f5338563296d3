"""``swap_blocks_batch``: run a batch of raw copies through the best path available.

Paths, chosen per call (``path="auto"``):

``op``
    A platform op registered for the consumer's device type (:func:`register_swap_op`),
    or vLLM's ``torch.ops._C_cache_ops.swap_blocks_batch`` when vLLM is installed (found
    at the first dispatch, never at import). It receives host (CPU) tensors in
    :func:`devptr.encoding_for` its device type: int64 src, dst and sizes for CUDA/ROCm,
    uint64 for XPU.
``kernel``
    The portable path: the descriptors go to the device in one copy and
    ``devptr.kernels.batch_memcpy`` copies the bytes. Device-to-device, and device-to-host
    or host-to-device when the host memory is pinned (the GPU reads and writes pinned host
    memory through unified addressing). Stream-ordered on the current stream.
``copy_engine``
    CUDA: the copy engines, one ``cudaMemcpyBatchAsync`` call over the host tables (a
    ``cudaMemcpyAsync`` per copy where the runtime has no batched call); see
    :mod:`devptr.adapters.ec_connector._engines`. Stream-ordered on the current stream.
``host``
    When the copies run on the CPU (no accelerator: every tensor is host memory), a
    ``ctypes.memmove`` per copy, synchronous.

``auto`` picks ``op`` when one exists for the backend, else ``host`` when the device is
the CPU; on CUDA, ``kernel`` or ``copy_engine`` by the crossovers measured on the device
(:func:`devptr.adapters.ec_connector.calibrate_engines`; the choice of the last batch is
:func:`devptr.adapters.ec_connector.last_engine_choice`); elsewhere ``kernel``.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Literal, NamedTuple, Protocol

import numpy as np
import torch

from devptr import (
    AddressRangeError,
    CapacityError,
    Encoding,
    InvalidValueError,
    LengthMismatchError,
    PtrTypeError,
    StateError,
    UnknownBackendError,
    encoding_for,
)
from devptr._core_api import ADDR_LIMIT, SIGN_BIT, U64, Storage, U64Array, describe, resolve_device
from devptr.adapters.ec_connector import _engines, _graphs
from devptr.adapters.ec_connector._checks import check_extent, default_device
from devptr.adapters.ec_connector._engines import kernel_copy

SwapOp = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], None]
"""``fn(src, dst, sizes, is_src_access_order_any)``: host tensors of equal length, in the
encoding of the op's device type; every entry is one copy of ``sizes[i]`` bytes."""

SwapPath = Literal["auto", "op", "kernel", "copy_engine", "host"]

Views = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class Descriptors(Protocol):
    """What the swap paths read of a descriptor table (``DescriptorBuffers``, which imports
    this module; nothing here imports it back)."""

    @property
    def capacity(self) -> int: ...
    @property
    def backend(self) -> str: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def encoding(self) -> Encoding: ...
    @property
    def _on_cuda(self) -> bool: ...
    def numpy(self, n: int | None = None) -> tuple[U64Array, U64Array, U64Array]: ...
    def _host_views(self, n: int | None, encoding: Encoding | None) -> Views: ...
    def _batch_facts(self, n: int) -> BatchFacts: ...
    def _np_views(self, n: int) -> tuple[U64Array, U64Array, U64Array]: ...
    def _device_columns(self, n: int) -> Views: ...
    def _live(self) -> Storage: ...


_lock = threading.Lock()
_registered: dict[str, SwapOp | None] = {}
_detected: dict[str, SwapOp | None] = {}
_VLLM_TYPES = frozenset({"cuda", "xpu"})


def register_swap_op(device_type: str, fn: SwapOp | None) -> None:
    """Use ``fn`` for ``swap_blocks_batch`` on ``device_type`` (``"cuda"``, ``"xpu"``...).

    ``fn`` receives host tensors in :func:`devptr.encoding_for` ``device_type``. ``None``
    means "no platform op": the portable path runs even when vLLM is installed. Undo
    either with :func:`unregister_swap_op`.
    """
    if not isinstance(device_type, str) or not device_type or ":" in device_type:
        raise UnknownBackendError(
            f"device_type must be a device type such as 'cuda' (got {describe(device_type)})"
        )
    encoding_for(device_type)  # unknown names fail here
    if fn is not None and not callable(fn):
        raise PtrTypeError(f"fn must be callable or None (got {describe(fn)})")
    with _lock:
        _registered[device_type] = fn


def unregister_swap_op(device_type: str) -> None:
    """Forget a registration: ``device_type`` goes back to vLLM detection / portable path."""
    with _lock:
        _registered.pop(device_type, None)


def _vllm_op(device_type: str) -> SwapOp | None:
    """vLLM's op for ``device_type`` when vLLM is installed and its extension loads."""
    if device_type not in _VLLM_TYPES or importlib.util.find_spec("vllm") is None:
        return None

    def lookup() -> Callable[..., None] | None:
        try:
            fn: Callable[..., None] = getattr(torch.ops._C_cache_ops, "swap_blocks_batch")  # noqa: B009
        except (AttributeError, RuntimeError):
            return None
        return fn

    op = lookup()
    if op is None:
        try:  # loading the extension registers the op
            importlib.import_module("vllm._C")
        except Exception:  # any failure of a foreign extension: use the portable path
            return None
        op = lookup()
    if op is None:
        return None
    found = op

    if device_type == "xpu":

        def xpu_op(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, _any: bool) -> None:
            found(src, dst, sizes)

        return xpu_op

    def cuda_op(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, any_: bool) -> None:
        found(src, dst, sizes, any_)

    return cuda_op


def swap_op_for(device_type: str) -> SwapOp | None:
    """The platform op ``swap_blocks_batch`` uses for ``device_type``, or None."""
    with _lock:
        if device_type in _registered:
            return _registered[device_type]
        if device_type in _detected:
            return _detected[device_type]
    op = _vllm_op(device_type)
    with _lock:
        _detected[device_type] = op
    return op


def choose_path(backend: str, device: torch.device, path: SwapPath = "auto") -> SwapPath:
    """The path ``swap_blocks_batch`` takes for ``backend``'s op and copies on ``device``."""
    if path not in ("auto", "op", "kernel", "copy_engine", "host"):
        raise PtrTypeError(f"path must be 'auto', 'op', 'kernel', 'copy_engine' or 'host' (got {path!r})")
    if path == "op" and swap_op_for(backend) is None:
        raise StateError(f"no swap_blocks_batch op is registered for {backend!r}")
    if path == "host" and device.type != "cpu":
        raise InvalidValueError(f"the host copy path runs only on the CPU (device is {device})")
    if path == "copy_engine" and device.type != "cuda":
        raise InvalidValueError(f"the copy-engine path runs only on CUDA devices (device is {device})")
    if path != "auto":
        return path
    if swap_op_for(backend) is not None:
        return "op"
    return "host" if device.type == "cpu" else "kernel"


# -- validation -------------------------------------------------------------------------
def _as_u64(t: object, name: str, n: int) -> U64Array:
    if not isinstance(t, torch.Tensor):
        raise PtrTypeError(f"{name} must be a torch tensor (got {describe(t)})")
    if t.device.type != "cpu" or t.dtype not in (torch.int64, torch.uint64) or t.ndim != 1:
        raise PtrTypeError(
            f"{name} must be a 1-D int64 or uint64 CPU tensor (got {t.dtype}, "
            f"shape {tuple(t.shape)}, on {t.device})"
        )
    if t.shape[0] < n:
        raise LengthMismatchError(f"{name} has {t.shape[0]} entries, fewer than n={n}")
    if not t.is_contiguous():
        raise PtrTypeError(f"{name} must be contiguous")
    arr: U64Array = t[:n].numpy().view(U64)
    return arr


class BatchFacts(NamedTuple):
    """What validating a batch learned about its byte counts (reused by the dispatcher)."""

    top: int
    """The largest byte count."""
    total: int
    """The batch's bytes."""
    has_empty: bool | None
    """Whether some copy has 0 bytes (None: not looked at)."""


_NO_FACTS = BatchFacts(0, 0, False)
_min = np.minimum.reduce
_max = np.maximum.reduce
_sum = np.add.reduce


def validate(src: U64Array, dst: U64Array, sizes: U64Array) -> BatchFacts:
    """Refuse byte counts >= 2**63, null addresses with bytes, and copies past 2**64.

    Reductions only, no temporaries, in the common case (about 7 passes over the
    batch): the largest and smallest count, the smallest address on each side (a null
    address is looked for copy by copy only when one is 0), the largest address on each
    side against 2**64 (:func:`check_extent`), and the total.
    """
    n = int(sizes.shape[0])
    if n == 0:
        return _NO_FACTS
    top = int(_max(sizes))
    if top >= SIGN_BIT:
        raise AddressRangeError(
            f"byte counts must be non-negative and below 2**63 (got {top:#x} as uint64: a negative int64?)"
        )
    if not (int(_min(src)) and int(_min(dst))):
        null = (sizes != 0) & ((src == 0) | (dst == 0))
        if null.any():
            i = int(np.argmax(null))
            raise AddressRangeError(f"copy {i} of {int(sizes[i])} bytes has a null address")
    check_extent(src, sizes, "source", top)
    check_extent(dst, sizes, "destination", top)
    # the uint64 sum is exact while n * top < 2**64 (always, for real batches)
    total = int(_sum(sizes)) if n * top < ADDR_LIMIT else sum(sizes.tolist())
    return BatchFacts(top, total, not int(_min(sizes)))


def _check_n(n: object, limit: int | None) -> int:
    if type(n) is not int or n < 0 or (limit is not None and n > limit):
        bound = "" if limit is None else f" <= {limit}"
        raise CapacityError(f"n must be a non-negative int{bound} (got {describe(n)})")
    return n


# -- paths ------------------------------------------------------------------------------
def host_copy(src: U64Array, dst: U64Array, sizes: U64Array) -> None:
    """Copy on the CPU with ``ctypes.memmove``: every address must be host memory.

    Refuses addresses with bit 63 set (never user-space host memory: XPU-like fakes or
    :func:`devptr.testing.high_addresses` values) before copying anything.
    """
    if sizes.size and bool(((src >= SIGN_BIT) | (dst >= SIGN_BIT)).any()):
        raise AddressRangeError(
            "the host copy path got an address with bit 63 set, which is not host memory "
            "(a fake or XPU address? translate with devptr.testing.real_address)"
        )
    memmove = ctypes.memmove
    for s, d, k in zip(src.tolist(), dst.tolist(), sizes.tolist(), strict=True):
        if k:
            memmove(d, s, k)


def _engine(
    path: SwapPath,
    chosen: SwapPath,
    device: torch.device,
    s: U64Array,
    d: U64Array,
    k: U64Array,
    facts: BatchFacts,
    cuda: bool,
) -> _engines.EngineChoice | None:
    """The engine for a device batch: measured (``auto`` on CUDA), or the one asked for;
    None for the other paths. ``cuda``: whether ``device`` is a CUDA device (known to the
    caller; reading ``device.type`` costs about 0.5 us)."""
    if not cuda or chosen not in ("kernel", "copy_engine"):
        return None
    E = _engines
    if path == "auto":
        return E.choose(device, s, d, k, facts.total)
    block = facts.total // max(int(k.shape[0]), 1)
    hit = _requested.get((chosen, block))
    if hit is None:
        name: _engines.Engine = E.copy_engine_name() if chosen == "copy_engine" else "kernel"
        if len(_requested) >= 256:
            _requested.clear()
        hit = _requested[chosen, block] = E.EngineChoice(name, None, block, f"path={path!r} requested")
    return E.record(hit)


_requested: dict[tuple[str, int], _engines.EngineChoice] = {}
"""The choices of forced paths, by path and block size (immutable: made once each)."""


def _run_choice(
    choice: _engines.EngineChoice,
    s: U64Array,
    d: U64Array,
    k: U64Array,
    device: torch.device,
    any_order: bool,
    facts: BatchFacts,
    device_tables: Callable[[], Views],
) -> bool:
    """Run the copy engines or the split when ``choice`` says so (True); False: the kernel."""
    if choice.engine in ("copy_engine", "copy_engine_loop"):
        _engines.copy_engines(s, d, k, device, any_order, streams=choice.streams, has_empty=facts.has_empty)
        return True
    if choice.engine == "split":
        _engines.split_copy(s, d, k, device_tables(), device, choice.fraction, any_order)
        return True
    return False


def _device_tables(
    src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, count: int, dev: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    s, d, k = (
        t[:count].view(torch.int64).to(dev, non_blocking=True).view(torch.uint64) for t in (src, dst, sizes)
    )
    return s, d, k


# -- entry points -----------------------------------------------------------------------
def swap_blocks_batch(
    src: torch.Tensor,
    dst: torch.Tensor,
    sizes: torch.Tensor,
    n: int | None = None,
    *,
    device: str | torch.device | None = None,
    backend: str | None = None,
    is_src_access_order_any: bool = False,
    path: SwapPath = "auto",
) -> None:
    """Copy ``sizes[i]`` bytes from ``src[i]`` to ``dst[i]`` for ``i < n``.

    Parameters
    ----------
    src, dst, sizes
        1-D contiguous CPU tensors, int64 or uint64 (the bits are read as uint64 addresses;
        sizes must be in ``[0, 2**63)``). Not modified; read until the copies are submitted
        (``op``, ``host``) or copied to the device in one stream-ordered copy (``kernel``:
        keep them unchanged until the stream passes that point, as with vLLM's op).
    n
        Number of copies (default: all of ``src``).
    device
        Where the copies run (default: the current accelerator, else the CPU).
    backend
        Device type of the platform op to dispatch to (default: ``device``'s type).
    is_src_access_order_any
        Passed to the platform op and the copy engines (CUDA: lets the DMA engine read
        sources out of stream order; only safe when no stream writes them concurrently).
    path
        ``"auto"`` (see the module doc), or force ``"op"``, ``"kernel"``,
        ``"copy_engine"`` or ``"host"``.

    Notes
    -----
    Validation (dtypes, lengths, byte counts, null addresses, copies past 2**64) happens
    before anything is copied. Which memory the addresses point at is the caller's
    contract: the kernel path needs device or pinned host memory, the host path host
    memory.
    """
    if not isinstance(src, torch.Tensor):
        raise PtrTypeError(f"src must be a torch tensor (got {describe(src)})")
    count = _check_n(src.shape[0] if n is None else n, None)
    s = _as_u64(src, "src", count)
    d = _as_u64(dst, "dst", count)
    k = _as_u64(sizes, "sizes", count)
    facts = validate(s, d, k)
    dev = default_device() if device is None else resolve_device(device)  # the core's resolver
    be = dev.type if backend is None else backend
    chosen = choose_path(be, dev, path)
    if count == 0:
        return
    choice = _engine(path, chosen, dev, s, d, k, facts, dev.type == "cuda")
    if choice is not None and _run_choice(
        choice, s, d, k, dev, is_src_access_order_any, facts,
        lambda: _device_tables(src, dst, sizes, count, dev),
    ):  # fmt: skip
        return
    if chosen == "op":
        enc = encoding_for(be)
        op = swap_op_for(be)
        assert op is not None
        dt = enc.torch_dtype
        op(src[:count].view(dt), dst[:count].view(dt), sizes[:count].view(dt), is_src_access_order_any)
    elif chosen == "host":
        host_copy(s, d, k)
    else:
        on_dev = _device_tables(src, dst, sizes, count, dev)
        kernel_copy(on_dev[0], on_dev[1], on_dev[2], count, facts.top)


def swap_buffers(
    bufs: Descriptors,
    n: int,
    *,
    is_src_access_order_any: bool = False,
    path: SwapPath = "auto",
) -> None:
    """``swap_blocks_batch`` over the first ``n`` copies of ``bufs``.

    The tables are validated when ``add_*`` store them (``bufs._batch_facts``: no scan
    here unless the handle is unchecked). The ``kernel`` path uses the buffers' device
    mirror (one copy of the descriptors, after which the next write to ``bufs`` waits for
    that copy) and launches without ``batch_memcpy``'s table checks (the adapter built
    those tables); on CUDA, from a batch shape's second swap on, the upload and launch
    are one replayed CUDA graph (:mod:`devptr.adapters.ec_connector._graphs`).
    """
    count = _check_n(n, bufs.capacity)
    facts = bufs._batch_facts(count)
    dev = bufs.device
    chosen = choose_path(bufs.backend, dev, path)
    if count == 0:
        return
    if chosen == "op":
        op = swap_op_for(bufs.backend)
        assert op is not None
        hs, hd, hk = bufs._host_views(count, bufs.encoding)
        op(hs, hd, hk, is_src_access_order_any)
        return
    s, d, k = bufs._np_views(count)
    choice = _engine(path, chosen, dev, s, d, k, facts, bufs._on_cuda)
    if choice is not None and _run_choice(
        choice, s, d, k, dev, is_src_access_order_any, facts, lambda: bufs._device_columns(count)
    ):
        return
    if chosen == "host":
        host_copy(s, d, k)
    else:  # the mirror (the host columns on the CPU, where the interpreter reads them)
        _graphs.launch(bufs, count, facts.top, bufs._on_cuda)
