"""Syntactic recognizers: dotted names, dtypes, 2**63/2**64 constants, platform tests.

Pure functions of AST nodes; no data flow here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Final

from devptr.lint._values import DType

TORCH_MODULES: Final = frozenset({"torch"})
NUMPY_MODULES: Final = frozenset({"np", "numpy"})

U64_NAMES: Final = frozenset({"uint64", "ulonglong", "uint"})
"""Attribute names of 64-bit unsigned dtypes (``torch.uint64``, ``np.uint64``)."""

I64_NAMES: Final = frozenset({"int64", "long", "longlong", "intp", "int_"})
"""Attribute names of 64-bit signed dtypes (``torch.int64``, ``torch.long``, ``np.intp``)."""

TABLE_CONSTRUCTORS: Final = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.asarray",
        "torch.LongTensor",
        "torch.full",
        "np.array",
        "np.asarray",
        "np.asanyarray",
        "np.ascontiguousarray",
        "np.fromiter",
        "np.full",
    }
)
"""Calls that build an integer table from Python values (numpy spelled ``np``)."""

ALLOCATORS: Final = frozenset(
    {
        "torch.empty",
        "torch.zeros",
        "torch.ones",
        "torch.empty_like",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "torch.arange",
        "np.empty",
        "np.zeros",
        "np.ones",
        "np.empty_like",
        "np.zeros_like",
        "np.ones_like",
        "np.arange",
        "np.full_like",
    }
)
"""Calls that allocate an array without taking addresses."""

SAME_ARRAY_METHODS: Final = frozenset(
    {
        "cpu",
        "cuda",
        "to",
        "pin_memory",
        "contiguous",
        "clone",
        "copy",
        "flatten",
        "ravel",
        "reshape",
        "squeeze",
        "unsqueeze",
        "T",
        "detach",
        "share_memory_",
        "narrow",
        "expand",
        "repeat",
        "__getitem__",
    }
)
"""Methods returning an array of the same dtype and library as their receiver."""

MAPPING_CALLS: Final = frozenset(
    {"dict", "defaultdict", "OrderedDict", "collections.defaultdict", "collections.OrderedDict"}
)

DEVPTR_CONSTRUCTORS: Final = frozenset(
    {"DevicePtr", "DevicePtr.of", "DevicePtr.from_signed", "devptr.DevicePtr",
     "devptr.DevicePtr.of", "devptr.DevicePtr.from_signed"}
)
"""devptr calls returning a checked :class:`~devptr.DevicePtr`."""

PEER_PTR_ATTRS: Final = frozenset({"buffer_ptrs", "signal_pad_ptrs"})
"""Attributes holding lists of raw peer addresses (torch symmetric-memory handles)."""

TABLE_NAME_RE: Final = re.compile(r"(ptr|addr|_np$|^np_|desc|table|base)", re.IGNORECASE)
"""Container names that suggest an address table when the container's type is unknown."""

PLATFORM_RE: Final = re.compile(r"xpu|cuda|rocm|hip|platform|device|backend", re.IGNORECASE)


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, numpy spelled ``np``; None otherwise."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append("np" if node.id == "numpy" else node.id)
    return ".".join(reversed(parts))


def last_name(node: ast.AST) -> str | None:
    """The rightmost identifier of a Name/Attribute/Subscript/Call chain."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Subscript | ast.Call):
            node = node.value if isinstance(node, ast.Subscript) else node.func
            continue
        return None


def literal_dtype(node: ast.AST) -> DType | None:
    """The dtype class of a dtype spelling (``torch.uint64``, ``"int64"``, ``np.intp``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        raw = node.value.lstrip("<>=|")
        if raw in ("Q", "u8") or raw.lower() in U64_NAMES:
            return DType.U64
        if raw in ("q", "i8") or raw.lower() in I64_NAMES:
            return DType.I64
        return DType.OTHER
    if isinstance(node, ast.Name) and node.id == "int":
        return DType.I64  # np.array(..., dtype=int) is int64 on the platforms that matter
    if isinstance(node, ast.Name) and node.id in ("float", "bool", "complex"):
        return DType.OTHER
    name = dotted(node)
    if name is None:
        return None
    head, _, attr = name.rpartition(".")
    if not head and isinstance(node, ast.Name):
        return _dtype_constant_name(node.id)
    if head in ("torch", "np", "ctypes") or head.endswith((".torch", ".np")):
        if attr in U64_NAMES or attr == "c_uint64":
            return DType.U64
        if attr in I64_NAMES or attr == "c_int64":
            return DType.I64
        return DType.OTHER
    if name.endswith(("U64.torch_dtype", "U64.numpy_dtype")):
        return DType.U64
    if name.endswith(("I64.torch_dtype", "I64.numpy_dtype")):
        return DType.I64
    return None


def _dtype_constant_name(name: str) -> DType | None:
    """Module constants named for a dtype (``U64 = np.uint64`` imported from elsewhere)."""
    upper = name.upper().strip("_")
    if upper in ("U64", "UINT64", "U64_DTYPE", "UINT64_DTYPE"):
        return DType.U64
    if upper in ("I64", "INT64", "I64_DTYPE", "INT64_DTYPE"):
        return DType.I64
    return None


def int_value(node: ast.AST) -> int | None:
    """Evaluate small constant integer expressions (``2**64``, ``1 << 63``, ``-(2**63)``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = int_value(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp):
        left, right = int_value(node.left), int_value(node.right)
        if left is None or right is None or right < 0 or right > 128:
            return None
        if isinstance(node.op, ast.Pow):
            return int(left**right)
        if isinstance(node.op, ast.LShift):
            return left << right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Add):
            return left + right
    return None


TWO_63: Final = 1 << 63
TWO_64: Final = 1 << 64


def mentions_const(node: ast.AST, values: frozenset[int]) -> bool:
    """Whether any sub-expression of *node* evaluates to one of *values*."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp | ast.Constant | ast.UnaryOp) and int_value(sub) in values:
            return True
    return False


def is_twos_complement_ifexp(node: ast.IfExp) -> bool:
    """``x - 2**64 if x >= 2**63 else x`` and its mirror/variants.

    One branch subtracts (or adds) 2**64, the test compares against 2**63 (or 2**63 - 1, or
    checks the sign for the reverse direction ``x + 2**64 if x < 0 else x``).
    """
    branches = (node.body, node.orelse)
    shifts = [
        b for b in branches
        if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Sub | ast.Add)
        and int_value(b.right) == TWO_64
    ]
    if not shifts:
        return False
    test = node.test
    if not isinstance(test, ast.Compare):
        return False
    consts = frozenset({TWO_63, TWO_63 - 1, 0})
    return any(int_value(c) in consts for c in [test.left, *test.comparators])


