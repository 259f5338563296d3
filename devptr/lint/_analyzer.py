"""The per-file analysis: walk statements in order, track raw addresses, report at sinks.

The flow analysis is deliberately simple: one environment per function (closures see a copy
of the enclosing one), branches are walked in sequence, loops once. Facts come from
``data_ptr()`` calls, annotations, allocator calls with a ``dtype=``, and two summaries
computed per file: what each local function returns and what each class stores on
``self``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from typing import Final

from devptr.lint import _patterns as pat
from devptr.lint._annotations import annotation_val
from devptr.lint._findings import Finding
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

ADDR_BY_NAME: Final = Val(Kind.ADDR, by_name=True)
CHECKED_U64: Final = Val(Kind.ADDR, checked=DType.U64)
CHECKED_I64: Final = Val(Kind.ADDR, checked=DType.I64)
ADDR_SEQ_BY_NAME: Final = Val(Kind.ADDR_SEQ, by_name=True)
_ADDR_OPS: Final = (ast.Add, ast.Sub, ast.BitAnd, ast.BitOr)
_SUMMARY_ROUNDS: Final = 1


class _Scope:
    """Names visible in one function body, plus the enclosing class (for ``self.x``)."""

    def __init__(self, env: dict[str, Val], cls: str | None) -> None:
        self.env = env
        self.cls = cls
        self.returns: list[Val | None] = []

    def child(self, cls: str | None = None) -> _Scope:
        return _Scope(dict(self.env), cls if cls is not None else self.cls)


class FileAnalyzer:
    """Analyze one parsed module and collect :class:`Finding` objects.

    Parameters
    ----------
    tree
        The parsed module.
    path
        The path reported in findings.
    """

    def __init__(self, tree: ast.Module, path: str, source: str | None = None) -> None:
        self.tree = tree
        self.path = path
        self._lines = source.splitlines() if source is not None else None
        self._tainted: re.Pattern[str] | None = None
        self.findings: dict[tuple[int, int, Rule], Finding] = {}
        self.functions: dict[str, Val | None] = {}
        self.class_attrs: dict[str, dict[str, Val]] = {}
        self._report = False
        self._stmt: ast.stmt | None = None
        self._quiet_nodes: set[int] = set()

    # ----------------------------------------------------------------- driver

    def run(self) -> list[Finding]:
        """Compute summaries, then walk the module once more and report."""
        for _ in range(_SUMMARY_ROUNDS):
            self._walk_module()
        self._tainted = self._tainted_names()
        self._report = True
        self._walk_module()
        return sorted(self.findings.values())

    def _tainted_names(self) -> re.Pattern[str] | None:
        """Local helpers and ``self`` attributes known (after the first pass) to hold addresses."""
        names = {k.rpartition(".")[2] for k, v in self.functions.items() if _holds_addr(v)}
        for attrs in self.class_attrs.values():
            names.update(k for k, v in attrs.items() if _holds_addr(v))
        if not names:
            return None
        return re.compile("|".join(sorted(re.escape(n) for n in names)))

    def _may_report(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether *fn*'s text can hold a finding (skips most function bodies of a big tree)."""
        if self._lines is None:
            return True
        end = getattr(fn, "end_lineno", None) or len(self._lines)
        text = "\n".join(self._lines[fn.lineno - 1 : end])
        if pat.FUNCTION_TRIGGER.search(text):
            return True
        return self._tainted is not None and self._tainted.search(text) is not None

    def _walk_module(self) -> None:
        scope = _Scope({}, None)
        self._block(self.tree.body, scope)

    # ------------------------------------------------------------- reporting

    def _emit(self, node: ast.AST, verdict: Verdict) -> None:
        if verdict is None or not self._report:
            return
        rule, message = verdict
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        stmt = self._stmt
        end = getattr(stmt, "end_lineno", None) or getattr(node, "end_lineno", None) or line
        start = min(line, getattr(stmt, "lineno", line))
        key = (line, col, rule)
        if key not in self.findings:
            self.findings[key] = Finding(
                path=self.path, line=line, col=col, rule=rule, message=message,
                end_line=max(end, line) if start <= line else line,
            )

    # ------------------------------------------------------------- statements

    def _block(self, body: Iterable[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            self._exec(stmt, scope)

    def _exec(self, stmt: ast.stmt, scope: _Scope) -> None:
        outer, self._stmt = self._stmt, stmt
        try:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self._function(stmt, scope)
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, scope)
            elif isinstance(stmt, ast.Assign):
                val = self.eval(stmt.value, scope)
                for target in stmt.targets:
                    self._assign(target, val, stmt.value, scope)
            elif isinstance(stmt, ast.AnnAssign):
                val = self.eval(stmt.value, scope) if stmt.value is not None else None
                if val is None:
                    val = annotation_val(stmt.annotation)
                self._assign(stmt.target, val, stmt.value, scope)
            elif isinstance(stmt, ast.AugAssign):
                self._augassign(stmt, scope)
            elif isinstance(stmt, ast.Return):
                if stmt.value is not None:
                    scope.returns.append(self.eval(stmt.value, scope))
            elif isinstance(stmt, ast.For | ast.AsyncFor):
                self._for(stmt, scope)
            elif isinstance(stmt, ast.If):
                self._if(stmt, scope)
            else:
                self._generic(stmt, scope)
        finally:
            self._stmt = outer

    def _generic(self, stmt: ast.stmt, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self._exec(child, scope)
            elif isinstance(child, ast.expr):
                self.eval(child, scope)
            elif isinstance(child, ast.excepthandler | ast.match_case | ast.withitem):
                for sub in ast.iter_child_nodes(child):
                    if isinstance(sub, ast.stmt):
                        self._exec(sub, scope)
                    elif isinstance(sub, ast.expr):
                        self.eval(sub, scope)

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        if any(pat.is_device_decorator(d) for d in fn.decorator_list):
            return  # Triton/CuTe device code: no host-side integer tables
        if not self._may_report(fn):
            # nothing address-like in its text: only its annotation can tell us something
            key = f"{scope.cls}.{fn.name}" if scope.cls else fn.name
            self.functions[key] = self._summarize([], fn.returns)
            if scope.cls is not None and not self._report:
                self._collect_self_attrs(fn, scope)
            return
        inner = scope.child()
        args = fn.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            val = annotation_val(arg.annotation)
            if val is not None:
                inner.env[arg.arg] = val
            else:
                inner.env.pop(arg.arg, None)
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.eval(default, scope)
        self._block(fn.body, inner)
        summary = self._summarize(inner.returns, fn.returns)
        key = f"{scope.cls}.{fn.name}" if scope.cls else fn.name
        self.functions[key] = summary
        if summary is not None and summary.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC):
            scope.env[fn.name] = summary

    def _collect_self_attrs(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope
    ) -> None:
        """First pass over a skipped method: learn what it stores on ``self`` (arrays, dtypes)."""
        inner = scope.child()
        for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            val = annotation_val(arg.annotation)
            if val is not None:
                inner.env[arg.arg] = val
        for node in _iter_statements(fn.body):
            if isinstance(node, ast.Assign):
                targets = [t for t in node.targets if isinstance(t, ast.Attribute | ast.Name)]
                if targets:
                    val = self.eval(node.value, inner)
                    for t in targets:
                        self._assign(t, val, node.value, inner)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                val = self.eval(node.value, inner) if node.value is not None else None
                self._assign(node.target, val or annotation_val(node.annotation), None, inner)

    @staticmethod
    def _summarize(returns: list[Val | None], annotation: ast.expr | None) -> Val | None:
        if any(is_addr(r) for r in returns):
            return Val(Kind.ADDR_FUNC)
        if any(r is not None and r.kind is Kind.ADDR_SEQ for r in returns):
            return Val(Kind.ADDR_SEQ_FUNC)
        ann = annotation_val(annotation)
        if ann is not None:
            return Val(Kind.TUPLE, items=(ann,)) if ann.kind is not Kind.TUPLE else ann
        return None

    def _class(self, cls: ast.ClassDef, scope: _Scope) -> None:
        for base in [*cls.bases, *cls.decorator_list]:
            self.eval(base, scope)
        for kw in cls.keywords:
            self.eval(kw.value, scope)
        attrs = self.class_attrs.setdefault(cls.name, {})
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                val = annotation_val(stmt.annotation)
                if val is not None:
                    attrs.setdefault(stmt.target.id, val)
        self._block(cls.body, scope.child(cls=cls.name))

    def _assign(
        self, target: ast.expr, val: Val | None, value: ast.expr | None, scope: _Scope
    ) -> None:
        if isinstance(target, ast.Name):
            if val is None:
                scope.env.pop(target.id, None)
            else:
                scope.env[target.id] = val
        elif isinstance(target, ast.Attribute):
            self.eval(target.value, scope)
            if self._is_self(target.value) and scope.cls is not None and val is not None:
                self.class_attrs.setdefault(scope.cls, {})[target.attr] = val
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._assign(t, self.eval(v, scope), v, scope)
                return
            items: tuple[Val | None, ...] = ()
            if val is not None and val.kind is Kind.TUPLE:
                items = val.items
            for i, t in enumerate(target.elts):
                item = items[i] if i < len(items) else None
                self._assign(t.value if isinstance(t, ast.Starred) else t, item, None, scope)
        elif isinstance(target, ast.Subscript):
            self._store(target, val, scope)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, None, scope)

    def _store(self, target: ast.Subscript, val: Val | None, scope: _Scope) -> None:
        cont = self.eval(target.value, scope)
        self.eval(target.slice, scope)
        if cont is None and carries_address(val) and isinstance(target.value, ast.Name):
            known = scope.env.get(target.value.id)
            cont = known
        self._emit(target, store_verdict(cont, val, target))

    def _augassign(self, stmt: ast.AugAssign, scope: _Scope) -> None:
        val = self.eval(stmt.value, scope)
        if isinstance(stmt.op, ast.Add | ast.Sub) and pat.int_value(stmt.value) == pat.TWO_64:
            self._emit(stmt, (Rule.DP004, "two's-complement conversion by hand (+/- 2**64)"))
        target = stmt.target
        if isinstance(target, ast.Name):
            cur = scope.env.get(target.id)
            if val is not None and val.kind is Kind.ADDR_SEQ:
                scope.env[target.id] = ADDR_SEQ
            elif cur is not None and cur.kind is Kind.ADDR and isinstance(stmt.op, _ADDR_OPS):
                pass
        elif isinstance(target, ast.Subscript):
            self._store(target, val, scope)
        else:
            self.eval(target, scope)

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: _Scope) -> None:
        self._bind_iter(stmt.target, stmt.iter, scope)
        self._block(stmt.body, scope)
        self._block(stmt.orelse, scope)

    def _bind_iter(self, target: ast.expr, it: ast.expr, scope: _Scope) -> None:
        """Bind a loop/comprehension target to the element value of *it*."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name):
            if it.func.id == "zip" and isinstance(target, ast.Tuple):
                for t, arg in zip(target.elts, it.args, strict=False):
                    self._assign(t, self._element(self.eval(arg, scope)), None, scope)
                return
            if it.func.id == "enumerate" and isinstance(target, ast.Tuple) and it.args:
                elem = self._element(self.eval(it.args[0], scope))
                if len(target.elts) == 2:
                    self._assign(target.elts[0], None, None, scope)
                    self._assign(target.elts[1], elem, None, scope)
                    return
        if isinstance(it, ast.Tuple | ast.List) and isinstance(target, ast.Tuple):
            rows = [e for e in it.elts if isinstance(e, ast.Tuple | ast.List)]
            if rows and len(rows) == len(it.elts):
                for i, t in enumerate(target.elts):
                    column = [self.eval(r.elts[i], scope) for r in rows if i < len(r.elts)]
                    hit = [v for v in column if carries_address(v)]
                    self._assign(t, hit[0] if hit else None, None, scope)
                return
        self._assign(target, self._element(self.eval(it, scope)), None, scope)

    @staticmethod
    def _element(seq: Val | None) -> Val | None:
        if seq is not None and seq.kind is Kind.ADDR_SEQ:
            return ADDR
        if seq is not None and seq.kind is Kind.ADDR_ARRAY:
            return ADDR
        return None

    def _if(self, stmt: ast.If, scope: _Scope) -> None:
        self.eval(stmt.test, scope)
        branch = self._dtype_branch_stmt(stmt)
        self._block(stmt.body, scope)
        self._block(stmt.orelse, scope)
        if branch is not None:
            self._emit(stmt, (Rule.DP005, "per-platform pointer dtype chosen by an if statement"))
            scope.env[branch] = Val(Kind.DTYPE, dtype=DType.BRANCH)

    @staticmethod
    def _dtype_branch_stmt(stmt: ast.If) -> str | None:
        """``if is_xpu(): d = torch.uint64 / else: d = torch.int64`` -> ``"d"``."""
        if not pat.is_platform_test(stmt.test) or not stmt.orelse:
            return None

        def assigned(body: list[ast.stmt]) -> dict[str, DType]:
            out: dict[str, DType] = {}
            for s in body:
                if isinstance(s, ast.Assign) and len(s.targets) == 1:
                    t = s.targets[0]
                    dt = pat.literal_dtype(s.value)
                    if isinstance(t, ast.Name) and dt is not None:
                        out[t.id] = dt
            return out

        a, b = assigned(stmt.body), assigned(stmt.orelse)
        for name, dt in a.items():
            if {dt, b.get(name)} == {DType.U64, DType.I64}:
                return name
        return None

    # ------------------------------------------------------------ expressions

    def eval(self, node: ast.expr | None, scope: _Scope) -> Val | None:
        """Abstract value of *node*; reports violations found inside it."""
        if node is None:
            return None
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.Name):
            found = scope.env.get(node.id)
            return found if found is not None or node.id in scope.env else _by_name(node.id)
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
            return _seq_of([self.eval(node.elt, inner)])
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
                return _seq_of(items)
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

    def _attribute(self, node: ast.Attribute, scope: _Scope) -> Val | None:
        dt = pat.literal_dtype(node)
        if dt is not None and dt is not DType.OTHER:
            return Val(Kind.DTYPE, dtype=dt)
        if self._is_self(node.value) and scope.cls is not None:
            known = self.class_attrs.get(scope.cls, {}).get(node.attr)
            return known if known is not None else _by_name(node.attr)
        if node.attr in pat.PEER_PTR_ATTRS:
            self.eval(node.value, scope)
            return ADDR_SEQ
        recv = self.eval(node.value, scope)
        if recv is None:
            if node.attr == "addr":
                return CHECKED_U64  # DevicePtr.addr: devptr's unsigned value
            return _by_name(node.attr)
        if recv.kind is Kind.DEVPTR and node.attr in ("addr", "signed"):
            return CHECKED_U64 if node.attr == "addr" else CHECKED_I64
        if is_arrayish(recv):
            if node.attr == "np":
                return Val(recv.kind, lib=Lib.NUMPY, dtype=recv.dtype)
            if node.attr in ("T", "mT", "data", "real"):
                return recv
        return None

    def _subscript(self, node: ast.Subscript, scope: _Scope) -> Val | None:
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

    def _ifexp(self, node: ast.IfExp, scope: _Scope) -> Val | None:
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

    def _binop(self, node: ast.BinOp, scope: _Scope) -> Val | None:
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

    def _args(self, node: ast.Call, scope: _Scope) -> list[Val | None]:
        vals = [self.eval(a, scope) for a in node.args]
        for kw in node.keywords:
            self.eval(kw.value, scope)
        return vals

    def _dtype_of(self, node: ast.expr | None, scope: _Scope) -> DType | None:
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

    def _call(self, node: ast.Call, scope: _Scope) -> Val | None:
        func = node.func
        name = pat.call_name(node)
        if isinstance(func, ast.Attribute):
            method = self._method_call(node, func, scope)
            if method is not None:
                return method
        vals = self._args(node, scope)
        if name is None:
            self.eval(func, scope)
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
        self, node: ast.Call, name: str, vals: list[Val | None], scope: _Scope
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
        self, node: ast.Call, func: ast.Attribute, scope: _Scope
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
                self._assign(func.value, _seq_of([*before, arg]), None, scope)
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


_NO_VALUE: Final[Val | None] = None


def _iter_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of *body*, nested blocks included, without descending into expressions."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                yield from _iter_statements(block)
        for handler in getattr(stmt, "handlers", ()):
            yield from _iter_statements(handler.body)


def _seq_of(items: Iterable[Val | None]) -> Val | None:
    """The sequence value holding *items*: None without addresses; keeps a shared encoding
    (all from ``DevicePtr.addr``) and whether every address is only known by name."""
    found: list[Val] = []
    for v in items:
        if v is None:
            continue
        if v.kind is Kind.TUPLE:
            inner = _seq_of(v.items)
            if inner is not None:
                found.append(inner)
        elif carries_address(v):
            found.append(v)
    if not found:
        return None
    checked = {v.checked for v in found}
    return Val(
        Kind.ADDR_SEQ,
        checked=checked.pop() if len(checked) == 1 else None,
        by_name=all(v.by_name for v in found),
    )


def _holds_addr(v: Val | None) -> bool:
    return v is not None and (
        v.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC) or (carries_address(v) and not v.by_name)
    )


def _by_name(name: str) -> Val | None:
    """An otherwise unknown name that says it holds an address (``base_addr``, ``src_ptr``)."""
    if pat.ADDRESS_SCALAR_NAME_RE.search(name):
        return ADDR_BY_NAME
    if pat.ADDRESS_LIST_NAME_RE.search(name):
        return ADDR_SEQ_BY_NAME
    return None


def analyze(tree: ast.Module, path: str, source: str | None = None) -> list[Finding]:
    """Run the checker on a parsed module.

    Parameters
    ----------
    tree
        The module.
    path
        The path to put into findings.
    source
        The module's text; lets the report pass skip functions with nothing address-like.

    Returns
    -------
    list of Finding
        Sorted by position, before suppressions and rule selection.
    """
    return FileAnalyzer(tree, path, source).run()


__all__ = ["FileAnalyzer", "analyze"]
