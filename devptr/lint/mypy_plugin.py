"""mypy plugin: report raw device addresses that reach integer tables.

Enable it with ``plugins = ["devptr.mypy_plugin"]`` (an alias of this module) (pyproject ``[tool.mypy]``) or
``plugins = devptr.mypy_plugin`` (mypy.ini). devptr must be importable by mypy (installed,
or on ``mypy_path``).

What it does:

- ``data_ptr()`` of tensors and storages returns ``devptr.lint._raw.RawAddress`` (a subclass
  of ``int``, so nothing that type-checked before stops type-checking) and ``RawAddress +/-/&/|
  int`` stays a ``RawAddress``. No other type changes.
- It reports, with its own error codes (silence one with ``# type: ignore[devptr-raw-store]``):

  ``devptr-raw-store`` (DP001)
      a RawAddress (or a list of them) stored into a torch tensor or a non-uint64 numpy array
      by ``__setitem__`` or ``fill_``;
  ``devptr-raw-table`` (DP002)
      ``torch.tensor``/``as_tensor``/``full``, ``np.array``/``asarray``/``fromiter``/``full``
      built from RawAddresses without a uint64 dtype;
  ``devptr-raw-arith`` (DP003)
      a RawAddress combined with a numpy array not typed as uint64;
  ``devptr-unchecked-u64`` (DP006, convention: off unless enabled)
      RawAddresses written into a uint64 numpy array or a uint64 table constructor;
  ``devptr-wrapping-arith`` (DP007, convention: off unless enabled)
      a RawAddress combined with a torch tensor (wraps to the int64 encoding).

  Convention codes are off by default, like the checker's convention rules: turn them on
  with ``enable_error_code = ["devptr-unchecked-u64", "devptr-wrapping-arith"]``. Every name
  the plugin recognizes comes from :mod:`devptr.lint.catalogue`.

  A ``# devptr: ignore[DP001]`` comment (the checker's suppression) silences the plugin too.

Importing :mod:`devptr` never imports this module (nor mypy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    Expression,
    GeneratorExpr,
    ListComprehension,
    ListExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    SetComprehension,
    SetExpr,
    StrExpr,
    TupleExpr,
    TypeInfo,
)
from mypy.options import Options
from mypy.plugin import FunctionContext, MethodContext, MethodSigContext, Plugin
from mypy.types import (
    AnyType,
    FunctionLike,
    Instance,
    ProperType,
    TupleType,
    Type,
    UnionType,
    get_proper_type,
)

from devptr.lint import catalogue as cat
from devptr.lint.engine._suppress import is_suppressed, suppressions
from devptr.lint.engine.rules import _messages as sinks
from devptr.lint.rules import RULES, Rule

RAW_ADDRESS: Final = "devptr.lint._raw.RawAddress"
_RAW_MODULE: Final = "devptr.lint._raw"


def _code(rule: Rule) -> ErrorCode:
    info = RULES[rule]
    return ErrorCode(info.mypy_code, info.summary, "devptr", default_enabled=info.default)


RAW_STORE: Final = _code(Rule.DP001)
RAW_TABLE: Final = _code(Rule.DP002)
RAW_ARITH: Final = _code(Rule.DP003)
UNCHECKED_U64: Final = _code(Rule.DP006)
WRAPPING_ARITH: Final = _code(Rule.DP007)

TENSOR_CLASSES: Final = frozenset(c for c in cat.ADDRESS_METHOD_CLASSES if "Tensor" in c)
"""Classes whose ``data_ptr()`` is an address, and whose ``__setitem__`` is a table store."""
STORAGE_CLASSES: Final = frozenset(c for c in cat.ADDRESS_METHOD_CLASSES if "Storage" in c)
NDARRAY_CLASSES: Final = frozenset({"numpy.ndarray"})

ADDRESS_ARITH_METHODS: Final = frozenset({"__add__", "__radd__", "__sub__", "__and__", "__or__"})
"""Methods of RawAddress whose result with an ``int`` is still an address."""

STORE_METHODS: Final = frozenset({"__setitem__", "fill_", "fill"}) & cat.STORE_METHODS
ARRAY_ARITH_METHODS: Final = frozenset(
    {"__add__", "__radd__", "__sub__", "__rsub__", "__or__", "__ror__"}
)
TABLE_FUNCTIONS: Final = frozenset(
    full for full, name in cat.MYPY_FULLNAMES.items()
    if name in cat.TABLE_CONSTRUCTORS | cat.FILL_CONSTRUCTORS
)
"""mypy full names of the catalogue's table constructors (``devptr.lint.catalogue``)."""
_FILL_VALUE_FUNCTIONS: Final = frozenset(
    full for full in TABLE_FUNCTIONS if cat.MYPY_FULLNAMES[full] in cat.FILL_CONSTRUCTORS
)


