"""What a migration run may do, what it counts, and how a TODO comment reads.

A finding the codemod leaves (no fix, an unsafe fix without ``--unsafe-fixes``, or a fix
whose shape has no rewrite) gets a ``# TODO[devptr]: DPxxx <why>`` comment above its
innermost statement, unless one for that rule is there already. Counts are taken when a
comment is really inserted, so the summary equals the diff.
"""


from __future__ import annotations

from collections import Counter
from typing import Final, TypeVar

import attrs
import libcst as cst

from devptr.lint.rules import DEFAULT_RULES, Rule

CSTNodeT = TypeVar("CSTNodeT", bound=cst.CSTNode)

TODO_PREFIX: Final = "# TODO[devptr]:"
TODO_CONTINUATION: Final = "#   "
"""How a wrapped TODO comment continues (:mod:`devptr.migrate._layout`)."""
DEFAULT_LINE_LENGTH: Final = 88


def default_rules() -> frozenset[Rule]:
    """The rules that run when none are selected: the catalogue's defect rules."""
    return DEFAULT_RULES


@attrs.frozen
class Options:
    """What a run may do.

    Attributes
    ----------
    rules
        The selected rules: their safe fixes apply, their other sites get TODOs. By default
        the *defect* rules (:func:`default_rules`); convention rules, whose fixes change no
        bits (an already-correct uint64 table, a correct two's complement, a per-platform
        dtype branch), run only when selected.
    unsafe_fixes
        Apply fixes that may change behaviour for some input the original accepted
        (``--unsafe-fixes``); without it such sites get a TODO naming the risk.
    line_length
        The target project's line length: rewritten statements and TODO comments are
        wrapped to fit.
    """

    rules: frozenset[Rule] = attrs.field(factory=lambda: default_rules())
    unsafe_fixes: bool = False
    line_length: int = DEFAULT_LINE_LENGTH


@attrs.frozen
class Note:
    """A TODO inserted for a finding, at the line and column of the file as written."""

    line: int
    column: int
    rule: Rule
    why: str


@attrs.define
class MigrateStats:
    """Per-file counters of one migration.

    ``rewrites`` counts applied fixes, ``unsafe`` the applied fixes that were unsafe (a
    subset), ``todos`` the TODO comments inserted (not the sites seen).
    """

    rewrites: Counter[Rule] = attrs.field(factory=Counter)
    unsafe: Counter[Rule] = attrs.field(factory=Counter)
    todos: Counter[Rule] = attrs.field(factory=Counter)
    needs_import: bool = False


def todo_text(rule: Rule, why: str) -> str:
    """The comment placed above a site that needs a human (one line; wrapped later)."""
    return f"{TODO_PREFIX} {rule.value} {' '.join(why.split())}"


def has_todo(node: cst.SimpleStatementLine | cst.BaseCompoundStatement, rule: Rule) -> bool:
    """Whether the comments right above ``node`` hold a TODO for ``rule``."""
    prefix = f"{TODO_PREFIX} {rule.value}"
    return any(
        line.comment is not None and line.comment.value.startswith(prefix)
        for line in node.leading_lines
    )


def without_todos(
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement, rules: set[Rule]
) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
    """``stmt`` without the TODO comments (and their ``#   `` continuation lines) of
    ``rules`` right above it: an applied fix removes the TODO an earlier run left."""
    prefixes = tuple(f"{TODO_PREFIX} {rule.value}" for rule in rules)
    kept: list[cst.EmptyLine] = []
    dropping = False
    for line in stmt.leading_lines:
        text = line.comment.value if line.comment is not None else None
        if text is not None and text.startswith(prefixes):
            dropping = True
            continue
        if dropping and text is not None and text.startswith(TODO_CONTINUATION):
            continue
        dropping = False
        kept.append(line)
    if len(kept) == len(stmt.leading_lines):
        return stmt
    return stmt.with_changes(leading_lines=kept)


def with_todos(
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement, notes: list[Note]
) -> tuple[cst.SimpleStatementLine | cst.BaseCompoundStatement, list[Note]]:
    """``stmt`` with a TODO line per note whose rule has none yet, and the notes inserted."""
    new_lines: list[cst.EmptyLine] = []
    inserted: list[Note] = []
    seen: set[Rule] = set()
    for note in notes:
        if note.rule in seen or has_todo(stmt, note.rule):
            continue
        seen.add(note.rule)
        inserted.append(note)
        text = todo_text(note.rule, note.why)
        new_lines.append(cst.EmptyLine(indent=True, comment=cst.Comment(text)))
    if not new_lines:
        return stmt, []
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, *new_lines]), inserted
