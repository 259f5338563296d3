"""Mark what ``devptr check`` still finds after the rewrites with a TODO comment.

The rule codemods rewrite the patterns they can prove safe and flag the ones they recognise
but cannot rewrite. ``devptr check`` (the AST checker sharing the rule catalogue) finds more
shapes than the codemods recognise: addresses reaching a table through a variable, a helper
call, or an array of unknown type. After the rewrites, the migrated text is checked, and
every remaining finding whose statement has no ``TODO[devptr]`` comment for that rule gets
one, with the checker's own message. So the migrated tree holds no silent site: each
remaining finding sits under a TODO, and the next run finds them all marked.

The findings come from the address-provenance engine (:mod:`devptr.lint.engine`), the
analysis behind ``devptr check``, with the file's own ``# devptr: ignore[...]`` comments
honoured.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devptr.lint.engine import Finding as EngineFinding
from devptr.lint.engine import analyze_source
from devptr.lint.rules import Rule
from devptr.migrate._base import (
    TODO_PREFIX,
    CSTNodeT,
    MigrateStats,
    Note,
    has_todo,
    with_todos,
)

Finding = tuple[int, int, Rule, str]
"""(line, column, rule, message) of a ``devptr check`` finding, 1-based."""


def checker_findings(
    code: str, filename: str, rules: Iterable[Rule], known: Sequence[EngineFinding] = ()
) -> list[Finding]:
    """Engine findings in ``code`` (analysed here, plus ``known`` ones) not yet marked.

    ``known``: findings of a whole-tree analysis (which follows helpers across modules)
    that no fix consumed, at lines of ``code``.
    """
    try:
        found = list(analyze_source(code, filename, rules=frozenset(rules)))
    except (SyntaxError, RecursionError):
        found = []
    found += [f for f in known if f.rule in frozenset(rules)]
    unique = {(f.line, f.col, f.rule): f for f in found}
    found_all = [(f.line, f.col, f.rule, " ".join(f.message.split())) for f in unique.values()]
    return _unmarked(code, sorted(found_all, key=lambda x: (x[0], x[1], x[2].value)))


def _unmarked(code: str, findings: list[Finding]) -> list[Finding]:
    """Findings whose statement has no TODO for their rule yet (read with :mod:`ast`).

    A cheap first look that spares the libcst pass when everything is marked already (the
    second run over a migrated tree).
    """
    if not findings:
        return findings
    lines = code.splitlines()
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.stmt)
    ]
    left = []
    for line, col, rule, message in findings:
        starts = [start for start, end in spans if start <= line <= end]
        k = (max(starts) if starts else line) - 2
        marked = False
        while k >= 0 and lines[k].lstrip().startswith(("#", "@")):
            if lines[k].lstrip().startswith(f"{TODO_PREFIX} {rule.value}"):
                marked = True
                break
            k -= 1
        if not marked:
            left.append((line, col, rule, message))
    return left


def mark_findings(
    module: cst.Module, findings: Sequence[Finding], stats: MigrateStats
) -> tuple[cst.Module, list[Note]]:
    """Put a TODO above the innermost statement of each finding not yet marked for its rule.

    Returns the module and the notes of the TODOs inserted (at lines of ``module``), each
    counted once in ``stats.todos``.
    """
    if not findings:
        return module, []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    spans: list[tuple[int, int, cst.CSTNode]] = []
    for node, pos in positions.items():
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            spans.append((pos.start.line, pos.end.line, node))
    wanted: dict[int, list[Note]] = defaultdict(list)
    inserted: list[Note] = []
    for line, col, rule, message in findings:
        holders = [s for s in spans if s[0] <= line <= s[1]]
        if not holders:
            continue
        _, _, node = min(holders, key=lambda s: (s[1] - s[0], -s[0]))
        assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        if has_todo(node, rule) or any(n.rule is rule for n in wanted[id(node)]):
            continue
        note = Note(line, col, rule, f"{message} (devptr check)")
        wanted[id(node)].append(note)
        stats.todos[rule] += 1
        inserted.append(note)
    if not wanted:
        return module, []
    return module.visit(_Marker(wanted)), inserted


class _Marker(cst.CSTTransformer):
    def __init__(self, wanted: dict[int, list[Note]]) -> None:
        super().__init__()
        self._wanted = wanted

    def on_leave(
        self, original_node: CSTNodeT, updated_node: CSTNodeT
    ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        notes = self._wanted.get(id(original_node))
        if notes and isinstance(updated_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            marked, _ = with_todos(updated_node, notes)
            return cast(CSTNodeT, marked)
        return super().on_leave(original_node, updated_node)
