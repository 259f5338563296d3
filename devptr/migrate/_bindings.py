"""What a container name holds: an integer tensor/array, a Python list/dict, or unknown.

``devptr.store`` only accepts torch tensors and numpy arrays, so the store rewrite must not
touch ``addresses[name] = t.data_ptr()`` on a dict. This module reads the bindings of a
module (assignments, annotations, dataclass-style class fields read through ``self.``) and
classifies each dotted name. It is a per-module heuristic, not a type checker: a name bound
to both kinds, or never bound in the module, is *unknown* and the site gets a TODO.
"""

from __future__ import annotations

import enum
from typing import Final

import libcst as cst

from devptr.migrate._names import NUMPY_MODULES, TORCH_MODULES, dotted, strip_parens


class Kind(enum.Enum):
    """What a container expression holds."""

    ARRAY = "array"
    """A torch tensor or numpy array."""

    OTHER = "other"
    """A list, dict, tuple or set: not for devptr.store."""


_FACTORIES: Final = frozenset(
    {
        "empty", "zeros", "ones", "full", "tensor", "as_tensor", "asarray", "array",
        "empty_like", "zeros_like", "ones_like", "full_like", "frombuffer", "from_numpy",
        "arange",
    }
)  # fmt: skip
_ARRAY_METHODS: Final = frozenset(
    {
        "numpy", "view", "to", "cpu", "cuda", "xpu", "pin_memory", "new_zeros", "new_empty",
        "new_full", "new_ones", "new_tensor", "clone", "contiguous", "astype", "reshape",
        "flatten", "detach",
    }
)  # fmt: skip
_ARRAY_ATTRS: Final = frozenset({"np", "gpu"})
_ARRAY_TYPES: Final = frozenset({"Tensor", "ndarray", "NDArray"})
_OTHER_TYPES: Final = frozenset(
    {"dict", "list", "Dict", "List", "MutableMapping", "MutableSequence", "defaultdict",
     "OrderedDict", "set", "Set"}
)  # fmt: skip
_OTHER_CALLS: Final = frozenset({"list", "dict", "defaultdict", "OrderedDict", "collections.defaultdict"})


def expr_kind(node: cst.BaseExpression) -> Kind | None:
    """Classify an expression by its syntax alone (a factory call, a literal, ``.np``...)."""
    node = strip_parens(node)
    if isinstance(node, (cst.List, cst.Dict, cst.ListComp, cst.DictComp, cst.Set, cst.SetComp)):
        return Kind.OTHER
    if isinstance(node, cst.Call):
        name = dotted(node.func)
        if name in _OTHER_CALLS:
            return Kind.OTHER
        if name is not None and "." in name:
            head, _, tail = name.rpartition(".")
            if head in TORCH_MODULES | NUMPY_MODULES and tail in _FACTORIES:
                return Kind.ARRAY
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _ARRAY_METHODS:
            return Kind.ARRAY
        return None
    if isinstance(node, cst.Attribute) and node.attr.value in _ARRAY_ATTRS:
        return Kind.ARRAY
    return None


def annotation_kind(node: cst.BaseExpression) -> Kind | None:
    """Classify an annotation: ``torch.Tensor``/``np.ndarray``/``NDArray[...]`` or containers."""
    node = strip_parens(node)
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.SimpleString):
        return None
    name = dotted(node)
    if name is None:
        return None
    tail = name.rpartition(".")[2]
    if tail in _ARRAY_TYPES:
        return Kind.ARRAY
    if tail in _OTHER_TYPES:
        return Kind.OTHER
    return None


class Bindings:
    """Kinds of the dotted names bound in one module (``x``, ``self.x``, ``obj.attr``)."""

    def __init__(self, module: cst.Module) -> None:
        self._kinds: dict[str, set[Kind | None]] = {}
        self._annotated: dict[str, set[Kind | None]] = {}
        module.visit(_Collector(self._kinds, self._annotated))

    def kind(self, node: cst.BaseExpression) -> Kind | None:
        """Kind of a container expression: by syntax first, then by its bindings."""
        node = strip_parens(node)
        direct = expr_kind(node)
        if direct is not None:
            return direct
        if isinstance(node, cst.Subscript):
            # rows of an array are arrays: C[k][i] = ...
            return Kind.ARRAY if self.kind(node.value) is Kind.ARRAY else None
        name = dotted(node)
        if name is None:
            return None
        kinds = self._annotated.get(name)
        if kinds is None or kinds == {None}:
            kinds = self._kinds.get(name)
        if kinds is None or len(kinds) != 1:
            return None
        return next(iter(kinds))


class _Collector(cst.CSTVisitor):
    def __init__(
        self, kinds: dict[str, set[Kind | None]], annotated: dict[str, set[Kind | None]]
    ) -> None:
        self._kinds = kinds
        self._annotated = annotated
        self._class_depth = 0
        self._func_depth = 0

    def _add(
        self, target: cst.BaseExpression, kind: Kind | None, *, annotated: bool = False
    ) -> None:
        name = dotted(strip_parens(target))
        if name is not None:
            table = self._annotated if annotated else self._kinds
            table.setdefault(name, set()).add(kind)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._func_depth += 1
        for param in (*node.params.params, *node.params.kwonly_params, *node.params.posonly_params):
            if param.annotation is not None:
                kind = annotation_kind(param.annotation.annotation)
                self._add(param.name, kind, annotated=True)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._func_depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        kind = expr_kind(node.value)
        for target in node.targets:
            self._add(target.target, kind)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        kind = annotation_kind(node.annotation.annotation)
        if kind is None and node.value is not None:
            kind = expr_kind(node.value)
        self._add(node.target, kind, annotated=True)
        if self._class_depth and not self._func_depth and isinstance(node.target, cst.Name):
            # dataclass / attrs / NamedTuple field, read as self.<name>
            self._annotated.setdefault(f"self.{node.target.value}", set()).add(kind)

    def visit_Call(self, node: cst.Call) -> None:
        # dataclass-style construction: Foo(field=torch.zeros(...)) binds self.field
        for arg in node.args:
            if arg.keyword is not None:
                kind = expr_kind(arg.value)
                if kind is Kind.ARRAY:
                    self._kinds.setdefault(f"self.{arg.keyword.value}", set()).add(kind)
