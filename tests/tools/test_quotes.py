"""Every RFC quote of a benchmark results file (a ``perf-*`` block) matches that file.

``python -m tools.report --update`` copies tables from ``benchmarks/results/*.md`` into the
RFC's ``perf-*`` blocks (``tools.report.QUOTES`` says which table). Nothing re-copies them
when a results file changes, so this test re-reads each quoted table and compares the
block's text with it exactly, for every ``rfc/*.md`` that holds such blocks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools.report import QUOTES
from tools.report.md import escape_cell, find_blocks, render_table
from tools.report.quote import Quote, quote_table

ROOT = Path(__file__).resolve().parents[2]
RFC_FILES = sorted((ROOT / "rfc").rglob("*.md"))


def _expected(root: Path, quote: Quote) -> str:
    table = quote_table(root, quote)
    return render_table(table.header, [[escape_cell(c) for c in r] for r in table.rows])


def stale_quotes(root: Path, documents: list[Path]) -> list[str]:
    """What differs between the ``perf-*`` blocks of ``documents`` and the files under ``root``."""
    problems: list[str] = []
    for doc in documents:
        for name, body in find_blocks(doc.read_text(encoding="utf-8")).items():
            if not name.startswith("perf-"):
                continue
            where = f"{doc.relative_to(root)}: block {name}"
            quote = QUOTES.get(name)
            if quote is None:
                problems.append(f"{where} is not in tools.report.QUOTES")
                continue
            table = quote_table(root, quote)
            if table.header == ("source",):  # the one-cell "not available" table
                problems.append(f"{where}: {table.rows[0][0]}")
                continue
            if body != _expected(root, quote):
                problems.append(
                    f"{where} differs from the table under {quote.heading!r} in {quote.path} "
                    f"(refresh with `python -m tools.report --update {doc.relative_to(root)}`)"
                )
    return problems


def test_some_rfc_quotes_a_results_file() -> None:
    quoted = {
        n for doc in RFC_FILES for n in find_blocks(doc.read_text(encoding="utf-8")) if n.startswith("perf-")
    }
    assert quoted, f"no perf-* block in {[str(p.relative_to(ROOT)) for p in RFC_FILES]}"


def test_every_rfc_quote_matches_its_results_file() -> None:
    problems = stale_quotes(ROOT, RFC_FILES)
    assert not problems, "\n".join(problems)


def _mirror(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A copy of the RFC files and the quoted results files under ``tmp_path``."""
    for path in {q.path for q in QUOTES.values()}:
        if (ROOT / path).is_file():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, tmp_path / path)
    docs = []
    for doc in RFC_FILES:
        dst = tmp_path / doc.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(doc, dst)
        docs.append(dst)
    return tmp_path, docs


def _first_quote() -> tuple[str, Quote]:
    """The first quoted block of the documents."""
    for doc in RFC_FILES:
        for name in find_blocks(doc.read_text(encoding="utf-8")):
            if name in QUOTES:
                return name, QUOTES[name]
    pytest.fail("no quoted block")


def _last_row_index(lines: list[str], quote: Quote) -> int:
    """Index in ``lines`` of the last row of the table ``quote`` copies."""
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("#") and quote.heading in ln)
    tables: list[list[int]] = [[]]
    for i in range(start + 1, len(lines)):
        if lines[i].strip().startswith("|"):
            tables[-1].append(i)
        elif tables[-1]:
            tables.append([])
    return tables[quote.index][-1]


def test_a_changed_results_cell_is_reported(tmp_path: Path) -> None:
    root, docs = _mirror(tmp_path)
    assert not stale_quotes(root, docs)
    name, quote = _first_quote()
    results = root / quote.path
    lines = results.read_text(encoding="utf-8").splitlines()
    i = _last_row_index(lines, quote)
    lines[i] = lines[i].rstrip().removesuffix("|").rstrip() + " (edited) |"
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert any(name in p and "differs" in p for p in stale_quotes(root, docs))


def test_a_missing_results_file_is_reported(tmp_path: Path) -> None:
    root, docs = _mirror(tmp_path)
    name, quote = _first_quote()
    (root / quote.path).unlink()
    assert any(name in p and "not yet available" in p for p in stale_quotes(root, docs))


def test_a_row_left_out_of_a_quote_is_reported(tmp_path: Path) -> None:
    """A quote copies its table whole: a document that drops a row (or filters rows) fails."""
    root, docs = _mirror(tmp_path)
    name, _ = _first_quote()
    doc = next(d for d in docs if name in find_blocks(d.read_text(encoding="utf-8")))
    text = doc.read_text(encoding="utf-8")
    body = find_blocks(text)[name]
    lines = body.splitlines(keepends=True)
    assert len(lines) > 3, f"{name} has no row to drop"
    doc.write_text(text.replace(body, "".join(lines[:-1]), 1), encoding="utf-8")
    assert any(name in p and "differs" in p for p in stale_quotes(root, docs))


def test_quotes_have_no_row_filter() -> None:
    assert all(not hasattr(q, "keep") for q in QUOTES.values())
