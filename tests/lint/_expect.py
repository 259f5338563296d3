"""Expected findings written into fixture files as comments.

``# expect: DP001`` means both ``devptr check`` and the mypy plugin report DP001 on that
line (the plugin under the rule's ``mypy_code``). ``# expect[check]: ...`` and
``# expect[mypy]: ...`` restrict a marker to one tool. Codes are comma-separated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from devptr.lint.rules import RULES, Rule

FIXTURES = Path(__file__).parents[1] / "rules"
"""The rules' fixtures: one folder per rule unit (``dp001_store/dp001_positive.py`` beside
``devptr/lint/engine/rules/dp001_store.py``), and ``shared/`` for those about every rule."""

_MARK = re.compile(r"expect(?:\[(check|mypy)\])?:\s*((?:DP\d{3}\s*,?\s*)+)")

Tool = Literal["check", "mypy"]


def expected(path: Path, tool: Tool) -> set[tuple[int, str]]:
    """``{(line, code)}`` expected from *tool* in *path* (mypy codes for ``"mypy"``)."""
    out: set[tuple[int, str]] = set()
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if "#" not in line:
            continue
        comment = line[line.index("#") :]
        for which, codes in _MARK.findall(comment):
            if which and which != tool:
                continue
            for code in re.findall(r"DP\d{3}", codes):
                rule = Rule(code)
                out.add((lineno, RULES[rule].mypy_code if tool == "mypy" else code))
    return out


def fixture_files() -> list[Path]:
    """All fixture modules, sorted."""
    return sorted(FIXTURES.glob("*/*.py"))


def fixture(name: str) -> Path:
    """The fixture file called *name* (``"dp001_positive.py"``), in whichever folder."""
    (path,) = FIXTURES.glob(f"*/{name}")
    return path
