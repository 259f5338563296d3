"""``devptr check``'s entry points: the engine's findings for sources, files and trees.

Kept for callers of the earlier API; everything is :mod:`devptr.lint.engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from devptr.lint.engine import (
    FileResult,
    Finding,
    analyze_source,
    iter_python_files,
    may_have_findings,
)
from devptr.lint.engine._run import _analyze_files
from devptr.lint.rules import Rule


def check_source(
    source: str, path: str = "<string>", rules: frozenset[Rule] | None = None
) -> list[Finding]:
    """Findings of one module's source (*rules* default: every rule). Raises SyntaxError."""
    return analyze_source(source, path, rules=rules)


def check_file(path: Path, rules: frozenset[Rule] | None = None) -> FileResult:
    """Findings of one file, or a result with ``error`` set."""
    return _analyze_files([str(path)], rules, 1, None)[0]


def check_paths(
    files: Sequence[Path],
    rules: frozenset[Rule],
    *,
    jobs: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    """Findings of *files* (already walked), with cross-module summaries."""
    return _analyze_files([str(f) for f in files], rules, jobs, on_progress)


__all__ = [
    "FileResult",
    "check_file",
    "check_paths",
    "check_source",
    "iter_python_files",
    "may_have_findings",
]
