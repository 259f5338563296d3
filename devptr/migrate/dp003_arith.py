"""DP003: numpy pointer arithmetic on ``data_ptr()`` -> ``devptr.addresses``.

Rewritten shapes, where ``idx`` is recognisably a numpy array (``.astype(...)``, an
``np.*`` call, or a name bound to one)::

    np.uint64(t.data_ptr()) + idx.astype(np.uint64) * np.uint64(s)
    t.data_ptr() + idx * s
    base + idx.astype(np.uint64) * np.uint64(s)   # base = np.uint64(t.data_ptr()) in the function

all become ``devptr.addresses(devptr.DevicePtr.of(t), idx, s)`` (for a named base, the
binding becomes ``base = devptr.DevicePtr.of(t)``, but only when every use of ``base`` in the
function is such an expression). The result is the same uint64 array; the int64 spelling
stops raising for addresses >= 2**63, and results past 2**64 raise instead of wrapping.

Safety: every DP003 fix is unsafe. ``devptr.addresses`` needs a non-negative integer index
(``idx.astype(np.uint64)`` accepted floats and wrapped negative values), raises where the
numpy sum wrapped past 2**64, and returns uint64 where the int spelling returned int64.
They apply only with ``--unsafe-fixes``; otherwise the site gets a TODO.
"""

from __future__ import annotations

import attrs
import libcst as cst

from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._base import RuleCodemod, options_of, stats_of
from devptr.migrate._bindings import Bindings, Kind
from devptr.migrate._names import (
    NUMPY_MODULES,
    call_name,
    data_ptr_owner,
    devptr_call,
    import_aliases,
    strip_parens,
)

_UNSAFE = (
    "devptr.addresses needs a non-negative integer index, raises where numpy wrapped past "
    "2**64 and returns uint64"
)
_NP_U64 = frozenset(f"{m}.uint64" for m in NUMPY_MODULES)
_NP_INTS = frozenset(f"{m}.{t}" for m in NUMPY_MODULES for t in ("uint64", "int64"))


@attrs.frozen
class Strided:
    """``base + index * stride`` with numpy wrappers removed."""

    base: cst.BaseExpression
    index: cst.BaseExpression
    stride: cst.BaseExpression


def _unwrap_np_int(node: cst.BaseExpression) -> cst.BaseExpression:
    node = strip_parens(node)
    if isinstance(node, cst.Call) and call_name(node) in _NP_INTS and len(node.args) == 1:
        return strip_parens(node.args[0].value)
    return node


def match_strided(node: cst.BaseExpression, bindings: Bindings) -> Strided | None:
    """Match ``base + index * stride`` where ``index`` is recognisably a numpy array."""
    node = strip_parens(node)
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Add):
        return None
    mul = strip_parens(node.right)
    if not isinstance(mul, cst.BinaryOperation) or not isinstance(mul.operator, cst.Multiply):
        return None
    for index, stride in ((mul.left, mul.right), (mul.right, mul.left)):
        inner = _array_index(index, bindings)
        if inner is not None:
            return Strided(_unwrap_np_int(node.left), inner, _unwrap_np_int(stride))
    return None


def _array_index(node: cst.BaseExpression, bindings: Bindings) -> cst.BaseExpression | None:
    node = strip_parens(node)
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "astype"
    ):
        return strip_parens(node.func.value)
    name = call_name(node)
    if name is not None and name.partition(".")[0] in NUMPY_MODULES:
        return node
    if isinstance(node, (cst.Name, cst.Attribute)) and bindings.kind(node) is Kind.ARRAY:
        return node
    return None


