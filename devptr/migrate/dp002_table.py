"""TABLE fixes (DP002, DP006): integer pointer tables -> ``devptr.ptr_tensor``.

``torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=d)`` becomes
``devptr.ptr_tensor(list(ts), encoding=devptr.Encoding.I64, device=d)``: the consumer keeps
the dtype and bits it had (the fix's ``encoding`` fact: int64 or no dtype -> ``I64``,
uint64 -> ``U64``), and addresses >= 2**63 no longer raise. ``list(ts)`` iterates ``ts``
exactly as the comprehension did (``ts`` may be one stacked tensor whose rows are the
tensors); a list or tuple display is passed as it is.

The rule unit (``devptr.lint.engine.rules.dp002_table``) decides
where (a ``torch.tensor``/``torch.as_tensor`` call with only ``dtype``
and ``device``) and whether the fix is safe; a ``dtype=torch.uint64`` table already keeps
every address, so its rewrite is a DP006 convention fix. This module builds the call.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._construct import tensors_or_pointers
from devptr.migrate._edit import Edit
from devptr.migrate._names import attr_chain, devptr_call
from devptr.migrate._spans import SpanIndex


def build(finding: Finding, fix: Fix, index: SpanIndex) -> Edit | None:
    """The ``devptr.ptr_tensor(...)`` call replacing the table constructor."""
    call = index.node(fix.span("call"))
    data = index.node(fix.span("value"))
    encoding = fix.fact("encoding")
    if not isinstance(call, cst.Call) or data is None or encoding not in ("I64", "U64"):
        return None
    owners = {id(n) for s in fix.all_spans("owner") if (n := index.node(s)) is not None}
    items = tensors_or_pointers(data, owners, index.node(fix.span("target")))
    if items is None:
        return None
    kwargs: list[tuple[str, cst.BaseExpression]] = [
        ("encoding", attr_chain("devptr", "Encoding", encoding))
    ]
    device = index.node(fix.span("device"))
    if device is not None:
        kwargs.append(("device", device))
    new = devptr_call(("ptr_tensor",), [items], kwargs)
    return Edit(call, new.with_changes(lpar=call.lpar, rpar=call.rpar))
