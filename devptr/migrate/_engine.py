"""Migrate one source text or one file from the engine's findings.

The engine (:mod:`devptr.lint.engine`, the analysis behind ``devptr check``) reports the
findings of the selected rules, each with its fix when a mechanical one exists. A module
without findings is returned as it is, without being parsed by libcst. Otherwise the fixes
are applied and every other finding is TODO-marked in one pass (:mod:`devptr.migrate._apply`),
``import devptr`` is added when a fix uses it, and changed lines are wrapped to the
project's line length.
"""

from __future__ import annotations

import ast
import difflib
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
import libcst as cst

from devptr.lint.engine import (
    Finding,
    FixKind,
    SourceError,
    Stamp,
    analyze_source,
    read_source,
)
from devptr.lint.engine._run import _fewer_collections
from devptr.lint.rules import Rule
from devptr.migrate import _parts
from devptr.migrate._apply import apply_findings
from devptr.migrate._base import DEFAULT_LINE_LENGTH, MigrateStats, Note, Options, default_rules
from devptr.migrate._imports import USES, ensure_devptr_import
from devptr.migrate._layout import fit_calls, wrap_todos
from devptr.migrate._parts import Part
from devptr.migrate._project import line_length_for


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
    encoding: str = "utf-8"
    """The file's encoding (``tokenize`` rules; ``utf-8-sig`` keeps a BOM when written)."""
    stamp: Stamp | None = None
    """The file as read (a writer refuses the file if it changed since)."""
    digest: str = ""
    """SHA-256 of the bytes read."""

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
    unsafe_fixes: bool = False,
    line_length: int = DEFAULT_LINE_LENGTH,
    findings: Sequence[Finding] | None = None,
) -> Outcome:
    """Migrate one module's source text with the selected rules (default: the defect rules).

    Safe fixes of the engine's findings are applied (unsafe ones too with
    ``unsafe_fixes``); every other finding gets a TODO comment. ``import devptr`` is added
    when a fix uses it, and changed lines are wrapped to ``line_length``. Warnings name
    lines of ``code``. ``findings``: the engine's findings for ``code`` when already known
    (a whole-tree run passes those of ``devptr check``'s tree analysis, which also follows
    helpers of other modules); None: this module is analysed on its own.

    Raises
    ------
    libcst.ParserSyntaxError
        When ``code`` does not parse.
    """
    selected = default_rules() if rules is None else frozenset(rules)
    options = Options(rules=selected, unsafe_fixes=unsafe_fixes, line_length=line_length)
    if findings is not None:
        found = [f for f in findings if f.rule in selected]
    else:
        try:
            found = analyze_source(code, filename, rules=selected)
        except (SyntaxError, RecursionError):
            cst.parse_module(code)  # raises libcst's error for a file that does not parse
            found = []
    if not found:
        return Outcome(filename, code, code, {}, {}, ())
    stats = MigrateStats()
    with _fewer_collections():  # libcst's many short-lived nodes: ~35% of the time in GC
        parts, tree = _parts_of(code, found)
        if len(parts) == 1:
            module, notes = apply_findings(cst.parse_module(code), found, options, stats)
            if stats.needs_import:
                module = ensure_devptr_import(module)
            if stats.rewrites:  # only a fix writes a devptr call that may need wrapping
                module = fit_calls(module, code, line_length)
            new = wrap_todos(code, module.code, line_length)
        else:
            new, notes = _migrate_parts(parts, tree, found, options, stats)
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


def _parts_of(code: str, found: Sequence[Finding]) -> tuple[list[Part], ast.Module | None]:
    """The parts ``code`` is migrated in (:mod:`devptr.migrate._parts`): one unless it is
    long, parses, and has no two's-complement fix (which may edit far from its site)."""
    whole = [Part(1, 0, code)]
    if code.count("\n") < 2 * _parts.PART_LINES or any(
        f.fix is not None and f.fix.kind is FixKind.TWOS for f in found
    ):
        return whole, None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return whole, None
    return _parts.split(code, tree), tree


def _migrate_parts(
    parts: list[Part], tree: ast.Module | None, found: Sequence[Finding], options: Options,
    stats: MigrateStats,
) -> tuple[str, list[Note]]:
    """Migrate each part with findings on its own; parts without any stay text."""
    notes: list[Note] = []
    texts: list[str] = []
    ordered = sorted(found, key=lambda f: f.line)
    k = 0
    for part in parts:
        mine: list[Finding] = []
        while k < len(ordered) and ordered[k].line <= part.last:
            mine.append(ordered[k])
            k += 1
        if not mine:
            texts.append(part.text)
            continue
        fixed = sum(stats.rewrites.values())
        module, part_notes = apply_findings(cst.parse_module(part.text), mine, options, stats,
                                            line_offset=part.first - 1)
        notes.extend(part_notes)
        if sum(stats.rewrites.values()) > fixed:
            module = fit_calls(module, part.text, options.line_length)
        texts.append(wrap_todos(part.text, module.code, options.line_length))
    if stats.needs_import and not _imports_devptr(tree):
        first = next((i for i, t in enumerate(texts) if USES.search(t)), len(texts) - 1)
        head = ensure_devptr_import(cst.parse_module("".join(texts[: first + 1]))).code
        texts = [head, *texts[first + 1 :]]
    return "".join(texts), notes


def _imports_devptr(tree: ast.Module | None) -> bool:
    """Whether a top-level ``import devptr`` binds the name (what ``ensure_devptr_import``
    checks on the libcst module, here on the module's ``ast``)."""
    return tree is not None and any(
        isinstance(s, ast.Import) and any(a.name == "devptr" and a.asname is None for a in s.names)
        for s in tree.body
    )


def migrate_file(
    path: Path,
    rules: frozenset[Rule],
    display: str,
    *,
    unsafe_fixes: bool = False,
    line_length: int | None = None,
    findings: Sequence[Finding] | None = None,
    stamp: Stamp | None = None,
) -> Outcome:
    """Migrate one file's text (without writing it). Errors are returned, not raised.

    The file is read as Python reads it (BOM, coding cookie), line ends kept.
    ``line_length`` defaults to the one the file's project configures (see ``_project``).
    ``stamp``: the file when ``findings`` were made; a file that changed since is an error.
    """
    start = time.perf_counter()
    try:
        source = read_source(path)
    except SourceError as exc:
        return Outcome(display, "", "", {}, {}, (), error=str(exc))
    if stamp is not None and source.stamp != stamp:
        return Outcome(display, "", "", {}, {}, (),
                       error="changed on disk since it was analysed; not migrated")
    code = source.text
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
    return attrs.evolve(outcome, seconds=time.perf_counter() - start,
                        encoding=source.encoding, stamp=source.stamp, digest=source.digest)
