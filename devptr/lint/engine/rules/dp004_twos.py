"""DP004 twos-complement-spelling: a hand-written two's-complement conversion of a device
address (convention).

Detection: the spellings the evaluator recognises (``x - 2**64 if x >= 2**63 else x``,
``(x + 2**63) % 2**64 - 2**63``, ``x +/- 2**64``, ``ctypes.c_int64(x).value``, a struct
``q``/``Q`` round trip, a call of a helper whose summary encodes its argument) over a value
that is an address, or named like one; a hash or a key through the same spelling is not.
Fix: TWOS, ``DevicePtr(x).signed``; safe when ``x`` is known to come from ``data_ptr()``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from devptr.lint.engine._fix import Fix, FixKind
from devptr.lint.engine._values import Kind, Val
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

if TYPE_CHECKING:
    from devptr.lint.engine.rules._unit import FixContext


def by_hand(spelled: str) -> str:
    """The message of a spelling written out (*spelled*: the form, or ``in helper()``)."""
    return f"two's complement of a device address by hand ({spelled})"


def through(what: str) -> str:
    """The message of a conversion through a library (``ctypes.c_int64``, ``struct q/Q``)."""
    return f"two's complement of a device address through {what}"


def twos_fix(ctx: FixContext, operand: ast.expr, val: Val | None, helper: ast.expr | None = None,
             *, encoder: bool = False) -> Fix:
    """The TWOS fix over *operand* (*helper*: the two's-complement helper called)."""
    spans = [("value", ctx.span(operand)), *ctx.owner_spans(operand)]
    if helper is not None:
        spans.append(("helper", ctx.span(helper)))
    facts = (("encoder", "ctypes"),) if encoder else ()
    if val is not None and val.kind is Kind.ADDR and not val.by_name and val.checked is None:
        return Fix(FixKind.TWOS, "safe", tuple(spans), facts=facts)
    return Fix(FixKind.TWOS, "unsafe", tuple(spans),
               "DevicePtr(x) raises for values outside [0, 2**64) that the hand-written "
               "form passed through; x is not known to come from data_ptr()", facts)


class TwosComplementSpelling(RuleUnit):
    """DP004."""

    rule: ClassVar[Rule] = Rule.DP004
    name: ClassVar[str] = "twos-complement-spelling"
    category: ClassVar[Category] = "convention"
    summary: ClassVar[str] = "hand-written two's-complement conversion of a device address"
    why: ClassVar[str] = (
        "correct for int64 consumers, but each module re-implements it and the signed "
        "value is wrong for uint64 ones (torch 2.14 rejects it by setitem: 'can't convert "
        "negative int to unsigned')"
    )
    fix: ClassVar[str] = "DevicePtr(addr).signed / .encode(Encoding.I64), or devptr.store"
    mypy_code: ClassVar[str] = "devptr-twos-complement"
    in_mypy_plugin: ClassVar[bool] = False
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.TWOS,)
    rewrite: ClassVar[str] = "devptr.migrate.dp004_twos"


UNIT = TwosComplementSpelling()
