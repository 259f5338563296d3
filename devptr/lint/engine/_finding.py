"""What the engine reports: :class:`Finding` (one rule violation at one span) and its
optional :class:`~devptr.lint.engine._fix.Fix`."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from devptr.lint.engine._fix import Fix, Span
from devptr.lint.engine.rules import RULES, Category, Rule


@attrs.frozen(order=True)
class Finding:
    """One rule violation.

    Parameters
    ----------
    path
        The file, as given to the engine.
    line, col, end_line, end_col
        The offending expression in the file as written (1-based lines, 0-based character
        columns, ``end_col`` exclusive).
    rule
        The rule violated.
    message
        What really happens at this site.
    category
        The rule's category (``"defect"``, ``"convention"`` or ``"host"``).
    fix
        The mechanical rewrite, when one exists.
    callers
        For a table built by a helper from its argument: ``path:line`` of each call that
        passes addresses in (the finding is reported once, at the helper's table).
    sink
        Before :func:`collapse_helper_findings`: the helper's table (path, span) a finding
        at a call reached; None for every finding the engine returns.
    """

    path: str
    line: int
    col: int
    rule: Rule = attrs.field(order=lambda r: r.value)
    end_line: int = attrs.field(order=False, default=0)
    end_col: int = attrs.field(order=False, default=0)
    message: str = attrs.field(order=False, default="")
    category: Category = attrs.field(order=False, default="defect")
    fix: Fix | None = attrs.field(order=False, default=None, eq=False)
    callers: tuple[str, ...] = attrs.field(order=False, default=(), eq=False)
    sink: tuple[str, Span] | None = attrs.field(order=False, default=None, eq=False)

    @property
    def code(self) -> str:
        """The rule code (``DP001``)."""
        return self.rule.value

    @property
    def span(self) -> Span:
        """The offending expression's :class:`Span`."""
        return Span(self.line, self.col, self.end_line, self.end_col)

    @property
    def name(self) -> str:
        """The rule's name (``raw-address-store``)."""
        return RULES[self.rule].name


def _line_key(where: str) -> tuple[str, int]:
    path, _, line = where.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def collapse_helper_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per defect: the findings at the calls of a helper that builds a table
    from its argument become one finding at the helper's table, naming the calls.

    A finding the helper's table has of its own (its argument is named like addresses)
    is merged into it, keeping its fix. Idempotent; the result is sorted.
    """
    direct: list[Finding] = []
    groups: dict[tuple[str, int, int, Rule], list[Finding]] = {}
    for f in findings:
        if f.sink is None:
            direct.append(f)
        else:
            path, span = f.sink
            groups.setdefault((path, span.line, span.col, f.rule), []).append(f)
    own = {(f.path, f.line, f.col, f.rule): f for f in direct}
    out = [f for f in direct if (f.path, f.line, f.col, f.rule) not in groups]
    for key, calls in groups.items():
        path, _, _, rule = key
        span = calls[0].sink[1] if calls[0].sink is not None else calls[0].span
        mine = own.get(key)
        callers = tuple(sorted({f"{c.path}:{c.line}" for c in calls} | set(
            mine.callers if mine is not None else ()), key=_line_key))
        named = [w.rpartition(":")[2] if w.rpartition(":")[0] == path else w
                 for w in callers[:8]]
        shown = ", ".join(named) + (f" and {len(callers) - 8} more" if len(callers) > 8 else "")
        shown = f"line {shown}" if len(callers) == 1 and named[0] != callers[0] else (
            f"lines {shown}" if all(n != w for n, w in zip(named, callers, strict=False))
            else shown)
        out.append(Finding(
            path=path, line=span.line, col=span.col, rule=rule, end_line=span.end_line,
            end_col=span.end_col, category=calls[0].category,
            message=f"{calls[0].message}; addresses passed in at {shown}",
            fix=mine.fix if mine is not None else None, callers=callers,
        ))
    return sorted(out)
