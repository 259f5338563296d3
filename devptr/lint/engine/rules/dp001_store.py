"""DP001 raw-address-store: a raw device address stored into a container that rejects it.

Detection: a store site (``cont[idx] = p``, ``cont.fill_(p)``, ``np.copyto``, ``out=``)
whose container is an int64 torch tensor or numpy array (or of unknown dtype, by slice,
into a table-named container), a uint64 torch tensor by setitem, or a two's-complement
value into a uint64 one; host values are DP008's. Fix: STORE, ``devptr.store(cont, idx,
DevicePtr(p))`` (also carried by DP006 and DP008 stores); safe only for one address at a
non-negative index, known to come from ``data_ptr()``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._fix import Fix, FixKind
from devptr.lint.engine._values import DType, Kind, Lib, Val, is_host
from devptr.lint.engine.rules._messages import (
    ARRAY_Q,
    NUMPY_I64,
    NUMPY_NEG_U64,
    TORCH_FULL_I64,
    TORCH_NEG_U64,
    TORCH_SETITEM_I64,
    TORCH_SETITEM_U64,
)
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

if TYPE_CHECKING:
    from devptr.lint.engine.rules._unit import FixContext


def unknown_store(cont: Val | None, value: Val, target: ast.Subscript | None) -> bool:
    """Whether a store is one no rule judges: into a dict, list or unknown object, or into
    an unknown container from a helper, by a name only, an encoded value or an array."""
    if cont is not None:
        return cont.kind not in (Kind.ARRAY, Kind.ADDR_ARRAY)
    return target is None or value.by_name or value.checked is not None or (
        value.kind is Kind.ADDR_ARRAY
    )


def store_message(
    cont: Val | None, value: Val, target: ast.Subscript | None, fill: bool
) -> str | None:
    """The DP001 message of a store of *value* into *cont*, host addresses or not."""
    if unknown_store(cont, value, target):
        return None
    if cont is None:
        assert target is not None
        if not syn.looks_like_table(target):
            return None  # named like a table, by index: DP006's
        return (
            "raw device addresses stored by slice into a table of unknown dtype: if it is an "
            f"int64 tensor/array, {TORCH_SETITEM_I64} / {NUMPY_I64} for addresses >= 2**63"
        )
    if value.kind is Kind.ADDR_ARRAY:
        if value.dtype is DType.OTHER:
            return "address array of a non-64-bit dtype copied into a table"
        return None
    if cont.lib is Lib.CTYPES:
        return None
    if cont.lib is Lib.PYARRAY:
        if cont.dtype is DType.I64:
            return f"raw device address stored into array('q'): {ARRAY_Q}"
        return None
    if cont.lib is Lib.TORCH:
        return _torch(cont.dtype, value.checked is DType.I64, fill)
    return _numpy(cont.dtype, value)


def _torch(dt: DType | None, signed: bool, fill: bool) -> str | None:
    if dt is DType.U64:
        if signed:
            return f"two's-complement value stored into a uint64 tensor: {TORCH_NEG_U64}"
        return f"raw device address stored into a uint64 tensor by setitem: {TORCH_SETITEM_U64}"
    if signed:
        return None  # the int64 encoding into an int64 tensor
    if fill:
        return f"raw device address passed to fill_ of an int64 tensor: {TORCH_FULL_I64}"
    if dt is DType.BRANCH:
        return (
            "raw device address stored into a per-platform-dtype tensor (int64 on "
            f"CUDA/ROCm): {TORCH_SETITEM_I64} for addresses >= 2**63"
        )
    if dt is DType.I64:
        return (
            f"raw device address stored into an int64 tensor: {TORCH_SETITEM_I64} for "
            "addresses >= 2**63"
        )
    return (
        "raw device address stored into a tensor of unknown dtype: "
        f"if int64, {TORCH_SETITEM_I64}; if uint64, {TORCH_SETITEM_U64}"
    )


def _numpy(dt: DType | None, value: Val) -> str | None:
    signed = value.checked is DType.I64
    if dt is DType.U64:
        if signed:
            return f"two's-complement value stored into a uint64 array: {NUMPY_NEG_U64}"
        return None  # DevicePtr.addr (no finding) or raw addresses (DP006)
    if signed:
        return None
    if dt is DType.I64 or dt is DType.BRANCH:
        return (
            f"raw device address stored into an int64 numpy array: {NUMPY_I64} for addresses "
            ">= 2**63"
        )
    if dt is DType.OTHER:
        return "raw device address stored into a non-64-bit-integer array: bits lost"
    return None  # numpy array of unknown dtype: no claim


def store_fix(ctx: FixContext, target: ast.Subscript, value_node: ast.expr | None,
              cont: Val | None, val: Val | None) -> Fix | None:
    """The STORE fix of ``target = value_node`` (any rule's store: DP001, DP006, DP008)."""
    if value_node is None:
        return None
    if cont is None or cont.lib not in (Lib.TORCH, Lib.NUMPY) or cont.dtype not in (
        DType.I64, DType.U64, DType.BRANCH
    ):
        return None
    spans = (("container", ctx.span(target.value)), ("index", ctx.span(target.slice)),
             ("value", ctx.span(value_node)), *ctx.owner_spans(value_node))
    several = isinstance(value_node, ast.List | ast.Tuple) and len(value_node.elts) >= 2 and not any(
        isinstance(e, ast.Starred) for e in value_node.elts
    )
    if syn.is_slice(target) and not several:
        return Fix(FixKind.STORE, "unsafe", spans,
                   "a slice store broadcasts a shorter value; devptr.store() requires "
                   "one pointer per element")
    if not syn.is_nonnegative_index(target.slice, ctx.counters):
        return Fix(FixKind.STORE, "unsafe", spans,
                   "the index may be negative (devptr.store() raises where the original "
                   "counted from the end) or not an int")
    if val is not None and val.kind is not Kind.ADDR and not several:
        return Fix(FixKind.STORE, "unsafe", spans, "the value is not a single address")
    if val is not None and val.by_name:
        return Fix(FixKind.STORE, "unsafe", spans,
                   "the value is an address only by its name")
    return Fix(FixKind.STORE, "safe", spans)


class RawAddressStore(RuleUnit):
    """DP001."""

    rule: ClassVar[Rule] = Rule.DP001
    name: ClassVar[str] = "raw-address-store"
    category: ClassVar[Category] = "defect"
    summary: ClassVar[str] = "raw device address stored into a container that rejects it"
    why: ClassVar[str] = (
        "an address >= 2**63 raises 'ValueError: Overflow when unpacking long long' in an "
        "int64 torch tensor (setitem), 'RuntimeError: value cannot be converted to type "
        "int64_t without overflow' (fill_), 'OverflowError: Python int too large to convert "
        "to C long' in an int64 numpy array; a uint64 torch tensor rejects it by setitem on "
        "torch 2.13 and rejects the two's-complement value on torch 2.14"
    )
    fix: ClassVar[str] = "devptr.store(container, index, DevicePtr(addr)) or a PtrBuffer"
    mypy_code: ClassVar[str] = "devptr-raw-store"
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.STORE,)
    rewrite: ClassVar[str] = "devptr.migrate.dp001_store"

    def store(
        self, cont: Val | None, value: Val, target: ast.Subscript | None, *, fill: bool
    ) -> str | None:
        return None if is_host(value) else store_message(cont, value, target, fill)


UNIT = RawAddressStore()
