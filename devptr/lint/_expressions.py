"""Expression evaluation: the abstract value of an expression, reporting what it contains.

:class:`ExpressionEvaluator` is the half of the analyzer that looks at expressions (calls,
attributes, arithmetic, comprehensions, table constructors); the statement half lives in
:mod:`devptr.lint._analyzer` and provides ``_emit``, ``_assign`` and ``_bind_iter``.
"""

from __future__ import annotations

import ast
from typing import Final

from devptr.lint import _patterns as pat
from devptr.lint._scope import (
    ADDR_SEQ_BY_NAME,
    CHECKED_I64,
    CHECKED_U64,
    Scope,
    by_name,
    seq_of,
)
from devptr.lint._sinks import Verdict, arith_verdict, carries_address, store_verdict, table_verdict
from devptr.lint._values import (
    ADDR,
    ADDR_SEQ,
    DEVPTR,
    MAPPING,
    PLAIN_LIST,
    DType,
    Kind,
    Lib,
    Val,
    is_addr,
    is_arrayish,
)
from devptr.lint.rules import Rule

_ADDR_OPS: Final = (ast.Add, ast.Sub, ast.BitAnd, ast.BitOr)
_NO_VALUE: Final[Val | None] = None


class ExpressionEvaluator:
    """Evaluate expressions to :class:`~devptr.lint._values.Val` and report inside them."""

    functions: dict[str, Val | None]
    class_attrs: dict[str, dict[str, Val]]
    _quiet_nodes: set[int]

    def _emit(self, node: ast.AST, verdict: Verdict) -> None:
        raise NotImplementedError

    def _assign(
        self, target: ast.expr, val: Val | None, value: ast.expr | None, scope: Scope
    ) -> None:
        raise NotImplementedError

    def _bind_iter(self, target: ast.expr, it: ast.expr, scope: Scope) -> None:
        raise NotImplementedError


    def eval(self, node: ast.expr | None, scope: Scope) -> Val | None:
        """Abstract value of *node*; reports violations found inside it."""
        if node is None:
            return None
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.Name):
            found = scope.env.get(node.id)
            return found if found is not None or node.id in scope.env else by_name(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope)
        if isinstance(node, ast.BinOp):
            return self._binop(node, scope)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope)
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
            if any(carries_address(v) for v in items):
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
            if is_addr(body):
                return Val(Kind.ADDR_FUNC)
            if body is not None and body.kind is Kind.ADDR_SEQ:
                return Val(Kind.ADDR_SEQ_FUNC)
            return None
        if isinstance(node, ast.Starred | ast.Await):
            return self.eval(node.value, scope)
        if isinstance(node, ast.NamedExpr):
            val = self.eval(node.value, scope)
            self._assign(node.target, val, node.value, scope)
            return val
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, scope)
            elif isinstance(child, ast.comprehension):
                self.eval(child.iter, scope)
        return None

    @staticmethod
    def _is_self(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in ("self", "cls")

    def _attribute(self, node: ast.Attribute, scope: Scope) -> Val | None:
        dt = pat.literal_dtype(node)
        if dt is not None and dt is not DType.OTHER:
            return Val(Kind.DTYPE, dtype=dt)
        if self._is_self(node.value) and scope.cls is not None:
            known = self.class_attrs.get(scope.cls, {}).get(node.attr)
            return known if known is not None else by_name(node.attr)
        if node.attr in pat.PEER_PTR_ATTRS:
            self.eval(node.value, scope)
            return ADDR_SEQ
        recv = self.eval(node.value, scope)
        if recv is None:
            if node.attr == "addr":
                return CHECKED_U64  # DevicePtr.addr: devptr's unsigned value
            return by_name(node.attr)
        if recv.kind is Kind.DEVPTR and node.attr in ("addr", "signed"):
            return CHECKED_U64 if node.attr == "addr" else CHECKED_I64
        if is_arrayish(recv):
            if node.attr == "np":
                return Val(recv.kind, lib=Lib.NUMPY, dtype=recv.dtype)
            if node.attr in ("T", "mT", "data", "real"):
                return recv
        return None

    def _subscript(self, node: ast.Subscript, scope: Scope) -> Val | None:
        base = self.eval(node.value, scope)
        self.eval(node.slice, scope)
        if base is None:
            return None
        if is_arrayish(base):
            return base
        if base.kind is Kind.ADDR_SEQ:
            return ADDR_SEQ if isinstance(node.slice, ast.Slice) else ADDR
        if base.kind is Kind.TUPLE:
            idx = pat.int_value(node.slice)
            if idx is not None and -len(base.items) <= idx < len(base.items):
                return base.items[idx]
        return None

    def _ifexp(self, node: ast.IfExp, scope: Scope) -> Val | None:
        self.eval(node.test, scope)
        body = self.eval(node.body, scope)
        orelse = self.eval(node.orelse, scope)
        if pat.is_twos_complement_ifexp(node):
            for branch in (node.body, node.orelse):
                self._quiet_nodes.add(id(branch))
            self._emit(node, (Rule.DP004, "two's-complement conversion by hand (x - 2**64 ...)"))
            return ADDR
        dts = {pat.literal_dtype(node.body), pat.literal_dtype(node.orelse)}
        if dts == {DType.U64, DType.I64} and pat.is_platform_test(node.test):
            self._emit(node, (Rule.DP005, "per-platform pointer dtype (uint64 vs int64 branch)"))
            return Val(Kind.DTYPE, dtype=DType.BRANCH)
        for v in (body, orelse):
            if v is not None and v.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.DEVPTR):
                return v
        return body if body is not None else orelse

    def _binop(self, node: ast.BinOp, scope: Scope) -> Val | None:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        if pat.is_twos_complement_binop(node):
            self._emit(node, (Rule.DP004, "two's-complement conversion by hand (% 2**64)"))
            return ADDR
        if (
            isinstance(node.op, ast.Add | ast.Sub)
            and pat.int_value(node.right) == pat.TWO_64
            and id(node) not in self._quiet_nodes
            and (is_addr(left) or pat.names_an_address(node.left))
        ):
            self._emit(node, (Rule.DP004, "two's-complement conversion by hand (+/- 2**64)"))
            return ADDR
        if isinstance(node.op, ast.Mult) and isinstance(node.left, ast.List):
            return left
        for a, b in ((left, right), (right, left)):
            if is_addr(a) and is_arrayish(b):
                assert a is not None and b is not None
                self._emit(node, arith_verdict(a, b))
                return Val(Kind.ADDR_ARRAY, lib=b.lib, dtype=b.dtype)
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
            return addr
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

    @staticmethod
    def _np_signed_scalar(node: ast.expr) -> bool:
        if isinstance(node, ast.Call):
            name = pat.call_name(node)
            return name is not None and name.rpartition(".")[2] in ("int64", "int32", "intp")
        return False

    # ------------------------------------------------------------------ calls

    def _args(self, node: ast.Call, scope: Scope) -> list[Val | None]:
        vals = [self.eval(a, scope) for a in node.args]
        for kw in node.keywords:
            self.eval(kw.value, scope)
        return vals

    def _dtype_of(self, node: ast.expr | None, scope: Scope) -> DType | None:
        if node is None:
            return None
        dt = pat.literal_dtype(node)
        if dt is not None:
            return dt
        val = self.eval(node, scope)
        if val is not None and val.kind is Kind.DTYPE:
            return val.dtype
        if isinstance(node, ast.IfExp):
            dts = {pat.literal_dtype(node.body), pat.literal_dtype(node.orelse)}
            if dts == {DType.U64, DType.I64}:
                return DType.BRANCH
        return DType.OTHER if not isinstance(node, ast.Name | ast.Attribute) else None

    def _call(self, node: ast.Call, scope: Scope) -> Val | None:
        func = node.func
        name = pat.call_name(node)
        if isinstance(func, ast.Attribute):
            method = self._method_call(node, func, scope)
            if method is not None:
                return method
        vals = self._args(node, scope)
        if name is None:
            self.eval(func, scope)
            if isinstance(func, ast.BinOp) and isinstance(func.op, ast.Mult):
                dt = pat.literal_dtype(func.left)  # (ctypes.c_int64 * n)(): an int64 array
                if dt in (DType.I64, DType.U64):
                    return Val(Kind.ARRAY, lib=Lib.CTYPES, dtype=dt)
            return None
        base = name.rpartition(".")[2]
        if name in pat.DEVPTR_CONSTRUCTORS or name.endswith(
            ("DevicePtr.of", "DevicePtr.from_signed")
        ):
            return DEVPTR
        if name in pat.TABLE_CONSTRUCTORS:
            return self._table(node, name, vals, scope)
        if name in pat.ALLOCATORS or name == "torch.from_numpy":
            lib = Lib.TORCH if name.startswith("torch") else Lib.NUMPY
            if name == "torch.from_numpy" and vals and is_arrayish(vals[0]):
                src = vals[0]
                assert src is not None
                return Val(src.kind, lib=Lib.TORCH, dtype=src.dtype)
            positional = node.args[1] if lib is Lib.NUMPY and len(node.args) > 1 else None
            dt = self._dtype_of(pat.kwarg(node, "dtype") or positional, scope)
            if name.endswith("_like") and dt is None and vals and is_arrayish(vals[0]):
                src = vals[0]
                assert src is not None
                dt = src.dtype
            if name.endswith("arange") and dt is None:
                dt = DType.I64
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if name in pat.MAPPING_CALLS:
            return MAPPING
        if name in ("ctypes.cast", "cast") and len(node.args) == 2:
            # ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_int64)): an int64 view
            target = node.args[1]
            if isinstance(target, ast.Call) and target.args:
                dt = pat.literal_dtype(target.args[0])
                if dt in (DType.I64, DType.U64):
                    return Val(Kind.ARRAY, lib=Lib.CTYPES, dtype=dt)
        if base == "int" and vals and is_addr(vals[0]):
            return ADDR
        if name in ("np.uint64", "np.ulonglong") and vals and is_addr(vals[0]):
            return Val(Kind.ADDR, np_scalar=True)
        if base in ("list", "tuple", "sorted", "reversed") and vals and vals[0] is not None:
            if vals[0].kind is Kind.ADDR_SEQ:
                return ADDR_SEQ
            if vals[0].kind is Kind.ADDR_ARRAY:
                return ADDR_SEQ
        if base == "map" and node.args:
            fn = node.args[0]
            fval = vals[0]
            if (fval is not None and fval.kind is Kind.ADDR_FUNC) or (
                isinstance(fn, ast.Attribute) and fn.attr == "data_ptr"
            ):
                return ADDR_SEQ
        if pat.ctypes_twos(node) and vals and is_addr(vals[0]):
            self._emit(node, (Rule.DP004, "two's-complement conversion through ctypes.c_int64"))
            return ADDR
        if name == "struct.unpack" and self._struct_twos(node):
            self._emit(node, (Rule.DP004, "two's-complement conversion through struct q/Q"))
            return ADDR_SEQ
        summary = scope.env.get(name) if isinstance(func, ast.Name) else None
        if summary is None and isinstance(func, ast.Name):
            summary = self.functions.get(name)
        found = self._from_summary(summary)
        if found is not None:
            return found
        dt = self._dtype_of(pat.kwarg(node, "dtype"), scope)
        if vals and vals[0] is not None and vals[0].kind is Kind.ADDR_SEQ and dt is not None:
            # a project helper that builds a table from a list (async_tensor_h2d(ptrs, dtype=..))
            self._emit(node, table_verdict(vals[0], dt, name))
            return Val(Kind.ADDR_ARRAY, dtype=dt)
        if dt is not None and dt is not DType.OTHER:
            return Val(Kind.ARRAY, dtype=dt)
        return None

    @staticmethod
    def _from_summary(summary: Val | None) -> Val | None:
        if summary is None:
            return None
        if summary.kind is Kind.ADDR_FUNC:
            return ADDR
        if summary.kind is Kind.ADDR_SEQ_FUNC:
            return ADDR_SEQ
        if summary.kind is Kind.TUPLE:
            return summary.items[0] if len(summary.items) == 1 else summary
        return None

    @staticmethod
    def _struct_twos(node: ast.Call) -> bool:
        if len(node.args) != 2 or not isinstance(node.args[1], ast.Call):
            return False
        inner = node.args[1]
        if pat.call_name(inner) != "struct.pack" or not inner.args:
            return False
        fmts = [node.args[0], inner.args[0]]
        texts = [f.value for f in fmts if isinstance(f, ast.Constant) and isinstance(f.value, str)]
        return len(texts) == 2 and {texts[0][-1:], texts[1][-1:]} == {"q", "Q"}

    def _table(
        self, node: ast.Call, name: str, vals: list[Val | None], scope: Scope
    ) -> Val | None:
        lib = Lib.TORCH if name.startswith("torch") else Lib.NUMPY
        is_full = name.endswith(".full")
        data_idx = 1 if is_full else 0
        data_node = node.args[data_idx] if len(node.args) > data_idx else pat.kwarg(
            node, "fill_value" if is_full else ("data" if lib is Lib.TORCH else "object")
        )
        data = vals[data_idx] if len(vals) > data_idx else self.eval(data_node, scope)
        dtype_node = pat.kwarg(node, "dtype")
        if dtype_node is None and lib is Lib.NUMPY and len(node.args) > data_idx + 1:
            dtype_node = node.args[data_idx + 1]
        dt = DType.I64 if name == "torch.LongTensor" else self._dtype_of(dtype_node, scope)
        if data is not None and data.kind is Kind.ADDR_ARRAY:
            return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt or data.dtype)
        if (data is None or data.kind is Kind.PLAIN_LIST) and data_node is not None:
            data_name = None if isinstance(data_node, ast.Call) else pat.last_name(data_node)
            if data_name is not None and pat.ADDRESS_LIST_NAME_RE.search(data_name):
                data = ADDR_SEQ_BY_NAME  # a list named for addresses (peer IPC addresses)
        if is_arrayish(data) and dt is None:
            assert data is not None
            dt = data.dtype
        if (data is not None and data.kind is Kind.ADDR_SEQ) or is_addr(data):
            self._emit(node, table_verdict(data, dt, name))
            return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt)
        return Val(Kind.ARRAY, lib=lib, dtype=dt)

    def _method_call(
        self, node: ast.Call, func: ast.Attribute, scope: Scope
    ) -> Val | None:
        attr = func.attr
        if attr == "data_ptr":
            self.eval(func.value, scope)
            return ADDR
        if self._is_self(func.value) and scope.cls is not None:
            summary = self.functions.get(f"{scope.cls}.{attr}")
            if summary is not None:
                self._args(node, scope)
                return self._from_summary(summary)
            attr_val = self.class_attrs.get(scope.cls, {}).get(attr)
            if attr_val is not None and attr_val.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC):
                self._args(node, scope)
                return self._from_summary(attr_val)
        if pat.call_name(node) in pat.TABLE_CONSTRUCTORS | pat.ALLOCATORS:
            return None
        if pat.dotted(func) in pat.DEVPTR_CONSTRUCTORS:
            return None
        recv = self.eval(func.value, scope)
        vals = self._args(node, scope)
        if attr in ("append", "insert", "extend", "add") and vals:
            arg = vals[-1]
            gained = (attr != "extend" and carries_address(arg)) or (
                attr == "extend" and arg is not None and arg.kind is Kind.ADDR_SEQ
            )
            if gained and (recv is None or recv.kind in (Kind.PLAIN_LIST, Kind.ADDR_SEQ)):
                before = [recv] if recv is not None and recv.kind is Kind.ADDR_SEQ else []
                self._assign(func.value, seq_of([*before, arg]), None, scope)
            return _NO_VALUE
        if attr in ("fill_", "fill") and vals and is_addr(vals[0]):
            if recv is not None and is_arrayish(recv):
                self._emit(node, store_verdict(recv, vals[0], None))
            return _NO_VALUE
        if recv is None:
            return _NO_VALUE if attr in ("get", "pop", "setdefault") else None
        if attr in ("view", "astype", "to", "type") and is_arrayish(recv):
            dt_node = node.args[0] if node.args else pat.kwarg(node, "dtype")
            dt = pat.literal_dtype(dt_node) if dt_node is not None else None
            if dt is None:
                return recv
            lib = recv.lib
            if attr == "view" and dt_node is not None:
                head = pat.dotted(dt_node) or ""
                lib = Lib.NUMPY if head.startswith("np.") else (
                    Lib.TORCH if head.startswith("torch.") else lib
                )
            return Val(recv.kind, lib=lib, dtype=dt)
        if attr == "numpy" and is_arrayish(recv):
            return Val(recv.kind, lib=Lib.NUMPY, dtype=recv.dtype)
        if attr in pat.SAME_ARRAY_METHODS and is_arrayish(recv):
            return recv
        if attr == "tolist" and recv.kind is Kind.ADDR_ARRAY:
            return ADDR_SEQ
        if attr == "item" and recv.kind is Kind.ADDR_ARRAY:
            return ADDR
        if attr in ("copy", "__copy__") and recv.kind is Kind.ADDR_SEQ:
            return ADDR_SEQ
        if recv.kind in (Kind.ADDR_FUNC,) and attr == "__call__":
            return ADDR
        return None
