"""DP002: integer pointer tables built from ``data_ptr()`` values -> ``devptr.ptr_tensor``.

``torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=d)`` becomes
``devptr.ptr_tensor(ts, encoding=devptr.Encoding.I64, device=d)``: the consumer keeps the
dtype and bits it had (int64 -> ``Encoding.I64``, uint64 -> ``Encoding.U64``, no dtype ->
int64 as torch inferred), and addresses >= 2**63 no longer raise. Tables mixing addresses
with other integers, 2-D tables, numpy tables and unknown dtypes get a TODO.

Safety: ``[x.data_ptr() for x in E]`` collapses to ``E`` only when ``E`` is a list, tuple,
dict view or a name bound only to such; otherwise it becomes ``list(E)``, which iterates
``E`` exactly as the comprehension did (``E`` may be one stacked tensor whose rows are
the tensors). A ``dtype=torch.uint64`` table already keeps every address: its rewrite
changes no bits, so it is a DP006 convention fix, applied only when DP006 is selected.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._addr import find_helpers, to_device_ptr
from devptr.migrate._base import RuleCodemod
from devptr.migrate._bindings import Bindings, Kind
from devptr.migrate._names import (
    INT64_NAMES,
    NUMPY_MODULES,
    UINT64_NAMES,
    attr_chain,
    call_name,
    contains_data_ptr,
    data_ptr_owner,
    devptr_call,
    is_dtype,
    strip_parens,
)

_TABLE_CALLS = frozenset({"torch.tensor", "torch.as_tensor"})
_NUMPY_TABLES = frozenset(f"{m}.{f}" for m in NUMPY_MODULES for f in ("array", "asarray"))


class TableCodemod(RuleCodemod):
    """Rewrite ``torch.tensor`` tables of raw addresses as ``devptr.ptr_tensor`` calls."""

    RULE = Rule.DP002
    TRIGGER = _triggers.DATA_PTR
    DESCRIPTION = "torch.tensor([t.data_ptr() ...], dtype=...) -> devptr.ptr_tensor(...)"

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._helpers = self.fact("helpers", find_helpers, tree)
        self._bindings = self.fact("bindings", Bindings, tree)
        self._ptr_lists = self.fact("ptr_lists", _names_holding_addresses, tree)
        return super().transform_module_impl(tree)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = call_name(updated_node)
        if name in _NUMPY_TABLES:
            if updated_node.args and self._holds_addresses(updated_node.args[0].value):
                self.flag(original_node, "numpy table of raw addresses; build it with "
                          "devptr.ptr_tensor(...).numpy() or a PtrBuffer")  # fmt: skip
            return updated_node
        if name not in _TABLE_CALLS or not updated_node.args:
            return updated_node
        data = updated_node.args[0]
        if data.keyword is not None or not self._holds_addresses(data.value):
            return updated_node
        items = self._items(data.value)
        if items is None and isinstance(strip_parens(data.value), cst.Name):
            self.flag(original_node, "table built from a list variable holding addresses; "
                      "collect tensors or DevicePtrs and call devptr.ptr_tensor")  # fmt: skip
            return updated_node
        if items is None:
            self.flag(original_node, "table mixes addresses with other values or is not 1-D; "
                      "build the pointer column with devptr.ptr_tensor / a PtrBuffer record")  # fmt: skip
            return updated_node
        encoding: str | None = "I64"
        device: cst.BaseExpression | None = None
        for arg in updated_node.args[1:]:
            key = arg.keyword.value if arg.keyword is not None else None
            if key == "dtype":
                encoding = _encoding_of(arg.value)
            elif key == "device":
                device = arg.value
            else:
                encoding = None
                break
        if encoding is None:
            self.flag(original_node, "pointer table with a dtype or argument devptr cannot map; "
                      "use devptr.ptr_tensor(..., encoding=...)")  # fmt: skip
            return updated_node
        kwargs: list[tuple[str, cst.BaseExpression]] = [
            ("encoding", attr_chain("devptr", "Encoding", encoding))
        ]
        if device is not None:
            kwargs.append(("device", device))
        convention = encoding == "U64"
        rule = Rule.DP006 if convention else Rule.DP002
        if not self.fix(original_node, rule=rule, keeps_iteration=self._keeps_iteration):
            return updated_node
        return devptr_call(("ptr_tensor",), [items], kwargs).with_changes(
            lpar=updated_node.lpar, rpar=updated_node.rpar
        )

    def _holds_addresses(self, data: cst.BaseExpression) -> bool:
        data = strip_parens(data)
        if isinstance(data, cst.Name) and data.value in self._ptr_lists:
            return True
        return contains_data_ptr(data)

    def _iterated(self, source: cst.BaseExpression) -> cst.BaseExpression:
        """What ``ptr_tensor`` gets for ``[x.data_ptr() for x in source]``."""
        source = strip_parens(source)
        if _is_sequence(source, self._bindings):
            return source
        return cst.Call(func=cst.Name("list"), args=[cst.Arg(source)])

    def _items(self, data: cst.BaseExpression) -> cst.BaseExpression | None:
        """The argument for ptr_tensor: tensors when possible, else DevicePtrs; None if mixed."""
        data = strip_parens(data)
        self._keeps_iteration = False
        if isinstance(data, (cst.List, cst.Tuple)):
            values: list[cst.BaseExpression] = []
            for element in data.elements:
                if not isinstance(element, cst.Element):
                    return None
                values.append(element.value)
            owners = [data_ptr_owner(strip_parens(v)) for v in values]
            if values and all(o is not None for o in owners):
                return cst.List([cst.Element(o) for o in owners if o is not None])
            ptrs = [to_device_ptr(v, self._helpers) for v in values]
            if not values or any(p is None for p in ptrs):
                return None
            return cst.List([cst.Element(p) for p in ptrs if p is not None])
        if isinstance(data, (cst.ListComp, cst.GeneratorExp)):
            owner = data_ptr_owner(strip_parens(data.elt))
            comp = data.for_in
            if owner is not None:
                simple = (
                    comp.inner_for_in is None
                    and not comp.ifs
                    and comp.asynchronous is None
                    and isinstance(comp.target, cst.Name)
                    and owner.deep_equals(comp.target)
                )
                if simple:
                    self._keeps_iteration = True
                    return self._iterated(comp.iter)
                self._keeps_iteration = True  # the comprehension stays: same iteration
                return cst.ListComp(elt=owner, for_in=comp)
            ptr = to_device_ptr(data.elt, self._helpers)
            return None if ptr is None else cst.ListComp(elt=ptr, for_in=comp)
        return None


def _is_sequence(node: cst.BaseExpression, bindings: Bindings) -> bool:
    """Whether ``node`` is surely a list, tuple, dict or dict view (never a tensor)."""
    node = strip_parens(node)
    if isinstance(node, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in {"values", "keys"} and not node.args:
            return True
    return call_name(node) in {"list", "tuple"} or (
        isinstance(node, (cst.Name, cst.Attribute)) and bindings.kind(node) is Kind.OTHER
    )


def _encoding_of(dtype: cst.BaseExpression) -> str | None:
    if is_dtype(dtype, INT64_NAMES) == "torch":
        return "I64"
    if is_dtype(dtype, UINT64_NAMES) == "torch":
        return "U64"
    return None


def _names_holding_addresses(tree: cst.Module) -> frozenset[str]:
    """Names that receive ``data_ptr()`` values through ``append``/``extend``/``+=``/``=``."""
    names: set[str] = set()

    class _Scan(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in {"append", "extend", "insert"}
                and isinstance(func.value, cst.Name)
                and any(contains_data_ptr(a.value) for a in node.args)
            ):
                names.add(func.value.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and contains_data_ptr(node.value):
                names.add(node.target.value)

        def visit_Assign(self, node: cst.Assign) -> None:
            value = strip_parens(node.value)
            if isinstance(value, (cst.List, cst.ListComp)) and contains_data_ptr(value):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        names.add(target.target.value)

    tree.visit(_Scan())
    return frozenset(names)
