"""Launching a Triton kernel with little host work per call.

Triton's generic launcher (``kernel[grid](*args, **meta)``, ``JITFunction.run``) binds the
arguments, computes their specialisation, builds a cache key and looks the compiled kernel
up on every call. :class:`FastKernel` does that once per *launch signature* and then calls
the compiled kernel's launcher directly:

- the signature key is built by the caller from what it already knows (dtypes, layout
  facts, constexprs) plus :func:`arg_key` of the arguments that vary per call; it is at
  least as fine as Triton's own specialisation (16-byte alignment of pointers and ints,
  ints equal to 1, the integer width), so a cached kernel is only reused where Triton
  would have picked the same one;
- the first call of a signature goes through ``kernel[grid]`` (which compiles and
  launches) and keeps the compiled kernel it returns;
- later calls pass ``(grid, stream, function, metadata, hooks, *args)`` to its launcher,
  the way ``JITFunction.run`` does in Triton 3.3 and later (all parameters, constexprs
  included, in signature order), with tensor arguments given as their addresses (Triton's
  launcher takes an int as the address itself, where for a tensor it calls ``data_ptr()``
  and asks the driver whether the address is device-accessible: a driver call per
  pointer per launch), and no hook objects while no launch hook is installed.

The direct path is taken only on a CUDA device that is current, with Triton >= 3.3 and
without launch hooks installed (profilers); otherwise, and under ``TRITON_INTERPRET=1``,
every call uses ``kernel[grid]``. If the direct call is refused (a launcher API this module
does not know), the fast path switches itself off for the process and the call is repeated
through ``kernel[grid]``.

Nothing here imports Triton at import time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from devptr.kernels import _runtime

_ALIGN = 15
_I32_LO, _I32_HI = -(1 << 31), 1 << 31
_U63 = 1 << 63


def arg_key(a: object) -> object:
    """What Triton specialises a runtime argument on, cheaply (a hashable value).

    Tensors: dtype and whether the address is a multiple of 16. Ints: equal to 1, multiple
    of 16, and the integer width Triton picks (i32, i64, u64). Anything else: its type.
    """
    if type(a) is int:
        if a == 1:
            return 1
        width = 0 if _I32_LO <= a < _I32_HI else (2 if a >= _U63 else 4)
        return width | (0 if a & _ALIGN else 8)
    if isinstance(a, torch.Tensor):
        return (a.dtype, not a.data_ptr() & _ALIGN)
    return type(a)


class _State:
    """Process-wide switches of the direct path (resolved on first use)."""

    enabled: bool | None = None
    """None: not decided yet; False: always use ``kernel[grid]``."""
    knobs: Any = None
    get_stream: Callable[[int], int] | None = None
    get_device: Callable[[], int] = torch.cuda.current_device


def _direct_path_available() -> bool:
    if _State.enabled is None:
        try:
            import triton
            from triton import knobs
            from triton.runtime import driver

            major, minor = (int(v) for v in triton.__version__.split(".")[:2])
            _State.knobs = knobs
            _State.get_stream = driver.active.get_current_stream
            _State.get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
            _State.enabled = (major, minor) >= (3, 3) and not _runtime.interpreting()
        except Exception:  # any other Triton layout: the generic launcher only
            _State.enabled = False
    return bool(_State.enabled)


def _quiet(hook: object) -> bool:
    """Whether a launch hook does nothing (None, or an empty ``HookChain``)."""
    return hook is None or getattr(hook, "calls", True) == []


def _hooks_quiet() -> bool:
    """Whether no launch hook is installed (else a profiler wants the generic launcher)."""
    rt = _State.knobs.runtime
    return _quiet(rt.launch_enter_hook) and _quiet(rt.launch_exit_hook)


class FastKernel:
    """A ``@triton.jit`` kernel of a devptr JIT module, launched through a signature cache.

    ``module``/``name``: the kernel ``devptr.kernels.<module>.<name>`` (imported on first
    use through :func:`devptr.kernels._runtime.jit_module`).
    """

    __slots__ = ("_cache", "_fn", "_jit", "_module", "_name", "_tail")

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name
        self._jit: Any = None
        self._fn: Any = None
        self._cache: dict[object, Any] = {}
        self._tail: dict[object, tuple[object, ...]] = {}

    def jit_module(self) -> Any:
        """The JIT module (imported on first use; raises TritonUnavailableError)."""
        if self._jit is None:
            self._jit = _runtime.jit_module(self._module)
            self._fn = getattr(self._jit, self._name)
        return self._jit

    def launch(
        self,
        device: torch.device,
        grid: tuple[int, int, int],
        key: object,
        args: Sequence[object],
        meta: Mapping[str, object],
        num_warps: int,
        raw: Sequence[object] | None = None,
    ) -> None:
        """Launch on ``device`` (current stream): ``args`` are the runtime parameters in
        order, ``meta`` the constexprs, ``key`` the launch signature (see module doc);
        ``raw``: the same parameters with every tensor replaced by its ``data_ptr()``
        (default: ``args``), for the direct path.

        The caller has checked the device (:func:`_runtime.check_launch_device`).
        """
        compiled = self._cache.get(key)
        if compiled is not None and (_State.get_device() != device.index or not _hooks_quiet()):
            compiled = None  # another device is current, or a profiler hooks launches
        if compiled is not None:
            tail = self._tail[key]
            stream = _State.get_stream(device.index)  # type: ignore[misc]
            try:
                compiled.run(
                    grid[0],
                    grid[1],
                    grid[2],
                    stream,
                    compiled.function,
                    compiled.packed_metadata,
                    None,
                    None,
                    None,
                    *(args if raw is None else raw),
                    *tail,
                )
                return
            except TypeError:  # a launcher of another shape: generic path from now on
                _State.enabled = False
                self._cache.clear()
        self.jit_module()
        ctx = (
            torch.cuda.device(device)
            if device.type == "cuda" and _State.get_device() != device.index
            else contextlib.nullcontext()
        )
        with ctx:
            got = self._fn[grid](*args, **meta, num_warps=num_warps)
        if device.type == "cuda" and _direct_path_available() and hasattr(got, "packed_metadata"):
            names = list(self._fn.arg_names)
            tail_names = names[len(args) :]
            if sorted(tail_names) == sorted(meta):
                self._tail[key] = tuple(meta[n] for n in tail_names)
                self._cache[key] = got

    def cached_signatures(self) -> int:
        """How many launch signatures hold a compiled kernel (for tests and benchmarks)."""
        return len(self._cache)


def device_key(device: torch.device) -> tuple[str, int | None]:
    """The part of a launch signature that names the device."""
    return (device.type, device.index)





_VIEWS: dict[int, tuple[object, torch.Tensor, torch.device]] = {}
_VIEWS_MAX = 64


def table_view(
    table: object, make: Callable[[object], torch.Tensor], live: Callable[[object], object]
) -> tuple[torch.Tensor, torch.device]:
    """The kernel tensor of a devptr table object (PtrBuffer, SizeBuffer, PtrTable) and its
    device, remembered by identity.

    ``make(table)`` builds the tensor the first time (validating it); ``live(table)`` runs
    on every call and must raise when the table can no longer be used (a PtrBuffer
    released to its pool). The tensors are views of memory the table owns for its whole
    life, so they stay valid while it does; the cache keeps the last :data:`_VIEWS_MAX`
    tables alive (strong references) and then starts over.
    """
    hit = _VIEWS.get(id(table))
    if hit is not None and hit[0] is table:
        live(table)
        return hit[1], hit[2]
    t = make(table)
    if len(_VIEWS) >= _VIEWS_MAX:
        _VIEWS.clear()
    _VIEWS[id(table)] = (table, t, t.device)
    return t, t.device
__all__ = ["FastKernel", "arg_key", "device_key", "table_view"]
