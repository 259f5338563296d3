"""Turn type annotations into checker values (``np.ndarray`` -> numpy array, ...)."""

from __future__ import annotations

import ast

from devptr.lint.engine._names import Names
from devptr.lint.engine._syntax import literal_dtype
from devptr.lint.engine._values import DEVPTR, MAPPING, DType, Kind, Lib, Val

_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "OrderedDict"})
_OPTIONAL = frozenset({"Optional", "Final", "ClassVar", "Annotated"})


def annotation_val(node: ast.expr | None, names: Names) -> Val | None:
    """The value an annotation promises, for the few types the checker tracks.

    ``np.ndarray``/``npt.NDArray[np.uint64]`` give a numpy array (dtype when written),
    ``torch.Tensor`` a torch tensor, ``dict[...]`` a mapping, ``tuple[A, B]`` a tuple;
    ``X | None`` and ``Optional[X]`` give X's value.
    """
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            parsed = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
        return annotation_val(parsed, names)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = annotation_val(node.left, names)
        return left if left is not None else annotation_val(node.right, names)
    if isinstance(node, ast.Subscript):
        head = names.qual(node.value)
        base = head.rpartition(".")[2] if head else ""
        if base in _OPTIONAL:
            inner = node.slice
            if isinstance(inner, ast.Tuple) and inner.elts:
                inner = inner.elts[0]
            return annotation_val(inner, names)
        if base == "NDArray":
            return Val(Kind.ARRAY, lib=Lib.NUMPY, dtype=literal_dtype(node.slice, names))
        if base in ("tuple", "Tuple"):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return Val(Kind.TUPLE, items=tuple(annotation_val(e, names) for e in elts))
        if base in _MAPPINGS:
            return MAPPING
        return None
    name = names.qual(node)
    if name is None:
        return None
    base = name.rpartition(".")[2]
    if base in ("ndarray", "NDArray"):
        return Val(Kind.ARRAY, lib=Lib.NUMPY)
    if base in ("Tensor", "LongTensor"):
        dtype = DType.I64 if base == "LongTensor" else None
        return Val(Kind.ARRAY, lib=Lib.TORCH, dtype=dtype)
    if base in _MAPPINGS:
        return MAPPING
    if base == "DevicePtr":
        return DEVPTR
    return None