def _is_raw(typ: Type, depth: int = 0) -> bool:
    """Whether *typ* is a RawAddress or a container type holding one."""
    t: ProperType = get_proper_type(typ)
    if depth > 4:
        return False
    if isinstance(t, Instance):
        if t.type.fullname == RAW_ADDRESS:
            return True
        if t.type.fullname.startswith(("numpy.", "torch.")):
            return False
        return any(_is_raw(a, depth + 1) for a in t.args)
    if isinstance(t, TupleType):
        return any(_is_raw(a, depth + 1) for a in t.items)
    if isinstance(t, UnionType):
        return any(_is_raw(a, depth + 1) for a in t.items)
    return False


def _holds_raw(ctx: FunctionContext, expr: Expression, typ: Type, depth: int = 0) -> bool:
    """Whether an argument holds RawAddresses, looking into literal lists and comprehensions.

    A literal ``[p]`` passed where ``Any`` is expected is inferred as ``list[int]``, so its
    items are checked one by one.
    """
    if _is_raw(typ):
        return True
    if depth > 3:
        return False
    if isinstance(expr, ListExpr | TupleExpr | SetExpr):
        return any(
            _holds_raw(ctx, item, ctx.api.get_expression_type(item), depth + 1)
            for item in expr.items
        )
    if isinstance(expr, ListComprehension | SetComprehension):
        expr = expr.generator
    if isinstance(expr, GeneratorExpr):
        return _holds_raw(ctx, expr.left_expr, ctx.api.get_expression_type(expr.left_expr),
                          depth + 1)
    return False


def _is_uint64_array(typ: Type) -> bool:
    """``ndarray[..., dtype[uint64]]`` (``unsignedinteger[_64Bit]``, or of unknown width)."""
    t = get_proper_type(typ)
    if not isinstance(t, Instance) or len(t.args) < 2:
        return False
    dtype = get_proper_type(t.args[1])
    if not isinstance(dtype, Instance) or not dtype.args:
        return False
    scalar = get_proper_type(dtype.args[0])
    if not isinstance(scalar, Instance):
        return False
    if scalar.type.fullname in ("numpy.uint64", "numpy.ulonglong"):
        return True
    if scalar.type.fullname != "numpy.unsignedinteger" or not scalar.args:
        return False
    bits = get_proper_type(scalar.args[0])
    if isinstance(bits, AnyType):
        return True  # unsigned of unknown width (numpy's result of uint64 arithmetic)
    return isinstance(bits, Instance) and bits.type.fullname.endswith("_64Bit")


def _dtype_is_uint64(expr: Expression | None) -> bool:
    if isinstance(expr, MemberExpr | NameExpr):
        full = expr.fullname or expr.name
        return full in cat.U64_DTYPES or expr.name in ("uint64", "ulonglong", "U64")
    if isinstance(expr, StrExpr):
        return expr.value in cat.U64_DTYPE_STRINGS
    return False


def _arg(ctx: FunctionContext | MethodContext, name: str, pos: int) -> tuple[Type, Expression] | None:
    """The (type, expression) of an argument by callee name, or by position."""
    for i, names in enumerate(ctx.callee_arg_names):
        if names == name and ctx.args[i]:
            return ctx.arg_types[i][0], ctx.args[i][0]
    flat = [(t, e) for ts, es in zip(ctx.arg_types, ctx.args, strict=False)
            for t, e in zip(ts, es, strict=False)]
    return flat[pos] if pos < len(flat) else None


def _keyword(ctx: FunctionContext | MethodContext, name: str) -> Expression | None:
    for names, exprs in zip(ctx.arg_names, ctx.args, strict=False):
        for n, e in zip(names, exprs, strict=False):
            if n == name:
                return e
    return None


