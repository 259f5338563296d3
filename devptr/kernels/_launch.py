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
from typing import Any, Final

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
    raw_launch: bool = False
    """Whether the compiled launcher's C entry point may be called directly (a Triton
    whose launcher wrapper is known: see :func:`_resolve`)."""
    quiet: Callable[[], bool] = staticmethod(lambda: True)
    """Whether no launch hook is installed (else a profiler wants the generic launcher)."""
    get_stream: Callable[[int], int] | None = None
    get_device: Callable[[], int] = torch.cuda.current_device


_RAW_LAUNCH_TRITON: Final = frozenset({(3, 6)})
"""Triton releases whose ``CudaLauncher.__call__`` was read and verified on a GPU:
``launch(gx, gy, gz, stream, function, cooperative, pdl, global_scratch, profile_scratch,
*args)`` behind a wrapper that only allocates scratch memory (none when its sizes are 0)."""


def _quiet_check(runtime: Any) -> Callable[[], bool]:
    """A cheap "no launch hook installed" test for this Triton's hook attributes.

    Hook chains (Triton >= 3.4) are compared by identity with the ones seen now, and their
    ``calls`` lists tested for emptiness; plain hook attributes (older Tritons) must be None.
    """
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    if isinstance(getattr(enter, "calls", None), list) and isinstance(getattr(leave, "calls", None), list):
        e_calls, l_calls = enter.calls, leave.calls

        def chains_quiet() -> bool:
            return (
                not e_calls
                and not l_calls
                and runtime.launch_enter_hook is enter
                and runtime.launch_exit_hook is leave
            )

        return chains_quiet
    return lambda: runtime.launch_enter_hook is None and runtime.launch_exit_hook is None


def _resolve() -> None:
    try:
        import triton
        from triton import knobs
        from triton.runtime import driver

        version = tuple(int(v) for v in triton.__version__.split(".")[:2])
        _State.quiet = staticmethod(_quiet_check(knobs.runtime))
        _State.get_stream = driver.active.get_current_stream
        _State.get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
        _State.raw_launch = version in _RAW_LAUNCH_TRITON
        _State.enabled = version >= (3, 3) and not _runtime.interpreting()
    except Exception:  # any other Triton layout: the generic launcher only
        _State.enabled = False


def _direct_path_available() -> bool:
    if _State.enabled is None:
        _resolve()
    return bool(_State.enabled)


class Bound:
    """One launch signature's compiled kernel, ready to launch from raw arguments.

    Made by :meth:`FastKernel.bound` after the signature's first launch. Calling it launches
    on the current stream of its device and returns True, or launches nothing and returns
    False when the direct path cannot be taken now (another device is current, or a launch
    hook is installed); the caller then goes through :meth:`FastKernel.launch`.
    """

    __slots__ = ("_fn", "_head", "_tail", "index")

    def __init__(
        self, index: int, fn: Callable[..., object], head: tuple[object, ...], tail: tuple[object, ...]
    ) -> None:
        self.index = index
        self._fn = fn
        self._head = head
        self._tail = tail

    def __call__(self, grid: tuple[int, int, int], raw: Sequence[object]) -> bool:
        """Launch with ``raw``: the runtime parameters, tensors as their addresses."""
        index = self.index
        if _State.get_device() != index or not _State.quiet():
            return False
        stream = _State.get_stream(index)  # type: ignore[misc]
        self._fn(grid[0], grid[1], grid[2], stream, *self._head, *raw, *self._tail)
        return True


def _bind(compiled: Any, index: int, tail: tuple[object, ...]) -> Bound:
    """A :class:`Bound` of a compiled kernel: its launcher's C entry point where the wrapper
    is known and allocates nothing (see :data:`_RAW_LAUNCH_TRITON`), else the launcher."""
    run = compiled.run
    if (
        _State.raw_launch
        and callable(getattr(run, "launch", None))
        and getattr(run, "global_scratch_size", 1) == 0
        and getattr(run, "profile_scratch_size", 1) == 0
        and not getattr(run, "gsan_enabled", False)
    ):
        head: tuple[object, ...] = (
            compiled.function,
            run.launch_cooperative_grid,
            run.launch_pdl,
            None,  # global scratch
            None,  # profile scratch
            compiled.packed_metadata,
            None,  # launch metadata
            None,  # enter hook
            None,  # exit hook
        )
        return Bound(index, run.launch, head, tail)
    return Bound(index, run, (compiled.function, compiled.packed_metadata, None, None, None), tail)


class FastKernel:
    """A ``@triton.jit`` kernel of a devptr JIT module, launched through a signature cache.

    ``module``/``name``: the kernel ``devptr.kernels.<module>.<name>`` (imported on first
    use through :func:`devptr.kernels._runtime.jit_module`).
    """

    __slots__ = ("_bound", "_fn", "_jit", "_module", "_name")

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name
        self._jit: Any = None
        self._fn: Any = None
        self._bound: dict[object, Bound] = {}

    def jit_module(self) -> Any:
        """The JIT module (imported on first use; raises TritonUnavailableError)."""
        if self._jit is None:
            self._jit = _runtime.jit_module(self._module)
            self._fn = getattr(self._jit, self._name)
        return self._jit

    def bound(self, key: object) -> Bound | None:
        """The :class:`Bound` launch of signature ``key``, once it has been launched (None
        before, on the generic path, and after the direct path switched itself off).

        A caller that knows its signature keeps this and calls it directly, skipping the
        signature lookup of :meth:`launch`."""
        return self._bound.get(key)

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
        bound = self._bound.get(key)
        if bound is not None:
            try:
                if bound(grid, args if raw is None else raw):
                    return
            except TypeError:  # a launcher of another shape: generic path from now on
                _State.enabled = False
                self._bound.clear()
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
            if sorted(tail_names) == sorted(meta) and device.index is not None:
                tail = tuple(meta[n] for n in tail_names)
                self._bound[key] = _bind(got, device.index, tail)


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


__all__ = ["Bound", "FastKernel", "arg_key", "device_key", "table_view"]
