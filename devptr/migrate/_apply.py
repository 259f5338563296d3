"""Apply the engine's fixes to one module, and mark every other finding with a TODO.

For each finding of the selected rules (see :func:`apply_findings`):

- with a fix that may apply (safe, or unsafe with ``--unsafe-fixes``), the builder of the
  fix's kind (``dp001_store`` ... ``dp005_dtype``) locates the libcst nodes at the fix's
  spans and builds the replacement from them; the edit is counted when applied;
- otherwise (no fix, an unsafe fix not allowed, a shape the builder has no rewrite for, or
  a fix overlapping one already planned) the innermost statement holding the finding gets
  a ``# TODO[devptr]: DPxxx <why>`` comment; an unsafe fix's TODO quotes the engine's
  ``unsafe_reason``.

All edits and comments are made in one pass over the input tree. Recognition and the
safety decision are the rule units' (:mod:`devptr.lint.engine.rules`); nothing here re-derives them.
"""

from __future__ import annotations

import bisect
import importlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Final, cast

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

from devptr.lint.engine import Finding, FixKind
from devptr.lint.rules import RULES, Rule
from devptr.migrate._base import (
    CSTNodeT,
    MigrateStats,
    Note,
    Options,
    has_todo,
    with_todos,
    without_todos,
)
from devptr.migrate._edit import Builder, Edit
from devptr.migrate._names import devptr_call
from devptr.migrate._spans import SpanIndex


def _builders() -> dict[FixKind, Builder]:
    """The ``build`` function of each rule unit's ``rewrite`` module, by the unit's fix kind."""
    out: dict[FixKind, Builder] = {}
    for unit in RULES.values():
        if unit.rewrite:
            out[unit.fix_kinds[0]] = cast(Builder, importlib.import_module(unit.rewrite).build)
    return out


BUILDERS: Final[dict[FixKind, Builder]] = _builders()
"""The rewrite of each fix kind the codemod applies, as the rule units name them
(``RuleUnit.rewrite``: ``dp001_store`` STORE ... ``dp005_dtype`` DTYPE_BRANCH; FILL has
none yet: its findings get TODOs)."""


def apply_findings(
    module: cst.Module,
    findings: Sequence[Finding],
    options: Options,
    stats: MigrateStats,
    line_offset: int = 0,
) -> tuple[cst.Module, list[Note]]:
    """Apply the fixes of ``findings`` to ``module`` and mark the rest; the TODOs inserted.

    ``findings`` are the engine's findings of the selected rules on ``module``'s code;
    ``line_offset``: the file's lines before ``module`` when it is one part of the file.
    """
    index = SpanIndex(module, line_offset)
    edits: dict[int, tuple[Edit, Finding, bool]] = {}
    taken = _Taken()
    todos: dict[int, list[Note]] = defaultdict(list)
    planned = [
        (finding, _plan(finding, options, index, edits, taken))
        for finding in sorted(findings, key=lambda f: (f.line, f.col, f.code))
    ]
    doomed = _doomed_helpers(module, index, edits)
    for key in [k for k, (e, _, _) in edits.items() if _inside(index.extent(e.target), doomed)]:
        del edits[key]  # in a helper that goes away with its last call
    for finding, why in planned:
        if why is None or _inside((finding.line, finding.col, finding.line, finding.col), doomed):
            continue
        holder = index.statement_holding(finding.line)
        if holder is None:
            continue
        notes = todos[id(holder)]
        if has_todo(holder, finding.rule) or any(n.rule is finding.rule for n in notes):
            continue
        notes.append(Note(finding.line, finding.col + 1, finding.rule, why))
    if not edits and not todos:
        return module, []
    applier = _Applier(edits, todos, stats)
    new = module.visit(applier)
    helpers = {e.helper for e, _, _ in edits.values() if e.helper is not None}
    if helpers:
        new = _drop_unused_helpers(new, helpers, module, applier, index, stats)
    modules = {e.module for e, _, _ in edits.values() if e.module is not None}
    if modules:
        context = CodemodContext()
        for name in sorted(modules):
            RemoveImportsVisitor.remove_unused_import(context, name)
        new = RemoveImportsVisitor(context).transform_module(new)
    return new, applier.notes


