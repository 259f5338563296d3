"""DP004: two's-complement helpers and inline spellings -> ``DevicePtr(...).signed``.

``_reinterpret_u64_as_i64(p)`` (a helper whose body is such a spelling) and inline
``p if p < (1 << 63) else p - (1 << 64)`` become ``devptr.DevicePtr(p).signed``
(``devptr.DevicePtr.of(t).signed`` for ``t.data_ptr()``): the same int64 value for every
address, and a clear error for values outside ``[0, 2**64)``, which the spelling passed
through silently. Helper definitions left without references are removed when private
(leading underscore) or nested in a function; a public helper is kept, with a TODO, because
other modules may import it.

Safety and category: a correct two's complement changes no bits, so every DP004 fix is a
convention fix, applied only when DP004 is selected. It is safe when the operand is a
``data_ptr()`` call (an address in ``[0, 2**64)``); on any other value (a hash, a key, a
watermark) ``DevicePtr`` rejects what the spelling passed through (negative or >= 2**64
ints, numpy scalars), so the fix is unsafe.
"""

from __future__ import annotations

import re
from collections import Counter

import libcst as cst

from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._addr import (
    find_helpers,
    helper_operand,
    helper_parameter,
    pointer_of,
    twos_complement_operand,
)
from devptr.migrate._base import RuleCodemod
from devptr.migrate._names import data_ptr_owner, strip_parens


class TwosComplementCodemod(RuleCodemod):
    """Rewrite two's-complement spellings as ``DevicePtr(...).signed``; drop dead helpers."""

    RULE = Rule.DP004
    TRIGGER = _triggers.TWOS_COMPLEMENT
    DESCRIPTION = "x if x < 2**63 else x - 2**64 / helper(x) -> devptr.DevicePtr(x).signed"

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._helpers = self.fact("helpers", find_helpers, tree)
        self._in_helper = 0
        tree = super().transform_module_impl(tree)
        if not self._helpers:
            return tree
        used = _referenced_names(tree)
        return tree.visit(_HelperRemover(self._helpers - used))

    def statement_trigger(self) -> re.Pattern[str]:
        """The constants of a spelling, or a call of a helper found in this module."""
        if not self._helpers:
            return _triggers.TWOS_COMPLEMENT
        names = "|".join(re.escape(h) for h in sorted(self._helpers))
        return re.compile(rf"{_triggers.TWOS_COMPLEMENT.pattern}|\b({names})\b", re.IGNORECASE)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value in self._helpers:
            self._in_helper += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        name = original_node.name.value
        if name in self._helpers:
            self._in_helper -= 1
            if not name.startswith("_") and self._at_module_level(original_node):
                self.flag(original_node, f"public two's-complement helper {name} kept for "
                          "importers; replace their calls with devptr.DevicePtr(x).signed")  # fmt: skip
        return updated_node

    def _at_module_level(self, node: cst.FunctionDef) -> bool:
        return id(node) in self._module_functions

    def visit_Module(self, node: cst.Module) -> None:
        self._module_functions = {id(s) for s in node.body if isinstance(s, cst.FunctionDef)}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        operand = helper_operand(updated_node, self._helpers)
        if operand is None or not self._fix(original_node, operand):
            return updated_node
        return self._signed(operand, updated_node)

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        if self._in_helper:
            return updated_node  # the helper's own body goes with the helper
        operand = twos_complement_operand(updated_node)
        if operand is None or not self._fix(original_node, operand):
            return updated_node
        return self._signed(operand, updated_node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if self._in_helper:
            return updated_node
        operand = twos_complement_operand(updated_node)  # ctypes.c_int64(v).value
        if operand is None or not self._fix(original_node, operand):
            return updated_node
        self.remove_unused_import("ctypes")
        return self._signed(operand, updated_node)

    def _fix(self, original: cst.CSTNode, operand: cst.BaseExpression) -> bool:
        unsafe = None
        if data_ptr_owner(strip_parens(operand)) is None:
            unsafe = ("the operand is not proven a device address; DevicePtr rejects "
                      "negative or >= 2**64 values such as hashes")  # fmt: skip
        return self.fix(original, unsafe=unsafe)

    @staticmethod
    def _signed(operand: cst.BaseExpression, old: cst.BaseExpression) -> cst.BaseExpression:
        return cst.Attribute(value=pointer_of(operand), attr=cst.Name("signed")).with_changes(
            lpar=old.lpar, rpar=old.rpar
        )


def _referenced_names(tree: cst.Module) -> frozenset[str]:
    """Names used somewhere other than as the name of a function definition."""
    uses: Counter[str] = Counter()
    defs: Counter[str] = Counter()

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            defs[node.name.value] += 1

        def visit_Name(self, node: cst.Name) -> None:
            uses[node.value] += 1

    tree.visit(_Scan())
    return frozenset(name for name, n in uses.items() if n > defs[name])


class _HelperRemover(cst.CSTTransformer):
    """Remove the definitions of unused private or nested helpers."""

    def __init__(self, unused: frozenset[str]) -> None:
        super().__init__()
        self._unused = unused
        self._depth = 0
        self.removed: set[str] = set()
        self._removed_nodes: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef | cst.RemovalSentinel:
        self._depth -= 1
        name = original_node.name.value
        nested = self._depth > 0
        if name in self._unused and helper_parameter(original_node) is not None:
            if nested or name.startswith("_"):
                self.removed.add(name)
                self._removed_nodes.add(id(original_node))
                return cst.RemovalSentinel.REMOVE
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        if not body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        if original_node.body and id(original_node.body[0]) in self._removed_nodes:
            # the block's first statement went away: drop blank lines it left on top
            first = body[0]
            if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                lines = list(first.leading_lines)
                while lines and lines[0].comment is None:
                    lines.pop(0)
                body[0] = first.with_changes(leading_lines=lines)
        return updated_node.with_changes(body=body)
