"""DP001: element and slice stores of raw addresses -> ``devptr.store``.

``C[i] = t.data_ptr()`` becomes ``devptr.store(C, i, devptr.DevicePtr.of(t))``;
``C[a:b] = [x.data_ptr() for x in xs]`` becomes
``devptr.store(C, slice(a, b), [devptr.DevicePtr.of(x) for x in xs])``. ``store`` writes the
same bits into int64 containers and also works for addresses >= 2**63 and uint64 containers
on every torch version. Only containers known to be tensors or numpy arrays are rewritten;
an unknown container, a multi-dimensional index or address arithmetic stored into a slice
gets a TODO.

Safety: ``store`` never broadcasts and takes only int64/uint64 containers. The fix is safe
when the container is proven a 1-D int64/uint64 tensor or array (bound in the module to
``torch.zeros(n, dtype=torch.int64)``-style factories) and, for a slice, the value is a
list of two or more addresses (a one-element list used to broadcast over the slice; a
comprehension may have one element). Otherwise it is unsafe. A store into a proven uint64
numpy array changes no bits (numpy accepts every address there): a DP006 convention fix.
"""

from __future__ import annotations

import libcst as cst

from devptr.lint.rules import Rule
from devptr.migrate import _triggers
from devptr.migrate._addr import find_helpers, to_device_ptr
from devptr.migrate._base import RuleCodemod
from devptr.migrate._bindings import Bindings, Kind
from devptr.migrate._names import call_name, contains_data_ptr, devptr_call, dotted, strip_parens


class StoreCodemod(RuleCodemod):
    """Rewrite raw-address stores into tensors and arrays as ``devptr.store`` calls."""

    RULE = Rule.DP001
    TRIGGER = _triggers.DATA_PTR_OR_DEVICEPTR
    DESCRIPTION = "C[i] = t.data_ptr() -> devptr.store(C, i, devptr.DevicePtr.of(t))"

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._helpers = self.fact("helpers", find_helpers, tree)
        self._bindings = self.fact("bindings", Bindings, tree)
        self._slice_names = self.fact("slice_names", _slice_names, tree)
        return super().transform_module_impl(tree)

    def leave_Assign(
        self, original_node: cst.Assign, updated_node: cst.Assign
    ) -> cst.BaseSmallStatement:
        if len(updated_node.targets) != 1:
            return updated_node
        target = updated_node.targets[0].target
        if not isinstance(target, cst.Subscript):
            return updated_node
        value = updated_node.value
        if len(target.slice) != 1:
            if contains_data_ptr(value) and self._bindings.kind(target.value) is not Kind.OTHER:
                self.flag(original_node, "multi-dimensional store of an address; "
                          "use devptr.store on a 1-D view or a PtrBuffer")  # fmt: skip
            return updated_node
        index = target.slice[0].slice
        is_slice = True
        if isinstance(index, cst.Index) and dotted(index.value) in self._slice_names:
            # C[sl] = ... with sl = slice(...): a slice store written with a name
            ptrs = self._slice_values(value)
            index_expr: cst.BaseExpression = index.value
        elif isinstance(index, cst.Index):
            if isinstance(strip_parens(value), (cst.Tuple, cst.List, cst.Dict, cst.Set)):
                return updated_node  # a record, not an integer element
            ptrs = to_device_ptr(value, self._helpers)
            index_expr = index.value
            is_slice = False
        elif isinstance(index, cst.Slice):
            ptrs = self._slice_values(value)
            index_expr = _slice_call(index)
        else:
            return updated_node
        if ptrs is None:
            if contains_data_ptr(value) and self._bindings.kind(target.value) is not Kind.OTHER:
                self.flag(
                    original_node,
                    "address expression stored into a container; compute it with "
                    "devptr.DevicePtr / devptr.addresses and write it with devptr.store",
                )
            return updated_node
        kind = self._bindings.kind(target.value)
        if kind is Kind.OTHER:
            return updated_node
        if kind is None:
            self.flag(
                original_node,
                "raw address stored into a container of unknown type; if it is an int64 or "
                "uint64 tensor/array, use devptr.store(container, index, DevicePtr.of(t))",
            )
            return updated_node
        spec = self._bindings.table(target.value)
        unsafe = None
        if spec is None:
            unsafe = ("container not proven a 1-D int64/uint64 tensor or array; store() takes "
                      "only those and does not broadcast")  # fmt: skip
        elif is_slice and not _several(ptrs):
            unsafe = ("a one-element value used to broadcast over the slice; store() needs "
                      "exactly one address per element")  # fmt: skip
        convention = spec == "numpy.uint64"
        rule = Rule.DP006 if convention else Rule.DP001
        if not self.fix(original_node, unsafe=unsafe, rule=rule):
            return updated_node
        return cst.Expr(devptr_call(("store",), [target.value, index_expr, ptrs]))

    def _slice_values(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        value = strip_parens(value)
        if call_name(value) == "devptr.addresses":
            return value
        if isinstance(value, (cst.List, cst.Tuple)) and value.elements:
            items: list[cst.BaseExpression] = []
            for element in value.elements:
                if not isinstance(element, cst.Element):
                    return None
                ptr = to_device_ptr(element.value, self._helpers)
                if ptr is None:
                    return None
                items.append(ptr)
            return cst.List([cst.Element(item) for item in items])
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            elt = to_device_ptr(value.elt, self._helpers)
            if elt is None:
                return None
            return cst.ListComp(elt=elt, for_in=value.for_in)
        return None


def _several(ptrs: cst.BaseExpression) -> bool:
    """A list display of two or more elements (no starred element)."""
    return (
        isinstance(ptrs, cst.List)
        and len(ptrs.elements) >= 2
        and all(isinstance(e, cst.Element) for e in ptrs.elements)
    )


def _slice_names(tree: cst.Module) -> frozenset[str]:
    """Names bound to ``slice(...)`` anywhere in the module."""
    names: set[str] = set()

    class _Scan(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if call_name(node.value) == "slice":
                names.update(
                    n for t in node.targets if (n := dotted(t.target)) is not None
                )

    tree.visit(_Scan())
    return frozenset(names)


def _slice_call(index: cst.Slice) -> cst.Call:
    """``a:b:c`` as ``slice(a, b, c)`` (``None`` for missing bounds)."""
    parts = [index.lower, index.upper]
    if index.step is not None:
        parts.append(index.step)
    args = [cst.Arg(value=p if p is not None else cst.Name("None")) for p in parts]
    return cst.Call(func=cst.Name("slice"), args=args)
