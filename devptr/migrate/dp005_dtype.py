"""DTYPE_BRANCH fixes (DP005): per-platform pointer dtype branches -> ``encoding_for``.

``torch.uint64 if current_platform.is_xpu() else torch.int64`` becomes
``devptr.encoding_for(current_platform.device_type, default=devptr.Encoding.I64).torch_dtype``
(numpy dtypes give ``.numpy_dtype``, the fix's ``dtype_attr`` fact), and the statement
form ``if p.is_xpu(): d = torch.uint64 / else: d = torch.int64`` becomes one assignment.
A ``d.type == "xpu"`` test passes ``d.type``. ``encoding_for`` maps ``xpu`` to uint64 and
every other known backend to int64, and ``default=`` gives a device type it does not know
(``""``, ``tpu``, ``npu``, ``musa``) the branch's other answer, int64: never an error at
import time.

The engine gives a fix only for those test spellings with uint64 on the XPU side (so the
other side is int64), and marks it unsafe: ``encoding_for`` follows ``DEVPTR_ENCODING``
and :func:`devptr.register_backend`, which the branch ignored.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._edit import Edit
from devptr.migrate._names import attr_chain, devptr_call
from devptr.migrate._spans import SpanIndex


def build(finding: Finding, fix: Fix, index: SpanIndex) -> Edit | None:
    """The ``encoding_for(...)`` expression (or assignment) replacing the branch."""
    attr = fix.fact("dtype_attr")
    platform = index.node(fix.span("platform"))
    device: cst.BaseExpression | None = index.node(fix.span("device"))
    if platform is not None:
        device = cst.Attribute(value=platform, attr=cst.Name("device_type"))
    if device is None or attr not in ("torch_dtype", "numpy_dtype"):
        return None
    fallback = attr_chain("devptr", "Encoding", "I64")  # the branch's non-XPU answer
    call = devptr_call(("encoding_for",), [device], [("default", fallback)])
    expr = cst.Attribute(value=call, attr=cst.Name(attr))
    branch = index.node(fix.span("value"))
    if isinstance(branch, cst.IfExp):
        return Edit(branch, expr.with_changes(lpar=branch.lpar, rpar=branch.rpar))
    statement = index.statement_at(fix.span("value"), cst.If)
    target = index.node(fix.span("target"))
    if not isinstance(statement, cst.If) or not isinstance(target, cst.Name):
        return None
    assign = cst.Assign(targets=[cst.AssignTarget(target)], value=expr)
    return Edit(statement, cst.SimpleStatementLine([assign], leading_lines=statement.leading_lines))
