"""Small syntax helpers shared by the codemod: dotted names and node builders.

Nothing here recognises a site (that is the engine's job, :mod:`devptr.lint.engine`); these
functions read the shape of libcst nodes the engine pointed at, or build new ones.
"""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """Return ``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
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
