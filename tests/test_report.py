"""The RFC's generated tables match what ``python -m tools.report`` produces on this torch.

CI runs this under torch 2.13 and torch 2.14, so each run checks its own column of the
version-dependent tables (and every cell of the version-independent ones).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.report import (
    APPENDIX_PATH,
    DOC_PATHS,
    RFC_PATH,
    check_document,
    generate,
    installed_version,
    main,
    specs,
)
from tools.report.md import (
    NOT_RUN,
    Block,
    ReportError,
    StaticTable,
    VersionedTable,
    find_blocks,
    merge_column,
    merge_versioned,
    parse_table,
    update_text,
)

_BLOCK = re.compile(r"<!-- devptr-report:([a-z0-9-]+) -->.*?<!-- /devptr-report:\1 -->", re.DOTALL)
ROOT = Path(__file__).resolve().parents[1]
RFC = ROOT / RFC_PATH
APPENDIX = ROOT / APPENDIX_PATH
RFC_MAX_LINES = 220
"""The RFC stays short (about 200 lines of prose and tables); the evidence is in the appendix."""


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return generate()


@pytest.fixture(scope="module")
def docs() -> dict[Path, str]:
    return {path: (ROOT / path).read_text(encoding="utf-8") for path in DOC_PATHS}


@pytest.fixture(scope="module")
def rfc_text(docs: dict[Path, str]) -> str:
    """Both documents together (each block lives in exactly one of them)."""
    return "\n".join(docs.values())


def test_every_block_lives_in_exactly_one_document(docs: dict[Path, str]) -> None:
    found = {path: set(find_blocks(text)) for path, text in docs.items()}
    for spec in specs():
        homes = [str(p) for p, names in found.items() if spec.name in names]
        assert len(homes) == 1, f"block {spec.name!r} is in {homes or 'no document'}"
    known = {s.name for s in specs()} | {
        "vllm-check",
        "vllm-check-areas",
        "vllm-check-platforms",
        "vllm-kernel-compares",
    }
    for path, names in found.items():
        assert names <= known, f"{path} holds blocks no generator writes: {names - known}"


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.name)
def test_document_tables_match_this_torch(path: Path, docs: dict[Path, str], blocks: list[Block]) -> None:
    present = set(find_blocks(docs[path]))
    mine = [b for b in blocks if b.name in present]
    assert mine, f"{path} holds no generated block"
    problems = check_document(docs[path], mine, installed_version())
    assert not problems, (
        f"the tables of {path} differ from this run; regenerate with "
        f"`python -m tools.report --update {path}`:\n" + "\n".join(problems)
    )


def test_rfc_is_short_and_asks_first(docs: dict[Path, str]) -> None:
    lines = docs[RFC_PATH].splitlines()
    assert len(lines) <= RFC_MAX_LINES, f"{RFC_PATH} has {len(lines)} lines (at most {RFC_MAX_LINES})"
    first_screen = "\n".join(lines[:20])
    assert "The ask" in first_screen and "files change" in first_screen
    assert "devptr-report" not in first_screen


def _first_versioned(blocks: list[Block], check: str) -> Block:
    return next(b for b in blocks if isinstance(b.table, VersionedTable) and b.check == check)


def _edit_cell(text: str, block: str, column: str, new: str) -> str:
    """``text`` with the first data cell of ``column`` in ``block`` replaced by ``new``."""
    body = find_blocks(text)[block]
    header, rows = parse_table(body)
    col = header.index(column)
    row = rows[0]
    old_line = "| " + " | ".join(row) + " |"
    row = [*row[:col], new, *row[col + 1 :]]
    new_line = "| " + " | ".join(row) + " |"
    assert old_line in text
    return text.replace(old_line, new_line, 1)


def test_an_edited_behaviour_cell_fails(rfc_text: str, blocks: list[Block]) -> None:
    block = _first_versioned(blocks, "exact")
    column = f"torch {installed_version()}"
    body_cell = parse_table(find_blocks(rfc_text)[block.name])[1][0]
    header = parse_table(find_blocks(rfc_text)[block.name])[0]
    flipped = "ok" if body_cell[header.index(column)] != "ok" else "ValueError: edited"
    edited = _edit_cell(rfc_text, block.name, column, flipped)
    problems = check_document(edited, blocks, installed_version())
    assert any(block.name in p for p in problems)


def test_an_edited_static_cell_fails(rfc_text: str, blocks: list[Block]) -> None:
    block = next(b for b in blocks if isinstance(b.table, StaticTable))
    header = parse_table(find_blocks(rfc_text)[block.name])[0]
    edited = _edit_cell(rfc_text, block.name, header[-1], "edited")
    assert any(block.name in p for p in check_document(edited, blocks, installed_version()))


def test_a_timing_cell_off_by_far_fails(rfc_text: str, blocks: list[Block]) -> None:
    block = _first_versioned(blocks, "timing")
    column = f"torch {installed_version()}"
    edited = _edit_cell(rfc_text, block.name, column, "900 s")
    assert any(block.name in p for p in check_document(edited, blocks, installed_version()))


def test_other_version_column_is_kept_and_not_compared() -> None:
    table = VersionedTable(("spelling",), ((("`a`",), "ok"), (("`b`",), "ValueError: x")), "torch X")
    mine, other = installed_version(), "1.0"
    existing = (
        f"| spelling | torch {other} | torch {mine} |\n|---|---|---|\n"
        "| `a` | NotImplementedError | stale |\n| `b` | ok | stale |\n"
    )
    merged = merge_versioned(existing, table, mine)
    header, rows = parse_table(merged)
    assert header == ["spelling", f"torch {other}", f"torch {mine}"]
    assert rows[0] == ["`a`", "NotImplementedError", "ok"]
    assert rows[1] == ["`b`", "ok", "ValueError: x"]
    # a row new to this run reads (not run) in the other version's column
    table2 = attrs_evolve_rows(table, ((("`c`",), "ok"),))
    rows2 = parse_table(merge_versioned(merged, table2, mine))[1]
    assert ["`c`", NOT_RUN, "ok"] in rows2


def test_merge_column_from_another_run() -> None:
    ours = "| spelling | torch 2.13 |\n|---|---|\n| `a` | ok |\n| `b` | ok |\n"
    theirs = "| spelling | torch 2.11 | torch 2.13 |\n|---|---|---|\n| `a` | ValueError: x | stale |\n"
    header, rows = parse_table(merge_column(ours, theirs, "2.11"))
    assert header == ["spelling", "torch 2.11", "torch 2.13"]
    assert rows == [["`a`", "ValueError: x", "ok"], ["`b`", NOT_RUN, "ok"]]
    with pytest.raises(ReportError):
        merge_column(ours, theirs, "2.9")


def attrs_evolve_rows(
    table: VersionedTable, extra: tuple[tuple[tuple[str, ...], str], ...]
) -> VersionedTable:
    return VersionedTable(table.keys, table.rows + extra, table.provenance)


def test_update_is_idempotent_and_keeps_prose(rfc_text: str, blocks: list[Block]) -> None:
    once, missing = update_text(rfc_text, blocks, installed_version())
    assert not missing
    twice, _ = update_text(once, blocks, installed_version())
    assert once == twice
    assert _BLOCK.sub("", once) == _BLOCK.sub("", rfc_text)
    assert not check_document(once, blocks, installed_version())


def test_version_tables_have_both_supported_columns(rfc_text: str) -> None:
    found = find_blocks(rfc_text)
    for name in ("traps", "alt-summary"):
        header = parse_table(found[name])[0]
        assert "torch 2.13" in header and "torch 2.14" in header, (name, header)


def test_cli_check_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--check`` returns 1 on a document whose traps column was edited, 0 after ``--update``."""
    doc = tmp_path / "rfc.md"
    column = f"torch {installed_version()}"
    edited = _edit_cell(APPENDIX.read_text(encoding="utf-8"), "traps", column, "edited")
    doc.write_text(edited, encoding="utf-8")
    assert main(["--only", "traps", "--check", str(doc)]) == 1
    assert "traps" in capsys.readouterr().out
    assert main(["--only", "traps", "--update", str(doc)]) == 0
    assert main(["--only", "traps", "--check", str(doc)]) == 0
    assert "0 difference(s)" in capsys.readouterr().out


