"""Run the rule codemods over one source text or one file.

The codemods run in a fixed order, each on the output of the one before:
DP005 (dtype branches), DP002 (tables), DP003 (arithmetic), DP001 (stores, which may
consume DP003's ``devptr.addresses`` results) and DP004 last (two's-complement spellings
not already absorbed by a store, then removal of helpers left unused). Then ``import
devptr`` is added, the closing ``devptr check`` pass marks what is left, and changed lines
are wrapped to the project's line length.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

import attrs
import libcst as cst
from libcst.codemod import CodemodContext

from devptr.lint.engine import Finding, analyze_source
from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._base import (
    DEFAULT_LINE_LENGTH,
    FACTS_KEY,
    OPTIONS_KEY,
    SITES_KEY,
    STATS_KEY,
    MigrateStats,
    Note,
    Options,
    RuleCodemod,
    Sites,
    default_rules,
)
from devptr.migrate._imports import ensure_devptr_import
from devptr.migrate._layout import fit_calls, wrap_todos
from devptr.migrate._marks import checker_findings
from devptr.migrate._marks import mark_findings as _mark
from devptr.migrate._positions import LineMap
from devptr.migrate._project import line_length_for
from devptr.migrate.dp001_store import StoreCodemod
from devptr.migrate.dp002_table import TableCodemod
from devptr.migrate.dp003_arith import ArithmeticCodemod
from devptr.migrate.dp004_twos import TwosComplementCodemod
from devptr.migrate.dp005_dtype import PlatformDtypeCodemod

CODEMODS: Final[dict[Rule, type[RuleCodemod]]] = {
    Rule.DP005: PlatformDtypeCodemod,
    Rule.DP002: TableCodemod,
    Rule.DP003: ArithmeticCodemod,
    Rule.DP001: StoreCodemod,
    Rule.DP004: TwosComplementCodemod,
}
"""Every rule's codemod, in the order they run."""

TRIGGERS: Final[dict[Rule, tuple[re.Pattern[str], ...]]] = {
    Rule.DP001: (_triggers.DATA_PTR_OR_DEVICEPTR,),
    Rule.DP002: (_triggers.DATA_PTR,),
    Rule.DP003: (_triggers.DATA_PTR,),
    Rule.DP004: (_triggers.TWOS_COMPLEMENT,),
    Rule.DP005: (_triggers.UINT64, _triggers.XPU),
}
"""Text a module must match (every pattern of the tuple) for a rule to look at it.

Every site a rule rewrites or flags contains these, so a module without them is skipped
for that rule without parsing: most files of a large tree.
"""


_ALSO_RUNS_FOR: Final[dict[Rule, frozenset[Rule]]] = {
    Rule.DP001: frozenset({Rule.DP006}),  # a store into a uint64 numpy array
    Rule.DP002: frozenset({Rule.DP006}),  # a dtype=torch.uint64 table
}
"""Codemods that also make fixes of another rule (which changes no bits)."""


def rules_for(code: str, selected: Iterable[Rule]) -> list[Rule]:
    """The codemods (by rule, in run order) that may act on ``code`` for ``selected`` rules."""
    wanted = set(selected)
    return [
        rule
        for rule in CODEMODS
        if (rule in wanted or wanted & _ALSO_RUNS_FOR.get(rule, frozenset()))
        and all(t.search(code) for t in TRIGGERS[rule])
    ]


