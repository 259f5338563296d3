"""STORE fixes (DP001, DP006): element and slice stores of raw addresses -> ``devptr.store``.

``C[i] = t.data_ptr()`` becomes ``devptr.store(C, i, devptr.DevicePtr.of(t))``;
``C[a:b] = [x.data_ptr() for x in xs]`` becomes
``devptr.store(C, slice(a, b), [devptr.DevicePtr.of(x) for x in xs])``. ``store`` writes the
same bits into int64 containers and also works for addresses >= 2**63 and uint64 containers
on every torch version.

The rule unit (``devptr.lint.engine.rules.dp001_store``) decides
where (a store into a torch tensor or numpy array of int64/uint64) and
whether the fix is safe (``store`` never broadcasts: a slice store is safe only with a
list display of two or more addresses); this module only builds the call from the fix's
spans. A store into a uint64 numpy array changes no bits: a DP006 convention fix.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._construct import pointer, pointers
from devptr.migrate._edit import Edit
from devptr.migrate._names import devptr_call, strip_parens
from devptr.migrate._spans import SpanIndex


def build(finding: Finding, fix: Fix, index: SpanIndex) -> Edit | None:
    """The ``devptr.store(...)`` statement replacing the assignment the finding is on."""
    target = index.node(finding.span)
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return None  # a multi-dimensional store: no 1-D rewrite
    assign = index.assign_of.get(id(target))
    value = index.node(fix.span("value"))
    if assign is None or value is None or value is not assign.value:
        return None
    owners = {id(n) for s in fix.all_spans("owner") if (n := index.node(s)) is not None}
    where = target.slice[0].slice
    if isinstance(where, cst.Slice):
        index_expr: cst.BaseExpression = _slice_call(where)
    elif isinstance(where, cst.Index):
        index_expr = where.value
    else:
        return None
    bare = strip_parens(value)
    if isinstance(bare, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
        ptrs = pointers(bare, owners)  # a slice store (``C[sl] = [...]`` too)
    elif isinstance(where, cst.Slice):
        return None  # ``C[a:b] = ptrs``: a sequence by name, no element to wrap
    else:
        ptrs = pointer(bare, owners)
    if ptrs is None:
        return None
    return Edit(assign, cst.Expr(devptr_call(("store",), [target.value, index_expr, ptrs])))


def _slice_call(index: cst.Slice) -> cst.Call:
    """``a:b:c`` as ``slice(a, b, c)`` (``None`` for missing bounds)."""
    parts = [index.lower, index.upper]
    if index.step is not None:
        parts.append(index.step)
    args = [cst.Arg(value=p if p is not None else cst.Name("None")) for p in parts]
    return cst.Call(func=cst.Name("slice"), args=args)
