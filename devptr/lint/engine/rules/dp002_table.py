"""DP002 raw-address-table: an integer table built from raw device addresses with a dtype
that breaks.

Detection: a table constructor of the catalogue (``torch.tensor``, ``np.array``,
``np.stack``, ``array.array``...) over raw addresses with int64, a per-platform dtype, no
dtype (torch infers int64, numpy float64) or a non-64-bit dtype, or over two's-complement
values with uint64; host values are DP008's. Fix: TABLE, ``devptr.ptr_tensor(...)``
(``torch.tensor``/``torch.as_tensor`` with only ``dtype`` and ``device``; also carried by
DP006 and DP008 tables); safe for a list display or a one-generator comprehension whose
dtype is given (or a non-empty display), of addresses not known only by name.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._fix import Fix, FixKind, Span
from devptr.lint.engine._values import DType, Val, is_host
from devptr.lint.engine.rules._messages import (
    ARRAY_Q,
    NUMPY_FLOAT,
    NUMPY_I64,
    NUMPY_NEG_U64,
    TORCH_FULL_I64,
    TORCH_NEG_U64,
    TORCH_SETITEM_I64,
)
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

if TYPE_CHECKING:
    from devptr.lint.engine.rules._unit import FixContext

_SPELLED = {
    DType.I64: "int64", DType.BRANCH: "a per-platform dtype (int64 on CUDA/ROCm)",
    None: "no dtype (int64 inferred)", DType.OTHER: "a non-64-bit dtype",
}


def encoded_already(data: Val, dtype: DType | None) -> bool:
    """``[p.addr ...]`` as uint64, ``[p.signed ...]`` as int64: nothing to report."""
    return data.checked is not None and data.checked is dtype


def table_message(data: Val, dtype: DType | None, ctor: str) -> str | None:
    """The DP002 message of a table *ctor* over *data*, host addresses or not."""
    if encoded_already(data, dtype):
        return None
    short = ctor.replace("numpy.", "np.")
    signed = data.checked is DType.I64
    if ctor == "array.array":
        return f"array('q') built from raw device addresses: {ARRAY_Q}" if dtype is DType.I64 else None
    if ctor.startswith("torch."):
        if dtype is DType.U64:
            if signed:
                return f"{short}(..., dtype=torch.uint64) of two's-complement values: {TORCH_NEG_U64}"
            return None  # DP006: the bits are kept
        if signed:
            return None
        if dtype is DType.OTHER:
            return f"{short}() of raw device addresses with {_SPELLED[dtype]}: bits lost"
        fails = TORCH_FULL_I64 if ctor == "torch.full" else TORCH_SETITEM_I64
        return f"{short}() of raw device addresses with {_SPELLED[dtype]}: {fails} for addresses >= 2**63"
    if dtype is DType.U64:
        if signed:
            return f"{short}(..., dtype=uint64) of two's-complement values: {NUMPY_NEG_U64}"
        return None
    if signed:
        return None
    if dtype is DType.I64 or dtype is DType.BRANCH:
        return f"{short}(..., dtype=int64) of raw device addresses: {NUMPY_I64}"
    if dtype is DType.OTHER:
        return f"{short}() of raw device addresses with a non-64-bit dtype: bits lost"
    return f"{short}() of raw device addresses without a dtype: {NUMPY_FLOAT}"


def table_fix(ctx: FixContext, node: ast.Call, ctor: str, data_node: ast.expr | None,
              dtype_node: ast.expr | None, data: Val | None) -> Fix | None:
    """The TABLE fix of ``ctor(data_node, dtype=dtype_node)`` (DP002, DP006, DP008 tables)."""
    if data_node is None or ctor not in ("torch.tensor", "torch.as_tensor"):
        return None
    if len(node.args) != 1 or any(kw.arg not in ("dtype", "device") for kw in node.keywords):
        return None  # an argument ptr_tensor() has no counterpart for
    dt = None if dtype_node is None else syn.literal_dtype(dtype_node, ctx.names)
    if dtype_node is not None and dt not in (DType.I64, DType.U64):
        return None
    spans: list[tuple[str, Span]] = [("call", ctx.span(node)), ("value", ctx.span(data_node))]
    if dtype_node is not None:
        spans.append(("dtype", ctx.span(dtype_node)))
    device_node = syn.kwarg(node, "device")
    if device_node is not None:
        spans.append(("device", ctx.span(device_node)))
    spans += ctx.owner_spans(data_node)
    reason = ""
    if isinstance(data_node, ast.ListComp | ast.GeneratorExp) and len(data_node.generators) == 1:
        gen = data_node.generators[0]
        spans += [("source", ctx.span(gen.iter)), ("target", ctx.span(gen.target))]
    elif not isinstance(data_node, ast.List | ast.Tuple | ast.ListComp | ast.GeneratorExp):
        reason = "the data is not a literal list: it may be any iterable"
    if dtype_node is None and not (isinstance(data_node, ast.List | ast.Tuple) and data_node.elts):
        reason = reason or (
            "with no dtype an empty iterable builds a float32 tensor, ptr_tensor() an int64 one"
        )
    if data is not None and data.by_name:
        reason = reason or "the data holds addresses only by its name"
    facts = (("encoding", "U64" if dt is DType.U64 else "I64"),)
    return Fix(FixKind.TABLE, "unsafe" if reason else "safe", tuple(spans), reason, facts)


class RawAddressTable(RuleUnit):
    """DP002."""

    rule: ClassVar[Rule] = Rule.DP002
    name: ClassVar[str] = "raw-address-table"
    category: ClassVar[Category] = "defect"
    summary: ClassVar[str] = "integer table built from raw device addresses with a dtype that breaks"
    why: ClassVar[str] = (
        "torch.tensor/as_tensor([p]) with int64 or no dtype raises 'ValueError: Overflow "
        "when unpacking long long' for p >= 2**63, numpy int64 and array('q') raise "
        "OverflowError, and numpy without a dtype (array, stack, column_stack, concatenate) "
        "silently builds float64 and loses the low address bits"
    )
    fix: ClassVar[str] = "devptr.ptr_tensor(tensors_or_ptrs, encoding=..., device=...)"
    mypy_code: ClassVar[str] = "devptr-raw-table"
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.TABLE,)
    rewrite: ClassVar[str] = "devptr.migrate.dp002_table"

    def table(self, data: Val, dtype: DType | None, ctor: str) -> str | None:
        return None if is_host(data) else table_message(data, dtype, ctor)


UNIT = RawAddressTable()
