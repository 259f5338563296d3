"""Recognising address expressions and two's-complement spellings.

An *address expression* is one whose value is a device address as a Python int:
``t.data_ptr()``, ``t.data_ptr() + k``, a two's-complement helper applied to one,
``0 if c else t.data_ptr()``, or an already-migrated ``devptr.DevicePtr...`` value.
:func:`to_device_ptr` turns such an expression into the equivalent DevicePtr expression.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import libcst as cst

from devptr.migrate._names import (
    attr_chain,
    const_int,
    data_ptr_owner,
    devptr_call,
    dotted,
    same_expr,
    strip_parens,
)

_TWO63: Final = 1 << 63
_TWO64: Final = 1 << 64


def twos_complement_operand(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """Return ``v`` when ``node`` spells "v as int64 two's complement", else None.

    Recognised spellings (any of ``1 << 63``, ``2**63``, hex or decimal literals)::

        v if v < 2**63 else v - 2**64
        v - 2**64 if v >= 2**63 else v
        v - 2**64 if v > 2**63 - 1 else v
        ctypes.c_int64(v).value
    """
    node = strip_parens(node)
    if isinstance(node, cst.Attribute) and node.attr.value == "value":
        inner = strip_parens(node.value)
        if (
            isinstance(inner, cst.Call)
            and dotted(inner.func) in {"ctypes.c_int64", "c_int64", "ctypes.c_longlong"}
            and len(inner.args) == 1
            and inner.args[0].keyword is None
        ):
            return inner.args[0].value
        return None
    if not isinstance(node, cst.IfExp):
        return None
    test = strip_parens(node.test)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    value = test.left
    comp = test.comparisons[0]
    bound = const_int(comp.comparator)
    if isinstance(comp.operator, cst.LessThan) and bound == _TWO63:
        keep, shifted = node.body, node.orelse
    elif (isinstance(comp.operator, cst.GreaterThanEqual) and bound == _TWO63) or (
        isinstance(comp.operator, cst.GreaterThan) and bound == _TWO63 - 1
    ):
        keep, shifted = node.orelse, node.body
    else:
        return None
    if not same_expr(keep, value):
        return None
    shifted = strip_parens(shifted)
    if (
        isinstance(shifted, cst.BinaryOperation)
        and isinstance(shifted.operator, cst.Subtract)
        and const_int(shifted.right) == _TWO64
        and same_expr(shifted.left, value)
    ):
        return value
    return None


def helper_parameter(func: cst.FunctionDef) -> str | None:
    """Return the parameter name when ``func`` is a one-argument two's-complement helper.

    The body may hold a docstring and comments, then ``return <spelling of param>``.
    """
    params = func.params
    if (
        len(params.params) != 1
        or params.posonly_params
        or params.kwonly_params
        or isinstance(params.star_arg, (cst.Param, cst.ParamStar))
        or params.star_kwarg is not None
        or func.decorators
    ):
        return None
    name = params.params[0].name.value
    body = func.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    stmts = list(body.body)
    if stmts and _is_docstring(stmts[0]):
        stmts = stmts[1:]
    if len(stmts) != 1 or not isinstance(stmts[0], cst.SimpleStatementLine):
        return None
    small = stmts[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Return) or small[0].value is None:
        return None
    operand = twos_complement_operand(small[0].value)
    if operand is not None and isinstance(strip_parens(operand), cst.Name):
        if strip_parens(operand).deep_equals(cst.Name(name)):
            return name
    return None


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def find_helpers(module: cst.Module) -> frozenset[str]:
    """Names of two's-complement helper functions defined anywhere in ``module``.

    A name also bound to something else in the module is left out (ambiguous).
    """
    helpers: set[str] = set()
    others: set[str] = set()

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            (helpers if helper_parameter(node) else others).add(node.name.value)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            others.add(node.name.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                others.add(node.target.value)

    module.visit(_Scan())
    return frozenset(helpers - others)


def helper_operand(node: cst.BaseExpression, helpers: Iterable[str]) -> cst.BaseExpression | None:
    """Return ``v`` when ``node`` is ``helper(v)`` for a known helper name, else None."""
    node = strip_parens(node)
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in helpers
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    ):
        return node.args[0].value
    return None


def pointer_of(value: cst.BaseExpression) -> cst.BaseExpression:
    """``DevicePtr`` expression for an int address: ``DevicePtr.of(X)`` for ``X.data_ptr()``."""
    owner = data_ptr_owner(strip_parens(value))
    if owner is not None:
        return devptr_call(("DevicePtr", "of"), [owner])
    return devptr_call(("DevicePtr",), [value])


def _is_devptr_value(node: cst.BaseExpression) -> bool:
    name = dotted(node.func) if isinstance(node, cst.Call) else dotted(node)
    return name is not None and (
        name.startswith("devptr.DevicePtr") or name.startswith("DevicePtr")
    )


def to_device_ptr(
    node: cst.BaseExpression, helpers: Iterable[str] = ()
) -> cst.BaseExpression | None:
    """Return the DevicePtr expression equivalent to an address expression, else None."""
    node = strip_parens(node)
    owner = data_ptr_owner(node)
    if owner is not None:
        return devptr_call(("DevicePtr", "of"), [owner])
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Add)
        and data_ptr_owner(strip_parens(node.left)) is not None
        and _scalar_offset(node.right)
    ):
        base = data_ptr_owner(strip_parens(node.left))
        assert base is not None
        return devptr_call(("DevicePtr", "of"), [base], [("offset", node.right)])
    inner = helper_operand(node, helpers) or twos_complement_operand(node)
    if inner is not None:
        return to_device_ptr(inner, helpers)
    if isinstance(node, cst.IfExp):
        body = _ptr_or_null(node.body, helpers)
        orelse = _ptr_or_null(node.orelse, helpers)
        if body is not None and orelse is not None:
            if body is _NULL and orelse is _NULL:
                return None
            return cst.IfExp(
                test=node.test,
                body=body if body is not _NULL else attr_chain("devptr", "DevicePtr", "NULL"),
                orelse=orelse if orelse is not _NULL else attr_chain("devptr", "DevicePtr", "NULL"),
            )
        return None
    # Already migrated: DevicePtr(...).signed / .addr / devptr.DevicePtr.of(...).
    if isinstance(node, cst.Attribute) and node.attr.value in {"signed", "addr"}:
        if _is_devptr_value(strip_parens(node.value)) and isinstance(
            strip_parens(node.value), cst.Call
        ):
            return strip_parens(node.value)
    return None


_NULL: Final = cst.Name("__devptr_null__")


def _ptr_or_null(node: cst.BaseExpression, helpers: Iterable[str]) -> cst.BaseExpression | None:
    if const_int(strip_parens(node)) == 0:
        return _NULL
    return to_device_ptr(node, helpers)


def _scalar_offset(node: cst.BaseExpression) -> bool:
    """An offset operand that is plainly a scalar: literals, names, attributes, ``a * b``."""
    node = strip_parens(node)
    if isinstance(node, (cst.Integer, cst.Name, cst.Attribute)):
        return True
    if isinstance(node, cst.Call):
        # t.element_size(), t.stride(0), len(x), int(x) are scalars
        name = dotted(node.func)
        return name in {"len", "int"} or (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value in {"element_size", "stride", "numel", "nbytes", "itemsize"}
        )
    if isinstance(node, cst.BinaryOperation) and isinstance(
        node.operator, (cst.Multiply, cst.Add, cst.Subtract, cst.FloorDivide)
    ):
        return _scalar_offset(node.left) and _scalar_offset(node.right)
    return False
