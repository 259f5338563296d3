"""Run the migration over files and directories, serially or in worker processes."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path

import attrs

from devptr.lint._config import Config, find_pyproject, load_config, with_overrides
from devptr.lint.engine import FileResult, Finding, Problem, Stamp, analyze_files, iter_python_files
from devptr.lint.engine._files import OnProblem
from devptr.lint.engine._pool import worker_pool
from devptr.lint.rules import Rule
from devptr.migrate._engine import Outcome, migrate_file


def collect_files(
    paths: Iterable[Path], config: Config | None = None, on_problem: OnProblem | None = None
) -> list[Path]:
    """Python files under ``paths``: the file walker of ``devptr check``.

    :func:`devptr.lint.engine.iter_python_files`, honouring ``[tool.devptr] exclude`` of
    ``config`` (default: the nearest ``pyproject.toml`` above the first path) and the
    default excludes (``.git``, ``__pycache__``, ``build``, ``dist``...). Files named
    explicitly are kept. Symlinks out of ``paths``, FIFOs and devices are skipped and
    folders that cannot be listed are failures: each goes to ``on_problem``.

    Raises
    ------
    devptr.lint._config.ConfigError
        A ``ValueError``, for an invalid ``[tool.devptr]`` table.
    """
    roots = list(paths)
    if config is None:
        config = load_config(find_pyproject(roots[0] if roots else Path()))
    return list(iter_python_files(roots, config, on_problem=on_problem))


def display_name(path: Path) -> str:
    """The path as shown in warnings and diffs: relative to the working directory if inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


_Job = tuple[str, frozenset[Rule], bool, "tuple[Finding, ...] | None", "Stamp | None"]


def _work(job: _Job) -> Outcome:
    path = Path(job[0])
    return migrate_file(path, job[1], display_name(path), unsafe_fixes=job[2], findings=job[3],
                        stamp=job[4])


def _stamp(path: Path) -> Stamp | None:
    try:
        return Stamp.of(os.stat(path))
    except OSError:
        return None  # reading it reports why


def default_jobs() -> int:
    """Worker processes when none are asked for: every core."""
    return os.cpu_count() or 1


def iter_outcomes(
    files: list[Path],
    rules: frozenset[Rule],
    jobs: int | None = None,
    *,
    unsafe_fixes: bool = False,
    analysis: Sequence[FileResult] | None = None,
) -> Generator[Outcome, None, None]:
    """Migrate every file (in memory) and yield outcomes in file order.

    First the engine analyses the whole tree, as ``devptr check`` does (helpers of other
    modules included); then the files with findings (or that failed to analyse) are
    migrated, in ``jobs`` worker processes (default: every core). The others are left
    as they are without being parsed again. ``analysis``: that tree analysis, when the
    caller has it already (one :class:`FileResult` per file, in order). Each file's stat
    stamp is taken before the analysis: a file that changes after it is not migrated.
    Closing the generator (or an interrupt) terminates the workers at once.
    """
    jobs = default_jobs() if jobs is None else jobs
    stamps = [_stamp(f) for f in files]
    results = analyze_files(files, rules, jobs=jobs) if analysis is None else analysis
    work: list[_Job] = []
    for f, result, stamp in zip(files, results, stamps, strict=True):
        if result.error is not None:
            work.append((str(f), rules, unsafe_fixes, None, None))
        elif result.findings:
            work.append((str(f), rules, unsafe_fixes, tuple(result.findings), stamp))
    with contextlib.ExitStack() as stack:
        done: Iterator[Outcome]
        if jobs <= 1 or len(work) < 2:
            done = map(_work, work)
        else:
            pool = stack.enter_context(worker_pool(jobs))
            done = pool.map(_work, work, chunksize=max(1, min(4, len(work) // (jobs * 4))))
        pending = {w[0] for w in work}
        for f in files:
            if str(f) in pending:
                yield next(done)
            else:
                yield Outcome(display_name(f), "", "", {}, {}, ())


@attrs.define
class Summary:
    """Totals over a run: what the closing table shows."""

    scanned: int = 0
    changed: int = 0
    rewrites: Counter[Rule] = attrs.field(factory=Counter)
    unsafe: Counter[Rule] = attrs.field(factory=Counter)
    todos: Counter[Rule] = attrs.field(factory=Counter)
    failures: list[tuple[str, str]] = attrs.field(factory=list)
    changed_paths: list[str] = attrs.field(factory=list)
    skipped: list[tuple[str, str]] = attrs.field(factory=list)
    """Paths the walker skipped on purpose (a symlink out of the tree, a FIFO)."""

    def problem(self, problem: Problem) -> None:
        """Account for a path the walker did not hand out."""
        if problem.failed:
            self.failures.append((problem.path, problem.message))
        else:
            self.skipped.append((problem.path, problem.message))

    def fail(self, outcome: Outcome, why: str) -> None:
        """A changed file that could not be written: a failure, and none of its edits count."""
        if outcome.path in self.changed_paths:
            self.changed_paths.remove(outcome.path)
            self.changed -= 1
            self.rewrites.subtract(outcome.rewrites)
            self.unsafe.subtract(outcome.unsafe)
            self.todos.subtract(outcome.todos)
        self.failures.append((outcome.path, why))

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
        self.unsafe.update(outcome.unsafe)
        self.todos.update(outcome.todos)


def parse_rules(
    select: Sequence[str] | str | None = None, ignore: Sequence[str] | str | None = None
) -> frozenset[Rule]:
    """The rules a run uses: ``--select`` (default: the defect rules) minus ``--ignore``.

    Both options take comma-separated items, may be repeated, and accept rule codes,
    prefixes, categories and ``ALL``: the parser ``devptr check`` uses
    (:mod:`devptr.lint._selection`).

    Raises
    ------
    devptr.lint._selection.SelectionError
        A ``ValueError`` naming the option, for an item that names no rule.
    """
    return with_overrides(Config(), as_items(select), as_items(ignore), None).rules()


def as_items(value: Sequence[str] | str | None) -> Sequence[str] | None:
    """An option's value as a list of items (a plain string is one item)."""
    return [value] if isinstance(value, str) else value