@attrs.frozen
class Outcome:
    """What migrating one source did. ``new`` equals ``old`` when nothing changed."""

    path: str
    old: str
    new: str
    rewrites: dict[Rule, int]
    todos: dict[Rule, int]
    warnings: tuple[str, ...]
    error: str | None = None
    seconds: float = 0.0
    unsafe: dict[Rule, int] = attrs.field(factory=dict)
    """Applied fixes that were unsafe (a part of ``rewrites``; only with ``--unsafe-fixes``)."""

    @property
    def changed(self) -> bool:
        """True when the migrated text differs from the input."""
        return self.error is None and self.new != self.old

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changed)."""
        if not self.changed:
            return ""
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=self.path if self.path.startswith("/") else f"a/{self.path}",
                tofile=self.path if self.path.startswith("/") else f"b/{self.path}",
            )
        )


def migrate_source(
    code: str,
    *,
    rules: Iterable[Rule] | None = None,
    filename: str = "<string>",
    mark_findings: bool = True,
    unsafe_fixes: bool = False,
    line_length: int = DEFAULT_LINE_LENGTH,
    engine: bool = True,
    findings: Sequence[Finding] | None = None,
) -> Outcome:
    """Migrate one module's source text with the selected rules (default: the defect rules).

    The rule codemods run first, applying safe fixes (and unsafe ones with
    ``unsafe_fixes``); then, when ``mark_findings`` is set, what ``devptr check`` still finds
    in the result (for the selected rules) is marked with TODO comments (see
    :mod:`devptr.migrate._marks`). ``import devptr`` is added when a fix uses it, and
    changed lines are wrapped to ``line_length``. Warnings name lines of ``code``.

    With ``engine`` (the default) the engine's findings decide: a module where
    ``devptr check`` finds nothing (for the selected rules) is left as it is, and a fix is
    safe only where the engine reports it fixable and safe (see ``_base.Sites``). Without
    it the codemods' own recognition decides alone (used to test how rewrites are spelled).
    ``findings``: the engine's findings for ``code`` when already known (a whole-tree run
    passes those of ``devptr check``'s tree analysis, which also follows helpers of other
    modules); None: this module is analysed on its own.

    Raises
    ------
    libcst.ParserSyntaxError
        When ``code`` does not parse.
    """
    selected = default_rules() if rules is None else frozenset(rules)
    options = Options(rules=selected, unsafe_fixes=unsafe_fixes, line_length=line_length)
    found: list[Finding] = []
    if engine and findings is not None:
        found = [f for f in findings if f.rule in selected]
    elif engine:
        try:
            found = analyze_source(code, filename, rules=selected)
        except (SyntaxError, RecursionError):
            cst.parse_module(code)  # raises libcst's error for a file that does not parse
    if engine and not found:
        return Outcome(filename, code, code, {}, {}, ())
    sites = Sites(found) if engine else None
    active = rules_for(code, selected)
    stats = MigrateStats()
    notes: list[Note] = []
    module: cst.Module | None = None
    if active:
        module = cst.parse_module(code)
        facts: dict[str, object] = {}  # analyses of the input module, shared by the rules
        for rule in active:
            scratch: dict[str, object] = {STATS_KEY: stats, FACTS_KEY: facts, OPTIONS_KEY: options}
            if sites is not None:
                scratch[SITES_KEY] = sites
                sites.to_original = _stage_lines(code, module)
            context = CodemodContext(filename=filename, scratch=scratch)
            codemod = CODEMODS[rule](context)
            before = module
            module = codemod.transform_module(module)
            notes.extend(_on_original(codemod.notes, code, before))
        if stats.needs_import:
            module = ensure_devptr_import(module)
    if mark_findings and (found or not engine):
        current = code if module is None else module.code
        left = checker_findings(current, filename, selected, _unfixed(sites, code, current))
        if left:
            module = module if module is not None else cst.parse_module(code)
            module, marked = _mark(module, left, stats)
            notes.extend(_on_original(marked, code, current))
    new = code
    if module is not None:
        module = fit_calls(module, code, line_length)
        new = wrap_todos(code, module.code, line_length)
    warnings = [
        f"{filename}:{n.line}:{n.column}: {n.rule.value} {n.why}"
        for n in sorted(notes, key=lambda n: (n.line, n.column, n.rule.value))
    ]
    return Outcome(
        path=filename,
        old=code,
        new=new,
        rewrites=dict(stats.rewrites),
        todos=dict(stats.todos),
        warnings=tuple(warnings),
        unsafe=dict(stats.unsafe),
    )


def _unfixed(sites: Sites | None, code: str, current: str) -> list[Finding]:
    """The engine's findings on ``code`` that no applied fix consumed, moved to ``current``."""
    if sites is None:
        return []
    left = sites.unfixed()
    if not left or current == code:
        return left
    lines = LineMap(current, code)  # lines of ``code`` -> lines of ``current``
    return [
        attrs.evolve(f, line=lines.to_old(f.line), end_line=lines.to_old(max(f.end_line, f.line)))
        for f in left
    ]


def _stage_lines(code: str, stage: cst.Module) -> Callable[[int], int]:
    """Line of ``stage`` -> line of ``code``, computed on first use."""
    cache: list[LineMap] = []

    def to_original(line: int) -> int:
        if not cache:
            text = stage.code
            if text == code:
                cache.append(LineMap(code, code))
            else:
                cache.append(LineMap(code, text))
        return cache[0].to_old(line)

    return to_original


def _on_original(notes: list[Note], code: str, stage: cst.Module | str) -> list[Note]:
    """``notes`` made at lines of ``stage`` (a module or text), moved to lines of ``code``."""
    if not notes:
        return []
    text = stage if isinstance(stage, str) else stage.code
    if text == code:
        return list(notes)
    lines = LineMap(code, text)
    return [attrs.evolve(n, line=lines.to_old(n.line)) for n in notes]


def migrate_file(
    path: Path,
    rules: frozenset[Rule],
    display: str,
    *,
    unsafe_fixes: bool = False,
    line_length: int | None = None,
    findings: Sequence[Finding] | None = None,
) -> Outcome:
    """Migrate one file's text (without writing it). Errors are returned, not raised.

    ``line_length`` defaults to the one the file's project configures (see ``_project``).
    """
    start = time.perf_counter()
    try:
        code = path.read_bytes().decode("utf-8")  # keeps \r\n line ends as they are
    except (OSError, UnicodeDecodeError) as exc:
        return Outcome(display, "", "", {}, {}, (), error=f"read failed: {exc}")
    try:
        length = line_length_for(path) if line_length is None else line_length
        outcome = migrate_source(
            code,
            rules=rules,
            filename=display,
            unsafe_fixes=unsafe_fixes,
            line_length=length,
            findings=findings,
        )
    except cst.ParserSyntaxError as exc:
        why = f"parse failed: line {exc.raw_line}: {exc.message.splitlines()[0]}"
        return Outcome(display, code, code, {}, {}, (), error=why)
    except Exception as exc:  # a codemod bug must not stop a whole tree
        return Outcome(display, code, code, {}, {}, (), error=f"{type(exc).__name__}: {exc}")
    return attrs.evolve(outcome, seconds=time.perf_counter() - start)
