"""Find the libcst nodes at the spans of an engine finding or fix.

The engine (:mod:`devptr.lint.engine`) reports :class:`~devptr.lint.engine.Span` values on
the file as written: 1-based lines and 0-based *character* columns, parentheses excluded,
which is what libcst's :class:`~libcst.metadata.PositionProvider` reports too. The index
is built once per module, and only for a module where the engine found something.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devptr.lint.engine import Span


class SpanIndex:
    """The nodes of one module by position, and the statements that hold each line."""

    def __init__(self, module: cst.Module) -> None:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.positions: Mapping[cst.CSTNode, CodeRange] = wrapper.resolve(PositionProvider)
        self._exact: dict[tuple[int, int, int, int], list[cst.CSTNode]] = {}
        self._starts: dict[tuple[int, int], list[cst.CSTNode]] = {}
        self._statements: list[tuple[int, int, cst.CSTNode]] = []
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
        for node in self._exact.get((span.line, span.col, span.end_line, span.end_col), ()):
            if isinstance(node, cst.BaseExpression):
                return node
        return None

    def statement_at(self, span: Span | None, kind: type[cst.CSTNode]) -> cst.CSTNode | None:
        """The statement of type ``kind`` that starts where ``span`` starts."""
        if span is None:
            return None
        for node in self._starts.get((span.line, span.col), ()):
            if isinstance(node, kind):
                return node
        return None

    def statement_holding(
        self, line: int
    ) -> cst.SimpleStatementLine | cst.BaseCompoundStatement | None:
        """The innermost statement whose lines include ``line``."""
        holders = [s for s in self._statements if s[0] <= line <= s[1]]
        if not holders:
            return None
        node = min(holders, key=lambda s: (s[1] - s[0], -s[0]))[2]
        assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        return node

    def extent(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """(line, column, end line, end column) of ``node``."""
        pos = self.positions[node]
        return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)
