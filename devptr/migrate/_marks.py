"""Mark what ``devptr check`` still finds after the rewrites with a TODO comment.

The rule codemods rewrite the patterns they can prove safe and flag the ones they recognise
but cannot rewrite. ``devptr check`` (the AST checker sharing the rule catalogue) finds more
shapes than the codemods recognise: addresses reaching a table through a variable, a helper
call, or an array of unknown type. After the rewrites, the migrated text is checked, and
every remaining finding whose statement has no ``TODO[devptr]`` comment for that rule gets
one, with the checker's own message. So the migrated tree holds no silent site: each
remaining finding sits under a TODO, and the next run finds them all marked.

Without the checker (``devptr.lint.checker`` not importable) this pass does nothing.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devptr.lint.rules import Rule
from devptr.migrate._base import TODO_PREFIX, CSTNodeT, MigrateStats, todo_text


def checker_findings(code: str, filename: str, rules: Iterable[Rule]) -> list[tuple[int, Rule, str]]:
    """(line, rule, message) of ``devptr check`` findings in ``code``; [] without the checker."""
    try:
        from devptr.lint.checker import check_source, may_have_findings
    except ImportError:  # pragma: no cover - the checker ships with devptr
        return []
    if not may_have_findings(code):
        return []
    try:
        found = check_source(code, filename, frozenset(rules))
    except (SyntaxError, RecursionError):
        return []
    found_all = [(f.line, f.rule, " ".join(f.message.split())) for f in found]
    return _unmarked(code, found_all)


def _unmarked(code: str, findings: list[tuple[int, Rule, str]]) -> list[tuple[int, Rule, str]]:
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
    for line, rule, message in findings:
        starts = [start for start, end in spans if start <= line <= end]
        k = (max(starts) if starts else line) - 2
        marked = False
        while k >= 0 and lines[k].lstrip().startswith(("#", "@")):
            if lines[k].lstrip().startswith(f"{TODO_PREFIX} {rule.value}"):
                marked = True
                break
            k -= 1
        if not marked:
            left.append((line, rule, message))
    return left


def mark_findings(
    module: cst.Module,
    findings: Sequence[tuple[int, Rule, str]],
    stats: MigrateStats,
    filename: str,
) -> tuple[cst.Module, list[str]]:
    """Put a TODO above the innermost statement of each finding not yet marked for its rule."""
    if not findings:
        return module, []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    spans: list[tuple[int, int, cst.CSTNode]] = []
    for node, pos in positions.items():
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            spans.append((pos.start.line, pos.end.line, node))
    wanted: dict[int, list[str]] = defaultdict(list)
    warnings: list[str] = []
    for line, rule, message in findings:
        holders = [s for s in spans if s[0] <= line <= s[1]]
        if not holders:
            continue
        _, _, node = min(holders, key=lambda s: (s[1] - s[0], -s[0]))
        assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        if _marked(node, rule):
            continue
        text = todo_text(rule, f"{message} (devptr check)")
        if text in wanted[id(node)]:
            continue
        wanted[id(node)].append(text)
        stats.todos[rule] += 1
        warnings.append(f"{filename}:{line}: {rule.value} {message} (devptr check)")
    if not wanted:
        return module, warnings
    return module.visit(_Marker(wanted)), warnings


def _marked(node: cst.SimpleStatementLine | cst.BaseCompoundStatement, rule: Rule) -> bool:
    prefix = f"{TODO_PREFIX} {rule.value}"
    return any(
        line.comment is not None and line.comment.value.startswith(prefix)
        for line in node.leading_lines
    )


class _Marker(cst.CSTTransformer):
    def __init__(self, wanted: dict[int, list[str]]) -> None:
        super().__init__()
        self._wanted = wanted

    def on_leave(
        self, original_node: CSTNodeT, updated_node: CSTNodeT
    ) -> CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[CSTNodeT]:
        texts = self._wanted.get(id(original_node))
        if texts and isinstance(updated_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            lines = [cst.EmptyLine(indent=True, comment=cst.Comment(t)) for t in texts]
            marked = updated_node.with_changes(leading_lines=[*updated_node.leading_lines, *lines])
            return cast(CSTNodeT, marked)
        return super().on_leave(original_node, updated_node)