def _address_binding(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """``X`` when ``value`` is ``X.data_ptr()`` or ``np.uint64(X.data_ptr())``."""
    return data_ptr_owner(_unwrap_np_int(value))


@attrs.define
class _NameStats:
    assigns: int = 0
    other_binds: int = 0
    uses: int = 0
    targets: int = 0
    pattern_bases: int = 0
    address_owner: cst.BaseExpression | None = None


class _FunctionScan(cst.CSTVisitor):
    """Per-name counts over one function subtree (nested functions included)."""

    def __init__(self, bindings: Bindings) -> None:
        self.bindings = bindings
        self.stats: dict[str, _NameStats] = {}

    def _get(self, name: str) -> _NameStats:
        return self.stats.setdefault(name, _NameStats())

    def visit_Name(self, node: cst.Name) -> None:
        self._get(node.value).uses += 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                st = self._get(target.target.value)
                st.assigns += 1
                st.targets += 1
                owner = _address_binding(node.value)
                if len(node.targets) == 1 and owner is not None:
                    st.address_owner = owner
            else:
                _mark_names(target.target, self)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        _mark_names(node.target, self)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        _mark_names(node.target, self)

    def visit_For(self, node: cst.For) -> None:
        _mark_names(node.target, self)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        _mark_names(node.target, self)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        strided = match_strided(node, self.bindings)
        if strided is not None and isinstance(strided.base, cst.Name):
            self._get(strided.base.value).pattern_bases += 1


def _mark_names(target: cst.CSTNode, scan: _FunctionScan) -> None:
    class _Marker(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            scan._get(node.value).other_binds += 1

    target.visit(_Marker())


class ArithmeticCodemod(RuleCodemod):
    """Rewrite numpy address arithmetic on ``data_ptr()`` as ``devptr.addresses``."""

    RULE = Rule.DP003
    TRIGGER = _triggers.DATA_PTR
    DESCRIPTION = "np.uint64(t.data_ptr()) + idx.astype(np.uint64) * s -> devptr.addresses(...)"

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._bindings = self.fact("bindings", Bindings, tree)
        self._scopes: list[dict[str, _NameStats]] = []
        self._numpy_aliases = import_aliases(tree, "numpy")
        return super().transform_module_impl(tree)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scan = _FunctionScan(self._bindings)
        node.body.visit(scan)
        self._scopes.append(scan.stats)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._scopes.pop()
        return updated_node

    def _eligible(self, name: str) -> cst.BaseExpression | None:
        """The owner ``X`` of a base name bound once to an address and used only as a base."""
        if not self._scopes:
            return None
        st = self._scopes[-1].get(name)
        if (
            st is None
            or st.address_owner is None
            or st.assigns != 1
            or st.other_binds
            or st.uses - st.targets != st.pattern_bases
        ):
            return None
        return st.address_owner

    def leave_Assign(
        self, original_node: cst.Assign, updated_node: cst.Assign
    ) -> cst.BaseSmallStatement:
        if len(updated_node.targets) != 1 or not isinstance(updated_node.targets[0].target, cst.Name):
            return updated_node
        name = updated_node.targets[0].target.value
        st = self._scopes[-1].get(name) if self._scopes else None
        if st is None or st.pattern_bases == 0 or _address_binding(updated_node.value) is None:
            return updated_node
        owner = self._eligible(name)
        options = options_of(self.context)
        if owner is not None and not (options.unsafe_fixes and Rule.DP003 in options.rules):
            return updated_node  # the uses get TODOs; the binding stays as it is
        if owner is None:
            self.flag(original_node, f"{name} holds an address used in array arithmetic and "
                      "elsewhere; compute the addresses with devptr.addresses(DevicePtr, ...)")  # fmt: skip
            return updated_node
        stats_of(self.context).needs_import = True
        self._drop_numpy_if_unused()
        return updated_node.with_changes(value=devptr_call(("DevicePtr", "of"), [owner]))

    def _drop_numpy_if_unused(self) -> None:
        for asname in self._numpy_aliases:
            self.remove_unused_import("numpy", asname=asname)

    def leave_BinaryOperation(
        self, original_node: cst.BinaryOperation, updated_node: cst.BinaryOperation
    ) -> cst.BaseExpression:
        strided = match_strided(updated_node, self._bindings)
        if strided is None:
            return updated_node
        base = strided.base
        owner = data_ptr_owner(base)
        if owner is not None:
            base_expr: cst.BaseExpression = devptr_call(("DevicePtr", "of"), [owner])
        elif isinstance(base, cst.Name) and self._eligible(base.value) is not None:
            base_expr = base
        else:
            return updated_node
        if not self.fix(original_node, unsafe=_UNSAFE):
            return updated_node
        self._drop_numpy_if_unused()
        return devptr_call(("addresses",), [base_expr, strided.index, strided.stride]).with_changes(
            lpar=updated_node.lpar, rpar=updated_node.rpar
        )
