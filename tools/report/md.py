"""Markdown plumbing for ``tools.report``: generated blocks, tables, per-version columns.

A generated block sits between marker comments in a markdown file::

    <!-- devptr-report:traps -->
    | spelling | torch 2.13 | torch 2.14 |
    |---|---|---|
    | `u[k] = HI` | ValueError: ... | ok |
    <!-- /devptr-report:traps -->

A *versioned* table has key columns followed by one column per torch version
(``torch X.Y``). The generator runs on one torch at a time, so updating a versioned block
rewrites only the installed version's column and keeps the others. A *static* table is
rewritten whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import attrs

VERSION_HEADER_RE: Final = re.compile(r"^torch (\d+\.\d+)$")
PROVENANCE_KEY: Final = "*measured on*"
"""Key cell of the row that says which exact versions a column was measured on (not compared)."""
NOT_RUN: Final = "(not run)"
"""Cell for a row that a version's run has not produced yet."""

Check = Literal["exact", "timing", "none"]
"""How ``tests/test_report.py`` compares a block: every cell, cells with a tolerance, or not."""


def open_marker(name: str) -> str:
    return f"<!-- devptr-report:{name} -->"


def close_marker(name: str) -> str:
    return f"<!-- /devptr-report:{name} -->"


_BLOCK_RE: Final = re.compile(
    r"<!-- devptr-report:(?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /devptr-report:(?P=name) -->",
    re.DOTALL,
)


class ReportError(Exception):
    """A malformed document or block (missing marker, bad table)."""


def escape_cell(text: str) -> str:
    """Make ``text`` safe inside one markdown table cell (one line, ``|`` escaped)."""
    return " ".join(text.split()).replace("|", "\\|")


