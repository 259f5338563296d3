"""The ``devptr`` command line: ``demo``, ``check``, ``migrate``."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="devptr",
    help="Device pointers as a typed, checked value.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # help texts are plain: "[tool.devptr]" is not markup, lines join
)


def _print_version(value: bool) -> None:
    if value:
        from devptr import __version__

        typer.echo(f"devptr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Device pointers as a typed, checked value: demo, check, migrate."""


@app.command()
def demo() -> None:
    """Show the torch/numpy traps on the installed torch and devptr's bit-exact path."""
    from devptr.demo import run_demo

    run_demo()


@app.command()
def selftest(
    device: str = typer.Option(None, help="device to test (default: the first accelerator, else the CPU)"),
) -> None:
    """Check devptr on this machine's accelerator and print a report to paste into the RFC discussion."""
    from devptr import DevPtrError
    from devptr.selftest import format_report, run_selftest

    try:
        target, results = run_selftest(device)
    except DevPtrError as exc:  # a bad or missing device: one line, not a traceback
        typer.echo(f"devptr selftest: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(format_report(target, results), nl=False)
    raise typer.Exit(1 if any(r.status == "FAIL" for r in results) else 0)


from devptr.lint.command import check_command  # noqa: E402 - light: typer + stdlib only

app.command("check")(check_command)

from devptr.migrate.command import migrate_command  # noqa: E402 - typer only; libcst lazily

app.command("migrate")(migrate_command)


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":
    main()
