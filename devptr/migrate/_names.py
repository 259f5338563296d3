"""Small syntax helpers shared by the codemods: dotted names, constants, builders.

Nothing here changes a tree; these functions read libcst nodes or build new ones.
"""

from __future__ import annotations

from typing import Final

import libcst as cst

TORCH_MODULES: Final = frozenset({"torch"})
NUMPY_MODULES: Final = frozenset({"np", "numpy"})


def dotted(node: cst.BaseExpression) -> str | None:
    """Return ``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def call_name(node: cst.BaseExpression) -> str | None:
    """Return the dotted name of the function a Call calls, else None."""
    if isinstance(node, cst.Call):
        return dotted(node.func)
    return None


def method_name(node: cst.BaseExpression) -> str | None:
    """Return ``m`` for a call ``<anything>.m(...)``, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """Return the node without its own parentheses (for comparisons and rebuilding).

    Tuples and generator expressions keep theirs: there the parentheses are syntax.
    """
    if isinstance(node, (cst.Tuple, cst.GeneratorExp)):
        return node
    if node.lpar or node.rpar:
        return node.with_changes(lpar=[], rpar=[])
    return node


def const_int(node: cst.BaseExpression) -> int | None:
    """Evaluate small integer constant expressions: literals, ``<<``, ``**``, ``+``, ``-``."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = const_int(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation):
        left, right = const_int(node.left), const_int(node.right)
        if left is None or right is None:
            return None
        op = node.operator
        if isinstance(op, cst.LeftShift) and 0 <= right <= 128:
            return left << right
        if isinstance(op, cst.Power) and 0 <= right <= 128:
            return int(left**right)
        if isinstance(op, cst.Add):
            return left + right
        if isinstance(op, cst.Subtract):
            return left - right
    return None


def same_expr(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Structural equality of two expressions, ignoring whitespace and parentheses."""
    return strip_parens(a).deep_equals(strip_parens(b))


def is_dtype(node: cst.BaseExpression, names: frozenset[str]) -> str | None:
    """Return ``"torch"``/``"numpy"`` when ``node`` is ``torch.<n>``/``np.<n>`` with n in names."""
    name = dotted(node)
    if name is None or "." not in name:
        return None
    head, _, tail = name.rpartition(".")
    if tail not in names:
        return None
    if head in TORCH_MODULES:
        return "torch"
    if head in NUMPY_MODULES:
        return "numpy"
    return None


INT64_NAMES: Final = frozenset({"int64", "long"})
UINT64_NAMES: Final = frozenset({"uint64"})


def data_ptr_owner(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """Return ``X`` when ``node`` is ``X.data_ptr()`` (no arguments), else None."""
    if (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "data_ptr"
    ):
        return node.func.value
    return None


def contains_data_ptr(node: cst.CSTNode) -> bool:
    """True when a ``.data_ptr()`` call appears anywhere under ``node``."""
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            nonlocal found
            if data_ptr_owner(call) is not None:
                found = True
            return not found

    node.visit(_Finder())
    return found


def attr_chain(*parts: str) -> cst.BaseExpression:
    """Build ``a.b.c`` from names."""
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def devptr_call(
    path: tuple[str, ...],
    args: list[cst.BaseExpression],
    kwargs: list[tuple[str, cst.BaseExpression]] | None = None,
) -> cst.Call:
    """Build ``devptr.<path>(args..., k=v...)``."""
    arguments = [cst.Arg(value=strip_parens(a)) for a in args]
    for key, value in kwargs or []:
        arguments.append(
            cst.Arg(
                keyword=cst.Name(key),
                value=strip_parens(value),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        )
    return cst.Call(func=attr_chain("devptr", *path), args=arguments)


def mentions(node: cst.CSTNode, word: str) -> bool:
    """True when a Name, attribute or string under ``node`` contains ``word``."""
    hit = False

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal hit
            hit = hit or word in name.value.lower()

        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            nonlocal hit
            hit = hit or word in string.value.lower()

    node.visit(_Finder())
    return hit


def import_aliases(module: cst.Module, name: str) -> list[str | None]:
    """The ``as`` names of top-level ``import <name>`` statements (None for no ``as``)."""
    found: list[str | None] = []
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted(alias.name) == name:
                        asname = alias.asname
                        found.append(
                            asname.name.value
                            if asname is not None and isinstance(asname.name, cst.Name)
                            else None
                        )
    return found
