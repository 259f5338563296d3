"""Run the migration over files and directories, serially or in worker processes."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import attrs

from devptr._errors import InvalidValueError
from devptr.lint.rules import Rule
from devptr.migrate._engine import Outcome, migrate_file

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist"})


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """Python files under ``paths`` (files as given, directories walked), sorted, unique.

    Hidden directories, ``__pycache__``, ``build`` and ``dist`` are skipped.
    """
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                for name in sorted(files):
                    if name.endswith(".py"):
                        found[Path(root) / name] = None
        else:
            found[path] = None
    return list(found)


def display_name(path: Path) -> str:
    """The path as shown in warnings and diffs: relative to the working directory if inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _work(job: tuple[str, frozenset[Rule]]) -> Outcome:
    path = Path(job[0])
    return migrate_file(path, job[1], display_name(path))


def iter_outcomes(files: list[Path], rules: frozenset[Rule], jobs: int = 1) -> Iterator[Outcome]:
    """Migrate every file (in memory) and yield outcomes in file order."""
    work = [(str(f), rules) for f in files]
    if jobs <= 1 or len(work) < 2:
        yield from map(_work, work)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_work, work, chunksize=max(1, min(16, len(work) // (jobs * 4))))


@attrs.define
class Summary:
    """Totals over a run: what the closing table shows."""

    scanned: int = 0
    changed: int = 0
    rewrites: Counter[Rule] = attrs.field(factory=Counter)
    todos: Counter[Rule] = attrs.field(factory=Counter)
    failures: list[tuple[str, str]] = attrs.field(factory=list)
    changed_paths: list[str] = attrs.field(factory=list)

    def add(self, outcome: Outcome) -> None:
        """Account for one file's outcome."""
        self.scanned += 1
        if outcome.error is not None:
            self.failures.append((outcome.path, outcome.error))
            return
        if outcome.changed:
            self.changed += 1
            self.changed_paths.append(outcome.path)
        self.rewrites.update(outcome.rewrites)
        self.todos.update(outcome.todos)


def parse_select(select: str | None) -> frozenset[Rule]:
    """``"DP001,DP004"`` -> those rules; None or empty -> every rule.

    Raises
    ------
    ValueError
        For an unknown rule id.
    """
    if not select:
        return frozenset(Rule)
    rules: set[Rule] = set()
    for part in select.split(","):
        code = part.strip().upper()
        if not code:
            continue
        try:
            rules.add(Rule(code))
        except ValueError:
            known = ", ".join(r.value for r in Rule)
            raise InvalidValueError(f"unknown rule {part.strip()!r} (known: {known})") from None
    return frozenset(rules)
