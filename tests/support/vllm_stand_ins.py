"""Stand-ins for the vLLM imports of the four modules devptr's adapters port.

:func:`support.vllm_load.load_vllm_module` executes a vLLM 0.33.0 file unmodified; the vLLM
modules it imports are replaced by the small objects defined here. Each loader below
returns vLLM's own module, ready to call:

- :func:`load_mamba_utils`: ``vllm/v1/worker/mamba_utils.py`` (``MambaCopyBuffers``,
  ``collect_mamba_copy_meta``, ``batch_memcpy``, ``MambaSpecDecodeGPUContext`` and its
  Triton kernels), with vLLM's real ``model_executor/layers/mamba/mamba_utils.py`` (the
  copy-spec functions) loaded the same way;
- :func:`load_ec_worker`: the EC CPU connector's ``worker/__init__.py`` (``ECCPUWorker``)
  with its real ``descriptor_buffers.py``;
- :func:`load_lamport_workspace`: ``minimax_rms_norm/lamport_workspace.py`` with a fake
  CUDA runtime and a torch whose ``device="cuda"`` allocations land on the CPU.

Why stand-ins and not an installed vLLM: the wheel needs a CUDA torch and ~100
dependencies, and the differential tests must run on CPU-only CI under two torch versions.
The ported files import few vLLM names, all of them configuration or platform objects;
those are what is replaced here. The code under comparison (table building, descriptor
arithmetic, the Triton kernels) is vLLM's, unmodified.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from support.vllm_load import load_vllm_module

MAMBA_LAYER = "vllm.model_executor.layers.mamba.mamba_utils"
MAMBA_WORKER = "vllm.v1.worker.mamba_utils"
EC_DESCRIPTORS = "vllm.distributed.ec_transfer.ec_connector.cpu.worker.descriptor_buffers"
EC_WORKER = "vllm.distributed.ec_transfer.ec_connector.cpu.worker"
LAMPORT = "vllm.model_executor.layers.minimax_rms_norm.lamport_workspace"


# -- shared ------------------------------------------------------------------------------
class Logger:
    """``vllm.logger.init_logger``'s logger: keeps the messages, prints nothing."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def _log(self, msg: str, *args: object, **_kw: object) -> None:
        self.messages.append(msg % args if args else msg)

    debug = info = warning = info_once = warning_once = error = _log


def init_logger(_name: str) -> Logger:
    return Logger()


def _logger_module() -> dict[str, object]:
    return {"init_logger": init_logger}


class TorchProxy(types.ModuleType):
    """``torch`` for one vLLM file: every name is torch's, except the overrides given.

    Installed as that file's ``torch`` only (through the stand-in mechanism); the real
    ``torch`` module is untouched.
    """

    def __init__(self, **overrides: object) -> None:
        super().__init__("torch", "devptr stand-in: torch with a few names replaced")
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


