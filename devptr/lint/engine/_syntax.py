"""Syntactic recognizers: dtypes, 2**63/2**64 constants, platform tests, call helpers.

Pure functions of AST nodes (and the module's :class:`~devptr.lint.engine._names.Names`);
no data flow here. Every name they compare against comes from :mod:`devptr.lint.catalogue`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import Final

from devptr.lint import catalogue as cat
from devptr.lint.engine._names import Names, statements
from devptr.lint.engine._values import DType

TWO_63: Final = 1 << 63
TWO_64: Final = 1 << 64

TABLE_NAME_RE: Final = re.compile(r"(ptr|addr|_np$|^np_|desc|table|base)", re.IGNORECASE)
"""Container names that suggest an address table when the container's type is unknown."""

PLATFORM_RE: Final = re.compile(r"xpu|cuda|rocm|hip|platform|device|backend", re.IGNORECASE)

ADDRESS_SCALAR_NAME_RE: Final = re.compile(
    r"(^|_)(ptr|addr|base_address|base_addr|base_ptr)$", re.IGNORECASE
)
"""Names of scalars that hold an address by convention (``src_ptr``, ``base_addr``)."""

ADDRESS_LIST_NAME_RE: Final = re.compile(r"(^|_)(ptrs|addrs|addresses|pointers)$", re.IGNORECASE)
"""Names of lists of addresses (``peer_ptrs``)."""

ADDRESS_NAME_RE: Final = re.compile(r"ptr|addr|address|pointer", re.IGNORECASE)


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


DTYPE_ATTRS: Final = frozenset(
    {name.rpartition(".")[2] for name in cat.U64_DTYPES | cat.I64_DTYPES}
    | {"torch_dtype", "numpy_dtype"}
)
"""Last names of the attribute spellings :func:`literal_dtype` finds a 64-bit integer
dtype in (``torch.int64``, ``N.uintp``, ``Encoding.U64.torch_dtype``): any other attribute
is not one, whatever its head."""


def literal_dtype(node: ast.AST, names: Names) -> DType | None:
    """The dtype class of a dtype spelling (``torch.uint64``, ``"int64"``, ``N.intp``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        raw = node.value
        if raw in cat.U64_DTYPE_STRINGS or raw.lower() in cat.U64_DTYPE_STRINGS:
            return DType.U64
        if raw in cat.I64_DTYPE_STRINGS or raw.lower() in cat.I64_DTYPE_STRINGS:
            return DType.I64
        return DType.OTHER
    if isinstance(node, ast.Name) and node.id == "int" and not names.is_imported("int"):
        return DType.I64  # np.array(..., dtype=int) is int64 on the platforms that matter
    if isinstance(node, ast.Name) and node.id in ("float", "bool", "complex"):
        return DType.OTHER
    name = names.qual(node)
    if name is None:
        return None
    if name in cat.U64_DTYPES:
        return DType.U64
    if name in cat.I64_DTYPES:
        return DType.I64
    head, _, attr = name.rpartition(".")
    if head in ("torch", "numpy", "ctypes"):
        return DType.OTHER if attr[:1].islower() and not attr.startswith("c_void") else None
    if name.endswith(("U64.torch_dtype", "U64.numpy_dtype")):
        return DType.U64
    if name.endswith(("I64.torch_dtype", "I64.numpy_dtype")):
        return DType.I64
    if not head:
        upper = name.upper().strip("_")
        if upper in ("U64", "UINT64", "U64_DTYPE", "UINT64_DTYPE"):
            return DType.U64
        if upper in ("I64", "INT64", "I64_DTYPE", "INT64_DTYPE"):
            return DType.I64
    return None


_NARROW: Final = frozenset({"uint8", "int8", "int16", "uint16", "int32", "uint32", "bool",
                            "float16", "bfloat16", "float32", "half", "short", "byte"})


def is_narrow_dtype(node: ast.AST, names: Names) -> bool:
    """Whether *node* spells a dtype narrower than 64 bits (``torch.uint8``, ``"int32"``,
    ``np.float32``): values converted to one are not addresses the code means to keep."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in _NARROW
    name = names.qual(node)
    if name is None:
        return False
    head, _, attr = name.rpartition(".")
    return head in ("torch", "numpy") and attr in _NARROW


def is_plain_literal(node: ast.AST) -> bool:
    """Whether *node* is a literal number, string, bool or None (``0``, ``-1``, ``2**20``)."""
    if isinstance(node, ast.Constant):
        return node.value is None or isinstance(node.value, int | float | str | bool)
    return int_value(node) is not None


