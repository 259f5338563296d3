"""Helpers for testing pointer code without Intel XPU hardware.

- :class:`FakeTensor`: an object whose ``data_ptr()`` returns a chosen address.
- XPU-like address constants (bit 63 set, 8-byte aligned unless stated).
- :func:`high_addresses`: a context manager (also a pytest marker and the
  ``high_addresses_mode`` fixture) that runs code "as if" every device address had bit 63
  set, by flipping bit 63 of what ``Tensor.data_ptr()`` and ``UntypedStorage.data_ptr()``
  return for device tensors (``host=True``: CPU tensors too). For host paths that build
  tables only: the addresses are fake, so no kernel can run on them; translate back with
  :func:`real_address` before dereferencing.
- :func:`encoding_environment`: run a block with another ``DEVPTR_ENCODING`` (devptr reads
  the variable once, at first use).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import torch

from devptr._errors import AddressRangeError, PtrTypeError, describe
from devptr._errors import SpawnError as SpawnError  # exported here
from devptr._ptr import ADDR_LIMIT, SIGN_BIT, DevicePtr

XPU_BASE: Final = 0xFFFF81AB54E01000
"""A Level Zero USM device address as seen on Intel XPU."""
SIGN_BIT_ADDR: Final = SIGN_BIT
"""2**63: the smallest address an int64 cannot hold."""
TOP_ALIGNED: Final = ADDR_LIMIT - 8
"""2**64 - 8: the highest 8-byte-aligned address."""
SIGN_BIT_PLUS_42: Final = SIGN_BIT + 42
"""(1 << 63) + 42: high and deliberately unaligned."""
HIGH_ADDRESSES: Final[tuple[int, ...]] = (SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, XPU_BASE, TOP_ALIGNED)
"""Addresses at or above 2**63 every pointer path must store bit-exactly."""
PATTERN_ADDRESSES: Final[tuple[int, ...]] = (
    0,
    1,
    1 << 47,
    SIGN_BIT - 1,
    SIGN_BIT,
    TOP_ALIGNED,
    ADDR_LIMIT - 1,
)
"""The boundary classes: null, tiny, CUDA-like, int64 max, 2**63, top aligned, 2**64-1."""


class FakeTensor:
    """Stands in for a tensor on the host path: ``data_ptr()`` returns ``addr``.

    ``addr`` may be given unsigned (``2**64 - 8``) or as a signed int64 (``-8``) to mimic
    backends that report two's complement. ``nbytes`` sizes the fake storage for code
    that asks (``untyped_storage().nbytes()``).
    """

    __slots__ = ("_addr", "nbytes")

    def __init__(self, addr: int, nbytes: int = 0) -> None:
        if type(addr) is not int:
            raise PtrTypeError(f"addr must be an int (got {describe(addr)})")
        if not -SIGN_BIT <= addr < ADDR_LIMIT:
            raise AddressRangeError(f"addr must fit 64 bits (got {addr:#x})")
        self._addr = addr
        self.nbytes = nbytes

    def data_ptr(self) -> int:
        return self._addr

    def untyped_storage(self) -> FakeTensor:
        return self

    def __repr__(self) -> str:
        return f"FakeTensor({self._addr:#x})"


def fake_tensors(base: int = XPU_BASE, count: int = 4, stride: int = 1 << 20) -> list[FakeTensor]:
    """``count`` fakes at ``base, base + stride, ...`` (all below 2**64)."""
    return [FakeTensor(base + k * stride) for k in range(count)]


@contextlib.contextmanager
def encoding_environment(value: str | None) -> Iterator[None]:
    """Run a block with ``DEVPTR_ENCODING`` set to ``value`` (None: unset), then restore it.

    devptr reads the variable once, at the first :func:`devptr.encoding_for`; this sets
    it, re-reads it (:func:`devptr._encoding.reload_environment`), and on exit restores
    the previous value and the :func:`devptr.register_backend` registry. For tests and
    tools in one process; not for concurrent threads.
    """
    from devptr import _encoding

    old_env = os.environ.get(_encoding.ENV_VAR)
    with _encoding._lock:
        old_reg = dict(_encoding.BACKENDS)
    _set_env(_encoding.ENV_VAR, value)
    try:
        _encoding.reload_environment()
        yield
    finally:
        _set_env(_encoding.ENV_VAR, old_env)
        with _encoding._lock:
            _encoding.BACKENDS.clear()
            _encoding.BACKENDS.update(old_reg)
        _encoding.reload_environment()


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


_lock = threading.Lock()
_depth = 0
_saved: dict[str, Callable[..., int]] = {}


def real_address(ptr: DevicePtr) -> DevicePtr:
    """Undo :func:`high_addresses`' bit flip: the address the memory really has."""
    return DevicePtr(ptr.addr ^ SIGN_BIT)