def _on_cpu(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def call(*args: Any, **kw: Any) -> torch.Tensor:
        if kw.get("device") is not None and torch.device(kw["device"]).type == "cuda":
            kw["device"] = "cpu"
        return fn(*args, **kw)

    return call


# -- Mamba (v1/worker/mamba_utils.py) ----------------------------------------------------
class MambaType(enum.Enum):
    """Stands in for ``MambaAttentionBackendEnum`` (the key of the copy-function map)."""

    MAMBA2 = "mamba2"
    SHORT_CONV = "short_conv"


@dataclasses.dataclass(frozen=True)
class MambaSpec:
    """``vllm.v1.kv_cache_interface.MambaSpec``: the fields the ported code reads."""

    mamba_type: MambaType
    shapes: tuple[tuple[int, ...], ...] = ((1,), (1,))
    block_size: int = 16
    num_speculative_blocks: int = 0
    mamba_cache_mode: str = "align"


class UniformTypeKVCacheSpecs:
    """Never instantiated here (every group has one spec)."""


@dataclasses.dataclass
class KVCacheGroupSpec:
    layer_names: list[str]
    kv_cache_spec: object


@dataclasses.dataclass
class KVCacheConfig:
    kv_cache_groups: list[KVCacheGroupSpec]


class CpuGpuBuffer:
    """``vllm.v1.utils.CpuGpuBuffer``: a CPU tensor, its numpy alias, a device mirror."""

    def __init__(self, n: int, dtype: torch.dtype, device: torch.device | str = "cpu") -> None:
        self.cpu = torch.zeros(n, dtype=dtype)
        self.np = self.cpu.numpy()
        self.gpu = torch.zeros(n, dtype=dtype, device=device)

    def copy_to_gpu(self, n: int | None = None) -> torch.Tensor:
        n = self.cpu.shape[0] if n is None else n
        self.gpu[:n].copy_(self.cpu[:n])
        return self.gpu[:n]


def buffer_factory(device: torch.device | str) -> Callable[..., CpuGpuBuffer]:
    """vLLM's ``make_buffer(n, dtype=...)`` for ``device``."""

    def make(n: int, dtype: torch.dtype) -> CpuGpuBuffer:
        return CpuGpuBuffer(n, dtype, device)

    return make


@dataclasses.dataclass
class Attention:
    """What ``forward_context[layer]`` is in vLLM: an object with ``kv_cache``."""

    kv_cache: list[torch.Tensor]


@dataclasses.dataclass
class CachedRequestState:
    block_ids: list[list[int]]
    num_computed_tokens: int = 0


@contextlib.contextmanager
def _gpu_sync_allowed() -> Iterator[None]:
    yield


class _Enum:
    """Attribute bag for enums that only appear in annotations and signatures."""

    FLASHINFER = "flashinfer"


def load_mamba_layer_utils(conv_layout: str | None = None) -> types.ModuleType:
    """vLLM's ``model_executor/layers/mamba/mamba_utils.py`` (copy-spec functions).

    ``conv_layout``: the ``VLLM_SSM_CONV_STATE_LAYOUT`` it reads (None: SD, or "DS").
    """
    return load_vllm_module(
        MAMBA_LAYER,
        {
            "vllm.envs": {"VLLM_SSM_CONV_STATE_LAYOUT": conv_layout},
            "vllm.config.cache": {"MambaDType": str},
            "vllm.config.mamba": {"MambaBackendEnum": _Enum},
            "vllm.config.model": {"ModelDType": str},
            "vllm.distributed": {"divide": lambda a, b: a // b},
            "vllm.logger": _logger_module(),
            "vllm.utils.torch_utils": {
                "STR_DTYPE_TO_TORCH_DTYPE": {},
                "get_kv_cache_torch_dtype": lambda *_a: torch.float16,
            },
            "vllm.v1.attention.backends.registry": {"MambaAttentionBackendEnum": MambaType},
        },
    )


def load_mamba_utils(conv_layout: str | None = None) -> types.ModuleType:
    """vLLM's ``v1/worker/mamba_utils.py``, importing the real layer ``mamba_utils``."""
    import triton
    import triton.language as tl

    layer = load_mamba_layer_utils(conv_layout)
    return load_vllm_module(
        MAMBA_WORKER,
        {
            "vllm.config": {"CacheConfig": object},
            "vllm.logger": _logger_module(),
            MAMBA_LAYER: layer,
            "vllm.triton_utils": {"tl": tl, "triton": triton},
            "vllm.utils.gpu_sync_debug": {"gpu_sync_allowed": _gpu_sync_allowed},
            "vllm.utils.math_utils": {"cdiv": lambda a, b: -(-a // b)},
            "vllm.v1.core.sched.output": {"SchedulerOutput": object},
            "vllm.v1.kv_cache_interface": {
                "KVCacheConfig": KVCacheConfig,
                "KVCacheGroupSpec": KVCacheGroupSpec,
                "MambaSpec": MambaSpec,
                "UniformTypeKVCacheSpecs": UniformTypeKVCacheSpecs,
            },
            "vllm.v1.utils": {"CpuGpuBuffer": CpuGpuBuffer},
            "vllm.v1.worker.gpu_input_batch": {
                "CachedRequestState": CachedRequestState,
                "InputBatch": object,
            },
        },
    )


# -- EC CPU connector (distributed/ec_transfer/ec_connector/cpu/worker) ------------------
class Platform:
    """``vllm.platforms.current_platform``: XPU or not, and its streams.

    ``stream_module``: ``torch.cuda`` for real streams; None runs everything synchronously
    on the CPU (fake streams).
    """

    def __init__(self, *, xpu: bool, device_type: str = "cpu", stream_module: Any = None) -> None:
        self._xpu = xpu
        self.device_type = device_type
        self._mod = stream_module

    def is_xpu(self) -> bool:
        return self._xpu

    def Stream(self) -> Any:
        return self._mod.Stream() if self._mod is not None else FakeStream()

    def current_stream(self) -> Any:
        return self._mod.current_stream() if self._mod is not None else FakeStream()

    def stream(self, s: Any) -> Any:
        return self._mod.stream(s) if self._mod is not None else contextlib.nullcontext()


class FakeStream:
    """A CPU "stream": everything already ran."""

    def wait_stream(self, _other: object) -> None:
        return None


class FakeEvent:
    """A CPU event (torch's CPU backend has none): always complete."""

    def __init__(self, enable_timing: bool = False) -> None:
        del enable_timing

    def record(self, _stream: object = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, _other: object) -> float:
        return 0.0


class EncoderOutput(torch.Tensor):
    """A CPU tensor that accepts ``record_stream`` (torch's CPU backend does not)."""

    # Plain-tensor semantics (results of ops are plain tensors), so a patched
    # ``Tensor.data_ptr`` (devptr.testing.high_addresses) applies exactly once.
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    def record_stream(self, _stream: object) -> None:
        return None


def _stream_tolerant_empty(*args: Any, **kw: Any) -> torch.Tensor:
    return torch.empty(*args, **kw).as_subclass(EncoderOutput)


@dataclasses.dataclass
class SwapCall:
    """One ``swap_blocks_batch`` call as vLLM made it (tables copied)."""

    src: torch.Tensor
    dst: torch.Tensor
    sizes: torch.Tensor
    is_src_access_order_any: bool


class SwapOp:
    """``vllm._custom_ops.swap_blocks_batch`` with the C++ op's dtype contract.

    Records each call's tables. CUDA/ROCm want int64 CPU src, dst and sizes; XPU uint64.
    ``copy`` (default: ``ctypes.memmove`` on the CPU) performs the copies; pass None to
    only record (fake addresses).
    """

    def __init__(self, platform: Platform, copy: Callable[[int, int, int], None] | None = None) -> None:
        self.platform = platform
        self.calls: list[SwapCall] = []
        self._copy = copy

    def __call__(
        self, src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, is_src_access_order_any: bool = False
    ) -> None:
        xpu = self.platform.is_xpu()
        want = torch.uint64 if xpu else torch.int64  # devptr: ignore[DP005] -- the C++ op's contract
        for name, t in (("src", src), ("dst", dst), ("sizes", sizes)):
            if t.dtype != want or t.device.type != "cpu":
                raise RuntimeError(f"swap_blocks_batch: {name} must be a CPU {want} tensor (got {t.dtype})")
        self.calls.append(SwapCall(src.clone(), dst.clone(), sizes.clone(), is_src_access_order_any))
        if self._copy is None:
            return
        if want == torch.int64:
            src, dst = src.view(torch.uint64), dst.view(torch.uint64)
        for s, d, n in zip(src.tolist(), dst.tolist(), sizes.tolist(), strict=True):
            self._copy(int(d), int(s), int(n))


def host_memmove(dst: int, src: int, n: int) -> None:
    ctypes.memmove(dst, src, n)


class SharedRegion:
    """``ECSharedRegion``: ``blocks`` is a ``(num_blocks, block_size_bytes)`` int8 tensor."""

    def __init__(self, blocks: torch.Tensor) -> None:
        self.blocks = blocks
        self.block_size_bytes = int(blocks.shape[1])

    def pin_memory(self) -> None:
        return None

    def cleanup(self) -> None:
        return None


@dataclasses.dataclass
class WorkerMetadata:
    """``ECCPUWorkerMetadata``."""

    completed_saves: list[str] = dataclasses.field(default_factory=list)
    completed_loads: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class ConnectorMetadata:
    """``ECCPUConnectorMetadata``: this step's saves and loads."""

    saves: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    loads: dict[str, tuple[int, list[int], tuple[int, ...]]] = dataclasses.field(default_factory=dict)


def load_ec_descriptor_buffers(platform: Platform) -> types.ModuleType:
    """vLLM's ``descriptor_buffers.py`` (its ``_PTR_DTYPE`` follows ``platform.is_xpu()``)."""
    return load_vllm_module(EC_DESCRIPTORS, {"vllm.platforms": {"current_platform": platform}})


def load_ec_worker(platform: Platform, swap: SwapOp, region: SharedRegion) -> types.ModuleType:
    """vLLM's EC worker module; ``module.ECCPUWorker(vllm_config)`` uses ``region``.

    Events are :class:`FakeEvent` when the platform has no stream module (CPU).
    """
    descriptors = load_ec_descriptor_buffers(platform)
    overrides: dict[str, object] = {}
    if platform._mod is None:  # CPU: events that are always done, tensors that take streams
        overrides["Event"] = FakeEvent
        overrides["empty"] = _stream_tolerant_empty
    return load_vllm_module(
        EC_WORKER,
        {
            "torch": TorchProxy(**overrides),
            "vllm._custom_ops": {"swap_blocks_batch": swap},
            "vllm.distributed.ec_transfer.ec_connector.cpu.common": {
                "ECCPUConnectorMetadata": ConnectorMetadata,
                "ECCPUWorkerMetadata": WorkerMetadata,
                "create_ec_shared_region": lambda _cfg: region,
            },
            EC_DESCRIPTORS: descriptors,
            "vllm.distributed.parallel_state": {
                "get_pcp_group": lambda: types.SimpleNamespace(rank_in_group=0),
                "get_tensor_model_parallel_rank": lambda: 0,
            },
            "vllm.logger": _logger_module(),
            "vllm.platforms": {"current_platform": platform},
            "vllm.utils.platform_utils": {"is_pin_memory_available": lambda: False},
        },
    )


def vllm_config(dtype: torch.dtype) -> Any:
    """The one field of ``VllmConfig`` the EC worker reads."""
    return types.SimpleNamespace(model_config=types.SimpleNamespace(dtype=dtype))


# -- Lamport workspace (model_executor/layers/minimax_rms_norm/lamport_workspace.py) -----
_HANDLE = 64


class FakeCudaRuntime:
    """``cuda.bindings.runtime`` over fake peer memory.

    ``cudaMalloc`` hands out ``addresses`` in order (one per rank in the simulated
    group); an IPC handle carries its address in its first 8 bytes, so
    ``cudaIpcOpenMemHandle`` returns the peer's address itself (a peer mapping at the
    same address, as with UVA). ``cudaMemset``/``cudaMemcpy`` write through ``ctypes``
    only where ``writable(addr)`` says the address is real host memory; otherwise they
    record the call.
    """

    class cudaError_t(enum.IntEnum):
        cudaSuccess = 0

    class cudaMemcpyKind(enum.IntEnum):
        cudaMemcpyDeviceToDevice = 3

    cudaIpcMemLazyEnablePeerAccess = 1

    class cudaIpcMemHandle_t:
        def __init__(self) -> None:
            self.raw = ctypes.create_string_buffer(_HANDLE)

        def getPtr(self) -> int:
            return ctypes.addressof(self.raw)

    def __init__(self, addresses: Sequence[int], writable: Callable[[int], bool] = lambda _a: False) -> None:
        self._next = list(addresses)
        self._writable = writable
        self.calls: list[tuple[str, tuple[int, ...]]] = []

    def cudaMalloc(self, size: int) -> tuple[int, int]:
        self.calls.append(("malloc", (size,)))
        return 0, self._next.pop(0)

    def cudaFree(self, ptr: int) -> tuple[int]:
        self.calls.append(("free", (ptr,)))
        return (0,)

    def cudaMemset(self, ptr: int, value: int, size: int) -> tuple[int]:
        self.calls.append(("memset", (ptr, value, size)))
        if self._writable(ptr):
            ctypes.memset(ptr, value, size)
        return (0,)

    def cudaMemcpy(self, dst: int, src: int, size: int, _kind: object) -> tuple[int]:
        self.calls.append(("memcpy", (dst, src, size)))
        if self._writable(dst):
            ctypes.memmove(dst, src, size)
        return (0,)

    def cudaIpcGetMemHandle(self, ptr: int) -> tuple[int, FakeCudaRuntime.cudaIpcMemHandle_t]:
        handle = self.cudaIpcMemHandle_t()
        ctypes.memmove(handle.getPtr(), ptr.to_bytes(8, "little"), 8)
        return 0, handle

    def cudaIpcOpenMemHandle(
        self, handle: FakeCudaRuntime.cudaIpcMemHandle_t, _flags: int
    ) -> tuple[int, int]:
        return 0, int.from_bytes(ctypes.string_at(handle.getPtr(), 8), "little")

    def cudaIpcCloseMemHandle(self, ptr: int) -> tuple[int]:
        self.calls.append(("close", (ptr,)))
        return (0,)


def fake_all_gather(peer_addresses: Sequence[int]) -> Callable[..., None]:
    """``torch.distributed.all_gather_object`` for a simulated group: every rank's IPC
    handle bytes, rank ``r`` publishing ``peer_addresses[r]``."""

    def all_gather_object(out: list[object], obj: bytes, group: object = None) -> None:
        del group
        for r, addr in enumerate(peer_addresses):
            out[r] = addr.to_bytes(8, "little") + bytes(_HANDLE - 8)
        mine = int.from_bytes(obj[:8], "little")
        if mine not in peer_addresses:
            raise RuntimeError(f"this rank published {mine:#x}, not one of the group's addresses")

    return all_gather_object


def load_lamport_workspace(cudart: FakeCudaRuntime, peer_addresses: Sequence[int]) -> types.ModuleType:
    """vLLM's ``lamport_workspace.py`` on the CPU: ``cudart`` as its CUDA runtime, device
    tensors on the CPU, and a simulated group where rank ``r`` owns ``peer_addresses[r]``."""
    proxy = TorchProxy(
        zeros=_on_cpu(torch.zeros),
        tensor=_on_cpu(torch.tensor),
        full=_on_cpu(torch.full),
        distributed=types.SimpleNamespace(all_gather_object=fake_all_gather(peer_addresses)),
    )
    return load_vllm_module(LAMPORT, {"torch": proxy, "cuda.bindings": {"runtime": cudart}})


__all__ = [
    "EC_DESCRIPTORS",
    "EC_WORKER",
    "LAMPORT",
    "MAMBA_LAYER",
    "MAMBA_WORKER",
    "Attention",
    "CachedRequestState",
    "ConnectorMetadata",
    "CpuGpuBuffer",
    "EncoderOutput",
    "FakeCudaRuntime",
    "FakeEvent",
    "FakeStream",
    "KVCacheConfig",
    "KVCacheGroupSpec",
    "MambaSpec",
    "MambaType",
    "Platform",
    "SharedRegion",
    "SwapCall",
    "SwapOp",
    "TorchProxy",
    "buffer_factory",
    "fake_all_gather",
    "host_memmove",
    "init_logger",
    "load_ec_descriptor_buffers",
    "load_ec_worker",
    "load_lamport_workspace",
    "load_mamba_layer_utils",
    "load_mamba_utils",
    "vllm_config",
]

