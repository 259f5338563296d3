"""TWOS fixes (DP004): two's-complement spellings and helpers -> ``DevicePtr(...).signed``.

``_reinterpret_u64_as_i64(p)`` (a call of a helper the engine summarised as a two's
complement), ``ctypes.c_int64(p).value`` and inline ``p if p < (1 << 63) else p - (1 <<
64)`` become
``devptr.DevicePtr(p).signed`` (``devptr.DevicePtr.of(t).signed`` for ``t.data_ptr()``):
the same int64 value for every address, and a clear error for values outside
``[0, 2**64)``, which the spelling passed through silently. A helper definition left
without references is removed when nested in a function; a module-level one (private
names too: other modules and tests may import it, as vLLM's tests import
``_reinterpret_u64_as_i64``) stays, its body a one-line alias ``return
devptr.DevicePtr(value).signed`` (a helper of another shape is kept with a TODO). An
``import ctypes`` left unused is removed.

A correct two's complement changes no bits, so DP004 is a convention rule. The engine says
whether the fix is safe: only when the operand is known to be a device address.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._construct import pointer
from devptr.migrate._edit import Edit
from devptr.migrate._spans import SpanIndex


def build(finding: Finding, fix: Fix, index: SpanIndex) -> Edit | None:
    """``DevicePtr(x).signed`` replacing the spelling (or helper call) the finding is on."""
    spelling = index.node(finding.span)
    operand = index.node(fix.span("value"))
    if spelling is not None and fix.fact("encoder"):  # ctypes.c_int64(x).value
        spelling = index.attribute_of.get(id(spelling))
        if spelling is None or spelling.attr.value != "value":
            return None
    if spelling is None or operand is None:
        return None
    owners = {id(n) for s in fix.all_spans("owner") if (n := index.node(s)) is not None}
    new = cst.Attribute(value=pointer(operand, owners), attr=cst.Name("signed"))
    helper = index.node(fix.span("helper"))
    name = helper.value if isinstance(helper, cst.Name) else None
    module = fix.fact("encoder") or None
    return Edit(spelling, new.with_changes(lpar=spelling.lpar, rpar=spelling.rpar), name, module)