def _flat_types(ctx: FunctionContext | MethodContext) -> list[Type]:
    return [t for ts in ctx.arg_types for t in ts]


_CODES: Final = {
    Rule.DP001: RAW_STORE,
    Rule.DP002: RAW_TABLE,
    Rule.DP003: RAW_ARITH,
    Rule.DP006: UNCHECKED_U64,
    Rule.DP007: WRAPPING_ARITH,
}
_suppression_cache: dict[str, dict[int, frozenset[str]]] = {}


def _suppressed(ctx: FunctionContext | MethodContext, rule: Rule) -> bool:
    """Whether a ``# devptr: ignore[...]`` comment on the reported lines covers *rule*.

    One comment then silences both ``devptr check`` and the plugin.
    """
    path = getattr(ctx.api, "path", None)
    if not isinstance(path, str):
        return False
    table = _suppression_cache.get(path)
    if table is None:
        try:
            with open(path, encoding="utf-8") as f:
                table = suppressions(f.read())
        except OSError:
            table = {}
        _suppression_cache[path] = table
    first = ctx.context.line
    last = ctx.context.end_line or first
    return is_suppressed(table, rule.value, first, last)


def _report(ctx: FunctionContext | MethodContext, rule: Rule, message: str) -> None:
    if not _suppressed(ctx, rule):
        ctx.api.fail(f"{message} (fix: {RULES[rule].fix})", ctx.context, code=_CODES[rule])


def _store_hook(torch_side: bool) -> Callable[[MethodContext], Type]:
    def hook(ctx: MethodContext) -> Type:
        values = _flat_types(ctx)
        if not values or not _is_raw(values[-1]):
            return ctx.default_return_type
        if not torch_side and _is_uint64_array(ctx.type):
            _report(ctx, Rule.DP006, "raw device address written into a uint64 numpy array: "
                    f"{sinks.BITS_KEPT}")
        elif torch_side:
            _report(ctx, Rule.DP001, "raw device address stored into a torch tensor: if int64, "
                    f"{sinks.TORCH_SETITEM_I64}; if uint64, {sinks.TORCH_SETITEM_U64}")
        else:
            _report(ctx, Rule.DP001, "raw device address stored into a numpy array not typed "
                    f"as uint64: if int64, {sinks.NUMPY_I64}")
        return ctx.default_return_type

    return hook


def _arith_fail(ctx: MethodContext, torch_side: bool) -> None:
    if torch_side:
        _report(ctx, Rule.DP007, "raw device address combined with a torch tensor: an int64 "
                "tensor wraps an address >= 2**63 to its two's complement, unchecked")
    else:
        _report(ctx, Rule.DP003, "raw device address combined with a numpy array not typed as "
                f"uint64: if int64, {sinks.NUMPY_I64}")


def _table_hook(fullname: str) -> Callable[[FunctionContext], Type]:
    fill = fullname in _FILL_VALUE_FUNCTIONS
    short = fullname.rpartition(".")[2]

    def hook(ctx: FunctionContext) -> Type:
        data = _arg(ctx, "fill_value", 1) if fill else (
            _arg(ctx, "data", 0) or _arg(ctx, "object", 0) or _arg(ctx, "iter", 0)
        )
        if data is None or not _holds_raw(ctx, data[1], data[0]):
            return ctx.default_return_type
        if _dtype_is_uint64(_keyword(ctx, "dtype")):
            _report(ctx, Rule.DP006, f"{short}(..., dtype=uint64) of raw device addresses: "
                    f"{sinks.BITS_KEPT}")
        elif fullname.startswith("torch."):
            _report(ctx, Rule.DP002, f"{short}() of raw device addresses without a uint64 "
                    f"dtype: {sinks.TORCH_SETITEM_I64 if not fill else sinks.TORCH_FULL_I64} "
                    "for addresses >= 2**63 when int64")
        else:
            _report(ctx, Rule.DP002, f"{short}() of raw device addresses without a uint64 "
                    f"dtype: {sinks.NUMPY_I64} (int64) or {sinks.NUMPY_FLOAT} (no dtype)")
        return ctx.default_return_type

    return hook


