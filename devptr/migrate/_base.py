"""The base class of every rule codemod: fix decisions, counting, TODO comments, warnings.

Each rule is one :class:`RuleCodemod` subclass (a libcst transformer). A subclass asks
:meth:`RuleCodemod.fix` before every rewrite it could make: the answer depends on the
fix's safety (``unsafe`` names why it could change behaviour), on whether it only changes
convention (no bits), and on the run's :class:`Options`. A site it cannot (or may not)
rewrite is passed to :meth:`RuleCodemod.flag`, which puts a ``# TODO[devptr]: DPxxx <why>``
comment above the enclosing statement unless one for that rule is there already. Counts
and warnings are taken when a comment is really inserted, so the summary equals the diff.
"""


from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Final, TypeVar, cast

import attrs
import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devptr.lint.engine import Finding
from devptr.lint.rules import DEFAULT_RULES, Rule

CSTNodeT = TypeVar("CSTNodeT", bound=cst.CSTNode)

TODO_PREFIX: Final = "# TODO[devptr]:"
STATS_KEY: Final = "devptr.migrate.stats"
FACTS_KEY: Final = "devptr.migrate.facts"
OPTIONS_KEY: Final = "devptr.migrate.options"
SITES_KEY: Final = "devptr.migrate.sites"
DEFAULT_LINE_LENGTH: Final = 88
T = TypeVar("T")


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
    """A TODO inserted by a codemod, at a line of that codemod's input text."""

    line: int
    column: int
    rule: Rule
    why: str


@attrs.define
class MigrateStats:
    """Per-file counters shared by all rule codemods through ``context.scratch``.

    ``rewrites`` counts applied fixes, ``unsafe`` the applied fixes that were unsafe (a
    subset), ``todos`` the TODO comments inserted (not the sites seen).
    """

    rewrites: Counter[Rule] = attrs.field(factory=Counter)
    unsafe: Counter[Rule] = attrs.field(factory=Counter)
    todos: Counter[Rule] = attrs.field(factory=Counter)
    needs_import: bool = False


class Sites:
    """The engine's findings on the text as written, for the codemods to act on.

    A fix is safe only where the engine (:mod:`devptr.lint.engine`, the analysis behind
    ``devptr check``) reports a finding of the fix's rule with a mechanical fix that it
    calls safe, and the codemod finds nothing unsafe either; a fix the engine does not
    confirm is unsafe. The codemods
    run one after another, so a node of a later stage is placed on the original text with
    ``to_original`` (see :class:`devptr.migrate._positions.LineMap`).
    """

    def __init__(self, findings: Sequence[Finding]) -> None:
        self._all = list(findings)
        self._fixed: set[int] = set()
        self._by_rule: dict[Rule, list[Finding]] = {}
        for finding in findings:
            if finding.fix is not None:
                self._by_rule.setdefault(finding.rule, []).append(finding)
        self.to_original: Callable[[int], int] = lambda line: line

    def consumed(self, finding: Finding) -> None:
        """Record that an applied fix removed ``finding``."""
        self._fixed.add(id(finding))

    def unfixed(self) -> list[Finding]:
        """The findings no applied fix consumed."""
        return [f for f in self._all if id(f) not in self._fixed]

    def rules(self) -> frozenset[Rule]:
        """The rules with at least one fixable finding."""
        return frozenset(self._by_rule)

    def at(self, rule: Rule, first: int, last: int, column: int) -> Finding | None:
        """The fixable finding of ``rule`` at a node on original lines ``first``..``last``.

        The finding starting at (``first``, ``column``) when there is one, else the only
        one overlapping those lines, else None (ambiguous or absent).
        """
        overlapping = [
            f
            for f in self._by_rule.get(rule, ())
            if f.line <= last and first <= max(f.end_line, f.line)
        ]
        exact = [f for f in overlapping if (f.line, f.col) == (first, column)]
        if exact:
            return exact[0]
        return overlapping[0] if len(overlapping) == 1 else None


def options_of(context: CodemodContext) -> Options:
    """The run's options (defaults when the context carries none, e.g. in unit tests)."""
    options = context.scratch.get(OPTIONS_KEY)
    return options if isinstance(options, Options) else Options()


def stats_of(context: CodemodContext) -> MigrateStats:
    """Return (creating on first use) the stats object of a codemod context."""
    stats = context.scratch.get(STATS_KEY)
    if not isinstance(stats, MigrateStats):
        stats = MigrateStats()
        context.scratch[STATS_KEY] = stats
    return stats


