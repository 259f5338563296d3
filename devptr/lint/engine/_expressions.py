"""Expression evaluation: the abstract value of an expression, reporting what it contains.

:class:`ExpressionEvaluator` is the half of the analyzer that looks at expressions (calls,
attributes, arithmetic, comprehensions, table constructors); the statement half lives in
:mod:`devptr.lint.engine._analyzer` and provides ``_emit``, ``_sink``, ``_assign``,
``_bind_iter`` and ``_call_summary``.
"""

from __future__ import annotations

import ast
from typing import Final

from devptr.lint import catalogue as cat
from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._finding import Fix, Span
from devptr.lint.engine._names import Names
from devptr.lint.engine._project import ProjectIndex
from devptr.lint.engine._scope import (
    ADDR_SEQ_BY_NAME,
    CHECKED_I64,
    CHECKED_U64,
    Scope,
    by_name,
    on_host,
    seq_of,
)
from devptr.lint.engine._sinks import Verdict, arith_verdict, carries_address, ctypes_verdict
from devptr.lint.engine._values import (
    ADDR,
    ADDR_SEQ,
    DEVPTR,
    MAPPING,
    PLAIN_LIST,
    DType,
    Kind,
    Lib,
    Summary,
    Val,
    is_addr,
    is_arrayish,
    is_param,
)
from devptr.lint.rules import Rule

_ADDR_OPS: Final = (ast.Add, ast.Sub, ast.BitAnd, ast.BitOr)
_NO_VALUE: Final[Val | None] = None
HOST_ADDR: Final = Val(Kind.ADDR, host=True)
DEVICE_ADDR_PAIR: Final = Val(Kind.TUPLE, items=(None, ADDR))


def _called(fn: Val) -> Val:
    """The value a call of an address function (``ADDR_FUNC``/``ADDR_SEQ_FUNC``) gives."""
    return Val(Kind.ADDR if fn.kind is Kind.ADDR_FUNC else Kind.ADDR_SEQ, by_name=fn.by_name,
               host=fn.host)


_CAST_METHODS: Final = frozenset({"to", "astype", "type"})
"""Methods converting an array or tensor to the dtype they are given."""

_FILL_VALUE_ARG: Final = {"fill_": 0, "fill": 0, "index_fill_": 2}
"""Methods of :data:`~devptr.lint.catalogue.STORE_METHODS` that fill an array with one
value, and the position of that value (``t.index_fill_(dim, index, value)``)."""


