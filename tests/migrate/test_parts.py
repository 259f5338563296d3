"""A long module is migrated in parts (issue 22, item 5): same output as in one piece.

``devptr.migrate._parts`` cuts a module between top-level statements so libcst's cost
stays per part; these tests force cuts everywhere (``PART_LINES`` = 2) and require the
text, warnings and counts of a one-piece run, on every fixture module of the lint and
migrate suites, with every rule and unsafe fixes on and off, then a second run that
changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import devptr.migrate._parts as parts
from devptr.lint.rules import Rule
from devptr.migrate import Outcome, migrate_source

TESTS = Path(__file__).resolve().parents[1]
MODULES = sorted([*(TESTS / "rules").glob("*/*.py"),
                  *(TESTS / "migrate" / "fixtures").rglob("*.py")])
SHAPES = '''"""A module docstring."""
import torch

T = torch.zeros(4, dtype=torch.int64)
U = torch.zeros(4, dtype=torch.uint64)


# a comment above a decorated function
@staticmethod
def first(x):
    T[0] = x.data_ptr()
    a = 1; b = 2


class Holder:
    """A class."""

    def put(self, x, y):
        T[1] = x.data_ptr()
        T[1:3] = [x.data_ptr()]
        return torch.tensor([x.data_ptr(), y.data_ptr()], dtype=torch.int64)
# a comment right after the class


def later(x):
    U[0] = x.data_ptr()
    return x.data_ptr() + 8 * torch.arange(4).numpy()
'''


def _run(code: str, rules: list[Rule], unsafe: bool) -> Outcome:
    return migrate_source(code, rules=rules, filename="m.py", unsafe_fixes=unsafe,
                          line_length=60)


@pytest.mark.parametrize("unsafe", [False, True])
def test_parts_give_the_one_piece_result(monkeypatch: pytest.MonkeyPatch, unsafe: bool) -> None:
    codes = [p.read_text() for p in MODULES] + [SHAPES, SHAPES.replace("\n", "\r\n"), SHAPES * 3]
    compared = 0
    for code in codes:
        monkeypatch.setattr(parts, "PART_LINES", 10**9)
        whole = _run(code, list(Rule), unsafe)
        monkeypatch.setattr(parts, "PART_LINES", 2)
        cut = _run(code, list(Rule), unsafe)
        assert cut.new == whole.new
        assert cut.warnings == whole.warnings
        assert (cut.rewrites, cut.todos, cut.unsafe) == (whole.rewrites, whole.todos, whole.unsafe)
        again = _run(cut.new, list(Rule), unsafe)
        assert again.new == cut.new and again.warnings == ()
        compared += whole.changed
    assert compared >= 10  # the comparison covered real rewrites and TODOs


def test_a_long_module_is_cut_between_statements_only() -> None:
    import ast

    code = SHAPES * 3
    original = parts.PART_LINES
    try:
        parts.PART_LINES = 5
        pieces = parts.split(code, ast.parse(code))
    finally:
        parts.PART_LINES = original
    assert len(pieces) > 3
    assert "".join(p.text for p in pieces) == code
    for piece in pieces:
        ast.parse(piece.text)  # each part is a module of whole statements
        assert piece.text.count("\n") == piece.last - piece.first + 1
    lines = parts.source_lines(code)
    for piece in pieces[1:]:  # cut only after a blank line or a statement's last line
        before = lines[piece.first - 2]
        assert not before.startswith("#")
