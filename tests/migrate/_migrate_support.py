"""Test support: a CodemodTest that also checks the second run changes nothing."""

from __future__ import annotations

from typing import Any

from libcst.codemod import CodemodTest


class TwiceCodemodTest(CodemodTest):
    """``assertCodemod`` on the pair, then on ``after`` -> ``after`` (idempotence)."""

    def assertCodemod(self, before: str, after: str, *args: Any, **kwargs: Any) -> None:
        super().assertCodemod(before, after, *args, **kwargs)
        kwargs.pop("expected_warnings", None)  # TODO sites still warn, one line lower
        super().assertCodemod(after, after, *args, **kwargs)