class ExpressionEvaluator:
    """Evaluate expressions to :class:`~devptr.lint.engine._values.Val` and report inside them."""

    names: Names
    functions: dict[str, Summary]
    project: ProjectIndex | None
    _imported_modules: frozenset[str] | None
    _evaluated: tuple[ast.Call, list[Val | None], list[Val | None]] | None = None
    """The call whose arguments :meth:`_args` evaluated last, with their values."""
    class_attrs: dict[str, dict[str, Val]]
    _quiet_nodes: set[int]
    _narrowed: set[int]
    """Table constructor calls converted at once to a dtype narrower than 64 bits."""
    _properties: dict[str, set[str]]
    """Property name -> the ``Class.name`` keys of the module's properties so named."""
    _abstract: set[str]
    attr_reads: set[str]

    def property_value(self, attr: str) -> Val | None:
        """What reading attribute *attr* gives when the properties of that name in the
        module return device or host addresses (``seq.kv_blocks_ptr`` of a property
        ``return self._ids.data_ptr()``): addresses kept behind a property of another
        class, or of a class of a module this one imports (:meth:`imported_property`).

        Abstract properties (a body that only raises) say nothing; every other property
        so named must return addresses, at least one of them known ones (not only named
        so, like a placeholder's ``return self._ptr``). None otherwise."""
        keys = self._properties.get(attr)
        if not keys:
            return self.imported_property(attr)
        concrete = [k for k in keys if k not in self._abstract]
        found = [self.functions.get(k) for k in concrete]
        vals = [f.returns for f in found if f is not None and f.returns is not None]
        if not concrete or len(vals) != len(concrete) or not all(
            v.kind in (Kind.ADDR, Kind.ADDR_SEQ) for v in vals
        ):
            return None
        real = [v for v in vals if not v.by_name]
        if not real:
            return None
        return real[0] if len(real) == 1 else seq_of(real) if real[0].kind is Kind.ADDR_SEQ else (
            Val(Kind.ADDR, host=all(v.host for v in real)))

    def imported_property(self, attr: str) -> Val | None:
        """What reading *attr* gives when it is a property returning addresses of a class
        of a module this module imports from (``from .sequence_descriptor import
        DSSequenceDescriptor``), as the project index recorded it; None without one."""
        if self.project is None or not self.project.properties:
            return None
        if self._imported_modules is None:
            known = self.project.modules
            self._imported_modules = frozenset(
                m for target in self.names.aliases.values()
                if (m := target if target in known else self.project.module_of(target))
            )
        vals = [v for m in sorted(self._imported_modules)
                if (v := self.project.properties.get(m, {}).get(attr)) is not None]
        if not vals:
            return None
        return vals[0] if len(vals) == 1 else seq_of(vals) if vals[0].kind is Kind.ADDR_SEQ else (
            Val(Kind.ADDR, host=all(v.host for v in vals)))

    def exported_properties(self) -> dict[str, Val]:
        """The module's properties that give addresses (:meth:`property_value`), by name:
        what modules importing this one learn (recorded in the project index)."""
        return {attr: val for attr in sorted(self._properties)
                if (val := self.property_value(attr)) is not None}

    def _emit(self, node: ast.AST, verdict: Verdict, fix: Fix | None = None) -> None:
        raise NotImplementedError

    def _sink(
        self, node: ast.AST, kind: str, scope: Scope, value: Val | None, *,
        cont: Val | None = None, dtype: DType | None = None, ctor: str = "",
        target: ast.Subscript | None = None, fix: Fix | None = None,
    ) -> None:
        raise NotImplementedError

    def _assign(
        self, target: ast.expr, val: Val | None, value: ast.expr | None, scope: Scope
    ) -> None:
        raise NotImplementedError

    def _bind_iter(self, target: ast.expr, it: ast.expr, scope: Scope) -> None:
        raise NotImplementedError

    def _call_summary(
        self, node: ast.Call, summary: Summary, vals: list[Val | None], scope: Scope,
        name: str, *, method: bool = False,
    ) -> Val | None:
        raise NotImplementedError

    def _external_summary(self, name: str) -> Summary | None:
        raise NotImplementedError

    def _note_unresolved(self, name: str) -> None:
        raise NotImplementedError

    def _twos_fix(self, operand: ast.expr, val: Val | None, helper: ast.expr | None = None,
                  *, encoder: bool = False) -> Fix:
        raise NotImplementedError

    def _dtype_branch_fix(self, node: ast.AST, test: ast.expr, uint64: ast.expr | None,
                          uint64_first: bool, target: ast.expr | None = None) -> Fix | None:
        raise NotImplementedError

    def _addresses_fix(self, node: ast.BinOp, addr_left: bool, scope: Scope) -> Fix | None:
        raise NotImplementedError

    def _table_fix(self, node: ast.Call, ctor: str, data_node: ast.expr | None,
                   dtype_node: ast.expr | None, data: Val | None) -> Fix | None:
        raise NotImplementedError

    # ----------------------------------------------------------------- dispatch

    def eval(self, node: ast.expr | None, scope: Scope) -> Val | None:
        """Abstract value of *node*; reports violations found inside it."""
        # most frequent first: the evaluator's hottest lines
        if isinstance(node, ast.Name):
            env = scope.env
            val = env.get(node.id)
            if val is None and node.id not in env:
                val = by_name(node.id)
            return on_host(val) if scope.host else val
        if node is None or isinstance(node, ast.Constant):
            return None
        if isinstance(node, ast.Call):
            val = self._call(node, scope)
            return on_host(val) if scope.host else val
        if isinstance(node, ast.Attribute):
            val = self._attribute(node, scope)
            return on_host(val) if scope.host else val
        if isinstance(node, ast.BinOp):
            return self._binop(node, scope)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope)
        if isinstance(node, ast.Compare):
            self.eval(node.left, scope)
            for cmp in node.comparators:
                self.eval(cmp, scope)
            return None
        if isinstance(node, ast.UnaryOp):
            self.eval(node.operand, scope)
            return None
        if isinstance(node, ast.IfExp):
            return self._ifexp(node, scope)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            inner = scope.child()
            for gen in node.generators:
                self._bind_iter(gen.target, gen.iter, inner)
                for cond in gen.ifs:
                    self.eval(cond, inner)
            return seq_of([self.eval(node.elt, inner)])
        if isinstance(node, ast.DictComp):
            inner = scope.child()
            for gen in node.generators:
                self._bind_iter(gen.target, gen.iter, inner)
            self.eval(node.key, inner)
            self.eval(node.value, inner)
            return MAPPING
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = tuple(self.eval(e, scope) for e in node.elts)
            if any(carries_address(v) or is_param(v) for v in items):
                if isinstance(node, ast.Tuple) and (
                    not any(is_param(v) for v in items)
                    or any(carries_address(v) and not is_param(v) for v in items)
                ):  # (t.data_ptr(), n): a row whose positions matter (``for p, n in rows``)
                    return Val(Kind.TUPLE, items=items)
                return seq_of(items)
            if isinstance(node, ast.Tuple):
                return Val(Kind.TUPLE, items=items)
            return PLAIN_LIST if isinstance(node, ast.List) else None
        if isinstance(node, ast.Dict):
            for k in node.keys:
                self.eval(k, scope)
            for v in node.values:
                self.eval(v, scope)
            return MAPPING
        if isinstance(node, ast.Lambda):
            inner = scope.child()
            for arg in node.args.args:
                inner.env.pop(arg.arg, None)
            body = self.eval(node.body, inner)
            if body is not None and body.kind in (Kind.ADDR, Kind.ADDR_SEQ):
                return Val(Kind.ADDR_FUNC if body.kind is Kind.ADDR else Kind.ADDR_SEQ_FUNC,
                           by_name=body.by_name, host=body.host)
            return None
        if isinstance(node, ast.Starred | ast.Await):
            return self.eval(node.value, scope)
        if isinstance(node, ast.NamedExpr):
            val = self.eval(node.value, scope)
            self._assign(node.target, val, node.value, scope)
            return val
        if isinstance(node, ast.BoolOp):
            options = [self.eval(v, scope) for v in node.values]
            for item in options:
                if item is not None and (
                    carries_address(item) or is_param(item) or is_arrayish(item)
                ):
                    return item
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, scope)
            elif isinstance(child, ast.comprehension):
                self.eval(child.iter, scope)
        return None

    @staticmethod
    def _is_self(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in ("self", "cls")

    # ---------------------------------------------------------------- attributes

    def _attribute(self, node: ast.Attribute, scope: Scope) -> Val | None:
        if node.attr in syn.DTYPE_ATTRS:
            dt = syn.literal_dtype(node, self.names)
            if dt is not None and dt is not DType.OTHER:
                return Val(Kind.DTYPE, dtype=dt)
        if self._is_self(node.value) and scope.cls is not None:
            known = self.class_attrs.get(scope.cls, {}).get(node.attr)
            return known if known is not None else by_name(node.attr)
        if node.attr in cat.PEER_POINTER_ATTRS:
            self.eval(node.value, scope)
            return ADDR_SEQ
        if (
            node.attr == cat.CUPY_POINTER_ATTR
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "data"
        ):
            self.eval(node.value, scope)
            return ADDR  # cupy_array.data.ptr
        recv = self.eval(node.value, scope)
        held = self.property_value(node.attr) if recv is None or recv.kind is Kind.PARAM else None
        if held is not None:
            return held  # seq.kv_blocks_ptr: a property of the module returning addresses
        if (recv is None or recv.kind is Kind.PARAM) and node.attr not in self._properties and (
            by_name(node.attr) is not None
        ):
            self.attr_reads.add(node.attr)  # a property of another module may give it
        if recv is None:
            if node.attr == "addr":
                return CHECKED_U64  # DevicePtr.addr: devptr's unsigned value
            if node.attr == "value" and isinstance(node.value, ast.Call):
                return None
            return by_name(node.attr)
        if recv.kind is Kind.PARAM:
            return recv if node.attr in ("value", "T") else None
        if recv.kind is Kind.DEVPTR and node.attr in cat.DEVPTR_ENCODED_ATTRS:
            return CHECKED_U64 if node.attr == "addr" else CHECKED_I64
        if node.attr == "value" and recv.kind is Kind.ADDR:
            return recv  # ctypes.c_void_p(p).value, c_int64(p).value (encoded by the call)
        if node.attr == "value" and recv is DEVICE_ADDR_PAIR:
            # lib.cudaMalloc(n).value, lib.cudaIpcOpenMemHandle(h).value: a ctypes wrapper's
            # c_void_p (cuda-python's (err, ptr) tuples have no .value)
            return ADDR
        if is_arrayish(recv):
            if node.attr == "np":
                return Val(recv.kind, lib=Lib.NUMPY, dtype=recv.dtype, host=recv.host)
            if node.attr in ("T", "mT", "data", "real"):
                return recv
        return None

    def _subscript(self, node: ast.Subscript, scope: Scope) -> Val | None:
        if (
            isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Attribute)
            and node.value.value.attr == cat.CUDA_ARRAY_INTERFACE
        ):
            self.eval(node.value.value.value, scope)
            return ADDR  # x.__cuda_array_interface__["data"][0]
        base = self.eval(node.value, scope)
        self.eval(node.slice, scope)
        if base is None:
            return None
        if base.kind is Kind.PARAM:
            return base
        if is_arrayish(base):
            return base
        if base.kind is Kind.ADDR_SEQ:
            if isinstance(node.slice, ast.Slice):
                return base
            return Val(Kind.ADDR, by_name=base.by_name, checked=base.checked, host=base.host)
        if base.kind is Kind.TUPLE:
            idx = syn.int_value(node.slice)
            if idx is not None and -len(base.items) <= idx < len(base.items):
                return base.items[idx]
            if isinstance(node.slice, ast.Slice):
                return base
        return None

    # ----------------------------------------------------------------- operators

    def _ifexp(self, node: ast.IfExp, scope: Scope) -> Val | None:
        self.eval(node.test, scope)
        body = self.eval(node.body, scope)
        orelse = self.eval(node.orelse, scope)
        operand = syn.twos_ifexp_operand(node)
        if operand is not None:
            for branch in (node.body, node.orelse):
                self._quiet_nodes.add(id(branch))
            return self._twos(node, operand, scope, "x - 2**64 if x >= 2**63 else x")
        dts = {syn.literal_dtype(node.body, self.names), syn.literal_dtype(node.orelse, self.names)}
        if dts == {DType.U64, DType.I64} and syn.is_platform_test(node.test):
            uint64_first = syn.literal_dtype(node.body, self.names) is DType.U64
            self._emit(node, (Rule.DP005, "per-platform pointer dtype (uint64 vs int64 branch)"),
                       self._dtype_branch_fix(node, node.test, node.body if uint64_first
                                              else node.orelse, uint64_first))
            return Val(Kind.DTYPE, dtype=DType.BRANCH)
        for v in (body, orelse):
            if v is not None and v.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.DEVPTR, Kind.PARAM):
                return v
        return body if body is not None else orelse

    def _span(self, node: ast.AST) -> Span:
        raise NotImplementedError

    def _twos(self, node: ast.expr, operand: ast.expr, scope: Scope, spelled: str) -> Val | None:
        """A two's-complement spelling over *operand*: reported only when it is an address."""
        val = self.eval(operand, scope)
        if val is not None and val.kind is Kind.PARAM:
            if syn.names_an_address(operand):
                self._emit(node, (Rule.DP004, "two's complement of a device address by hand "
                                              f"({spelled})"), self._twos_fix(operand, None))
            return Val(Kind.PARAM, params=val.params, checked=DType.I64)
        if is_addr(val) or (val is None and syn.names_an_address(operand)):
            self._emit(node, (Rule.DP004, f"two's complement of a device address by hand ({spelled})"),
                       self._twos_fix(operand, val))
            return CHECKED_I64
        return None  # a hash or a key, not an address

    def _binop(self, node: ast.BinOp, scope: Scope) -> Val | None:
        operand = syn.twos_binop_operand(node)
        if operand is not None:
            return self._twos(node, operand, scope, "(x + 2**63) % 2**64 - 2**63")
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        if (
            isinstance(node.op, ast.Add | ast.Sub)
            and syn.int_value(node.right) == syn.TWO_64
            and id(node) not in self._quiet_nodes
            and (is_addr(left) or syn.names_an_address(node.left))
        ):
            self._emit(node, (Rule.DP004, "two's complement of a device address by hand (+/- 2**64)"))
            # no fix: `x - 2**64` alone is half a spelling (its guard is elsewhere)
            return CHECKED_I64
        if isinstance(node.op, ast.Mult) and isinstance(node.left, ast.List):
            return left
        if (is_param(left) or is_param(right)) and not (is_arrayish(left) or is_arrayish(right)):
            if isinstance(node.op, ast.Add | ast.Sub | ast.BitOr):
                p = left if is_param(left) else right
                return Val(Kind.PARAM, params=p.params) if p is not None else None
            return None
        for a, b in ((left, right), (right, left)):
            if is_addr(a) and is_arrayish(b):
                assert a is not None and b is not None
                verdict = arith_verdict(a, b)
                fix = None
                if verdict is not None and verdict[0] is Rule.DP003 and isinstance(
                    node.op, ast.Add
                ) and not a.np_scalar:  # DevicePtr() takes a Python int, not np.uint64
                    fix = self._addresses_fix(node, a is left, scope)
                self._emit(node, verdict, fix)
                return Val(Kind.ADDR_ARRAY, lib=b.lib, dtype=b.dtype, host=a.host)
        if is_addr(left) or is_addr(right):
            if isinstance(node.op, ast.Sub) and is_addr(left) and is_addr(right):
                return None  # a distance, not an address
            if not isinstance(node.op, _ADDR_OPS):
                return None  # p % 16, p // page: alignment and sizes
            if isinstance(node.op, ast.Sub) and not is_addr(left):
                return None  # limit - p: room left, not an address
            addr = left if is_addr(left) else right
            other = right if addr is left else left
            if addr is not None and addr.np_scalar and self._np_signed_scalar(
                node.right if addr is left else node.left
            ):
                self._emit(node, arith_verdict(addr, Val(Kind.ARRAY, lib=Lib.NUMPY)))
            if other is not None and other.kind is Kind.ADDR_SEQ:
                return None
            if addr is not None and addr.checked is not None:
                return Val(Kind.ADDR, by_name=addr.by_name, host=addr.host)
            return addr
        if isinstance(node.op, ast.Add) and (
            (left is not None and left.kind is Kind.ADDR_SEQ)
            or (right is not None and right.kind is Kind.ADDR_SEQ)
        ):
            return seq_of([left, right])  # [a] + [b]: list concatenation
        for a, b in ((left, right), (right, left)):
            if a is not None and a.kind is Kind.ADDR_ARRAY:
                if b is not None and b.kind is Kind.ARRAY and b.dtype is DType.I64 and (
                    a.dtype is DType.U64 and b.lib is Lib.NUMPY
                ):
                    self._emit(node, (
                        Rule.DP003,
                        "uint64 address array combined with an int64 array: numpy promotes "
                        "to float64 and loses the low address bits",
                    ))
                return a
        if is_arrayish(left):
            return left
        if is_arrayish(right):
            return right
        return None

    def _np_signed_scalar(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Call):
            name = self.names.qual(node.func)
            return name is not None and name.rpartition(".")[2] in ("int64", "int32", "intp")
        return False

    # --------------------------------------------------------------------- calls

    def _args(self, node: ast.Call, scope: Scope) -> list[Val | None]:
        """Values of the positional arguments (keywords are evaluated too)."""
        return self._args_kw(node, scope)[0]

    def _args_kw(
        self, node: ast.Call, scope: Scope
    ) -> tuple[list[Val | None], list[Val | None]]:
        """Values of the positional and of the keyword arguments."""
        return [self.eval(a, scope) for a in node.args], [
            self.eval(kw.value, scope) for kw in node.keywords
        ]

    def _evaluated_args(
        self, node: ast.Call, scope: Scope
    ) -> list[Val | None]:
        """:meth:`_args`, remembered for :meth:`_call` (which then evaluates nothing twice
        when :meth:`_method_call` falls through to it)."""
        vals, kws = self._args_kw(node, scope)
        self._evaluated = (node, vals, kws)
        return vals

    def _dtype_of(self, node: ast.expr | None, scope: Scope) -> DType | None:
        if node is None:
            return None
        dt = syn.literal_dtype(node, self.names)
        if dt is not None:
            return dt
        val = self.eval(node, scope)
        if val is not None and val.kind is Kind.DTYPE:
            return val.dtype
        if isinstance(node, ast.IfExp):
            dts = {syn.literal_dtype(node.body, self.names),
                   syn.literal_dtype(node.orelse, self.names)}
            if dts == {DType.U64, DType.I64}:
                return DType.BRANCH
        return None

    def _call(self, node: ast.Call, scope: Scope) -> Val | None:
        func = node.func
        done: tuple[ast.Call, list[Val | None], list[Val | None]] | None = None
        if isinstance(func, ast.Attribute):
            self._evaluated = None
            method = self._method_call(node, func, scope)
            if method is not None:
                return method
            done, self._evaluated = self._evaluated, None
        name = self.names.qual(func)
        if done is not None and done[0] is node:
            # _method_call evaluated the receiver and the arguments of this very call
            _, vals, kws = done
            if name is None:
                return self._ctypes_array(node, func, vals, scope)
        else:
            vals, kws = self._args_kw(node, scope)
            if name is None:
                self.eval(func, scope)
                return self._ctypes_array(node, func, vals, scope)
        base = name.rpartition(".")[2]
        if name in cat.DEVPTR_CONSTRUCTORS or name == "DevicePtr" or name.endswith(
            ("DevicePtr.of", "DevicePtr.from_signed")
        ):
            return DEVPTR
        if name in cat.DEVPTR_SINKS:
            return None
        if name in cat.TABLE_SINKS:
            return self._table(node, name, vals, scope)
        if name in cat.ALLOCATORS or name == "torch.from_numpy":
            return self._allocation(node, name, vals, scope)
        if name == "numpy.copyto" and len(vals) >= 2 and is_addr(vals[1]):
            # np.copyto(dst, src): dst receives the addresses
            self._sink(node, "store", scope, vals[1], cont=self.eval(node.args[0], scope))
            return None
        if name in cat.OUT_UFUNCS:
            out = syn.kwarg(node, "out")
            if out is not None and any(is_addr(v) or (
                v is not None and v.kind is Kind.ADDR_ARRAY) for v in vals
            ):
                cont = self.eval(out, scope)
                addr = next(v for v in vals if v is not None and v.kind in (
                    Kind.ADDR, Kind.ADDR_ARRAY))
                self._sink(node, "store", scope, addr, cont=cont)
            return None
        if name in cat.MAPPING_CONSTRUCTORS or base in ("defaultdict", "OrderedDict"):
            return MAPPING
        if name in cat.ADDRESS_FUNCTIONS:
            return ADDR
        if name in cat.ADDRESS_PAIR_FUNCTIONS:
            return DEVICE_ADDR_PAIR
        if name in cat.HOST_ADDRESS_FUNCTIONS:
            return HOST_ADDR
        if base in cat.ADDRESS_FUNCTION_SUFFIXES:
            return DEVICE_ADDR_PAIR if base.startswith("cu") else ADDR_SEQ if "shared" in base else ADDR
        if name in cat.VOID_POINTER_TYPES and vals and is_addr(vals[0]):
            return vals[0]
        if name in cat.SIGNED_ENCODERS and vals and is_addr(vals[0]):
            self._emit(node, (Rule.DP004, "two's complement of a device address through "
                                          f"{name}"), self._twos_fix(node.args[0], vals[0], encoder=True))
            return CHECKED_I64  # ctypes.c_int64(p).value: the int64 encoding
        if name == "ctypes.cast" and len(node.args) == 2:
            target = node.args[1]
            if isinstance(target, ast.Call) and target.args:
                dt = syn.literal_dtype(target.args[0], self.names)
                if dt in (DType.I64, DType.U64):
                    return Val(Kind.ARRAY, lib=Lib.CTYPES, dtype=dt)
        if base == "int" and vals and (is_addr(vals[0]) or is_param(vals[0])):
            return vals[0]
        if name in ("numpy.uint64", "numpy.ulonglong") and vals and is_addr(vals[0]):
            return Val(Kind.ADDR, np_scalar=True, host=vals[0].host if vals[0] else False)
        if base in ("list", "tuple", "sorted", "reversed") and vals and vals[0] is not None:
            if vals[0].kind in (Kind.ADDR_SEQ, Kind.PARAM):
                return vals[0]
            if vals[0].kind is Kind.ADDR_ARRAY:
                return ADDR_SEQ
        if base == "map" and node.args:
            fn = node.args[0]
            fval = vals[0]
            if (fval is not None and fval.kind is Kind.ADDR_FUNC) or (
                isinstance(fn, ast.Attribute) and fn.attr in cat.ADDRESS_METHODS
            ):
                return ADDR_SEQ
        if name == "struct.unpack" and self._struct_twos(node):
            self._emit(node, (Rule.DP004, "two's complement of a device address through struct q/Q"))
            return Val(Kind.ADDR_SEQ, checked=DType.I64)
        local = scope.env.get(name) if isinstance(func, ast.Name) else None
        if local is not None and local.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC):
            return _called(local)
        summary = self.functions.get(name) if isinstance(func, ast.Name) else None
        if summary is None:
            summary = self._external_summary(name)
        if summary is not None:
            return self._call_summary(node, summary, vals, scope, name)
        if any(carries_address(v) or is_param(v) for v in vals) or any(
            carries_address(v) for v in kws
        ):
            self._note_unresolved(name)
        dt = self._dtype_of(syn.kwarg(node, "dtype"), scope)
        if vals and vals[0] is not None and vals[0].kind is Kind.ADDR_SEQ and dt is not None:
            # a project helper building a table from a list (async_tensor_h2d(ptrs, dtype=..))
            self._sink(node, "table", scope, vals[0], dtype=dt, ctor="torch.tensor")
            return Val(Kind.ADDR_ARRAY, dtype=dt)
        if dt is not None and dt is not DType.OTHER:
            return Val(Kind.ARRAY, dtype=dt)
        return by_name(base)  # get_group_data_ptrs(...): a helper named for addresses

    def _ctypes_array(
        self, node: ast.Call, func: ast.expr, vals: list[Val | None], scope: Scope
    ) -> Val | None:
        """``(ctypes.c_uint64 * n)(*ptrs)``: a ctypes array (its items keep the bits)."""
        if isinstance(func, ast.BinOp) and isinstance(func.op, ast.Mult):
            dt = syn.literal_dtype(func.left, self.names)
            if dt in (DType.I64, DType.U64):
                data = seq_of(vals)
                if data is not None and data.kind is Kind.PARAM:
                    self._sink(node, "table", scope, data, dtype=dt, ctor="ctypes")
                elif carries_address(data):
                    self._emit(node, ctypes_verdict(data))
                    return Val(Kind.ADDR_ARRAY, lib=Lib.CTYPES, dtype=dt)
                return Val(Kind.ARRAY, lib=Lib.CTYPES, dtype=dt)
        return None

    def _allocation(
        self, node: ast.Call, name: str, vals: list[Val | None], scope: Scope
    ) -> Val:
        lib = Lib.TORCH if name.startswith("torch") else Lib.NUMPY
        if name == "torch.from_numpy" and vals and is_arrayish(vals[0]):
            src = vals[0]
            assert src is not None
            return Val(src.kind, lib=Lib.TORCH, dtype=src.dtype)
        positional = node.args[1] if lib is Lib.NUMPY and len(node.args) > 1 else None
        if name.endswith("full_like"):
            positional = None
        dtype_node = syn.kwarg(node, "dtype") or positional
        dt = self._dtype_of(dtype_node, scope)
        if name.endswith("_like") and dt is None and vals and is_arrayish(vals[0]):
            src = vals[0]
            assert src is not None
            dt = src.dtype
        if dt is None and dtype_node is None:
            # torch defaults to float32, numpy to float64 (arange: int64)
            dt = DType.I64 if name.endswith("arange") else DType.OTHER
        host = self._host_tensor(node)
        return Val(Kind.ARRAY, lib=lib, dtype=dt, host=host)

    def _host_tensor(self, node: ast.Call) -> bool:
        """Whether an allocation is in host memory (``pin_memory=True``, ``device="cpu"``)."""
        pin = syn.kwarg(node, "pin_memory")
        if isinstance(pin, ast.Constant) and pin.value is True:
            return True
        return syn.is_host_device(syn.kwarg(node, "device"), self.names)

    def _struct_twos(self, node: ast.Call) -> bool:
        if len(node.args) != 2 or not isinstance(node.args[1], ast.Call):
            return False
        inner = node.args[1]
        if self.names.qual(inner.func) != "struct.pack" or not inner.args:
            return False
        fmts = [node.args[0], inner.args[0]]
        texts = [f.value for f in fmts if isinstance(f, ast.Constant) and isinstance(f.value, str)]
        return len(texts) == 2 and {texts[0][-1:], texts[1][-1:]} == {"q", "Q"}

    def _table(
        self, node: ast.Call, name: str, vals: list[Val | None], scope: Scope
    ) -> Val | None:
        lib = Lib.TORCH if name.startswith("torch") else (
            Lib.PYARRAY if name == cat.PY_ARRAY else Lib.NUMPY
        )
        if name in cat.BUFFER_CONSTRUCTORS:
            data = vals[0] if vals else None
            dt = self._dtype_of(syn.kwarg(node, "dtype"), scope)
            if data is not None and data.kind is Kind.ADDR_ARRAY:
                return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt or data.dtype)
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        data_idx = 1 if name in cat.FILL_CONSTRUCTORS or name == cat.PY_ARRAY else 0
        data_node = node.args[data_idx] if len(node.args) > data_idx else syn.kwarg(
            node, {0: "data" if lib is Lib.TORCH else "object", 1: "fill_value"}[data_idx]
            if name != cat.PY_ARRAY else "initializer"
        )
        if name in cat.STACKING_CONSTRUCTORS and data_node is None:
            data_node = syn.kwarg(node, "arrays") or syn.kwarg(node, "tup") or syn.kwarg(node, "tensors")
        data = vals[data_idx] if len(vals) > data_idx else self.eval(data_node, scope)
        dtype_node = syn.kwarg(node, "dtype")
        if name == cat.PY_ARRAY:
            dtype_node = node.args[0] if node.args else syn.kwarg(node, "typecode")
        elif (
            dtype_node is None and lib is Lib.NUMPY and name in cat.TABLE_CONSTRUCTORS
            and len(node.args) > data_idx + 1
        ):
            dtype_node = node.args[data_idx + 1]
        dt = self._py_array_dtype(dtype_node) if name == cat.PY_ARRAY else (
            DType.I64 if name == "torch.LongTensor" else self._dtype_of(dtype_node, scope)
        )
        dtype_unknown = dtype_node is not None and dt is None
        if name in cat.STACKING_CONSTRUCTORS and isinstance(data_node, ast.List | ast.Tuple) and any(
            is_arrayish(self.eval(e, scope)) for e in data_node.elts
        ):
            # arrays stacked: address arrays only if the list holds addresses (or a
            # parameter); a list literal of plain tensors evaluates to PLAIN_LIST / TUPLE
            holds = carries_address(data) or is_param(data)
            return Val(Kind.ADDR_ARRAY if holds else Kind.ARRAY, lib=lib, dtype=dt)
        if name in cat.STACKING_CONSTRUCTORS and data is not None and data.kind is Kind.ADDR_SEQ and (
            data.lib is not None
        ):
            return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt or data.dtype, host=data.host)
        if name in cat.STACKING_CONSTRUCTORS and data is not None and data.by_name and (
            carries_address(data)
        ):
            # np.concatenate([src_ptrs, dst_ptrs]): values only *named* for addresses, most
            # often int64 arrays, which join into int64: no float64 loss to report
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if name in ("torch.stack", "torch.cat", "torch.concat"):
            if data is not None and data.kind is Kind.ADDR_ARRAY:
                return data
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if data is not None and data.kind is Kind.ADDR_ARRAY:
            return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt or data.dtype)
        if (data is None or data.kind is Kind.PLAIN_LIST) and data_node is not None and not (
            isinstance(data_node, ast.Name) and data_node.id in scope.env
            and scope.env[data_node.id] is None
        ):  # (a name bound to a number or to a helper's non-address: not guessed)
            data_name = None if isinstance(data_node, ast.Call) else syn.last_name(data_node)
            if data_name is not None and syn.ADDRESS_LIST_NAME_RE.search(data_name):
                data = ADDR_SEQ_BY_NAME  # a list named for addresses (peer IPC addresses)
        if is_arrayish(data) and dt is None:
            assert data is not None
            dt = data.dtype
        if data is not None and data.kind is Kind.PARAM and not dtype_unknown:
            self._sink(node, "table", scope, data, dtype=dt, ctor=name)
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if data is not None and data.by_name and id(node) in self._narrowed:
            # torch.tensor(kvs_addr).to(torch.uint8): values the code narrows at once to
            # fewer than 64 bits (bytes) are not addresses, whatever their name says
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if (data is not None and data.kind in (Kind.ADDR_SEQ, Kind.TUPLE)) or is_addr(data):
            if not dtype_unknown and carries_address(data):
                fix = self._table_fix(node, name, data_node, dtype_node, data)
                self._sink(node, "table", scope, data, dtype=dt, ctor=name, fix=fix)
                return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt)
        return Val(Kind.ARRAY, lib=lib, dtype=dt)

    @staticmethod
    def _py_array_dtype(node: ast.expr | None) -> DType | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in cat.PY_ARRAY_SIGNED_CODES:
                return DType.I64
            if node.value in cat.PY_ARRAY_UNSIGNED_CODES:
                return DType.U64
            return DType.OTHER
        return None

    def _method_call(
        self, node: ast.Call, func: ast.Attribute, scope: Scope
    ) -> Val | None:
        attr = func.attr
        if attr in _CAST_METHODS and isinstance(func.value, ast.Call):
            to = node.args[0] if node.args else syn.kwarg(node, "dtype")
            if to is not None and syn.is_narrow_dtype(to, self.names):
                self._narrowed.add(id(func.value))  # torch.tensor(v).to(torch.uint8)
        if attr in cat.ADDRESS_METHODS:
            recv_val = self.eval(func.value, scope)
            host = recv_val is not None and recv_val.host
            if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Attribute):
                if func.value.func.attr == "pin_memory":
                    host = True
            return HOST_ADDR if host else ADDR
        if self._is_self(func.value) and scope.cls is not None:
            summary = self.functions.get(f"{scope.cls}.{attr}")
            if summary is not None:
                vals = self._evaluated_args(node, scope)
                return self._call_summary(node, summary, vals, scope, attr, method=True)
            attr_val = self.class_attrs.get(scope.cls, {}).get(attr)
            if attr_val is not None and attr_val.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC):
                self._args(node, scope)
                return _called(attr_val)
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id not in scope.env and isinstance(
            func.value, ast.Name | ast.Attribute
        ) and (
            self.names.is_imported(root.id) or root.id in ("np", "torch", "ctypes", "struct")
        ):
            return None  # a module's function (torch.tensor, utils.make_table): _call resolves it
        recv = self.eval(func.value, scope)
        vals = self._evaluated_args(node, scope)
        if attr in ("append", "insert", "extend", "add", "appendleft") and vals:
            arg = vals[-1]
            if attr == "extend":
                gained = arg is not None and arg.kind in (Kind.ADDR_SEQ, Kind.PARAM, Kind.ADDR_ARRAY)
                if arg is not None and arg.kind is Kind.ADDR_ARRAY:
                    arg = Val(Kind.ADDR_SEQ, host=arg.host)
            else:
                gained = carries_address(arg) or is_param(arg)
                if arg is not None and arg.kind is Kind.ADDR_ARRAY and (
                    recv is None or recv.kind is Kind.PLAIN_LIST
                ):
                    # a list of address arrays (for np.vstack): remember they are arrays
                    self._assign(func.value, Val(Kind.ADDR_SEQ, lib=arg.lib or Lib.NUMPY,
                                                 dtype=arg.dtype, host=arg.host), None, scope)
                    return _NO_VALUE
            if gained and (recv is None or recv.kind in (Kind.PLAIN_LIST, Kind.ADDR_SEQ, Kind.PARAM)):
                before = [recv] if recv is not None and recv.kind in (Kind.ADDR_SEQ, Kind.PARAM) else []
                self._assign(func.value, seq_of([*before, arg]), None, scope)
            return _NO_VALUE
        at = _FILL_VALUE_ARG.get(attr)
        if at is not None and len(vals) > at and (is_addr(vals[at]) or is_param(vals[at])):
            if recv is not None and is_arrayish(recv):
                self._sink(node, "fill", scope, vals[at], cont=recv)
            return _NO_VALUE
        if (recv is None or recv.kind is Kind.PARAM) and attr == "astype" and node.args:
            # x.astype(np.int64) on an unknown x or a parameter: only numpy spells astype
            dt = syn.literal_dtype(node.args[0], self.names)
            if dt is not None and dt is not DType.OTHER:
                return Val(Kind.ARRAY, lib=Lib.NUMPY, dtype=dt)
        if recv is None:
            return _NO_VALUE if attr in ("get", "pop", "setdefault") else by_name(attr)
        if recv.kind is Kind.PARAM:
            return recv if attr in ("tolist", "copy", "item", "__int__") else None
        if attr in ("view", "astype", "to", "type") and is_arrayish(recv):
            dt_node = node.args[0] if node.args else syn.kwarg(node, "dtype")
            dt = syn.literal_dtype(dt_node, self.names) if dt_node is not None else None
            if dt is None:
                return recv
            lib = recv.lib
            if attr == "view" and dt_node is not None:
                head = self.names.qual(dt_node) or ""
                lib = Lib.NUMPY if head.startswith("numpy.") else (
                    Lib.TORCH if head.startswith("torch.") else lib
                )
            return Val(recv.kind, lib=lib, dtype=dt, host=recv.host)
        if attr == "numpy" and is_arrayish(recv):
            return Val(recv.kind, lib=Lib.NUMPY, dtype=recv.dtype, host=recv.host)
        if attr == "pin_memory" and is_arrayish(recv):
            return Val(recv.kind, lib=recv.lib, dtype=recv.dtype, host=True)
        if attr in cat.SAME_ARRAY_METHODS and is_arrayish(recv):
            return recv
        if attr == "tolist" and recv.kind is Kind.ADDR_ARRAY:
            return Val(Kind.ADDR_SEQ, host=recv.host)
        if attr == "item" and recv.kind is Kind.ADDR_ARRAY:
            return Val(Kind.ADDR, host=recv.host)
        if attr in ("copy", "__copy__") and recv.kind is Kind.ADDR_SEQ:
            return recv
        if attr == "untyped_storage" and is_arrayish(recv):
            return recv
        return None