def _plan(
    finding: Finding,
    options: Options,
    index: SpanIndex,
    edits: dict[int, tuple[Edit, Finding, bool]],
    taken: _Taken,
) -> str | None:
    """Plan the finding's edit; the TODO text when it gets none."""
    fix = finding.fix
    plain = f"{' '.join(finding.message.split())} (devptr check)"
    if fix is None or fix.kind not in BUILDERS:
        return plain
    edit = BUILDERS[fix.kind](finding, fix, index)  # first: a TODO promises only a real fix
    if edit is None:
        return f"{plain}; no mechanical rewrite for this shape"
    if fix.safety == "unsafe" and not options.unsafe_fixes:
        return (f"unsafe fix not applied ({fix.unsafe_reason or 'devptr check marks it unsafe'}"
                "); review, then devptr migrate --unsafe-fixes")  # fmt: skip
    if not taken.claim(index.extent(edit.target)):
        return f"{plain}; overlaps another fix, run devptr migrate again"
    edits[id(edit.target)] = (edit, finding, fix.safety == "unsafe")
    return None


def _doomed_helpers(
    module: cst.Module, index: SpanIndex, edits: dict[int, tuple[Edit, Finding, bool]]
) -> list[tuple[int, int, int, int]]:
    """Extents of the nested helper definitions whose every call is rewritten.

    Findings inside them (the spelling in the helper's own body) are left alone: the
    definition is removed with its last call. Module-level helpers are never removed
    (other modules and tests may import them, private names included: vLLM's tests import
    ``_reinterpret_u64_as_i64``); see :class:`_HelperRemover`.
    """
    calls: Counter[str] = Counter(e.helper for e, _, _ in edits.values() if e.helper)
    if not calls:
        return []
    uses = _name_uses(module)
    top = {id(s) for s in module.body}
    return [
        index.extent(d)
        for d in _function_defs(module)
        if (name := d.name.value) in calls and uses[name] == calls[name] and id(d) not in top
    ]


def _inside(extent: tuple[int, int, int, int], regions: list[tuple[int, int, int, int]]) -> bool:
    return any(
        (r[0], r[1]) <= (extent[0], extent[1]) and (extent[2], extent[3]) <= (r[2], r[3])
        for r in regions
    )


class _Taken:
    """The extents of the edits planned so far (pairwise disjoint), sorted by start, so an
    overlap test is a binary search, not a scan of every earlier edit."""

    def __init__(self) -> None:
        self._starts: list[tuple[int, int]] = []
        self._ends: list[tuple[int, int]] = []

    def claim(self, extent: tuple[int, int, int, int]) -> bool:
        """Take ``extent`` unless it overlaps one taken; whether it was taken."""
        start, end = (extent[0], extent[1]), (extent[2], extent[3])
        k = bisect.bisect_left(self._starts, end)  # the taken ones starting before our end
        if k and self._ends[k - 1] > start:  # the last of them ends the latest (disjoint)
            return False
        self._starts.insert(k, start)
        self._ends.insert(k, end)
        return True


