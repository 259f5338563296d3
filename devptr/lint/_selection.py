"""The one parser of rule selections, for ``--select``/``--ignore`` (``check`` and
``migrate``) and ``[tool.devptr] select``/``ignore``.

A selection is a list of items, each a rule code (``DP001``), a code prefix (``DP00``), a
category (``defect``, ``convention``, ``host``) or ``ALL``. On the command line items are
comma-separated and the option is repeatable: ``--select DP001,DP002 --select DP006`` is
``DP001, DP002, DP006``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from devptr.lint.errors import SelectionError
from devptr.lint.rules import CATEGORIES, DEFAULT_RULES, RULES, Rule


def split_items(values: Sequence[str] | None) -> list[str]:
    """``["DP001,DP002", " DP006 "]`` -> ``["DP001", "DP002", "DP006"]``."""
    out: list[str] = []
    for value in values or ():
        out.extend(item.strip() for item in value.split(",") if item.strip())
    return out


def rules_for(item: str) -> frozenset[Rule]:
    """The rules one selection item names (empty when it names none)."""
    upper = item.strip().upper()
    if upper == "ALL":
        return frozenset(Rule)
    if item.strip().lower() in CATEGORIES:
        return frozenset(r for r, info in RULES.items() if info.category == item.strip().lower())
    return frozenset(r for r in Rule if r.value.startswith(upper)) if upper.startswith("DP") else (
        frozenset()
    )


def parse_selection(
    values: Sequence[str] | None, source: str, *, allow_empty: bool = False
) -> tuple[str, ...]:
    """Validate and normalize a selection.

    Parameters
    ----------
    values
        Raw option values (each may hold comma-separated items) or config list items; None
        when the option or key is absent.
    source
        Where they came from, for the error (``"--select"``, ``"[tool.devptr] ignore"``).
    allow_empty
        Accept an empty list (``ignore = []``). A value that is given but names nothing
        (``--select ""``, ``--ignore ,``, ``select = []``) is otherwise an error: a CI gate
        must not silently run no rule.

    Returns
    -------
    tuple of str
        The items, stripped, in order.

    Raises
    ------
    SelectionError
        When an item names no rule, or *values* is given and holds no item.
    """
    items = split_items(values)
    if values is not None and not items and not (allow_empty and not values):
        raise SelectionError(
            f"{source}: empty rule selection (expected codes such as DP001, a prefix, a "
            f"category ({', '.join(CATEGORIES)}) or ALL)"
        )
    for item in items:
        if not rules_for(item):
            known = ", ".join(r.value for r in Rule)
            raise SelectionError(
                f"{source}: unknown rule selector {item!r} (expected a code or prefix of "
                f"{known}, a category ({', '.join(CATEGORIES)}) or ALL)"
            )
    return tuple(items)


def resolve(select: Iterable[str] | None, ignore: Iterable[str] = ()) -> frozenset[Rule]:
    """The enabled rules: *select* (default: the defect rules) minus *ignore* (may be empty:
    :func:`devptr.lint._config.command_config` refuses that for the commands)."""
    chosen: set[Rule] = set(DEFAULT_RULES) if select is None else set()
    for item in select or ():
        chosen |= rules_for(item)
    for item in ignore:
        chosen -= rules_for(item)
    return frozenset(chosen)
