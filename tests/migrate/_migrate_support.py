"""Test support: before/after pairs through the real pipeline, run twice.

``assertCodemod(before, after)`` migrates ``before`` with ``migrate_source`` for the
class's rule (plus ``rules``), from the engine's findings and fixes as every run does, and
compares with ``after``; then migrates ``after`` and requires that nothing changes and no
warning is new (idempotence).
"""

from __future__ import annotations

import textwrap
import unittest
from collections.abc import Sequence
from typing import ClassVar

from devptr.lint.rules import Rule
from devptr.migrate import Outcome, migrate_source


def fixture(text: str) -> str:
    """Dedent a triple-quoted fixture and drop its first newline (libcst's convention)."""
    text = textwrap.dedent(text)
    return text[1:] if text.startswith("\n") else text


class TwiceCodemodTest(unittest.TestCase):
    """Pairs for one rule (``RULE``), checked for idempotence."""

    RULE: ClassVar[Rule]

    def migrate(
        self,
        code: str,
        *,
        rules: Sequence[Rule] = (),
        unsafe_fixes: bool = False,
        line_length: int = 1000,
    ) -> Outcome:
        return migrate_source(
            code,
            rules=[self.RULE, *rules],
            filename="<string>",
            unsafe_fixes=unsafe_fixes,
            line_length=line_length,
        )

    def assertCodemod(
        self,
        before: str,
        after: str,
        *,
        expected_warnings: Sequence[str] | None = None,
        rules: Sequence[Rule] = (),
        unsafe_fixes: bool = False,
        line_length: int = 1000,
    ) -> None:
        options = {"rules": rules, "unsafe_fixes": unsafe_fixes, "line_length": line_length}
        first = self.migrate(fixture(before), **options)  # type: ignore[arg-type]
        self.assertEqual(first.error, None)
        self.assertEqual(first.new, fixture(after))
        if expected_warnings is not None:
            self.assertEqual(list(first.warnings), list(expected_warnings))
        self.assertEqual(sum(first.todos.values()), first.new.count("# TODO[devptr]:")
                         - first.old.count("# TODO[devptr]:"))  # fmt: skip
        second = self.migrate(first.new, **options)  # type: ignore[arg-type]
        self.assertEqual(second.new, first.new, "a second run changed the output")
        self.assertEqual(second.warnings, (), "a second run reported something")
        self.assertEqual((second.rewrites, second.todos), ({}, {}))