class _Applier(cst.CSTTransformer):
    """Replace the planned nodes; put TODO comments above the planned statements."""

    def __init__(
        self,
        edits: dict[int, tuple[Edit, Finding, bool]],
        todos: dict[int, list[Note]],
        stats: MigrateStats,
    ) -> None:
        super().__init__()
        self._edits = edits
        self._todos = todos
        self._stats = stats
        self.notes: list[Note] = []
        self.touched: set[int] = set()
        """ids of the input statements that hold an applied edit or a TODO."""
        self._stack: list[int] = []
        self._fixed: dict[int, set[Rule]] = {}
        """id of a statement -> the rules whose fixes were applied inside it."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._stack.append(id(node))
        return super().on_visit(node)

    def on_leave(
        self, original_node: CSTNodeT, updated_node: CSTNodeT
    ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        result: cst.CSTNode = updated_node
        planned = self._edits.get(id(original_node))
        if planned is not None:
            edit, finding, unsafe = planned
            result = edit.replacement
            self._stats.rewrites[finding.rule] += 1
            if unsafe:
                self._stats.unsafe[finding.rule] += 1
            self._stats.needs_import = True
            self.touched.update(self._stack)
            if self._stack:
                self._fixed.setdefault(self._stack[-1], set()).add(finding.rule)
        if isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._stack.pop()
            fixed = self._fixed.pop(id(original_node), None)
            if fixed and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                result = without_todos(result, fixed)  # the fix replaces an earlier TODO
            notes = self._todos.get(id(original_node))
            if notes and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                result, inserted = with_todos(result, notes)
                for note in inserted:
                    self._stats.todos[note.rule] += 1
                    self.notes.append(note)
                self.touched.update(self._stack)
                self.touched.add(id(original_node))
        return cast(CSTNodeT, result)


def _drop_unused_helpers(
    new: cst.Module,
    helpers: set[str],
    old: cst.Module,
    applier: _Applier,
    index: SpanIndex,
    stats: MigrateStats,
) -> cst.Module:
    """Remove nested definitions of ``helpers`` that nothing calls any more; alias the rest.

    A definition is changed only when it is untouched by the run (no edit or TODO in it).
    A module-level one is kept for importers (see :class:`_HelperRemover`).
    """
    used = _referenced_names(new)
    unused = helpers - used
    if not unused:
        return new
    untouched = {
        old.code_for_node(s): index.extent(s)[0]
        for s in _function_defs(old)
        if s.name.value in unused and id(s) not in applier.touched
    }
    return new.visit(_HelperRemover(unused, untouched, stats, applier.notes))


def _function_defs(module: cst.Module) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    module.visit(_Scan())
    return found


def _name_uses(tree: cst.Module) -> Counter[str]:
    """How often each name is used other than as the name of a function definition."""
    uses: Counter[str] = Counter()
    defs: Counter[str] = Counter()

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            defs[node.name.value] += 1

        def visit_Name(self, node: cst.Name) -> None:
            uses[node.value] += 1

    tree.visit(_Scan())
    return Counter({name: n - defs[name] for name, n in uses.items() if n > defs[name]})


def _referenced_names(tree: cst.Module) -> frozenset[str]:
    """Names used somewhere other than as the name of a function definition."""
    return frozenset(_name_uses(tree))


class _HelperRemover(cst.CSTTransformer):
    """Remove the unused, untouched nested helpers; make module-level ones an alias.

    A module-level helper of one parameter keeps its name, signature and docstring, and
    its body becomes ``return devptr.DevicePtr(<parameter>).signed``: a one-line alias onto
    the convention, so code that imports it (``from vllm.v1.worker.mamba_utils import
    _reinterpret_u64_as_i64`` in vLLM's tests) keeps working and gets the same int64 value
    for every address. A helper of another shape is kept as it is, with a TODO.
    """

    def __init__(
        self, unused: set[str], untouched: dict[str, int], stats: MigrateStats, notes: list[Note]
    ) -> None:
        super().__init__()
        self._unused = unused
        self._untouched = untouched
        self._stats = stats
        self._notes = notes
        self._depth = 0
        self._removed: set[int] = set()
        self._module: cst.Module | None = None

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        self._depth -= 1
        name = original_node.name.value
        if name not in self._unused or self._module is None:
            return updated_node
        line = self._untouched.get(self._module.code_for_node(original_node))
        if line is None:
            return updated_node
        if self._depth > 0:
            self._removed.add(id(original_node))
            return cst.RemovalSentinel.REMOVE
        aliased = _alias_body(updated_node)
        if aliased is not None:
            self._stats.rewrites[Rule.DP004] += 1
            return aliased
        why = (f"two's-complement helper {name} kept for importers; replace their "
               "calls with devptr.DevicePtr(x).signed")  # fmt: skip
        marked, inserted = with_todos(updated_node, [Note(line, 1, Rule.DP004, why)])
        for note in inserted:
            self._stats.todos[note.rule] += 1
            self._notes.append(note)
        assert isinstance(marked, cst.FunctionDef)
        return marked

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        if not body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        if original_node.body and id(original_node.body[0]) in self._removed:
            first = body[0]  # the block's first statement went away: drop blank lines on top
            if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                lines = list(first.leading_lines)
                while lines and lines[0].comment is None:
                    lines.pop(0)
                body[0] = first.with_changes(leading_lines=lines)
        return updated_node.with_changes(body=body)


def _alias_body(helper: cst.FunctionDef) -> cst.FunctionDef | None:
    """``helper`` with its body replaced by ``return devptr.DevicePtr(p).signed``.

    None unless it takes exactly one plain positional parameter ``p``. The docstring (a
    leading string statement) is kept.
    """
    params = helper.params
    if (
        len(params.params) != 1
        or params.posonly_params
        or params.kwonly_params
        or not isinstance(params.star_arg, cst.MaybeSentinel)
        or params.star_kwarg is not None
        or params.params[0].default is not None
        or not isinstance(helper.body, cst.IndentedBlock)
    ):
        return None
    value = devptr_call(("DevicePtr",), [cst.Name(params.params[0].name.value)])
    ret = cst.SimpleStatementLine([cst.Return(cst.Attribute(value=value, attr=cst.Name("signed")))])
    body: list[cst.BaseStatement] = []
    first = helper.body.body[0] if helper.body.body else None
    if (
        isinstance(first, cst.SimpleStatementLine)
        and len(first.body) == 1
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        body.append(first)
    body.append(ret)
    return helper.with_changes(body=helper.body.with_changes(body=body))