def todo_text(rule: Rule, why: str) -> str:
    """The comment placed above a site that needs a human (one line; wrapped later)."""
    return f"{TODO_PREFIX} {rule.value} {' '.join(why.split())}"


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
        self._pending: list[list[Note]] = []
        self._input: cst.Module | None = None
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None
        self._skip: set[int] = set()
        self._notes: list[Note] = []

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run the rule on ``tree``, then add/remove the imports it asked for."""
        self._input = tree
        self._positions = None
        tree = self.transform_module_impl(tree)
        if self.context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
            tree = RemoveImportsVisitor(self.context).transform_module(tree)
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

    def fix(
        self,
        original: cst.CSTNode,
        *,
        unsafe: str | None = None,
        rule: Rule | None = None,
        keeps_iteration: bool = False,
    ) -> bool:
        """Whether to apply a fix of ``rule`` (default: this codemod's) at ``original``.

        ``unsafe`` says which input the original accepted that the fix would treat
        differently (None: the fix keeps behaviour for every such input). A fix of a rule
        not selected is left silently; an unsafe fix without ``--unsafe-fixes`` gets a TODO
        saying so. An applied fix is counted. ``keeps_iteration``: the rewrite of a
        ``[x.data_ptr() for x in E]`` table passes ``list(E)`` (or ``E`` when it is a
        sequence), so the engine's doubt about what ``E`` is does not apply.
        """
        rule = rule or self.RULE
        options = options_of(self.context)
        if rule not in options.rules:
            return False
        found = None
        sites = self.context.scratch.get(SITES_KEY)
        if isinstance(sites, Sites):
            pos = self._position(original)
            line, end, column = (0, 0, 0) if pos is None else (
                pos.start.line, pos.end.line, pos.start.column
            )
            found = sites.at(rule, sites.to_original(line), sites.to_original(end), column)
            if found is None or found.fix is None:
                unsafe = unsafe or "devptr check reports no fixable finding here"
            else:
                handled = keeps_iteration and found.fix.span("source") is not None
                if found.fix.safety == "unsafe" and unsafe is None and not handled:
                    unsafe = found.fix.unsafe_reason or "devptr check marks the fix unsafe"
        if unsafe is not None and not options.unsafe_fixes:
            self.flag(original, f"unsafe fix not applied ({unsafe}); review, then "
                      "devptr migrate --unsafe-fixes", rule=rule)  # fmt: skip
            return False
        if isinstance(sites, Sites) and found is not None:
            sites.consumed(found)
        stats = stats_of(self.context)
        stats.rewrites[rule] += 1
        if unsafe is not None:
            stats.unsafe[rule] += 1
        stats.needs_import = True
        return True

    def flag(self, original: cst.CSTNode, why: str, *, rule: Rule | None = None) -> None:
        """Mark ``original`` (a node of the input tree) as needing a manual change.

        The TODO goes above the innermost enclosing statement, unless that statement has a
        TODO for the rule already; it is counted (and warned about) only when inserted.
        """
        rule = rule or self.RULE
        if rule not in options_of(self.context).rules:
            return
        line = column = 0
        pos = self._position(original)
        if pos is not None:
            line, column = pos.start.line, pos.start.column + 1
        if self._pending:
            self._pending[-1].append(Note(line, column, rule, why))

    def _position(self, node: cst.CSTNode) -> CodeRange | None:
        """Where ``node`` (of this codemod's input) is, computed once per module."""
        if self._positions is None and self._input is not None:
            wrapper = MetadataWrapper(self._input, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        return None if self._positions is None else self._positions.get(node)

    @property
    def notes(self) -> list[Note]:
        """The TODOs this codemod inserted, at lines of its input text."""
        return self._notes

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
            marked, inserted = with_todos(result, todos)
            stats = stats_of(self.context)
            for note in inserted:
                stats.todos[note.rule] += 1
                self._notes.append(note)
            return cast(CSTNodeT, marked)
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


def has_todo(node: cst.SimpleStatementLine | cst.BaseCompoundStatement, rule: Rule) -> bool:
    """Whether the comments right above ``node`` hold a TODO for ``rule``."""
    prefix = f"{TODO_PREFIX} {rule.value}"
    return any(
        line.comment is not None and line.comment.value.startswith(prefix)
        for line in node.leading_lines
    )


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
