"""The ``devptr check`` command (typer)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from devptr.lint._config import command_config
from devptr.lint._report import OutputFormat, render
from devptr.lint.errors import SelectionError

PROGRESS_MIN_FILES = 200
"""Show a progress bar (on stderr) when checking at least this many files on a terminal."""

SELECT_HELP = (
    "Rules to run: codes (DP001), prefixes (DP00), categories (defect, convention, host) "
    "or ALL; comma-separated and repeatable. Replaces [tool.devptr] select. "
    "Default: the defect rules."
)


def check_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to check.")],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="text, json, github or sarif.")
    ] = OutputFormat.TEXT,
    select: Annotated[list[str] | None, typer.Option(help=SELECT_HELP)] = None,
    extend_select: Annotated[
        list[str] | None,
        typer.Option(help="Rules to add to the configured selection (same syntax)."),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option(help="Rules to skip (same syntax as --select); adds to [tool.devptr]."),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(help="Extra glob patterns of paths to skip (comma-separated, repeatable)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="pyproject.toml to read [tool.devptr] from.")
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Worker processes (0: one per CPU).")
    ] = 0,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress", help="Force the progress bar (on stderr)."),
    ] = None,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Print a count per rule to stderr.")
    ] = False,
    force_exclude: Annotated[
        bool,
        typer.Option("--force-exclude", help="Apply excludes to files named explicitly too."),
    ] = False,
) -> None:
    """Find device addresses stored where they break (rules DP001-DP008).

    By default only defects run: code that fails or loses bits for addresses >= 2**63, or
    behaves differently on torch 2.13 and 2.14. Convention and host-address rules run when
    selected (--select ALL). Findings go to stdout, messages to stderr. Exits 1 when
    anything is found; 2 on a usage or configuration error, or when a file or folder could
    not be read, decoded or parsed (reported in every format); 130 when interrupted.
    """
    from devptr.lint.engine._pool import exit_now, interrupts_recorded

    def stop() -> None:
        typer.echo("devptr check: interrupted", err=True)
        exit_now(130)

    with interrupts_recorded() as interrupted:
        try:
            try:
                _check(paths, output_format, select, extend_select, ignore, exclude, config,
                       jobs, progress, statistics, force_exclude)
            finally:
                if interrupted():  # also one that a callback swallowed (see interrupts_recorded)
                    stop()
        except KeyboardInterrupt:
            stop()


def _check(
    paths: list[Path], output_format: OutputFormat, select: list[str] | None,
    extend_select: list[str] | None, ignore: list[str] | None, exclude: list[str] | None,
    config: Path | None, jobs: int, progress: bool | None, statistics: bool,
    force_exclude: bool,
) -> None:
    from devptr.lint.engine import Problem, iter_python_files
    from devptr.lint.engine._run import _analyze_files

    try:
        cfg = command_config(paths, config, select, ignore, exclude,
                             extend_select=extend_select)
    except (SelectionError, OSError) as exc:
        typer.echo(f"devptr check: {exc}", err=True)
        raise typer.Exit(2) from exc
    missing = [p for p in paths if not p.exists()]
    if missing:
        typer.echo(f"devptr check: no such path: {missing[0]}", err=True)
        raise typer.Exit(2)
    problems: list[Problem] = []
    files = [str(f) for f in iter_python_files(paths, cfg, force_exclude=force_exclude,
                                               on_problem=problems.append)]
    n_jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    show = progress if progress is not None else (
        sys.stderr.isatty() and len(files) >= PROGRESS_MIN_FILES
    )
    rules = cfg.rules()
    if show:
        from rich.console import Console
        from rich.progress import Progress

        with Progress(console=Console(file=sys.stderr), transient=True) as bar:
            task = bar.add_task("devptr check", total=len(files))
            results = _analyze_files(
                files, rules, n_jobs, lambda n: bar.advance(task, n)
            )
    else:
        results = _analyze_files(files, rules, n_jobs, None)
    findings = sorted(f for r in results for f in r.findings)
    errors = [(p.path, p.message) for p in problems if p.failed]
    errors += [(r.path, r.error) for r in results if r.error is not None]
    skipped = [(p.path, p.message) for p in problems if not p.failed]
    text = render(findings, errors, output_format, skipped=skipped)
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    if statistics:
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.code] = counts.get(f.code, 0) + 1
        for code in sorted(counts):
            typer.echo(f"{code}: {counts[code]}", err=True)
    if statistics or ((findings or errors) and output_format is OutputFormat.TEXT):
        failed = f", {len(errors)} could not be checked" if errors else ""
        typer.echo(f"{len(findings)} finding(s) in {len(files)} file(s){failed}", err=True)
    if errors:
        raise typer.Exit(2)
    if findings:
        raise typer.Exit(1)


def main() -> None:
    """``python -m devptr.lint``: the check command alone (what the pre-commit hook runs)."""
    typer.run(check_command)
