"""Print a demo table whole at any console width: as a table when it fits, else stacked.

A table whose narrowest rendering (every ``no_wrap`` cell whole, wrapping cells at their
longest word) is wider than the console would have columns dropped or addresses cut,
so rows could look identical. Such a table is split into tables of fewer columns, each
repeating the first (key) column; when even that does not fit, it is printed stacked:
one block per row, ``column: value`` per line, every value whole.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text


def _words(cell: object) -> list[str]:
    text = Text.from_markup(cell) if isinstance(cell, str) else cell
    return text.plain.split() if isinstance(text, Text) else []


def fits(con: Console, table: Table) -> bool:
    """Whether ``table`` renders at ``con``'s width with every word of every cell whole.

    Rendered for real (rich shrinks columns in ways a measurement does not predict): a
    cut address, a dropped column or a word broken across lines fails the check.
    """
    probe = Console(file=io.StringIO(), width=con.width, color_system=None, legacy_windows=False)
    probe.print(table)
    out = probe.file.getvalue()  # type: ignore[attr-defined]
    words = (w for c in table.columns for cell in [c.header, *c.cells] for w in _words(cell))
    return all(w in out for w in words)


def _sub(table: Table, cols: list[int], part: str) -> Table:
    """A table of ``table``'s columns ``cols`` (same cells), titled with ``part``."""
    title = f"{table.title} {part}" if table.title else None
    out = Table(title=title, show_lines=table.show_lines)
    picked = [table.columns[j] for j in cols]
    for c in picked:
        out.add_column(c.header, justify=c.justify, no_wrap=c.no_wrap, overflow=c.overflow)
    cells = [list(c.cells) for c in picked]
    for k in range(table.row_count):
        out.add_row(*(col[k] for col in cells))
    return out


def _split(con: Console, table: Table) -> list[Table] | None:
    """Column groups (each led by the first column) that fit ``con``; None if none do."""
    groups: list[list[int]] = []
    current = [0]
    for j in range(1, len(table.columns)):
        if fits(con, _sub(table, [*current, j], "")):
            current.append(j)
            continue
        if len(current) == 1:
            return None
        groups.append(current)
        current = [0, j]
        if not fits(con, _sub(table, current, "")):
            return None
    groups.append(current)
    return [_sub(table, g, f"({k + 1}/{len(groups)})") for k, g in enumerate(groups)]


def print_table(con: Console, table: Table) -> None:
    """Print ``table`` whole on ``con``: as is, split by columns, or stacked by rows."""
    if fits(con, table):
        con.print(table)
        return
    parts = _split(con, table)
    if parts is not None:
        for part in parts:
            con.print(part)
        return
    if table.title:
        con.print(Text.from_markup(str(table.title), style="italic"), justify="center")
    headers = [str(c.header) for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    width = max(len(h) for h in headers)
    for k in range(table.row_count):
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", no_wrap=True, width=width + 1)
        grid.add_column(overflow="fold")
        for header, cells in zip(headers, columns, strict=True):
            grid.add_row(f"{header}:", cells[k])
        con.rule(f"row {k}", style="dim", align="left")
        con.print(grid)
