"""Device addresses as scalar Triton arguments, with one compile-cache entry per kernel.

Triton keys its compile cache on how it *specialises* each plain ``int`` argument:

- the type follows the value: ``i32`` below 2**31, ``i64`` below 2**63, ``u64`` at or above
  2**63 (an XPU address passed unsigned), ``i64`` for the same address passed signed;
- and, unless told otherwise, whether the value is divisible by 16 (``"D"``).

So a kernel that takes an address as a plain int compiles again when an address crosses
2**63, when it is not 16-byte aligned, or on a platform whose addresses sit elsewhere: new
signatures at run time, and different ones per platform.

The rule this module implements (one way, used by every devptr kernel that takes a scalar
address):

1. annotate the parameter ``NAME_addr: tl.int64`` (the signature type is then fixed);
2. list it in ``do_not_specialize`` (no divisibility key): :func:`addr_jit` does both checks
   and applies ``triton.jit``;
3. pass ``addr_arg(p)``: the int64 two's-complement value of the :class:`~devptr.DevicePtr`
   (a fixed ``i64`` parameter cannot take a value >= 2**63);
4. in the kernel, ``NAME_addr.to(tl.uint64, bitcast=True)`` before comparing, and
   ``.to(tl.pointer_type(...))`` to dereference.

The other way, for many addresses, is a pointer table (a ``PtrBuffer`` device view): a
tensor argument is keyed on its dtype and on the 16-byte alignment of the table itself,
which does not depend on the addresses stored in it.

Nothing here imports Triton at module import time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Final

from devptr import DevicePtr
from devptr.kernels._errors import AddrParamError, TritonUnavailableError

ADDR_ANNOTATION: Final = "tl.int64"
"""What an address parameter is annotated with (``def k(src_addr: tl.int64, ...)``)."""


def addr_arg(ptr: DevicePtr) -> int:
    """The value to pass for a ``tl.int64`` address parameter: ``ptr.signed``.

    Parameters
    ----------
    ptr
        The address. A raw int is refused: the convention is that addresses are DevicePtrs.

    Returns
    -------
    int
        The int64 two's-complement value (the same 64 bits); nothing is copied.
    """
    if not isinstance(ptr, DevicePtr):
        raise AddrParamError(f"addr_arg() takes a DevicePtr (got {type(ptr).__name__})")
    return ptr.signed


def _annotation_name(ann: object) -> str:
    if ann is inspect.Parameter.empty:
        return ""
    if isinstance(ann, str):
        text = ann.strip()
    else:
        text = str(getattr(ann, "name", ann))  # a tl.dtype has .name ('int64')
    return text.removeprefix("triton.language.").removeprefix("tl.")


def check_addr_params(fn: Callable[..., Any], addr_params: Sequence[str]) -> None:
    """Raise :class:`AddrParamError` unless every name in ``addr_params`` is a parameter of
    ``fn`` annotated ``tl.int64`` (the annotation may be a string or ``tl.int64`` itself)."""
    if not addr_params:
        raise AddrParamError("addr_jit() needs at least one address parameter name")
    params = inspect.signature(fn).parameters
    for name in addr_params:
        if name not in params:
            raise AddrParamError(f"{fn.__name__}() has no parameter {name!r}")
        ann = _annotation_name(params[name].annotation)
        if ann not in ("int64", "i64"):
            raise AddrParamError(
                f"{fn.__name__}() parameter {name!r} must be annotated {ADDR_ANNOTATION} "
                f"(got {ann or 'no annotation'}); pass addr_arg(ptr) to it"
            )


def addr_jit(*, addr_params: Sequence[str], **jit_kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    """``triton.jit`` for a kernel with scalar address parameters (the module's rule).

    Checks that each name in ``addr_params`` is annotated ``tl.int64`` and adds the names to
    ``do_not_specialize``; other keyword arguments go to ``triton.jit`` unchanged.

    Example::

        @addr_jit(addr_params=["src_addr"])
        def _read_kernel(src_addr: tl.int64, out_ptr, N: tl.constexpr): ...

        _read_kernel[(1,)](addr_arg(DevicePtr.of(t)), out, N=4)
    """
    names = list(addr_params)

    def wrap(fn: Callable[..., Any]) -> Any:
        check_addr_params(fn, names)
        try:
            import triton
        except ImportError as exc:  # pragma: no cover - triton is in every test venv
            raise TritonUnavailableError(f"addr_jit needs Triton: {exc}") from None
        dns = list(jit_kwargs.pop("do_not_specialize", ()) or ())
        return triton.jit(do_not_specialize=[*dns, *[n for n in names if n not in dns]], **jit_kwargs)(fn)

    return wrap


def specialization_key(kernel: Any, *args: Any, **kwargs: Any) -> tuple[tuple[str, str], ...]:
    """The per-argument part of ``kernel``'s compile key for these arguments, computed with
    Triton's own binder (``create_function_from_signature``) and the generic backend rules.

    Works for compiled and interpreted kernels (the interpreter keeps no compile cache, so
    this is how tests on a CPU see what a GPU would key on). Constexpr values are left out.
    Returns ``(type, specialisation)`` per non-constexpr parameter, e.g. ``("i64", "")``.
    """
    try:
        from triton.backends.compiler import BaseBackend
        from triton.runtime.jit import JITFunction, create_function_from_signature
    except ImportError as exc:
        raise TritonUnavailableError(f"specialization_key needs Triton's runtime: {exc}") from None
    fn = getattr(kernel, "fn", kernel)
    opts = getattr(kernel, "kwargs", None) or {}
    dns = getattr(kernel, "do_not_specialize", None) or opts.get("do_not_specialize") or []
    dnsoa = (
        getattr(kernel, "do_not_specialize_on_alignment", None)
        or opts.get("do_not_specialize_on_alignment")
        or []
    )
    import triton.runtime.jit as jit_mod

    registry: dict[str, Any] = getattr(jit_mod, "_triton_jit_function_registry", {})
    saved = dict(registry)
    try:  # a JITFunction registers itself by name; keep the kernel's own entry
        jf = JITFunction(fn, do_not_specialize=dns, do_not_specialize_on_alignment=dnsoa)
    finally:
        registry.clear()
        registry.update(saved)
    binder = create_function_from_signature(jf.signature, jf.params, BaseBackend)
    _, spec, _ = binder(*args, **kwargs)
    return tuple((str(s[0]), "" if s[1] is None else str(s[1])) for s in spec if s[0] != "constexpr")


def compiled_variants(kernel: Any) -> int:
    """How many compiled variants ``kernel`` holds, over every device (0 when interpreted)."""
    caches = getattr(kernel, "device_caches", None)
    if caches is None:
        return 0
    return sum(len(entry[0]) for entry in caches.values())
