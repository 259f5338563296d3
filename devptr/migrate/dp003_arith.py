"""ADDRESSES fixes (DP003): address arithmetic on int64 numpy arrays -> ``devptr.addresses``.

``t.data_ptr() + idx * s`` (``idx`` an int64 numpy array, which numpy cannot combine with
an address >= 2**63) becomes ``devptr.addresses(devptr.DevicePtr.of(t), idx, s)``: a uint64
array, overflow-checked. The engine finds the site (its base, index and stride spans) and
marks every such fix unsafe: ``addresses`` needs a non-negative integer index, raises where
the numpy sum wrapped past 2**64, and returns uint64 where the original returned int64.
The uint64 spellings (``np.uint64(t.data_ptr()) + idx.astype(np.uint64) * s``) keep every
address and are not findings, so they are not rewritten.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._construct import pointer
from devptr.migrate._edit import Edit
from devptr.migrate._names import devptr_call
from devptr.migrate._spans import SpanIndex


def build(finding: Finding, fix: Fix, index: SpanIndex) -> Edit | None:
    """``devptr.addresses(base, index, stride)`` replacing the sum the finding is on."""
    total = index.node(finding.span)
    base = index.node(fix.span("base"))
    rows = index.node(fix.span("index"))
    stride = index.node(fix.span("stride")) if fix.span("stride") is not None else cst.Integer("1")
    if total is None or base is None or rows is None or stride is None:
        return None
    owners = {id(n) for s in fix.all_spans("owner") if (n := index.node(s)) is not None}
    new = devptr_call(("addresses",), [pointer(base, owners), rows, stride])
    return Edit(total, new.with_changes(lpar=total.lpar, rpar=total.rpar))
