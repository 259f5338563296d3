"""Find the libcst nodes at the spans of an engine finding or fix.

The engine (:mod:`devptr.lint.engine`) reports :class:`~devptr.lint.engine.Span` values on
the file as written: 1-based lines and 0-based *character* columns, parentheses excluded,
which is what libcst's :class:`~libcst.metadata.PositionProvider` reports too. The index
is built once per module, and only for a module where the engine found something.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devptr.lint.engine import Span

T = TypeVar("T")


def innermost_by_line(intervals: Sequence[tuple[int, int, T]], last: int) -> list[T | None]:
    """For each line ``0..last``, the item of the innermost interval holding it (or None).

    ``intervals`` are ``(first line, last line, item)`` and nest properly (statements
    do: two either nest or are disjoint, as line ranges). One sweep, ``O(lines +
    intervals log intervals)``, instead of a scan of every interval per line.
    """
    out: list[T | None] = [None] * (last + 1)
    order = sorted(range(len(intervals)), key=lambda k: (intervals[k][0], -intervals[k][1], k))
    stack: list[int] = []
    nxt = 0
    for line in range(1, last + 1):
        while stack and intervals[stack[-1]][1] < line:
            stack.pop()
        while nxt < len(order) and intervals[order[nxt]][0] <= line:
            if intervals[order[nxt]][1] >= line:
                stack.append(order[nxt])
            nxt += 1
        if stack:
            out[line] = intervals[stack[-1]][2]
    return out


class SpanIndex:
    """The nodes of one module by position, and the statements that hold each line.

    ``line_offset``: lines of the file before ``module``'s first line, when ``module`` is
    one part of a file (:mod:`devptr.migrate._parts`); spans and extents are lines of the
    file.
    """

    def __init__(self, module: cst.Module, line_offset: int = 0) -> None:
        self._offset = line_offset
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.positions: Mapping[cst.CSTNode, CodeRange] = wrapper.resolve(PositionProvider)
        self._exact: dict[tuple[int, int, int, int], list[cst.CSTNode]] = {}
        self._starts: dict[tuple[int, int], list[cst.CSTNode]] = {}
        self._statements: list[tuple[int, int, cst.CSTNode]] = []
        self._holders: list[cst.CSTNode | None] | None = None
        self.assign_of: dict[int, cst.Assign] = {}
        """``id(target)`` -> the one-target assignment that stores into it."""
        self.attribute_of: dict[int, cst.Attribute] = {}
        """``id(x)`` -> the attribute access ``x.name`` on it."""
        for node, pos in self.positions.items():
            key = (pos.start.line, pos.start.column, pos.end.line, pos.end.column)
            self._exact.setdefault(key, []).append(node)
            self._starts.setdefault((pos.start.line, pos.start.column), []).append(node)
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                self._statements.append((pos.start.line, pos.end.line, node))
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                self.assign_of[id(node.targets[0].target)] = node
            elif isinstance(node, cst.Attribute):
                self.attribute_of[id(node.value)] = node

    def node(self, span: Span | None) -> cst.BaseExpression | None:
        """The expression exactly at ``span`` (None when there is none)."""
        if span is None:
            return None
        off = self._offset
        for node in self._exact.get((span.line - off, span.col, span.end_line - off,
                                     span.end_col), ()):
            if isinstance(node, cst.BaseExpression):
                return node
        return None

    def statement_at(self, span: Span | None, kind: type[cst.CSTNode]) -> cst.CSTNode | None:
        """The statement of type ``kind`` that starts where ``span`` starts."""
        if span is None:
            return None
        for node in self._starts.get((span.line - self._offset, span.col), ()):
            if isinstance(node, kind):
                return node
        return None

    def statement_holding(
        self, line: int
    ) -> cst.SimpleStatementLine | cst.BaseCompoundStatement | None:
        """The innermost statement whose lines include ``line``."""
        if self._holders is None:
            last = max((s[1] for s in self._statements), default=0)
            self._holders = innermost_by_line(self._statements, last)
        line -= self._offset
        node = self._holders[line] if 0 <= line < len(self._holders) else None
        if node is None:
            return None
        assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        return node

    def extent(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """(line, column, end line, end column) of ``node`` (lines of the file)."""
        pos = self.positions[node]
        off = self._offset
        return (pos.start.line + off, pos.start.column, pos.end.line + off, pos.end.column)
