"""Every number in the RFC, its appendix, README and every page of docs/ names its source and is found there.

The convention (``tools.report.claims``): a paragraph, list item or table row that states a
number links its source (a results table is ``file.md#heading``); a list or table inherits the
links of a lead-in paragraph ending in ``:``. Each number must appear in the section the link
names. The tests below also edit copies of the real documents to show the check fails on an
edited prose number, a changed date, a number with no source, a re-run results file and a
results link that names no table.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tools.report.claims import Claim, Tracer, check_all, claim_documents, numbers_in

ROOT = Path(__file__).resolve().parents[2]
DOCS = claim_documents(ROOT)


def test_every_document_with_prose_is_checked() -> None:
    """README, every RFC document and every page of docs/: no backlog, no exemptions."""
    names = {d.as_posix() for d in DOCS}
    assert "README.md" in names
    for folder in ("rfc", "docs"):
        on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob("*.md")}
        assert on_disk and on_disk <= names, on_disk - names
    assert sum(1 for d in DOCS if d.parts[0] == "rfc") >= 3, DOCS


@pytest.mark.parametrize("doc", DOCS, ids=str)
def test_every_claim_is_traced(doc: Path) -> None:
    problems = check_all(ROOT, [doc])
    assert not problems, "\n".join(map(str, problems))


# -- what is and is not a claim -------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "vLLM RFC #50834 asks for uint64",
        "addresses >= 2**63 and 2**64 - 8",
        "torch 2.13 and 2.14 disagree; torch 2.11 on the GPU",
        "vLLM v0.33.0 pins torch==2.14.0 on Python 3.11",
        "see appendix 9.2 and PR 5 (rule R6, DP001)",
        "an int64 table on an H200 with nvidia-h200-x2",
        "bit 63 set, a 64-bit value, 16-byte aligned, 2-D rows",
        "two's complement in [0, 2**64) where 0 <= i < capacity",
        "a 0x7fff_ffff_f000 address",
        "1-based lines, 0-based columns (not UTF-8 bytes), a latin-1 coding line",
        "flag[0] counts arrivals; int32[3] zeros",
        "round k uses buffer k % 3 and clears (k - 1) % 3; round k + 2; 3 x `comm_size` bytes",
        "a -0.0 input counts as +0.0",
        "on a loaded 2-core CPU, a 36-layer model, 4-word chunks",
        "the plugin uses four hooks (method signature, method, function, additional deps)",
    ],
)
def test_non_claims_are_excluded_by_rule(text: str) -> None:
    assert numbers_in(text) == []


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("84.4 us against 1,067 us", ["84.4", "1067"]),
        ("4.7-6.9x slower", ["4.7", "6.9"]),
        ("6.9% of the ceiling", ["6.9"]),
        ("15 of 25 findings", ["15", "25"]),
        ("measured 2026-11-30", ["2026-11-30"]),
        ("six spellings, nine of ten steps", ["6", "9", "10"]),
        ("1.20x (H200 host)", ["1.20"]),
        ("12.5x a one-program kernel", ["12.5"]),  # 'x a' is not a formula
        ("72 x 48 KiB + 72 x 2 MiB", ["72", "48", "72", "2"]),  # a batch's shape is stated
        # a count whose list has another length is a claim (a stale count is not excused)
        ("three hooks (method signature, method, function, additional deps)", ["3"]),
        ("five sections (comm, barrier, lamport)", ["5"]),
    ],
)
def test_claims_are_found(text: str, values: list[str]) -> None:
    assert [v for _, v in numbers_in(text)] == values


# -- the check fails where it should (on copies of the real documents) ----------------------
def _mirror(tmp_path: Path) -> Path:
    for sub in ("rfc", "docs", "benchmarks/results"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    for sub in ("devptr", "tests", "tools", ".ci"):  # files the documents link
        shutil.copytree(ROOT / sub, tmp_path / sub, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _traced(root: Path, doc: Path, pred: object = None) -> Claim:
    """A traced claim of ``doc`` (optionally one whose value matches the regex ``pred``)."""
    tracer = Tracer(root, claim_documents(root))
    claims, _ = tracer.claims(doc)
    for c in claims:
        if c.sources and (pred is None or re.fullmatch(str(pred), c.value)):
            return c
    pytest.fail(f"no traced claim in {doc} matching {pred!r}")


def _replace_on_line(path: Path, line: int, old: str, new: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for k in range(line - 1, len(lines)):
        if re.search(rf"(?<![\w.,]){re.escape(old)}(?![\w]|\.\d)", lines[k]):
            lines[k] = re.sub(rf"(?<![\w.,]){re.escape(old)}(?![\w]|\.\d)", new, lines[k], count=1)
            path.write_text("".join(lines), encoding="utf-8")
            return
    pytest.fail(f"{old!r} not found from line {line} of {path}")


RFC = Path("rfc/0001-device-pointer-convention.md")


def test_an_edited_prose_number_fails(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    assert not check_all(root, [RFC])
    claim = _traced(root, RFC, r"\d+\.\d+")
    _replace_on_line(root / RFC, claim.line, claim.text, "987.65")
    problems = [str(p) for p in check_all(root, [RFC])]
    assert any("'987.65' is not in its source" in p for p in problems), problems


def test_a_changed_date_fails(tmp_path: Path) -> None:
    root = _mirror(tmp_path)
    claim = _traced(root, RFC, r"\d{4}-\d{2}-\d{2}")
    _replace_on_line(root / RFC, claim.line, claim.text, "1999-01-01")
    problems = [str(p) for p in check_all(root, [RFC])]
    assert any("'1999-01-01' is not in its source" in p for p in problems), problems


@pytest.mark.parametrize(
    "doc",
    [RFC, Path("docs/kernels.md"), Path("docs/ec_connector.md"), Path("docs/lamport.md")],
    ids=str,
)
def test_a_rerun_results_file_fails_the_prose_that_quoted_it(tmp_path: Path, doc: Path) -> None:
    """Another part re-runs its benchmark: every prose quote of the old number fails."""
    root = _mirror(tmp_path)
    tracer = Tracer(root, claim_documents(root))
    claims, _ = tracer.claims(doc)
    claim = next(
        c
        for c in claims
        if re.fullmatch(r"\d+\.\d+", c.value)
        and all(s.path.parts[:2] == ("benchmarks", "results") for s in c.sources)
        and c.sources
    )
    for results in {s.path for s in claim.sources}:
        text = (root / results).read_text(encoding="utf-8")
        (root / results).write_text(
            re.sub(rf"(?<![\d.]){re.escape(claim.text)}(?![\d])", "555.55", text), encoding="utf-8"
        )
    problems = [str(p) for p in check_all(root, [doc])]
    assert any(f"{claim.text!r} is not in its source" in p for p in problems), problems


def _problems_with(tmp_path: Path, appended: str) -> list[str]:
    """The problems of a copy of the RFC with ``appended`` at its end."""
    root = _mirror(tmp_path)
    doc = root / RFC
    doc.write_text(doc.read_text(encoding="utf-8") + appended, encoding="utf-8")
    return [str(p) for p in check_all(root, [RFC])]


@pytest.mark.parametrize(
    ("appended", "expected"),
    [
        ("\nThe new path is 3.7x faster.\n", "'3.7' names no source"),
        (  # a hand-copied results table
            "\n\nSee below.\n\n| case | us |\n|---|---|\n| copy | 84.4 |\n",
            "'84.4' names no source",
        ),
        ("\nIt took 1 us ([x](../benchmarks/results/kernels.md)).\n", "without naming its table"),
        (  # a document checked here is evidence only through its tables and code blocks
            "\nWe say 424242 here, and 424242 again ([self](#motivation)).\n",
            "'424242' is not in its source",
        ),
    ],
    ids=["no-source", "hand-copied-table", "results-link-without-table", "prose-cites-prose"],
)
def test_an_untraced_addition_fails(tmp_path: Path, appended: str, expected: str) -> None:
    problems = _problems_with(tmp_path, appended)
    assert any(expected in p for p in problems), problems


def test_cli_lists_untraced_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tools.report as report

    assert report.main(["--claims", str(RFC)]) == 0
    assert "0 untraced claim(s)" in capsys.readouterr().out
    root = _mirror(tmp_path)
    doc = root / "docs" / "kernels.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\nIt is now 3.7x faster.\n", encoding="utf-8")
    monkeypatch.setattr(report, "REPO_ROOT", root)
    assert report.main(["--claims", "docs/kernels.md"]) == 1
    assert "docs/kernels.md:" in capsys.readouterr().out
