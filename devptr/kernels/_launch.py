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

The direct path calls a private interface of Triton, so it is fenced:

- it is taken only with a Triton release listed in :data:`KNOWN_LAUNCHERS` (each one read
  and verified on a GPU; ``tests/kernels/test_launch.py`` compares its results with
  ``kernel[grid]``'s), on a CUDA device that is current, without launch hooks installed
  (profilers) and not under ``TRITON_INTERPRET=1``; any other Triton release uses
  ``kernel[grid]`` for every call (:func:`direct_path_status` says which and why);
- if a direct call is refused anyway (a ``TypeError``: a launcher of another shape), the
  call is repeated through ``kernel[grid]``, the direct path is switched off for the
  process and a :class:`DirectLaunchWarning` naming the Triton release and the error is
  issued, once.

Nothing here imports Triton at import time.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import torch

from devptr._core_api import IdentityCache
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


class DirectLaunchWarning(RuntimeWarning):
    """The direct launch path was refused by Triton's launcher and is off for the process
    (every launch goes through ``kernel[grid]``; results are unchanged)."""


KNOWN_LAUNCHERS: Final[Mapping[tuple[int, int], str]] = {
    (3, 6): (
        "CudaLauncher.__call__ read and verified on an H200: launch(gx, gy, gz, stream, "
        "function, cooperative, pdl, global_scratch, profile_scratch, *args) behind a "
        "wrapper that only allocates scratch memory (none when its sizes are 0)"
    ),
}
"""Triton releases (major, minor) the direct path is known to work with, and what was
verified. Any other release uses Triton's public launcher (``kernel[grid]``). Adding one:
read its ``CudaLauncher``, then run ``tests/kernels/test_launch.py`` and
``tests/kernels/test_launch_gpu.py`` on a GPU with it."""


def triton_release(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Triton version string (``"3.6.0"``, ``"3.6.0+git1a2b"``), or
    None when it does not start with two integers."""
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


class _State:
    """Process-wide switches of the direct path (resolved on first use)."""

    enabled: bool | None = None
    """None: not decided yet; False: always use ``kernel[grid]``."""
    reason: str = "not decided yet (no kernel launched on a GPU)"
    """Why the direct path is on or off (:func:`direct_path_status`)."""
    version: str = "unknown"
    """The Triton version seen by :func:`_resolve`."""
    warned: bool = False
    """Whether the :class:`DirectLaunchWarning` was issued (once per process)."""
    quiet: Callable[[], bool] = staticmethod(lambda: True)
    """Whether no launch hook is installed (else a profiler wants the generic launcher)."""
    get_stream: Callable[[int], int] | None = None
    get_device: Callable[[], int] = torch.cuda.current_device


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
    """Decide, once per process, whether the direct path may be taken (see module doc)."""
    try:
        import triton
    except ImportError as exc:
        _set(False, f"triton cannot be imported ({exc})")
        return
    _State.version = version = str(getattr(triton, "__version__", "unknown"))
    release = triton_release(version)
    verified = KNOWN_LAUNCHERS.get(release) if release is not None else None
    if verified is None:
        known = ", ".join(f"{a}.{b}" for a, b in sorted(KNOWN_LAUNCHERS))
        _set(False, f"Triton {version} is not a release the direct path was verified with ({known}): "
             "every launch uses kernel[grid]")
        return
    if _runtime.interpreting():
        _set(False, "TRITON_INTERPRET=1: every launch uses kernel[grid]")
        return
    try:
        from triton import knobs
        from triton.runtime import driver

        _State.quiet = staticmethod(_quiet_check(knobs.runtime))
        _State.get_stream = driver.active.get_current_stream
    except Exception as exc:  # a verified release without its launcher API: installation damage
        _set(False, f"Triton {version}'s runtime lacks the launcher API it was verified with ({exc!r})")
        return
    _State.get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    _set(True, f"Triton {version}: {verified}")


def _set(enabled: bool, reason: str) -> None:
    _State.enabled = enabled
    _State.reason = reason


def direct_path_status() -> tuple[bool, str]:
    """Whether launches of a signature seen before bypass ``kernel[grid]`` on a CUDA device,
    and why (decided at the first call, for the process)."""
    return _direct_path_available(), _State.reason


def _direct_path_available() -> bool:
    if _State.enabled is None:
        _resolve()
    return bool(_State.enabled)


def _refused(exc: TypeError) -> str | None:
    """Switch the direct path off after Triton's launcher refused a direct call; the message
    of the :class:`DirectLaunchWarning` to issue (None once one was issued)."""
    _set(False, f"Triton {_State.version}'s compiled launcher refused a direct call ({exc}): "
         "every launch uses kernel[grid] from now on")
    if _State.warned:
        return None
    _State.warned = True
    return f"devptr's direct kernel launch is off for this process: {_State.reason}"


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
    allocates nothing (see :data:`KNOWN_LAUNCHERS`), else the launcher."""
    run = compiled.run
    if (
        callable(getattr(run, "launch", None))
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
        refused: str | None = None
        if bound is not None:
            try:
                if bound(grid, args if raw is None else raw):
                    return
            except TypeError as exc:  # a launcher of another shape: generic path from now on
                refused = _refused(exc)
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
        if refused is not None:  # after the launch: a warnings filter of "error" loses no work
            warnings.warn(refused, DirectLaunchWarning, stacklevel=2)


def device_key(device: torch.device) -> tuple[str, int | None]:
    """The part of a launch signature that names the device."""
    return (device.type, device.index)


_VIEWS: IdentityCache[object, tuple[torch.Tensor, torch.device]] = IdentityCache()


def table_view(
    table: object, make: Callable[[object], torch.Tensor], live: Callable[[object], object]
) -> tuple[torch.Tensor, torch.device]:
    """The kernel tensor of a devptr table object (PtrBuffer, SizeBuffer, PtrTable) and its
    device, remembered by identity.

    ``make(table)`` builds the tensor the first time (validating it); ``live(table)`` runs
    on every call and must raise when the table can no longer be used (a PtrBuffer
    released to its pool). The tensors are views of memory the table owns for its whole
    life, so they stay valid while it does; the entry lives as long as the table
    (:class:`devptr._core_api.IdentityCache`: a weak reference, never keeping it alive).
    """
    hit = _VIEWS.get(table)
    if hit is not None:
        live(table)
        return hit
    t = make(table)
    return _VIEWS.put(table, (t, t.device))


__all__ = [
    "KNOWN_LAUNCHERS",
    "Bound",
    "DirectLaunchWarning",
    "FastKernel",
    "arg_key",
    "device_key",
    "direct_path_status",
    "table_view",
    "triton_release",
]
