"""DP005 per-platform-pointer-dtype: a per-platform pointer dtype branch (convention).

Detection: ``torch.uint64 if <platform test> else torch.int64`` and the ``if`` statement
that assigns one name each way (``_syntax.dtype_branch_target``). Fix: DTYPE_BRANCH,
``encoding_for(...).torch_dtype`` (or ``numpy_dtype``) when the test is ``p.is_xpu()`` or
``d.type == "xpu"`` with uint64 on the XPU side; always unsafe.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar, Final

from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._fix import Fix, FixKind, Span
from devptr.lint.engine._values import DType
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

if TYPE_CHECKING:
    from devptr.lint.engine.rules._unit import FixContext

EXPRESSION: Final = "per-platform pointer dtype (uint64 vs int64 branch)"
STATEMENT: Final = "per-platform pointer dtype chosen by an if statement"


def _xpu_test(ctx: FixContext, test: ast.expr) -> tuple[bool, tuple[str, Span] | None]:
    """Whether *test* is true on XPU, and the span the fix names (None: not a known test)."""
    if (
        isinstance(test, ast.Call) and not test.args and not test.keywords
        and isinstance(test.func, ast.Attribute) and test.func.attr == "is_xpu"
    ):
        return True, ("platform", ctx.span(test.func.value))
    where: tuple[str, Span] | None = None
    positive = True
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
        test.ops[0], ast.Eq | ast.NotEq
    ):
        positive = isinstance(test.ops[0], ast.Eq)
        for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            if isinstance(other, ast.Constant) and other.value == "xpu" and isinstance(
                side, ast.Attribute
            ) and side.attr == "type":
                where = ("device", ctx.span(side))
    return positive, where


def branch_fix(ctx: FixContext, node: ast.AST, test: ast.expr, uint64: ast.expr | None,
               uint64_first: bool, target: ast.expr | None = None) -> Fix | None:
    """The fix of a per-platform dtype branch whose test is an XPU test of known shape."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if isinstance(test, ast.UnaryOp) and negated:
        test = test.operand
    positive, where = _xpu_test(ctx, test)
    if where is None or (positive != negated) != uint64_first or uint64 is None:
        return None
    lib = (ctx.names.qual(uint64) or "").partition(".")[0]
    if lib not in ("torch", "numpy"):
        return None
    spans = [("value", ctx.span(node)), where]
    if target is not None:
        spans.append(("target", ctx.span(target)))
    return Fix(FixKind.DTYPE_BRANCH, "unsafe", tuple(spans),
               "encoding_for() follows DEVPTR_ENCODING and register_backend(), which "
               "the branch ignored", (("dtype_attr", f"{lib}_dtype"),))


def statement_fix(ctx: FixContext, stmt: ast.If) -> Fix | None:
    """The fix of a branch ``dtype_branch_target`` recognised, when each side is that one
    assignment (``if is_xpu(): d = torch.uint64 / else: d = torch.int64``)."""
    if len(stmt.body) != 1 or len(stmt.orelse) != 1:
        return None
    first, second = stmt.body[0], stmt.orelse[0]
    assert isinstance(first, ast.Assign) and isinstance(second, ast.Assign)
    uint64_first = syn.literal_dtype(first.value, ctx.names) is DType.U64
    uint64 = first.value if uint64_first else second.value
    return branch_fix(ctx, stmt, stmt.test, uint64, uint64_first, first.targets[0])


def expression_fix(ctx: FixContext, node: ast.IfExp) -> Fix | None:
    """The fix of ``torch.uint64 if test else torch.int64`` (either order)."""
    uint64_first = syn.literal_dtype(node.body, ctx.names) is DType.U64
    return branch_fix(ctx, node, node.test, node.body if uint64_first else node.orelse,
                      uint64_first)


class PerPlatformPointerDtype(RuleUnit):
    """DP005."""

    rule: ClassVar[Rule] = Rule.DP005
    name: ClassVar[str] = "per-platform-pointer-dtype"
    category: ClassVar[Category] = "convention"
    summary: ClassVar[str] = "per-platform pointer dtype branch"
    why: ClassVar[str] = (
        "each module re-decides the encoding (uint64 on XPU, int64 elsewhere); correct "
        "where written, but the branches drift between modules"
    )
    fix: ClassVar[str] = (
        "devptr.encoding_for(device).torch_dtype (one registry, env override DEVPTR_ENCODING)"
    )
    mypy_code: ClassVar[str] = "devptr-platform-dtype"
    in_mypy_plugin: ClassVar[bool] = False
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.DTYPE_BRANCH,)
    rewrite: ClassVar[str] = "devptr.migrate.dp005_dtype"


UNIT = PerPlatformPointerDtype()