@contextlib.contextmanager
def high_addresses(*, host: bool = False) -> Iterator[None]:
    """Inside the block, ``Tensor.data_ptr()`` and ``UntypedStorage.data_ptr()`` of *device*
    tensors report their address with bit 63 flipped, so CUDA/ROCm addresses look like
    Intel XPU ones (``>= 2**63``); host (CPU) tensors keep theirs, as on XPU, where only
    device allocations live that high.

    ``host=True`` flips CPU tensors too: for CPU-only tests, which have no device tensors.

    What it cannot do: the addresses are fake. No kernel, copy op or custom op can be run
    on a table built under it (the memory is not there); it tests host-side table building
    only: dtypes, overflow, two's complement, unsigned comparisons. Translate an address
    back with :func:`real_address` before anything dereferences it. Re-entrant (the
    outermost block's ``host`` holds); patches the classes for every thread, so not for
    tests that run threads concurrently. The pytest forms: the ``high_addresses`` marker
    (``@pytest.mark.high_addresses`` or ``@pytest.mark.high_addresses(host=True)``) once
    this module is a plugin (``-p devptr.testing`` or ``pytest_plugins``), and the
    ``high_addresses_mode`` fixture.
    """
    global _depth
    with _lock:
        if _depth == 0:
            for cls in (torch.Tensor, torch.UntypedStorage):
                orig = cls.data_ptr
                _saved[cls.__name__] = orig

                def flipped(self: Any, _orig: Callable[..., int] = orig) -> int:
                    addr = _orig(self)
                    return addr ^ SIGN_BIT if host or self.device.type != "cpu" else addr

                cls.data_ptr = flipped  # type: ignore[method-assign]
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                torch.Tensor.data_ptr = _saved.pop("Tensor")  # type: ignore[method-assign]
                torch.UntypedStorage.data_ptr = _saved.pop("UntypedStorage")  # type: ignore[method-assign]


MARKER: Final = "high_addresses"
"""``@pytest.mark.high_addresses`` (device addresses) / ``(host=True)`` (CPU tensors too)."""

try:  # the pytest plugin and fixture, when pytest is importable (test environments)
    import pytest

    def pytest_configure(config: pytest.Config) -> None:
        """Register the marker (for ``--strict-markers``) when this module is a plugin."""
        config.addinivalue_line(
            "markers",
            f"{MARKER}(host=False): run the test under devptr.testing.high_addresses() "
            "(device tensors' data_ptr() >= 2**63; host=True: CPU tensors too)",
        )

    @pytest.fixture(autouse=True)
    def _high_addresses_marker(request: pytest.FixtureRequest) -> Iterator[None]:
        """Apply ``@pytest.mark.high_addresses(host=...)``; a test without the marker runs as is."""
        mark = request.node.get_closest_marker(MARKER)
        if mark is None:
            yield
            return
        with high_addresses(**mark.kwargs):
            yield

    @pytest.fixture
    def high_addresses_mode() -> Iterator[None]:
        """Pytest fixture form of :func:`high_addresses` with ``host=True`` (CPU-only tests)."""
        with high_addresses(host=True):
            yield

except ImportError:  # pragma: no cover - pytest absent at runtime
    pass


# -- shared fakes and process helpers (appended: fake state tensors, spawn) ----------------


class FakeState:
    """A state tensor's shape, strides and element size (from a meta tensor) at a chosen address.

    Stands in for a Mamba/conv state tensor on host paths that only read ``shape``,
    ``stride()``, ``element_size()`` and ``data_ptr()``; no memory is allocated (the meta
    tensor holds no storage), so ``addr`` may be any 64-bit value, e.g. >= 2**63.
    """

    def __init__(self, addr: int, shape: Sequence[int], dtype: torch.dtype) -> None:
        if type(addr) is not int:
            raise PtrTypeError(f"addr must be an int (got {describe(addr)})")
        if not 0 <= addr < ADDR_LIMIT:
            raise AddressRangeError(f"addr must be within [0, 2**64) (got {addr:#x})")
        self._t = torch.empty(tuple(shape), dtype=dtype, device="meta")
        self._addr = addr
        self.shape = self._t.shape

    def stride(self) -> tuple[int, ...]:
        return tuple(self._t.stride())

    def element_size(self) -> int:
        return self._t.element_size()

    def data_ptr(self) -> int:
        return self._addr

    def __repr__(self) -> str:
        return f"FakeState({self._addr:#x}, {tuple(self.shape)}, {self._t.dtype})"


