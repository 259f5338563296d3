"""DP005: per-platform pointer dtype branches -> ``devptr.encoding_for(...)``.

``torch.uint64 if current_platform.is_xpu() else torch.int64`` becomes
``devptr.encoding_for(current_platform.device_type).torch_dtype`` (numpy dtypes give
``.numpy_dtype``), and the statement form ``if p.is_xpu(): d = torch.uint64 / else: d =
torch.int64`` becomes one assignment. ``encoding_for`` maps ``xpu`` to uint64 and every other
known backend to int64, which is what the branch said, and it honours ``DEVPTR_ENCODING``.
Recognised tests: ``<obj>.is_xpu()`` (device ``<obj>.device_type``) and ``<dev>.type ==
"xpu"`` (device ``<dev>.type``), either branch order. Other xpu tests get a TODO.

Safety and category: the branch is correct where written, so the fix is a convention fix
(applied only when DP005 is selected), and it is unsafe: ``encoding_for`` raises for a
device type it does not know (``""``, ``tpu``, ``npu``, ``musa`` unless registered) where
the branch gave int64, and it follows ``DEVPTR_ENCODING``.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._base import RuleCodemod
from devptr.migrate._names import (
    INT64_NAMES,
    UINT64_NAMES,
    devptr_call,
    is_dtype,
    mentions,
    strip_parens,
)

_UNSAFE = (
    "devptr.encoding_for raises for device types it does not know (e.g. '', tpu, npu, musa) "
    "where the branch gave int64"
)
_WHY = (
    "per-platform pointer dtype branch that devptr cannot map to encoding_for; use "
    "devptr.encoding_for(<device>).torch_dtype or an explicit devptr.Encoding"
)


class PlatformDtypeCodemod(RuleCodemod):
    """Rewrite ``uint64 if xpu else int64`` branches as ``devptr.encoding_for``."""

    RULE = Rule.DP005
    TRIGGER = _triggers.UINT64
    DESCRIPTION = "torch.uint64 if p.is_xpu() else torch.int64 -> devptr.encoding_for(...)"

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        lib = _dtype_pair(updated_node.body, updated_node.orelse)
        if lib is None:
            return updated_node
        xpu_first = lib[1]
        device = _xpu_device(updated_node.test, xpu_first)
        if device is None:
            if mentions(updated_node.test, "xpu"):
                self.flag(original_node, _WHY)
            return updated_node
        if not self.fix(original_node, unsafe=_UNSAFE):
            return updated_node
        return _dtype_expr(device, lib[0]).with_changes(
            lpar=updated_node.lpar, rpar=updated_node.rpar
        )

    def leave_If(
        self, original_node: cst.If, updated_node: cst.If
    ) -> cst.BaseStatement:
        orelse = updated_node.orelse
        if not isinstance(orelse, cst.Else):
            return updated_node
        then = _single_assign(updated_node.body)
        other = _single_assign(orelse.body)
        if then is None or other is None or not then[0].deep_equals(other[0]):
            return updated_node
        lib = _dtype_pair(then[1], other[1])
        if lib is None:
            return updated_node
        device = _xpu_device(updated_node.test, lib[1])
        if device is None:
            if mentions(updated_node.test, "xpu"):
                self.flag(original_node, _WHY)
            return updated_node
        if not self.fix(original_node, unsafe=_UNSAFE):
            return updated_node
        assign = cst.Assign(targets=[cst.AssignTarget(then[0])], value=_dtype_expr(device, lib[0]))
        return cst.SimpleStatementLine(body=[assign], leading_lines=updated_node.leading_lines)


def _dtype_pair(first: cst.BaseExpression, second: cst.BaseExpression) -> tuple[str, bool] | None:
    """(library, uint64-comes-first) when the branches are uint64/int64 of one library."""
    for a, b, u_first in ((first, second, True), (second, first, False)):
        lib = is_dtype(strip_parens(a), UINT64_NAMES)
        if lib is not None and is_dtype(strip_parens(b), INT64_NAMES) == lib:
            return lib, u_first
    return None


def _xpu_device(test: cst.BaseExpression, xpu_first: bool) -> cst.BaseExpression | None:
    """The device-type expression when ``test`` asks "is this XPU" in the right polarity."""
    test = strip_parens(test)
    negated = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated, test = True, strip_parens(test.expression)
    device: cst.BaseExpression | None = None
    positive = True
    if (
        isinstance(test, cst.Call)
        and not test.args
        and isinstance(test.func, cst.Attribute)
        and test.func.attr.value == "is_xpu"
    ):
        device = cst.Attribute(value=test.func.value, attr=cst.Name("device_type"))
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
            positive = isinstance(comp.operator, cst.Equal)
            for side, other in ((test.left, comp.comparator), (comp.comparator, test.left)):
                if (
                    isinstance(other, cst.SimpleString)
                    and other.evaluated_value == "xpu"
                    and isinstance(side, cst.Attribute)
                    and side.attr.value == "type"
                ):
                    device = side
    if device is None:
        return None
    is_xpu_when_true = positive != negated
    return device if is_xpu_when_true == xpu_first else None


def _dtype_expr(device: cst.BaseExpression, lib: str) -> cst.BaseExpression:
    attr = "torch_dtype" if lib == "torch" else "numpy_dtype"
    return cst.Attribute(value=devptr_call(("encoding_for",), [device]), attr=cst.Name(attr))


def _single_assign(
    block: cst.BaseSuite,
) -> tuple[cst.BaseAssignTargetExpression, cst.BaseExpression] | None:
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    stmt = block.body[0]
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    return assign.targets[0].target, assign.value
