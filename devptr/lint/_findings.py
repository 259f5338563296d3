"""A finding: one rule violation at one place in one file."""

from __future__ import annotations

import attrs

from devptr.lint.rules import Rule


@attrs.frozen(order=True)
class Finding:
    """One reported violation.

    Parameters
    ----------
    path
        File path as given on the command line (or relative to it).
    line, col
        1-based position of the offending expression or statement.
    rule
        The rule it violates.
    message
        A one-line explanation specific to this site.
    end_line
        Last line of the enclosing statement; an inline suppression anywhere from ``line``
        to ``end_line`` applies.
    """

    path: str
    line: int
    col: int
    rule: Rule = attrs.field(order=lambda r: r.value)
    message: str = attrs.field(order=False)
    end_line: int = attrs.field(order=False, default=0)

    @property
    def code(self) -> str:
        """The rule code (``DP001``)."""
        return self.rule.value
