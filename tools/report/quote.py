"""Quote a table from a benchmark results file into the RFC (``benchmarks/results/*.md``).

The results files are written by each part's own benchmark script (their commands are in the
files). The RFC quotes a table from them verbatim, located by a heading, so that a refresh
(``python -m tools.report --update``) copies the current numbers instead of a hand edit.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from tools.report.md import ReportError, StaticTable, split_row


@attrs.frozen
class Quote:
    """Which table to quote: the ``index``-th table after the first heading containing ``heading``."""

    path: Path
    """Relative to the repository root."""
    heading: str
    index: int = 0


def _tables_after(lines: list[str], start: int) -> list[list[str]]:
    tables: list[list[str]] = []
    cur: list[str] = []
    for line in lines[start:]:
        if line.strip().startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    if cur:
        tables.append(cur)
    return tables


def quote_table(root: Path, quote: Quote) -> StaticTable:
    """The quoted table, or a one-cell table saying why it is not available (yet)."""
    src = root / quote.path
    if not src.is_file():
        return StaticTable(("source",), ((f"not yet available: `{quote.path}`",),))
    lines = src.read_text(encoding="utf-8").splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if ln.lstrip().startswith("#") and quote.heading in ln), None
    )
    if start is None:
        return StaticTable(("source",), ((f"heading {quote.heading!r} not found in `{quote.path}`",),))
    tables = _tables_after(lines, start + 1)
    if len(tables) <= quote.index:
        return StaticTable(
            ("source",), ((f"no table {quote.index} after {quote.heading!r} in `{quote.path}`",),)
        )
    table = tables[quote.index]
    try:
        header = split_row(table[0])
        rows = [split_row(ln) for ln in table[2:]]
    except ReportError:
        return StaticTable(("source",), ((f"malformed table after {quote.heading!r} in `{quote.path}`",),))
    rows = [[c.replace("\\|", "|") for c in r] for r in rows]
    width = len(header)
    fixed = [tuple((r + [""] * width)[:width]) for r in rows]
    return StaticTable(tuple(header), tuple(fixed))