NUMBER_TYPES: Final = frozenset(
    {"int", "float", *(f"numpy.{t}" for t in (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intp",
        "float32", "float64"))}
)
"""Scalar number constructors: ``numpy.int64(0)`` is a number, as ``0`` is."""


def is_number_of_literal(node: ast.AST, names: Names) -> bool:
    """Whether *node* is a literal number or a scalar number type called on literals
    (``numpy.int64(0)``, ``int(4)``): a counter's start, not an address by its name."""
    if is_plain_literal(node):
        return True
    return (
        isinstance(node, ast.Call) and not node.keywords and len(node.args) <= 1
        and names.qual(node.func) in NUMBER_TYPES
        and all(is_plain_literal(a) for a in node.args)
    )


def is_abstract_body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether *fn*'s body (after its docstring) only raises, passes or is ``...``: an
    abstract method, which says nothing about what its overrides return."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return all(
        isinstance(s, ast.Raise | ast.Pass)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in body
    )


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


def twos_ifexp_operand(node: ast.IfExp) -> ast.expr | None:
    """``x - 2**64 if x >= 2**63 else x`` (and mirrors): the converted operand ``x``."""
    shifts = [
        b for b in (node.body, node.orelse)
        if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Sub | ast.Add)
        and int_value(b.right) == TWO_64
    ]
    if not shifts or not isinstance(node.test, ast.Compare):
        return None
    consts = frozenset({TWO_63, TWO_63 - 1, 0})
    test = node.test
    if not any(int_value(c) in consts for c in [test.left, *test.comparators]):
        return None
    shift = shifts[0]
    assert isinstance(shift, ast.BinOp)
    return shift.left


def twos_binop_operand(node: ast.BinOp) -> ast.expr | None:
    """``(x + 2**63) % 2**64 - 2**63``: the converted operand ``x``."""
    if isinstance(node.op, ast.Sub) and int_value(node.right) == TWO_63:
        left = node.left
        if (
            isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod)
            and int_value(left.right) == TWO_64
        ):
            inner = left.left
            if isinstance(inner, ast.BinOp) and int_value(inner.right) == TWO_63:
                return inner.left
            return inner
    return None


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


