"""The terminal side of ``devptr migrate``: progress bar, warnings, diffs, summary table.

Diffs go to stdout (so ``devptr migrate --diff src > change.patch`` works, with or without a
terminal); the progress bar, warnings and the summary table go to stderr. The progress
bar never redirects stdout, and is not shown when stdout and stderr are one terminal and a
diff is printed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from devptr.lint._config import command_config
from devptr.lint.rules import RULES, Rule
from devptr.migrate._engine import Outcome
from devptr.migrate._runner import Summary, as_items, collect_files, iter_outcomes
from devptr.migrate._write import write_back
from devptr.migrate.errors import WriteRefusedError


def _line(console: Console, text: str) -> None:
    """One plain line (no markup, no wrapping), so tools can grep ``path:line:col:``."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def summary_table(summary: Summary, *, wrote: bool) -> Table:
    """The closing table: files scanned/changed, per-rule rewrites and TODOs, failures."""
    table = Table(title="devptr migrate", show_footer=True)
    table.add_column("rule", footer="total")
    table.add_column("name")
    table.add_column("fixed", justify="right", footer=str(sum(summary.rewrites.values())))
    table.add_column("of which unsafe", justify="right", footer=str(sum(summary.unsafe.values())))
    table.add_column("TODOs added", justify="right", footer=str(sum(summary.todos.values())))
    for rule in Rule:
        table.add_row(
            rule.value,
            RULES[rule].name,
            str(summary.rewrites[rule]),
            str(summary.unsafe[rule]),
            str(summary.todos[rule]),
        )
    verb = "changed" if wrote else "would change"
    skipped = f", {len(summary.skipped)} skipped" if summary.skipped else ""
    table.caption = (
        f"{summary.scanned} files scanned, {summary.changed} {verb}, "
        f"{len(summary.failures)} failed{skipped}"
    )
    return table


def _write(path: Path, outcome: Outcome) -> str | None:
    """Write ``outcome`` over ``path``; why not, when it was refused (the file is unchanged)."""
    if outcome.stamp is None:
        return "not written: the file was not read by this run"
    try:
        write_back(path, outcome.new, encoding=outcome.encoding, stamp=outcome.stamp,
                   sha=outcome.digest)
    except WriteRefusedError as exc:
        return str(exc)
    return None


def run(
    paths: Sequence[Path],
    *,
    diff: bool = False,
    check: bool = False,
    select: Sequence[str] | str | None = None,
    ignore: Sequence[str] | str | None = None,
    unsafe_fixes: bool = False,
    jobs: int | None = None,
    err: Console | None = None,
    config: Path | None = None,
) -> int:
    """Migrate ``paths`` and report; returns the exit status (see ``command.py``).

    Each changed file is written atomically (:mod:`devptr.migrate._write`); a file that
    cannot be written, or changed since it was read, is reported and the run goes on. On
    Ctrl-C the workers are stopped, every file is the old or the new one, and 130 is
    returned.

    The rules and excludes come from ``[tool.devptr]`` of *config* (default: the nearest
    ``pyproject.toml`` above the first path) with ``select``/``ignore`` applied, read by
    :func:`devptr.lint._config.command_config` exactly as ``devptr check`` reads them.
    """
    err = err or Console(stderr=True)
    summary = Summary()
    try:
        settings = command_config(paths, config, as_items(select), as_items(ignore))
        rules = settings.rules()
        files = collect_files(paths, settings, on_problem=summary.problem)
    except (ValueError, OSError) as exc:
        _line(err, f"error: {exc}")
        return 2
    for where, why in summary.failures:
        _line(err, f"error: {where}: {why}")
    for where, why in summary.skipped:
        _line(err, f"warning: {where}: skipped: {why}")
    write = not (diff or check)
    progress = Progress(
        TextColumn("migrating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
        disable=diff and sys.stdout.isatty() and err.is_terminal,
    )
    outcomes = iter_outcomes(files, rules, jobs, unsafe_fixes=unsafe_fixes)
    try:
        with progress:
            task = progress.add_task("files", total=len(files))
            for path, outcome in zip(files, outcomes, strict=True):
                summary.add(outcome)
                progress.advance(task)
                for line in outcome.warnings:
                    _line(progress.console, f"warning: {line}")
                if outcome.error is not None:
                    _line(progress.console, f"error: {outcome.path}: {outcome.error}")
                if not outcome.changed:
                    continue
                if diff:
                    sys.stdout.write(outcome.diff())
                    sys.stdout.flush()
                if write and (refused := _write(path, outcome)) is not None:
                    summary.fail(outcome, refused)
                    _line(progress.console, f"error: {outcome.path}: {refused}")
    except KeyboardInterrupt:
        outcomes.close()  # terminates the workers
        done = f"{summary.changed} written" if write else "nothing written"
        _line(err, f"interrupted: {done}; every other file is unchanged")
        return 130
    err.print(summary_table(summary, wrote=write))
    if summary.failures:
        return 2
    if not write and summary.changed:
        return 1
    return 0