@pytest.mark.skipif(
    not os.environ.get("DEVPTR_VLLM_TREE"), reason="set DEVPTR_VLLM_TREE to a vLLM source tree"
)
def test_vllm_check_counts_match(rfc_text: str) -> None:
    tree = Path(os.environ["DEVPTR_VLLM_TREE"])
    blocks = generate(
        ["vllm-check", "vllm-check-areas", "vllm-check-platforms", "vllm-kernel-compares"], tree
    )
    problems = check_document(rfc_text, blocks, installed_version())
    assert not problems, (
        "devptr check's counts on vLLM differ from the appendix (did the checker change?); run "
        f"`python -m tools.report --update {APPENDIX_PATH} "
        "--only vllm-check,vllm-check-areas,vllm-check-platforms,vllm-kernel-compares "
        "--vllm-tree $DEVPTR_VLLM_TREE`:\n" + "\n".join(problems)
    )


def test_import_devptr_does_not_import_report() -> None:
    code = "import sys, devptr; print('tools.report' in sys.modules, 'tools.report.md' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("path", DOC_PATHS, ids=lambda p: p.name)
def test_relative_links_resolve(path: Path, docs: dict[Path, str]) -> None:
    prose = re.sub(r"`[^`\n]*`", "", docs[path])  # `kernel[grid](...)` in code is not a link
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    assert links
    base = (ROOT / path).parent
    missing = [link for link in links if "://" not in link and not (base / link.split("#", 1)[0]).exists()]
    assert not missing, f"links in {path} that point nowhere: {missing}"
