"""One module's text as the evaluator reads it: character columns and token lookups by line."""

from __future__ import annotations

import ast
import bisect
import itertools

from devptr.lint.engine._fix import Span


class SourceText:
    """The text of the module under analysis.

    :meth:`span` turns :mod:`ast`'s UTF-8 byte columns into character columns;
    :meth:`hot` tells whether a token occurs in a range of lines (one ``str.find`` scan of
    the lowercased text per token tuple, then a bisection per question), which lets the
    evaluator skip function bodies with nothing address-like in them.
    """

    __slots__ = ("_hot_lines", "_line_starts", "_lower", "lines", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self._line_starts: list[int] | None = None
        """Offsets where each line starts (line n starts at ``starts[n - 1]``); computed
        on the first token scan."""
        self._lower: str | None = None
        self._hot_lines: dict[tuple[str, ...], list[int]] = {}

    def col(self, line: int, byte_col: int) -> int:
        """The character column of UTF-8 byte column *byte_col* on *line*."""
        if 1 <= line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
        return byte_col

    def span(self, node: ast.AST) -> Span:
        """*node*'s position in the file as written."""
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = self.col(line, getattr(node, "col_offset", 0))
        end_col = self.col(end_line, getattr(node, "end_col_offset", None) or 0)
        return Span(line, col, end_line, end_col)

    def hot(self, tokens: tuple[str, ...], first: int, last: int) -> bool:
        """Whether one of *tokens* occurs (lowercased) on a line in ``first..last``."""
        lines = self._hot_lines.get(tokens)
        if lines is None:
            lines = self._scan(tokens)
            self._hot_lines[tokens] = lines
        i = bisect.bisect_left(lines, first)
        return i < len(lines) and lines[i] <= last

    def _scan(self, tokens: tuple[str, ...]) -> list[int]:
        if self._lower is None or self._line_starts is None:
            self._lower = self.text.lower()
            self._line_starts = [0, *itertools.accumulate(
                len(line) + 1 for line in self.text.split("\n")
            )][:-1]
        text = self._lower
        starts = self._line_starts
        found: set[int] = set()
        for token in tokens:
            pos = text.find(token)
            while pos != -1:
                line = bisect.bisect_right(starts, pos)
                found.add(line)
                nxt = starts[line] if line < len(starts) else len(text)
                pos = text.find(token, nxt)
        return sorted(found)
