"""The rules are units: one module each, holding detection, messages and fix, and a rule
that is not selected is never asked."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import devptr.lint.engine.rules as units
from devptr.lint.engine import FixKind, analyze_source
from devptr.lint.engine.rules import RULES, Rule, RuleSet, RuleUnit
from devptr.lint.engine.rules._unit import RuleUnit as Base
from devptr.lint.engine.rules.dp001_store import RawAddressStore
from tests.lint._expect import FIXTURES

DP001_SITE = (
    "import torch\n"
    "def f(x: torch.Tensor) -> None:\n"
    "    t = torch.empty(1, dtype=torch.int64)\n"
    "    t[0] = x.data_ptr()\n"
)


def _unit_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(units.__path__) if m.name.startswith("dp"))


def test_one_module_per_rule_and_its_fixtures_beside_it() -> None:
    modules = _unit_modules()
    assert [m[:5].upper() for m in modules] == [r.value for r in Rule]
    for name in modules:
        unit = importlib.import_module(f"{units.__name__}.{name}").UNIT
        assert isinstance(unit, RuleUnit) and RULES[unit.rule] is unit
        assert unit.rule.value.lower() == name[:5]
        stem = unit.rule.value.lower()
        folder = FIXTURES / name
        assert {p.name for p in folder.glob("*.py")} == {f"{stem}_positive.py", f"{stem}_negative.py"}


def test_every_fix_kind_with_a_rewrite_is_named_by_exactly_one_unit() -> None:
    named = [u.fix_kinds[0] for u in RULES.values() if u.rewrite]
    assert sorted(k.value for k in named) == sorted(
        k.value for k in FixKind if k is not FixKind.FILL
    )
    carried = {k for u in RULES.values() for k in u.fix_kinds}
    assert carried == set(named)
    for unit in RULES.values():
        if unit.rewrite:  # the module exists (its import needs libcst: the codemod's side)
            assert importlib.util.find_spec(unit.rewrite) is not None


def test_unit_modules_do_not_import_the_evaluator() -> None:
    for name in _unit_modules():
        spec = importlib.util.find_spec(f"{units.__name__}.{name}")
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "devptr.lint.engine._evaluator" not in imported
        assert not any(m and m.startswith(("devptr.migrate", "libcst")) for m in imported)


def test_rule_set_asks_only_the_selected_units() -> None:
    only = RuleSet({Rule.DP002})
    assert only.active == {Rule.DP002}
    assert only.store == () and [u.rule for u in only.table] == [Rule.DP002]
    every = RuleSet()
    assert [u.rule for u in every.store] == [Rule.DP001, Rule.DP006, Rule.DP008]
    assert [u.rule for u in every.arith] == [Rule.DP003, Rule.DP007]


class _Asked(Exception):
    pass


class _Tripwire(RawAddressStore):
    """DP001 whose store hook records that it was asked."""

    def store(self, cont: object, value: object, target: object, *, fill: bool) -> str | None:
        raise _Asked


def test_an_unselected_rule_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RULES, Rule.DP001, _Tripwire())
    assert analyze_source(DP001_SITE, "m.py", rules=frozenset({Rule.DP002, Rule.DP003})) == []
    with pytest.raises(_Asked):  # the same site asks DP001 when it is selected
        analyze_source(DP001_SITE, "m.py", rules=frozenset({Rule.DP001}))


def test_units_share_the_base_and_document_themselves() -> None:
    assert RuleUnit is Base
    for unit in RULES.values():
        assert unit.name and unit.summary and unit.why and unit.fix and unit.mypy_code
        assert unit.default == (unit.category == "defect")
        assert unit.rule.info is unit