class DevptrPlugin(Plugin):
    """Marks ``data_ptr()`` results and reports where they reach integer tables."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self._family: dict[str, str | None] = {}

    # -------------------------------------------------------------- lookups

    def _class_family(self, cls: str) -> str | None:
        """``"tensor"``, ``"storage"``, ``"ndarray"`` or None for a class fullname (by MRO)."""
        if cls in self._family:
            return self._family[cls]
        family: str | None = None
        sym = self.lookup_fully_qualified(cls)
        if sym is not None and isinstance(sym.node, TypeInfo):
            mro = {b.fullname for b in sym.node.mro}
            if mro & TENSOR_CLASSES:
                family = "tensor"
            elif mro & STORAGE_CLASSES:
                family = "storage"
            elif mro & NDARRAY_CLASSES:
                family = "ndarray"
        self._family[cls] = family
        return family

    def _array_family(self, typ: Type) -> str | None:
        t = get_proper_type(typ)
        if isinstance(t, Instance):
            family = self._class_family(t.type.fullname)
            return family if family in ("tensor", "ndarray") else None
        return None

    # ---------------------------------------------------------------- hooks

    def _data_ptr_hook(self, ctx: MethodContext) -> Type:
        sym = self.lookup_fully_qualified(RAW_ADDRESS)
        if sym is None or not isinstance(sym.node, TypeInfo):
            return ctx.default_return_type  # devptr not visible to mypy: change nothing
        return Instance(sym.node, [])

    def _address_arith_signature(self, ctx: MethodSigContext) -> FunctionLike:
        """``RawAddress + array`` type-checks as the array operation it is (then reported)."""
        sig = ctx.default_signature
        if not ctx.args or not ctx.args[0] or len(sig.arg_types) != 1:
            return sig
        other = ctx.api.get_expression_type(ctx.args[0][0])
        if self._array_family(other) is None:
            return sig
        return sig.copy_modified(arg_types=[other], ret_type=other)

    def _address_arith(self, ctx: MethodContext) -> Type:
        values = _flat_types(ctx)
        if not values:
            return ctx.default_return_type
        other = get_proper_type(values[0])
        family = self._array_family(other)
        if family is not None:
            if not (family == "ndarray" and _is_uint64_array(other)):
                _arith_fail(ctx, torch_side=family == "tensor")
            return other
        if _is_raw(other):
            return ctx.default_return_type  # p - q: a distance, not an address
        if isinstance(other, Instance) and other.type.fullname == "builtins.int":
            return ctx.type
        return ctx.default_return_type

    def _array_arith(self, torch_side: bool) -> Callable[[MethodContext], Type]:
        def hook(ctx: MethodContext) -> Type:
            values = _flat_types(ctx)
            if values and _is_raw(values[0]) and (torch_side or not _is_uint64_array(ctx.type)):
                _arith_fail(ctx, torch_side)
            return ctx.default_return_type

        return hook

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        """Make the RawAddress marker type known to every module."""
        return [(10, _RAW_MODULE, -1)]

    def get_method_signature_hook(
        self, fullname: str
    ) -> Callable[[MethodSigContext], FunctionLike] | None:
        """Let ``RawAddress op array`` reach the method hook instead of failing."""
        cls, _, method = fullname.rpartition(".")
        if cls == RAW_ADDRESS and method in ADDRESS_ARITH_METHODS:
            return self._address_arith_signature
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        """Hooks for data_ptr, address arithmetic, setitem/fill and array arithmetic."""
        cls, _, method = fullname.rpartition(".")
        if cls == RAW_ADDRESS:
            return self._address_arith if method in ADDRESS_ARITH_METHODS else None
        if method not in _HOOKED_METHODS:
            return None
        family = self._class_family(cls)
        if family is None:
            return None
        if method == "data_ptr":
            return self._data_ptr_hook if family in ("tensor", "storage") else None
        if family == "storage":
            return None
        if method in STORE_METHODS:
            return _store_hook(torch_side=family == "tensor")
        if method in ARRAY_ARITH_METHODS:
            return self._array_arith(torch_side=family == "tensor")
        return None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        """Hooks for the table constructors."""
        if fullname in TABLE_FUNCTIONS:
            return _table_hook(fullname)
        return None


_HOOKED_METHODS: Final = frozenset({"data_ptr"}) | STORE_METHODS | ARRAY_ARITH_METHODS


def plugin(version: str) -> type[Plugin]:
    """mypy entry point."""
    return DevptrPlugin
