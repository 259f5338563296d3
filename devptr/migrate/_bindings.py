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


_TABLE_FACTORIES: Final = {"empty": 1, "zeros": 1, "ones": 1, "full": 2}
_SAME_TABLE_METHODS: Final = frozenset({"pin_memory", "cuda", "cpu", "contiguous", "clone"})


def table_spec(node: cst.BaseExpression) -> str | None:
    """``"torch.int64"``-style spec when ``node`` surely builds a 1-D int64/uint64 container.

    ``torch.zeros(n, dtype=torch.int64[, device=...])`` (also ``empty``/``ones``/``full`` and
    numpy), optionally followed by ``.numpy()``, ``.pin_memory()``, ``.cuda()``, ``.cpu()``,
    ``.contiguous()`` or ``.clone()``. A shape that is not a single scalar, a missing or
    non-integer dtype, or any other keyword gives None.
    """
    node = strip_parens(node)
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SAME_TABLE_METHODS | {"numpy"}:
        if node.args:
            return None
        inner = table_spec(func.value)
        if inner is None or func.attr.value != "numpy":
            return inner
        return "numpy." + inner.partition(".")[2] if inner.startswith("torch.") else None
    name = dotted(func)
    if name is None or "." not in name:
        return None
    head, _, tail = name.rpartition(".")
    lib = "torch" if head in TORCH_MODULES else "numpy" if head in NUMPY_MODULES else None
    if lib is None or tail not in _TABLE_FACTORIES:
        return None
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) != _TABLE_FACTORIES[tail] or any(a.star for a in node.args):
        return None
    shape = strip_parens(positional[0].value)
    if isinstance(shape, (cst.Tuple, cst.List)) and len(shape.elements) != 1:
        return None
    dtype = None
    for arg in node.args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        if key == "dtype":
            dtype = dotted(strip_parens(arg.value))
        elif key not in {"device", "pin_memory"}:
            return None
    if dtype is None or "." not in dtype:
        return None
    dhead, _, dtail = dtype.rpartition(".")
    if (dhead in TORCH_MODULES) != (lib == "torch") or dhead not in TORCH_MODULES | NUMPY_MODULES:
        return None
    dtail = "int64" if dtail == "long" and lib == "torch" else dtail
    return f"{lib}.{dtail}" if dtail in {"int64", "uint64"} else None


class Bindings:
    """Kinds of the dotted names bound in one module (``x``, ``self.x``, ``obj.attr``)."""

    def __init__(self, module: cst.Module) -> None:
        self._kinds: dict[str, set[Kind | None]] = {}
        self._annotated: dict[str, set[Kind | None]] = {}
        self._specs: dict[str, set[str | None]] = {}
        module.visit(_Collector(self._kinds, self._annotated, self._specs))

    def table(self, node: cst.BaseExpression) -> str | None:
        """The :func:`table_spec` of a container, when every binding of its name agrees."""
        node = strip_parens(node)
        direct = table_spec(node)
        if direct is not None:
            return direct
        name = dotted(node)
        specs = self._specs.get(name) if name is not None else None
        if not specs or len(specs) != 1:
            return None
        return next(iter(specs))

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
        self,
        kinds: dict[str, set[Kind | None]],
        annotated: dict[str, set[Kind | None]],
        specs: dict[str, set[str | None]],
    ) -> None:
        self._kinds = kinds
        self._annotated = annotated
        self._specs = specs
        self._class_depth = 0
        self._func_depth = 0

    def _add(
        self,
        target: cst.BaseExpression,
        kind: Kind | None,
        *,
        annotated: bool = False,
        value: cst.BaseExpression | None = None,
    ) -> None:
        name = dotted(strip_parens(target))
        if name is not None:
            # any binding that is not a proven table (a parameter, an annotation without a
            # value, another assignment) makes the name's table spec unknown
            self._specs.setdefault(name, set()).add(None if value is None else table_spec(value))
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
            else:
                self._specs.setdefault(param.name.value, set()).add(None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._func_depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        kind = expr_kind(node.value)
        for target in node.targets:
            self._add(target.target, kind, value=node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        kind = annotation_kind(node.annotation.annotation)
        if kind is None and node.value is not None:
            kind = expr_kind(node.value)
        self._add(node.target, kind, annotated=True, value=node.value)
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
                    self._specs.setdefault(f"self.{arg.keyword.value}", set()).add(
                        table_spec(arg.value)
                    )