def is_host_device(node: ast.AST | None, names: Names) -> bool:
    """Whether *node* spells a host device: ``"cpu"``, ``"cpu:0"``, ``torch.device("cpu")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower().partition(":")[0] in cat.HOST_DEVICE_TYPES
    if isinstance(node, ast.Call) and names.qual(node.func) == cat.DEVICE_CONSTRUCTOR:
        spelled = node.args[0] if node.args else kwarg(node, "type")
        return isinstance(spelled, ast.Constant) and is_host_device(spelled, names)
    return False


def _mentions_device_memory(node: ast.AST, names: Names) -> bool:
    """Whether *node* names an accelerator or a device-address source (``"cuda:0"``,
    ``x.cuda()``, ``torch.xpu``, ``cupy``, ``buffer_ptrs``, ``create_shared_buffer``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and (
            node.value.lower().partition(":")[0] in cat.ACCELERATOR_DEVICE_TYPES
        )
    if isinstance(node, ast.Attribute):
        attr = node.attr
        return (
            attr in cat.ACCELERATOR_DEVICE_TYPES or attr in cat.PEER_POINTER_ATTRS
            or attr == cat.CUDA_ARRAY_INTERFACE or attr in cat.ADDRESS_FUNCTION_SUFFIXES
        )
    if isinstance(node, ast.Name):
        if node.id in cat.ADDRESS_FUNCTION_SUFFIXES:
            return True
        name = names.qual(node)
        return name is not None and name.partition(".")[0] in cat.ACCELERATOR_MODULES and (
            names.is_imported(node.id)
        )
    return False


def _device_attribute(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and (
        target.value.id in ("self", "cls")
    ) and target.attr.strip("_") in cat.DEVICE_ATTRIBUTES


def declares_host_only(cls: ast.ClassDef, names: Names) -> bool:
    """Whether *cls* declares that its tensors live in host memory.

    True when the class binds a device attribute (``device_type = "cpu"`` in its body,
    ``self.device = torch.device("cpu")`` in a method; see
    :data:`~devptr.lint.catalogue.DEVICE_ATTRIBUTES`) at least once, binds every one only
    to a host device spelling, and mentions no accelerator or device-address source
    anywhere (no ``"cuda"``, ``.cuda()``, ``torch.xpu``, cuda-python, ``buffer_ptrs``...).
    A parameter, ``get_device(...)`` or any other value bound to a device attribute makes
    it False: the class may then hold device memory.
    """
    bound = False
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id.strip("_") in cat.DEVICE_ATTRIBUTES:
                    if stmt.value is None:
                        continue
                    if not is_host_device(stmt.value, names):
                        return False
                    bound = True
    for stmt in statements(cls.body):  # statements only: cheap
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if _device_attribute(t):
                    if stmt.value is None:
                        continue
                    if isinstance(stmt, ast.AugAssign) or not is_host_device(stmt.value, names):
                        return False
                    bound = True
                elif isinstance(t, ast.Tuple | ast.List) and any(
                    _device_attribute(e.value if isinstance(e, ast.Starred) else e)
                    for e in t.elts
                ):
                    return False  # self.device, x = ...: not a literal binding
    return bound and not any(_mentions_device_memory(node, names) for node in ast.walk(cls))


PROPERTY_DECORATORS: Final = frozenset({"property", "cached_property"})
"""Decorators (last name) making a method an attribute: ``x.name`` runs its body."""

HOST_CLASS_TRIGGER: Final = ("'cpu", '"cpu')
"""Lowercase text a class needs before :func:`declares_host_only` walks it."""


def covering(spellings: Iterable[str]) -> tuple[str, ...]:
    """The spellings that hold no other one (``mallocAsync`` holds ``malloc``): a text
    holds some spelling exactly when it holds one of these, with fewer substring scans."""
    every = frozenset(spellings)
    return tuple(sorted(s for s in every if not any(o != s and o in s for o in every)))


SOURCE_TRIGGER: Final = covering({spelling.lower() for spelling in cat.SOURCE_SPELLINGS})
"""Lowercase text of the catalogue's address sources (``data_ptr``, ``cudamalloc``...): a
function body without any holds no address of its own (it may still pass one along)."""

FUNCTION_TRIGGER: Final = covering(
    {spelling.lower() for spelling in cat.SOURCE_SPELLINGS}
    | {"ptr", "uint64", "addr", "**6", "** 6", "<<6", "<< 6", "deviceptr", "shared_buffer",
       "array("}
)
"""Lowercase text a function body needs before the report pass walks it (others are
summarized from their annotations): the catalogue's source spellings, address-like names,
``2**64``-style constants and ``DevicePtr``."""


SINK_TRIGGER: Final = (
    "tensor(", "array(", "full(", "fill_(", "fill(", "stack(", "concatenate(", "fromiter(",
    "frombuffer(", "out=", "int64",
)
"""Lowercase text a function body needs before the summary walk looks for parameters
reaching sinks."""


def is_device_decorator(node: ast.expr, names: Names) -> bool:
    """``@triton.jit``, ``@triton.autotune(...)``, ``@cute.kernel``..."""
    target = node.func if isinstance(node, ast.Call) else node
    name = names.qual(target)
    if name is None:
        return False
    if name in cat.DEVICE_DECORATORS:
        return True
    return name.rpartition(".")[2] in ("jit", "kernel") and name.startswith(
        ("triton", "cute", "cutlass")
    )


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


def _int_at_least(node: ast.expr | None, low: int) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= low


def nonnegative_counter(target: ast.expr, it: ast.expr, counters: list[str]) -> str | None:
    """The loop variable of ``for i in range(...)`` / ``for i, x in enumerate(...)`` when it
    can only be a non-negative int (start >= 0, literal step > 0), else None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
        return None
    if it.func.id == "range" and isinstance(target, ast.Name) and not it.keywords and (
        1 <= len(it.args) <= 3
    ):
        start_ok = len(it.args) == 1 or is_nonnegative_index(it.args[0], counters)
        step_ok = len(it.args) < 3 or _int_at_least(it.args[2], 1)
        return target.id if start_ok and step_ok else None
    if it.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts and (
        isinstance(target.elts[0], ast.Name)
    ):
        start = it.args[1] if len(it.args) > 1 else kwarg(it, "start")
        if start is None or is_nonnegative_index(start, counters):
            return target.elts[0].id
    return None


def is_nonnegative_index(node: ast.expr, counters: list[str]) -> bool:
    """Whether a subscript index is known to be a non-negative int (or a tuple or slice of
    them): a literal, ``len(...)``, a ``range``/``enumerate`` counter, or sums and products
of these.
    ``devptr.store`` rejects negative indices, which plain indexing counts from the end."""
    if _int_at_least(node, 0):
        return True
    if isinstance(node, ast.Name):
        return node.id in counters
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult | ast.FloorDiv):
        return is_nonnegative_index(node.left, counters) and is_nonnegative_index(
            node.right, counters)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(is_nonnegative_index(e, counters) for e in node.elts)
    if isinstance(node, ast.Slice):
        bounds = all(part is None or is_nonnegative_index(part, counters)
                     for part in (node.lower, node.upper))
        return bounds and (node.step is None or _int_at_least(node.step, 1))
    return False


def is_slice(target: ast.Subscript | None) -> bool:
    """Whether a subscript target is a slice (``t[a:b]``, ``t[i, :]``)."""
    if target is None:
        return False
    if isinstance(target.slice, ast.Slice):
        return True
    return isinstance(target.slice, ast.Tuple) and any(
        isinstance(e, ast.Slice) for e in target.slice.elts
    )


def looks_like_table(target: ast.Subscript) -> bool:
    """For containers of unknown type: a slice index and an address-table name."""
    if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return False  # a string key: a dict
    name = last_name(target.value)
    return is_slice(target) and name is not None and bool(TABLE_NAME_RE.search(name))


def py_array_dtype(node: ast.expr | None) -> DType | None:
    """The dtype class of an ``array.array`` typecode (``"q"``: int64, ``"Q"``: uint64)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value in cat.PY_ARRAY_SIGNED_CODES:
            return DType.I64
        if node.value in cat.PY_ARRAY_UNSIGNED_CODES:
            return DType.U64
        return DType.OTHER
    return None


def is_signed_numpy_scalar(node: ast.expr, names: Names) -> bool:
    """``np.int64(x)``, ``np.int32(x)``, ``np.intp(x)``."""
    if isinstance(node, ast.Call):
        name = names.qual(node.func)
        return name is not None and name.rpartition(".")[2] in ("int64", "int32", "intp")
    return False


def is_struct_twos(node: ast.Call, names: Names) -> bool:
    """``struct.unpack("q", struct.pack("Q", x))`` (either way round): a two's complement."""
    if len(node.args) != 2 or not isinstance(node.args[1], ast.Call):
        return False
    inner = node.args[1]
    if names.qual(inner.func) != "struct.pack" or not inner.args:
        return False
    fmts = [node.args[0], inner.args[0]]
    texts = [f.value for f in fmts if isinstance(f, ast.Constant) and isinstance(f.value, str)]
    return len(texts) == 2 and {texts[0][-1:], texts[1][-1:]} == {"q", "Q"}


def is_host_allocation(node: ast.Call, names: Names) -> bool:
    """Whether an allocation is in host memory (``pin_memory=True``, ``device="cpu"``)."""
    pin = kwarg(node, "pin_memory")
    if isinstance(pin, ast.Constant) and pin.value is True:
        return True
    return is_host_device(kwarg(node, "device"), names)


def dtype_branch_target(stmt: ast.If, names: Names) -> str | None:
    """``if is_xpu(): d = torch.uint64 / else: d = torch.int64`` -> ``"d"``."""
    if not stmt.orelse:
        return None

    def assigned(body: list[ast.stmt]) -> dict[str, DType]:
        out: dict[str, DType] = {}
        for s in body:
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                t = s.targets[0]
                dt = literal_dtype(s.value, names)
                if isinstance(t, ast.Name) and dt is not None:
                    out[t.id] = dt
        return out

    a, b = assigned(stmt.body), assigned(stmt.orelse)
    for name, dt in a.items():
        if {dt, b.get(name)} == {DType.U64, DType.I64} and is_platform_test(stmt.test):
            return name
    return None


def is_dtype_branch(node: ast.IfExp, names: Names) -> bool:
    """``torch.uint64 if <platform test> else torch.int64`` (either order)."""
    dts = {literal_dtype(node.body, names), literal_dtype(node.orelse, names)}
    return dts == {DType.U64, DType.I64} and is_platform_test(node.test)


def base_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's classes derive from: every name or attribute in their
    base and keyword lists (``class A(Base)``, ``class B(mod.Base, metaclass=M)``)."""
    return frozenset(
        n.id if isinstance(n, ast.Name) else n.attr
        for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
        for arg in (*c.bases, *(kw.value for kw in c.keywords))
        for n in ast.walk(arg) if isinstance(n, ast.Name | ast.Attribute)
    )

