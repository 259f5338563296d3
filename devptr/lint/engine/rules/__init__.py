"""The rules, one unit per module: ``dp001_store`` ... ``dp008_host``.

Each module holds one rule's code, category and documentation, its detection at the sites
the evaluator (:class:`devptr.lint.engine._evaluator.Evaluator`) reports, its messages, the
fix its findings carry and the fix's safety, and names the ``devptr migrate`` module that
applies that fix. Its fixtures are beside it in the tests (``tests/rules/dpNNN/``).
:class:`RuleSet` is what one evaluation runs: the selected units, by kind of site; a rule
that is not selected is never asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from devptr.lint.engine.rules import (
    dp001_store,
    dp002_table,
    dp003_arith,
    dp004_twos,
    dp005_dtype,
    dp006_unchecked,
    dp007_wrapping,
    dp008_host,
)
from devptr.lint.engine.rules._unit import (
    CATEGORIES,
    Category,
    FixContext,
    Rule,
    RuleUnit,
    Verdict,
)

RULES: Final[dict[Rule, RuleUnit]] = {
    unit.rule: unit
    for unit in (
        dp001_store.UNIT, dp002_table.UNIT, dp003_arith.UNIT, dp004_twos.UNIT,
        dp005_dtype.UNIT, dp006_unchecked.UNIT, dp007_wrapping.UNIT, dp008_host.UNIT,
    )
}
"""Every rule's unit, in code order."""

RuleInfo = RuleUnit
"""The name this catalogue had before the rules became units (same attributes)."""


def rules_in(category: Category) -> frozenset[Rule]:
    """The rules of one category."""
    return frozenset(r for r, unit in RULES.items() if unit.category == category)


DEFAULT_RULES: Final[frozenset[Rule]] = rules_in("defect")
"""What runs without ``--select``: the defects."""


def _overrides(unit: RuleUnit, hook: str) -> bool:
    return getattr(type(unit), hook) is not getattr(RuleUnit, hook)


class RuleSet:
    """The units one evaluation runs (*rules*; None: every rule), grouped by the site
    hooks they override, so a site asks only the selected rules that judge it."""

    __slots__ = ("active", "arith", "ctypes_array", "store", "table")

    def __init__(self, rules: Iterable[Rule] | None = None) -> None:
        units = [RULES[r] for r in (Rule if rules is None else sorted(set(rules), key=lambda r: r.value))]
        self.active: frozenset[Rule] = frozenset(u.rule for u in units)
        self.store = tuple(u for u in units if _overrides(u, "store"))
        self.table = tuple(u for u in units if _overrides(u, "table"))
        self.ctypes_array = tuple(u for u in units if _overrides(u, "ctypes_array"))
        self.arith = tuple(u for u in units if _overrides(u, "arith"))


__all__ = [
    "CATEGORIES",
    "DEFAULT_RULES",
    "RULES",
    "Category",
    "FixContext",
    "Rule",
    "RuleInfo",
    "RuleSet",
    "RuleUnit",
    "Verdict",
    "rules_in",
]
