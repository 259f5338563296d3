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
from collections.abc import Iterable
from typing import Final

from devptr.lint import _patterns as pat
from devptr.lint._annotations import annotation_val
from devptr.lint._expressions import ExpressionEvaluator
from devptr.lint._findings import Finding
from devptr.lint._scope import Scope, holds_addr, seq_of
from devptr.lint._sinks import Verdict, carries_address, store_verdict
from devptr.lint._values import (
    ADDR,
    ADDR_SEQ,
    DType,
    Kind,
    Val,
    is_addr,
)
from devptr.lint.rules import Rule

_SUMMARY_ROUNDS: Final = 1


class FileAnalyzer(ExpressionEvaluator):
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
        names = {k.rpartition(".")[2] for k, v in self.functions.items() if holds_addr(v)}
        for attrs in self.class_attrs.values():
            names.update(k for k, v in attrs.items() if holds_addr(v))
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
        scope = Scope({}, None)
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

    def _block(self, body: Iterable[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self._exec(stmt, scope)

    def _exec(self, stmt: ast.stmt, scope: Scope) -> None:
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

    def _generic(self, stmt: ast.stmt, scope: Scope) -> None:
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

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> None:
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
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope
    ) -> None:
        """First pass over a skipped method: learn what it stores on ``self`` (arrays, dtypes)."""
        inner = scope.child()
        for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            val = annotation_val(arg.annotation)
            if val is not None:
                inner.env[arg.arg] = val
        for node in pat.iter_statements(fn.body):
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

    def _class(self, cls: ast.ClassDef, scope: Scope) -> None:
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
        self, target: ast.expr, val: Val | None, value: ast.expr | None, scope: Scope
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

    def _store(self, target: ast.Subscript, val: Val | None, scope: Scope) -> None:
        cont = self.eval(target.value, scope)
        self.eval(target.slice, scope)
        if cont is None and carries_address(val) and isinstance(target.value, ast.Name):
            known = scope.env.get(target.value.id)
            cont = known
        self._emit(target, store_verdict(cont, val, target))

    def _augassign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        val = self.eval(stmt.value, scope)
        if isinstance(stmt.op, ast.Add | ast.Sub) and pat.int_value(stmt.value) == pat.TWO_64:
            self._emit(stmt, (Rule.DP004, "two's-complement conversion by hand (+/- 2**64)"))
        target = stmt.target
        if isinstance(target, ast.Name):
            # ptrs += [p]: the list now holds addresses; p += offset keeps p an address
            if val is not None and val.kind is Kind.ADDR_SEQ:
                scope.env[target.id] = seq_of([scope.env.get(target.id), val]) or ADDR_SEQ
        elif isinstance(target, ast.Subscript):
            self._store(target, val, scope)
        else:
            self.eval(target, scope)

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: Scope) -> None:
        self._bind_iter(stmt.target, stmt.iter, scope)
        self._block(stmt.body, scope)
        self._block(stmt.orelse, scope)

    def _bind_iter(self, target: ast.expr, it: ast.expr, scope: Scope) -> None:
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

    def _if(self, stmt: ast.If, scope: Scope) -> None:
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
