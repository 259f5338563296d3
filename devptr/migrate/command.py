"""``devptr migrate``: the typer command. libcst and rich are imported when it runs.

Exit status: 0 when done (or nothing to change), 1 with ``--diff``/``--check`` when a file
would change, 2 when a file or folder could not be read, decoded, parsed or written (or
changed while the run read it), or a rule id is unknown; 130 when interrupted (Ctrl-C).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from devptr.lint.rules import Rule

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, what shells report)."""


def _rule_range() -> str:
    codes = [r.value for r in Rule]
    return f"{codes[0]}-{codes[-1]}"


_RULES_HELP = (
    f"Comma-separated rule ids ({_rule_range()}), prefixes, categories or ALL; repeatable. "
    "Replaces [tool.devptr] select. Default: the defect rules "
    "(convention rules, whose fixes change no bits, run only when selected)."
)


def migrate_command(
    paths: Annotated[
        list[Path], typer.Argument(exists=True, help="Files or directories to migrate.")
    ],
    diff: Annotated[
        bool,
        typer.Option("--diff", help="Print a unified diff to stdout; write nothing; exit 1 on changes."),
    ] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 when a file would change.")
    ] = False,
    select: Annotated[
        list[str] | None, typer.Option("--select", help=f"Rules to run. {_RULES_HELP}")
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", help="Rules to leave out (same syntax); adds to [tool.devptr] ignore."),
    ] = None,
    unsafe_fixes: Annotated[
        bool,
        typer.Option(
            "--unsafe-fixes",
            help="Also apply fixes that may change behaviour for some input (see docs/migrate.md).",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Worker processes (default: every core)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="pyproject.toml to read [tool.devptr] from (as devptr check)."),
    ] = None,
) -> None:
    """Rewrite device-pointer code onto devptr, from the findings of 'devptr check'.

    Safe fixes are applied (unsafe ones with --unsafe-fixes); a finding without an applied
    fix gets a comment '# TODO[devptr]: DPxxx <why>' above its statement (continued on
    '#   ' lines) and a
    warning line 'path:line:col: DPxxx <why>' on stderr.
    """
    try:
        from devptr.migrate._report import run
    except ImportError as exc:  # libcst is an optional dependency
        typer.echo(
            f"devptr migrate needs libcst: pip install 'libcst>=1.9,<2' (devptr's migrate extra) ({exc})",
            err=True,
        )
        raise typer.Exit(2) from exc

    from devptr.lint.engine._pool import exit_now, interrupts_recorded

    with interrupts_recorded() as interrupted:
        try:
            status = run(
                paths,
                diff=diff,
                check=check,
                select=select,
                ignore=ignore,
                unsafe_fixes=unsafe_fixes,
                jobs=jobs,
                config=config,
            )
        except KeyboardInterrupt:  # before the files were walked: nothing written
            typer.echo("interrupted: nothing written", err=True)
            exit_now(130)
        if interrupted() and status != INTERRUPTED:  # a Ctrl-C a callback swallowed
            typer.echo("interrupted: the run finished first (its summary is above)", err=True)
            exit_now(INTERRUPTED)
    if status == INTERRUPTED:
        exit_now(status)  # the workers were terminated: do not wait for their pool's threads
    raise typer.Exit(status)
