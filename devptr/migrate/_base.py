"""The base class of every rule codemod: counting, TODO comments and warnings.

Each rule is one :class:`RuleCodemod` subclass (a libcst ``VisitorBasedCodemodCommand``).
A subclass calls :meth:`RuleCodemod.rewrote` for every site it rewrites and
:meth:`RuleCodemod.flag` for every site it cannot rewrite safely; ``flag`` puts a
``# TODO[devptr]: DPxxx <why>`` comment above the enclosing statement (once, however many
times the codemod runs) and a warning line into ``context.warnings``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import ClassVar, Final, TypeVar, cast

import attrs
import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devptr.lint.rules import Rule

CSTNodeT = TypeVar("CSTNodeT", bound=cst.CSTNode)

TODO_PREFIX: Final = "# TODO[devptr]:"
STATS_KEY: Final = "devptr.migrate.stats"
FACTS_KEY: Final = "devptr.migrate.facts"
T = TypeVar("T")


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


class RuleCodemod(CodemodCommand, cst.CSTTransformer):
    """Base of the per-rule codemods. Subclasses set ``RULE`` and ``DESCRIPTION``.

    A codemod command that is its own (plain) ``CSTTransformer``: subclasses write
    ``visit_*``/``leave_*`` methods as in any libcst transformer. Compared with
    ``VisitorBasedCodemodCommand`` it skips the matcher dispatch and the up-front metadata
    copy of the tree (4-5x faster on large modules); source positions are computed only
    when a site is flagged.
    """

    RULE: ClassVar[Rule]
    TRIGGER: ClassVar[re.Pattern[str] | None] = None
    """Text every site of the rule contains; statements without it are not visited."""

    def __init__(self, context: CodemodContext) -> None:
        CodemodCommand.__init__(self, context)
        cst.CSTTransformer.__init__(self)
        self._pending: list[list[str]] = []
        self._input: cst.Module | None = None
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None
        self._skip: set[int] = set()

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the rule on ``tree``, then add/remove the imports it asked for."""
        self._input = tree
        self._positions = None
        tree = self.transform_module_impl(tree)
        for key, helper in (
            (AddImportsVisitor.CONTEXT_KEY, AddImportsVisitor),
            (RemoveImportsVisitor.CONTEXT_KEY, RemoveImportsVisitor),
        ):
            if self.context.scratch.get(key):
                tree = helper(self.context).transform_module(tree)
        return tree

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Visit the module with this transformer (subclasses prepare, then call super)."""
        trigger = self.statement_trigger()
        self._skip = set() if trigger is None else _quiet_statements(tree, trigger)
        return tree.visit(self)

    def statement_trigger(self) -> re.Pattern[str] | None:
        """The pattern a statement's code must match to be visited (None: visit all)."""
        return self.TRIGGER

    def fact(self, name: str, build: Callable[[cst.Module], T], tree: cst.Module) -> T:
        """A per-file analysis of the input module, computed once for all rules."""
        cache = self.context.scratch.setdefault(FACTS_KEY, {})
        if name not in cache:
            cache[name] = build(tree)
        return cast(T, cache[name])

    # -- bookkeeping used by subclasses -------------------------------------------------

    def rewrote(self) -> None:
        """Count one rewritten site and make sure ``import devptr`` is present."""
        stats_of(self.context).rewrites[self.RULE] += 1
        self.add_needed_import("devptr")

    def flag(self, original: cst.CSTNode, why: str) -> None:
        """Mark ``original`` (a node of the input tree) as needing a manual change."""
        stats_of(self.context).todos[self.RULE] += 1
        where = "?:?"
        if self._positions is None and self._input is not None:
            wrapper = MetadataWrapper(self._input, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        if self._positions is not None and original in self._positions:
            pos = self._positions[original]
            where = f"{pos.start.line}:{pos.start.column + 1}"
        name = self.context.filename or "<string>"
        self.warn(f"{name}:{where}: {self.RULE.value} {why}")
        if self._pending:
            self._pending[-1].append(todo_text(self.RULE, why))

    # -- statement stack: TODO comments go above the innermost enclosing statement ------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self._pending.append([])
            if id(node) in self._skip:
                return False
        return super().on_visit(node)

    def on_leave(
        self, original_node: CSTNodeT, updated_node: CSTNodeT
    ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        if id(original_node) in self._skip:  # not visited: no leave_* either
            self._pending.pop()
            return updated_node
        result = super().on_leave(original_node, updated_node)
        if not isinstance(original_node, cst.BaseStatement):
            return result
        todos = self._pending.pop()
        if todos and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return cast(CSTNodeT, _with_todos(result, todos))
        return result


def _quiet_statements(tree: cst.Module, trigger: re.Pattern[str]) -> set[int]:
    """ids of top-level statements (and statements of top-level classes) without ``trigger``.

    Visiting a large module costs seconds in libcst; generating a statement's code costs
    little. Statements whose code cannot hold a site are skipped.
    """
    quiet: set[int] = set()
    for stmt in tree.body:
        if not trigger.search(tree.code_for_node(stmt)):
            quiet.add(id(stmt))
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            for inner in stmt.body.body:
                if not trigger.search(tree.code_for_node(inner)):
                    quiet.add(id(inner))
    return quiet


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