NO_MULTICAST: Final[Mapping[str, str]] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""Environment that keeps NVLink multicast off in NCCL, torch symmetric memory and NVSHMEM."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for ``init_method``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(
    fn: Callable[..., object],
    rank: int,
    world_size: int,
    port: int,
    backend: str | None,
    env: Mapping[str, str],
    args: tuple[object, ...],
    out_dir: str,
) -> None:
    """Child-process entry of :func:`spawn`: set up, call ``fn``, pickle its result or error."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **env)
    outcome: tuple[str, object]
    try:
        if backend is not None:
            import datetime

            import torch.distributed as dist

            kwargs: dict[str, Any] = {}
            if backend == "nccl":
                torch.cuda.set_device(rank)
                kwargs["device_id"] = torch.device("cuda", rank)
            dist.init_process_group(
                backend,
                init_method=f"tcp://127.0.0.1:{port}",
                rank=rank,
                world_size=world_size,
                timeout=datetime.timedelta(seconds=120),
                **kwargs,
            )
        try:
            outcome = ("ok", fn(rank, world_size, *args))
        finally:
            if backend is not None:
                import torch.distributed as dist

                if dist.is_initialized():
                    dist.destroy_process_group()
    except BaseException:
        outcome = ("error", traceback.format_exc())
    path = Path(out_dir, f"rank{rank}.pickle")
    try:
        payload = pickle.dumps(outcome)
    except Exception:
        payload = pickle.dumps(("error", f"rank {rank}: result not picklable\n{traceback.format_exc()}"))
    path.write_bytes(payload)


def spawn(
    fn: Callable[..., object],
    world_size: int,
    *,
    backend: str | None = None,
    args: Sequence[object] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
    preload: Sequence[str] = ("torch", "torch.distributed", "numpy"),
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` fresh processes; their results.

    Each process gets ``MASTER_ADDR=127.0.0.1``, a free ``MASTER_PORT``, :data:`NO_MULTICAST`
    and ``env``; with ``backend`` (``"gloo"``, ``"nccl"``) it also joins a process group
    over ``tcp://127.0.0.1`` first (``nccl``: on GPU ``rank``) and leaves it after ``fn``.
    ``fn`` must be a module-level function and its result picklable; results come back
    in rank order (copied through pickle files in a temporary folder).

    Processes come from a forkserver that imported ``preload`` once (a plain spawn per rank
    costs seconds of imports each); where there is none, from ``spawn``. Raises
    :class:`SpawnError` with the rank's traceback when one raised, or when ranks are still
    running after ``timeout_s`` (they are killed).
    """
    if world_size < 1:
        raise SpawnError(f"world_size must be >= 1 (got {world_size})")
    if "forkserver" in mp.get_all_start_methods():
        ctx: Any = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
    else:  # pragma: no cover - Windows
        ctx = mp.get_context("spawn")
    port = free_port()
    child_env = {**NO_MULTICAST, **(env or {})}
    with tempfile.TemporaryDirectory(prefix="devptr-spawn-") as out_dir:
        procs = [
            ctx.Process(
                target=_rank_main,
                args=(fn, r, world_size, port, backend, child_env, tuple(args), out_dir),
            )
            for r in range(world_size)
        ]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout_s
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        if hung:
            raise SpawnError(f"ranks {hung} of {world_size} did not finish within {timeout_s:g} s")
        results: list[Any] = []
        for r, p in enumerate(procs):
            path = Path(out_dir, f"rank{r}.pickle")
            if not path.is_file():
                raise SpawnError(f"rank {r} exited with code {p.exitcode} before reporting a result")
            status, value = pickle.loads(path.read_bytes())
            if status != "ok":
                raise SpawnError(f"rank {r} of {world_size} raised:\n{value}")
            results.append(value)
    return results


def table_bits(table: object) -> list[int]:
    """The unsigned 64-bit contents of an address table, as Python ints in ``[0, 2**64)``.

    ``table`` is an int64 or uint64 torch tensor (any device) or numpy array, read row-major
    whatever its shape, or a list or tuple of ints read modulo 2**64 (an int64 reading of the
    same bits). Compares tables whatever their encoding:
    ``table_bits(buf.host(Encoding.I64)) == table_bits(buf.host(Encoding.U64))``.
    """
    import numpy as np

    if isinstance(table, torch.Tensor):
        if table.dtype not in (torch.int64, torch.uint64):
            raise PtrTypeError(f"table_bits() reads int64/uint64 tables (got {describe(table)})")
        table = table.detach().cpu().contiguous().view(torch.int64).numpy()
    if isinstance(table, np.ndarray):
        if table.dtype not in (np.int64, np.uint64):
            raise PtrTypeError(f"table_bits() reads int64/uint64 tables (got {describe(table)})")
        return [int(v) for v in np.ascontiguousarray(table).reshape(-1).view(np.uint64)]
    if not isinstance(table, (list, tuple)):
        raise PtrTypeError(f"table_bits() takes a tensor, an array or a list of ints (got {describe(table)})")
    return [int(v) % ADDR_LIMIT for v in table]
