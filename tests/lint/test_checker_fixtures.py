"""``devptr check`` on the fixture files: exactly the expected codes on the expected lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from devptr.lint.checker import check_file
from devptr.lint.rules import Rule
from tests.lint._expect import expected, fixture_files


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
def test_fixture_findings(path: Path) -> None:
    result = check_file(path, frozenset(Rule))
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
