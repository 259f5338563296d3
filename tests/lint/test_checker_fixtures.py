"""``devptr check`` on the fixture files: exactly the expected codes on the expected lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from devptr.lint.engine import analyze_files
from devptr.lint.rules import Rule
from tests.lint._expect import expected, fixture_files


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
def test_fixture_findings(path: Path) -> None:
    result = analyze_files([path], frozenset(Rule))[0]
    assert result.error is None
    got = {(f.line, f.code) for f in result.findings}
    want = expected(path, "check")
    assert got == want, f"missing: {sorted(want - got)}, unexpected: {sorted(got - want)}"


@pytest.mark.parametrize("rule", list(Rule), ids=lambda r: r.value)
def test_every_rule_has_positive_and_negative_fixtures(rule: Rule) -> None:
    stem = rule.value.lower()
    files = {p.stem: p for p in fixture_files()}
    positive, negative = files.get(f"{stem}_positive"), files.get(f"{stem}_negative")
    assert positive is not None and negative is not None
    assert any(code == rule.value for _, code in expected(positive, "check"))
    assert not expected(negative, "check"), "negative fixtures expect nothing"


def test_check_source_api_and_rule_filter() -> None:
    from devptr.lint import analyze_source as check_source

    src = (
        "import torch\n"
        "def f(x: torch.Tensor) -> None:\n"
        "    t = torch.empty(1, dtype=torch.int64)\n"
        "    t[0] = x.data_ptr()\n"
    )
    found = check_source(src, "mem.py")
    assert [(f.path, f.line, f.col, f.code) for f in found] == [("mem.py", 4, 4, "DP001")]
    assert check_source(src, "mem.py", rules=frozenset({Rule.DP002})) == []
    with pytest.raises(SyntaxError):
        check_source("def f(:\n", "bad.py")
