"""The rule catalogue shared by the checker, the mypy plugin and the codemod."""

from __future__ import annotations

from devptr.lint import RULES, Rule


def test_every_rule_has_one_entry() -> None:
    assert set(RULES) == set(Rule)
    for rule, info in RULES.items():
        assert info.rule is rule
        assert rule.info is info
        assert rule.value == rule.name


def test_codes_and_names_are_unique_and_stable() -> None:
    assert [r.value for r in Rule] == [f"DP00{i}" for i in range(1, 7)]
    names = [i.name for i in RULES.values()]
    mypy_codes = [i.mypy_code for i in RULES.values()]
    assert len(set(names)) == len(names)
    assert len(set(mypy_codes)) == len(mypy_codes)
    assert all(c.startswith("devptr-") for c in mypy_codes)


def test_each_rule_says_what_why_and_fix() -> None:
    for info in RULES.values():
        assert info.summary and info.why and info.fix
    # the "why" quotes the real error where there is one
    assert "Overflow when unpacking long long" in RULES[Rule.DP001].why
    assert "Overflow when unpacking long long" in RULES[Rule.DP002].why
