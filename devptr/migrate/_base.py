"""The base class of every rule codemod: counting, TODO comments and warnings.

Each rule is one :class:`RuleCodemod` subclass (a libcst ``VisitorBasedCodemodCommand``).
A subclass calls :meth:`RuleCodemod.rewrote` for every site it rewrites and
:meth:`RuleCodemod.flag` for every site it cannot rewrite safely; ``flag`` puts a
``# TODO[devptr]: DPxxx <why>`` comment above the enclosing statement (once, however many
times the codemod runs) and a warning line into ``context.warnings``.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar, Final, TypeVar, cast

import attrs
import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.metadata import PositionProvider

from devptr.lint.rules import Rule

CSTNodeT = TypeVar("CSTNodeT", bound=cst.CSTNode)

TODO_PREFIX: Final = "# TODO[devptr]:"
STATS_KEY: Final = "devptr.migrate.stats"


@attrs.define
class MigrateStats:
    """Per-file counters shared by all rule codemods through ``context.scratch``."""

    rewrites: Counter[Rule] = attrs.field(factory=Counter)
    todos: Counter[Rule] = attrs.field(factory=Counter)


def stats_of(context: CodemodContext) -> MigrateStats:
    """Return (creating on first use) the stats object of a codemod context."""
    stats = context.scratch.get(STATS_KEY)
    if not isinstance(stats, MigrateStats):
        stats = MigrateStats()
        context.scratch[STATS_KEY] = stats
    return stats


def todo_text(rule: Rule, why: str) -> str:
    """The comment placed above a site that needs a human."""
    return f"{TODO_PREFIX} {rule.value} {why}"


class RuleCodemod(VisitorBasedCodemodCommand):
    """Base of the per-rule codemods. Subclasses set ``RULE`` and ``DESCRIPTION``."""

    RULE: ClassVar[Rule]

    def __init__(self, context: CodemodContext) -> None:
        super().__init__(context)
        self._pending: list[list[str]] = []

    # -- bookkeeping used by subclasses -------------------------------------------------

    def rewrote(self) -> None:
        """Count one rewritten site and make sure ``import devptr`` is present."""
        stats_of(self.context).rewrites[self.RULE] += 1
        self.add_needed_import("devptr")

    def flag(self, original: cst.CSTNode, why: str) -> None:
        """Mark ``original`` (a node of the input tree) as needing a manual change."""
        stats_of(self.context).todos[self.RULE] += 1
        where = "?:?"
        wrapper = self.context.wrapper
        if wrapper is not None:  # positions are computed only when a site is flagged
            positions = wrapper.resolve(PositionProvider)
            if original in positions:
                pos = positions[original]
                where = f"{pos.start.line}:{pos.start.column + 1}"
        name = self.context.filename or "<string>"
        self.warn(f"{name}:{where}: {self.RULE.value} {why}")
        if self._pending:
            self._pending[-1].append(todo_text(self.RULE, why))

    # -- statement stack: TODO comments go above the innermost enclosing statement ------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self._pending.append([])
        return super().on_visit(node)

    def on_leave(
        self, original_node: CSTNodeT, updated_node: CSTNodeT
    ) -> CSTNodeT | cst.RemovalSentinel:
        result = super().on_leave(original_node, updated_node)
        if not isinstance(original_node, cst.BaseStatement):
            return result
        todos = self._pending.pop()
        if todos and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return cast(CSTNodeT, _with_todos(result, todos))
        return result


def _with_todos(
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement, todos: list[str]
) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
    existing = [line.comment.value for line in stmt.leading_lines if line.comment is not None]
    new_lines: list[cst.EmptyLine] = []
    for text in dict.fromkeys(todos):
        rule_prefix = text[: len(TODO_PREFIX) + 6]
        if any(c.startswith(rule_prefix) for c in existing):
            continue
        new_lines.append(cst.EmptyLine(indent=True, comment=cst.Comment(text)))
    if not new_lines:
        return stmt
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, *new_lines])