def split_row(line: str) -> list[str]:
    """The cells of one markdown table row (``\\|`` is not a separator)."""
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")):
        raise ReportError(f"not a table row: {line!r}")
    cells: list[str] = []
    cur: list[str] = []
    i = 1
    while i < len(s) - 1:
        ch = s[i]
        if ch == "\\" and i + 1 < len(s) - 1 and s[i + 1] == "|":
            cur.append("\\|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def render_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ReportError(f"row has {len(row)} cells, header {len(header)}: {row!r}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def parse_table(body: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the one markdown table in ``body`` (other lines are ignored)."""
    lines = [ln for ln in body.splitlines() if ln.strip().startswith("|")]
    if len(lines) < 2:
        raise ReportError("block holds no markdown table")
    header = split_row(lines[0])
    rows = [split_row(ln) for ln in lines[2:]]
    for r in rows:
        if len(r) != len(header):
            raise ReportError(f"row has {len(r)} cells, header {len(header)}: {r!r}")
    return header, rows


@attrs.frozen
class VersionedTable:
    """Key columns plus this run's cell per row; the column is ``torch X.Y``."""

    keys: tuple[str, ...]
    rows: tuple[tuple[tuple[str, ...], str], ...]
    provenance: str
    """Exact versions this column was measured on (torch, numpy, ...)."""


@attrs.frozen
class StaticTable:
    """A whole table, regenerated as is."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@attrs.frozen
class Block:
    """One generated block: its marker name, its table and how the test compares it."""

    name: str
    table: VersionedTable | StaticTable
    check: Check = "exact"


def version_header(version: str) -> str:
    return f"torch {version}"


def _version_key(header: str) -> tuple[int, ...]:
    m = VERSION_HEADER_RE.match(header)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def merge_versioned(existing: str | None, table: VersionedTable, version: str) -> str:
    """Render ``table`` as the ``torch {version}`` column, keeping other versions' columns.

    Row order and key cells follow ``table`` (the generator is the same on every version);
    rows the generator no longer produces are dropped; other versions' cells for new rows
    read ``(not run)``.
    """
    others: dict[str, dict[tuple[str, ...], str]] = {}
    nkeys = len(table.keys)
    if existing is not None and existing.strip():
        header, rows = parse_table(existing)
        if tuple(header[:nkeys]) == table.keys:
            for col, h in enumerate(header[nkeys:], start=nkeys):
                if VERSION_HEADER_RE.match(h) and h != version_header(version):
                    others[h] = {tuple(r[:nkeys]): r[col] for r in rows}
    cols = sorted({*others, version_header(version)}, key=_version_key)
    out_rows: list[list[str]] = []
    prov_key = (PROVENANCE_KEY,) + ("",) * (nkeys - 1)
    for keys, cell in (*table.rows, (prov_key, table.provenance)):
        row = [escape_cell(k) for k in keys]
        for c in cols:
            if c == version_header(version):
                row.append(escape_cell(cell))
            else:
                row.append(others[c].get(tuple(escape_cell(k) for k in keys), NOT_RUN))
        out_rows.append(row)
    return render_table([*table.keys, *cols], out_rows)


def render_block(existing: str | None, block: Block, version: str) -> str:
    if isinstance(block.table, VersionedTable):
        return merge_versioned(existing, block.table, version)
    return render_table(block.table.header, [[escape_cell(c) for c in r] for r in block.table.rows])


def find_blocks(text: str) -> dict[str, str]:
    """Every generated block's body in ``text``, by name."""
    return {m.group("name"): m.group("body") for m in _BLOCK_RE.finditer(text)}


def update_text(text: str, blocks: Sequence[Block], version: str) -> tuple[str, list[str]]:
    """Rewrite the given blocks in ``text``; return the new text and the names not found."""
    found = find_blocks(text)
    missing = [b.name for b in blocks if b.name not in found]
    by_name = {b.name: b for b in blocks}

    def repl(m: re.Match[str]) -> str:
        name = m.group("name")
        block = by_name.get(name)
        if block is None:
            return m.group(0)
        body = render_block(m.group("body"), block, version)
        return f"{open_marker(name)}\n{body}{close_marker(name)}"

    return _BLOCK_RE.sub(repl, text), missing


_NUM_RE: Final = re.compile(r"^~?(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\b")
_UNIT: Final[dict[str, float]] = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_seconds(cell: str) -> float | None:
    """``'0.14 us'`` -> 1.4e-7; None for a cell that is not a duration."""
    m = _NUM_RE.match(cell.strip().strip("*"))
    return float(m.group(1)) * _UNIT[m.group(2)] if m else None


def _cells_differ(old: str, new: str, check: Check, tolerance: float) -> bool:
    if check == "exact":
        return old != new
    a, b = parse_seconds(old), parse_seconds(new)
    if a is None or b is None:
        return (a is None) != (b is None) or old != new
    if a == 0 or b == 0:
        return a != b
    return not 1 / tolerance <= a / b <= tolerance


def compare_block(body: str, block: Block, version: str, *, tolerance: float = 25.0) -> list[str]:
    """Differences between a document's block and a fresh run (installed version only).

    Versioned tables compare the ``torch {version}`` column, row by row (provenance rows
    excepted); static tables compare every cell. ``timing`` blocks accept durations within a
    factor ``tolerance`` of each other (machines differ); other cells must match exactly.
    """
    if block.check == "none":
        return []
    problems: list[str] = []
    header, rows = parse_table(body)
    if isinstance(block.table, StaticTable):
        want_header = list(block.table.header)
        want = [[escape_cell(c) for c in r] for r in block.table.rows]
        if header != want_header:
            return [f"{block.name}: header {header} != {want_header}"]
        if len(rows) != len(want):
            problems.append(f"{block.name}: {len(rows)} rows in the document, {len(want)} generated")
        for got_row, want_row in zip(rows, want, strict=False):
            for h, g, w in zip(header, got_row, want_row, strict=False):
                if _cells_differ(g, w, block.check, tolerance):
                    problems.append(f"{block.name}: row {want_row[0]!r}, column {h!r}: {g!r} != {w!r}")
        return problems
    vh = version_header(version)
    nkeys = len(block.table.keys)
    if tuple(header[:nkeys]) != block.table.keys:
        return [f"{block.name}: key columns {header[:nkeys]} != {list(block.table.keys)}"]
    if vh not in header:
        return [f"{block.name}: no {vh!r} column (run python -m tools.report --update on torch {version})"]
    col = header.index(vh)
    doc = {tuple(r[:nkeys]): r[col] for r in rows if r[0] != PROVENANCE_KEY}
    gen = {tuple(escape_cell(k) for k in keys): escape_cell(cell) for keys, cell in block.table.rows}
    for keys in doc.keys() - gen.keys():
        problems.append(f"{block.name}: row {list(keys)} is in the document but not generated")
    for keys, cell in gen.items():
        if keys not in doc:
            problems.append(f"{block.name}: generated row {list(keys)} is missing from the document")
        elif _cells_differ(doc[keys], cell, block.check, tolerance):
            problems.append(f"{block.name}: row {list(keys)}, {vh}: document {doc[keys]!r}, run {cell!r}")
    return problems


def merge_column(body: str, other: str, version: str) -> str:
    """``body``'s table with its ``torch {version}`` column taken from ``other``'s table.

    For a run made elsewhere (another machine's copy of the document, e.g. a GPU host with
    an older torch): rows are matched by their key cells; rows ``other`` lacks read
    ``(not run)``. Key columns must agree.
    """
    header, rows = parse_table(body)
    oheader, orows = parse_table(other)
    vh = version_header(version)
    if vh not in oheader:
        raise ReportError(f"no {vh!r} column in the other document's table")
    nkeys = next(i for i, h in enumerate(header) if VERSION_HEADER_RE.match(h))
    if oheader[:nkeys] != header[:nkeys]:
        raise ReportError(f"key columns differ: {oheader[:nkeys]} vs {header[:nkeys]}")
    cells = {tuple(r[:nkeys]): r[oheader.index(vh)] for r in orows}
    cols = sorted({*header[nkeys:], vh}, key=_version_key)
    out: list[list[str]] = []
    for r in rows:
        have = dict(zip(header[nkeys:], r[nkeys:], strict=True))
        have[vh] = cells.get(tuple(r[:nkeys]), NOT_RUN)
        out.append([*r[:nkeys], *(have.get(c, NOT_RUN) for c in cols)])
    return render_table([*header[:nkeys], *cols], out)
