"""DP003 raw-address-arithmetic: address arithmetic on numpy arrays that overflows or loses
bits.

Detection: a raw device address combined with a numpy array that is not uint64 (int64
raises, a non-integer array loses bits), a ``np.uint64`` address with a signed array or
scalar (float64), and a uint64 address array combined with an int64 one (float64). Host
addresses are not reported. Fix: ADDRESSES, ``devptr.addresses(base, index, stride)`` for
``base + idx * stride``; always unsafe.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar, Final

from devptr.lint.engine._fix import Fix, FixKind
from devptr.lint.engine._values import DType, Kind, Lib, Val
from devptr.lint.engine.rules._messages import NUMPY_I64
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

if TYPE_CHECKING:
    from devptr.lint.engine._scope import Scope
    from devptr.lint.engine.rules._unit import FixContext

MIXED_ARRAYS: Final = (
    "uint64 address array combined with an int64 array: numpy promotes to float64 and "
    "loses the low address bits"
)


def addresses_fix(ctx: FixContext, node: ast.BinOp, addr_left: bool, scope: Scope) -> Fix | None:
    """The fix of ``addr + idx * stride`` (``idx`` a numpy array): ``devptr.addresses``."""
    base, other = (node.left, node.right) if addr_left else (node.right, node.left)
    index, stride = other, None
    if isinstance(other, ast.BinOp) and isinstance(other.op, ast.Mult):
        for i, s in ((other.left, other.right), (other.right, other.left)):
            v = ctx.eval(i, scope)
            if v is not None and v.kind in (Kind.ARRAY, Kind.ADDR_ARRAY) and v.lib is Lib.NUMPY:
                index, stride = i, s
                break
        else:
            return None
    spans = [("base", ctx.span(base)), ("index", ctx.span(index)), *ctx.owner_spans(base)]
    if stride is not None:
        spans.append(("stride", ctx.span(stride)))
    return Fix(FixKind.ADDRESSES, "unsafe", tuple(spans),
               "devptr.addresses needs a 1-D non-negative integer index, raises where "
               "numpy wrapped past 2**64 and returns uint64 where this gave int64")


class RawAddressArithmetic(RuleUnit):
    """DP003."""

    rule: ClassVar[Rule] = Rule.DP003
    name: ClassVar[str] = "raw-address-arithmetic"
    category: ClassVar[Category] = "defect"
    summary: ClassVar[str] = "address arithmetic on numpy arrays that overflows or loses bits"
    why: ClassVar[str] = (
        "an int64 numpy array plus an address >= 2**63 raises 'OverflowError: Python int "
        "too large to convert to C long'; a uint64 array combined with an int64 one "
        "silently promotes to float64 and loses the low address bits"
    )
    fix: ClassVar[str] = "devptr.addresses(base, index, stride, offset) (uint64, overflow-checked)"
    mypy_code: ClassVar[str] = "devptr-raw-arith"
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.ADDRESSES,)
    rewrite: ClassVar[str] = "devptr.migrate.dp003_arith"

    def arith(self, addr: Val, other: Val) -> str | None:
        if addr.host or other.lib is Lib.TORCH or other.dtype is DType.U64:
            return None  # host addresses cannot overflow; torch is DP007's; uint64 keeps bits
        if other.dtype is DType.OTHER:
            return "raw address combined with a non-integer array: low bits lost"
        if addr.np_scalar:
            return (
                "np.uint64 address combined with a signed array: numpy promotes to float64 and "
                "loses the low address bits"
            )
        return f"raw address combined with an int64 numpy array: {NUMPY_I64} for addresses >= 2**63"


UNIT = RawAddressArithmetic()
