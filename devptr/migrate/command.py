"""``devptr migrate``: the typer command. libcst and rich are imported when it runs.

Exit status: 0 when done (or nothing to change), 1 with ``--diff``/``--check`` when a file
would change, 2 when a file could not be read or parsed, or a rule id is unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def migrate_command(
    paths: Annotated[
        list[Path], typer.Argument(exists=True, help="Files or directories to migrate.")
    ],
    diff: Annotated[
        bool, typer.Option("--diff", help="Print a unified diff; write nothing; exit 1 on changes.")
    ] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 when a file would change.")
    ] = False,
    select: Annotated[
        str | None, typer.Option("--select", help="Comma-separated rule ids, e.g. DP001,DP004.")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes.")] = 1,
) -> None:
    """Rewrite device-pointer code onto devptr (libcst codemods, one per rule DP001-DP005).

    Sites that cannot be rewritten safely get a '# TODO[devptr]: DPxxx why' comment and a
    warning line.
    """
    try:
        from devptr.migrate._report import run
    except ImportError as exc:  # libcst is an optional dependency
        typer.echo(f"devptr migrate needs libcst: pip install 'devptr[migrate]' ({exc})", err=True)
        raise typer.Exit(2) from exc

    raise typer.Exit(run(paths, diff=diff, check=check, select=select, jobs=jobs))