def is_twos_complement_binop(node: ast.BinOp) -> bool:
    """``(x + 2**63) % 2**64 - 2**63`` and ``x & (2**64 - 1)`` applied to a negative pointer."""
    if isinstance(node.op, ast.Sub) and int_value(node.right) == TWO_63:
        left = node.left
        return (
            isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod)
            and int_value(left.right) == TWO_64
        )
    return False


def ctypes_twos(node: ast.Call) -> bool:
    """``ctypes.c_int64(p).value`` style conversions are spotted at the call."""
    name = dotted(node.func)
    return name in ("ctypes.c_int64", "c_int64", "ctypes.c_longlong", "c_longlong")


ADDRESS_SCALAR_NAME_RE: Final = re.compile(
    r"(^|_)(ptr|addr|address|base_addr|base_ptr)$", re.IGNORECASE
)
"""Names of scalars that hold an address by convention (``src_ptr``, ``base_addr``)."""

ADDRESS_LIST_NAME_RE: Final = re.compile(r"(^|_)(ptrs|addrs|addresses|pointers)$", re.IGNORECASE)
"""Names of lists of addresses (``peer_ptrs``, ``addr_bases`` is not one)."""

ADDRESS_NAME_RE: Final = re.compile(r"ptr|addr|address|pointer", re.IGNORECASE)


def names_an_address(node: ast.AST) -> bool:
    """Whether an expression's rightmost name says it is an address (``ptr``, ``base_addr``)."""
    name = last_name(node)
    return name is not None and bool(ADDRESS_NAME_RE.search(name))


def is_platform_test(node: ast.AST) -> bool:
    """Whether a condition mentions a platform/device (``is_xpu()``, ``device.type == 'xpu'``)."""
    for sub in ast.walk(node):
        text: str | None = None
        if isinstance(sub, ast.Name):
            text = sub.id
        elif isinstance(sub, ast.Attribute):
            text = sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
        if text is not None and PLATFORM_RE.search(text):
            return True
    return False


FUNCTION_TRIGGER: Final = re.compile(
    r"data_ptr|uint64|_ptrs?\b|\bptrs?\b|addr|address|<<\s*6[34]|\*\*\s*6[34]|c_int64|"
    r"c_longlong|struct\.|DevicePtr",
    re.IGNORECASE,
)
"""Text a function body needs before the report pass walks it."""

DEVICE_DECORATORS: Final = frozenset(
    {"jit", "autotune", "heuristics", "kernel", "triton.jit", "triton.autotune",
     "triton.heuristics", "cute.kernel", "cute.jit", "tl.core.builtin"}
)
"""Decorators of device code (Triton, CuTe): function bodies the checker skips."""


def is_device_decorator(node: ast.expr) -> bool:
    """``@triton.jit``, ``@triton.autotune(...)``, ``@cute.kernel``..."""
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted(target)
    if name is None:
        return False
    if name in DEVICE_DECORATORS:
        return True
    return name.rpartition(".")[2] in ("jit", "kernel") and name.startswith(("triton", "cute"))


def call_name(node: ast.Call) -> str | None:
    """Dotted name of a call's function, numpy spelled ``np``."""
    return dotted(node.func)


def kwarg(node: ast.Call, name: str) -> ast.expr | None:
    """The value of keyword argument *name*, if given."""
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def iter_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of *body*, nested blocks included, without descending into expressions."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                yield from iter_statements(block)
        for handler in getattr(stmt, "handlers", ()):
            yield from iter_statements(handler.body)
