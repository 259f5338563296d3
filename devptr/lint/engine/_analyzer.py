"""The per-module analysis: walk statements in order, track addresses, report at sinks.

The flow analysis is deliberately simple: one environment per function (closures see a copy
of the enclosing one), branches are walked in sequence, loops once. Facts come from the
address sources of :mod:`devptr.lint.catalogue`, annotations, allocator calls with a
``dtype=``, and summaries: what each function of the module (and, through a
:class:`~devptr.lint.engine._project.ProjectIndex`, of the scanned tree) returns and which
of its parameters reach a table sink. The module is walked twice: the first walk computes
the summaries, the second reports.
"""

from __future__ import annotations

import ast
import bisect
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from devptr.lint import catalogue as cat
from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._annotations import annotation_val
from devptr.lint.engine._expressions import ExpressionEvaluator
from devptr.lint.engine._finding import Fix, FixKind, Span
from devptr.lint.engine._names import Names
from devptr.lint.engine._scope import Scope, by_name, holds_addr, seq_of
from devptr.lint.engine._sinks import (
    Verdict,
    carries_address,
    is_slice,
    store_verdict,
    table_verdict,
)
from devptr.lint.engine._suppress import is_suppressed, suppressions
from devptr.lint.engine._values import (
    ADDR,
    ADDR_SEQ,
    DType,
    Kind,
    Lib,
    ParamSink,
    Summary,
    Val,
    is_param,
)
from devptr.lint.rules import Rule

if TYPE_CHECKING:
    from devptr.lint.engine._project import ProjectIndex


_INERT_STATEMENTS: Final = frozenset({
    ast.Import, ast.ImportFrom, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal,
})
"""Statements without expressions to evaluate."""


class Emitted:
    """A finding before suppression: rule, message, spans and the enclosing statement."""

    __slots__ = ("fix", "message", "rule", "sink", "span", "stmt_first", "stmt_last")

    def __init__(self, rule: Rule, message: str, span: Span, stmt_first: int, stmt_last: int,
                 fix: Fix | None, sink: tuple[str, Span] | None = None) -> None:
        self.sink = sink
        self.rule = rule
        self.message = message
        self.span = span
        self.stmt_first = stmt_first
        self.stmt_last = stmt_last
        self.fix = fix


class ModuleAnalyzer(ExpressionEvaluator):
    """Analyze one parsed module.

    Parameters
    ----------
    tree
        The parsed module.
    source
        Its text (for character columns and for skipping function bodies with nothing
        address-like in them).
    path
        The path used in messages.
    module
        The module's dotted name in the scanned tree (``""`` if unknown).
    project
        Summaries of the other modules of the scanned tree, if any.
    """

    def __init__(self, tree: ast.Module, source: str, path: str = "<string>", module: str = "",
                 project: ProjectIndex | None = None, *, is_package: bool = False) -> None:
        self.tree = tree
        self.path = path
        self.module = module
        self.project = project
        self.names = Names(tree, module, is_package=is_package)
        self._lines = source.splitlines()
        self._source = source
        self._line_starts: list[int] | None = None
        """Offsets where each line starts (line n starts at ``starts[n - 1]``); computed
        on the first token scan."""
        self._hot_lines: dict[tuple[str, ...], list[int]] = {}
        self._lower: str | None = None
        self._suppressions: dict[int, frozenset[str]] | None = None
        self._tainted: tuple[str, ...] | None = None
        self.emitted: dict[tuple[int, int, Rule], Emitted] = {}
        self.functions: dict[str, Summary] = {}
        self.class_attrs: dict[str, dict[str, Val]] = {}
        self.unresolved: set[str] = set()
        """Qualified names of calls to functions of other modules that got addresses."""
        self._report = False
        self._stmt: ast.stmt | None = None
        self._counters: list[str] = []
        self._properties: dict[str, set[str]] = {}
        """Property name -> the ``Class.name`` keys of the module's properties so named."""
        self._abstract: set[str] = set()
        """``Class.name`` keys of properties whose body only raises (abstract ones)."""
        self._addressless: set[str] = set()
        """Functions and methods of the module whose body holds no address source and
        whose every return is a value the body built that holds nothing address-like (a
        list of offsets), not an unknown one: a call of one gives no address, whatever
        the name it is bound to says."""
        self._imported_modules: frozenset[str] | None = None
        self.attr_reads: set[str] = set()
        """Attributes named like addresses read on values of unknown type and not
        resolved in this module: properties of other modules may give them."""
        """Names of the enclosing ``for`` loops' non-negative counters (``range``,
        ``enumerate``): indices a ``devptr.store`` fix keeps."""
        self._quiet_nodes: set[int] = set()
        self._narrowed: set[int] = set()
        self._host_classes: dict[int, bool] = {}
        self._base_names: frozenset[str] | None = None

    # ----------------------------------------------------------------- driver

    def summarize(self) -> dict[str, Summary]:
        """Walk the module once without reporting: the summaries of its functions."""
        self._walk_module()
        return self.functions

    def run(self) -> list[Emitted]:
        """Compute summaries, then walk the module once more and report."""
        self._walk_module()
        self._tainted = self._tainted_names()
        self._report = True
        self._walk_module()
        return sorted(self.emitted.values(), key=lambda e: (e.span, e.rule.value))

    def _tainted_names(self) -> tuple[str, ...] | None:
        """Local helpers and ``self`` attributes known (after the first pass) to matter."""
        names = {k.rpartition(".")[2] for k, v in self.functions.items() if v.interesting}
        for attrs in self.class_attrs.values():
            names.update(k for k, v in attrs.items() if holds_addr(v))
        if self.project is not None:
            names.update(
                alias for alias, target in self.names.aliases.items()
                if self.project.lookup(target) is not None
            )
        if not names:
            return None
        return tuple(sorted(n.lower() for n in names))

    def _may_report(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, *,
                    summarizing: bool = False) -> bool:
        """Whether *fn*'s text can hold a finding, or (when *summarizing*) a summary worth
        computing: a sink its parameters may reach. Skips most function bodies of a big tree.
        """
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        last = getattr(fn, "end_lineno", None) or len(self._lines)
        if self._hot(syn.FUNCTION_TRIGGER, first, last):
            return True
        if summarizing:
            return self._hot(syn.SINK_TRIGGER, first, last)
        return self._tainted is not None and self._hot(self._tainted, first, last)

    def _hot(self, tokens: tuple[str, ...], first: int, last: int) -> bool:
        """Whether one of *tokens* occurs (lowercased) on a line in ``first..last``.

        One scan of the module per token tuple (``str.find``), then a bisection per call.
        """
        lines = self._hot_lines.get(tokens)
        if lines is None:
            if self._lower is None or self._line_starts is None:
                self._lower = self._source.lower()
                self._line_starts = [0, *itertools.accumulate(
                    len(line) + 1 for line in self._source.split("\n")
                )][:-1]
            text = self._lower
            starts = self._line_starts
            found: set[int] = set()
            for token in tokens:
                pos = text.find(token)
                while pos != -1:
                    line = bisect.bisect_right(starts, pos)
                    found.add(line)
                    nxt = starts[line] if line < len(starts) else len(text)
                    pos = text.find(token, nxt)
            lines = sorted(found)
            self._hot_lines[tokens] = lines
        i = bisect.bisect_left(lines, first)
        return i < len(lines) and lines[i] <= last

    def _collect_self_attrs(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope
    ) -> None:
        """A skipped method still tells what it stores on ``self`` (arrays and their dtypes)."""
        inner = scope.child()
        for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            val = annotation_val(arg.annotation, self.names)
            if val is not None:
                inner.env[arg.arg] = val
            else:
                inner.env.pop(arg.arg, None)
        for node in syn.iter_statements(fn.body):
            if isinstance(node, ast.Assign):
                targets = [t for t in node.targets if isinstance(t, ast.Attribute)]
                if targets:
                    val = self.eval(node.value, inner)
                    for t in targets:
                        self._assign(t, val, node.value, inner)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                val = self.eval(node.value, inner) if node.value is not None else None
                ann = annotation_val(node.annotation, self.names)
                self._assign(node.target, ann if ann is not None and (
                    val is None or ann.kind is Kind.MAPPING) else val, None, inner)

    def _walk_module(self) -> None:
        self._block(self.tree.body, Scope({}, None))

    # ------------------------------------------------------------- positions

    def _col(self, line: int, byte_col: int) -> int:
        if 1 <= line <= len(self._lines):
            text = self._lines[line - 1]
            if not text.isascii():
                return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))
        return byte_col

    def _span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        col = self._col(line, getattr(node, "col_offset", 0))
        end_col = self._col(end_line, getattr(node, "end_col_offset", None) or 0)
        return Span(line, col, end_line, end_col)

    # ------------------------------------------------------------- reporting

    def _emit(self, node: ast.AST, verdict: Verdict, fix: Fix | None = None, *,
              sink: tuple[str, Span] | None = None) -> None:
        if verdict is None or not self._report:
            return
        rule, message = verdict
        span = self._span(node)
        stmt = self._stmt
        first = min(span.line, getattr(stmt, "lineno", span.line))
        last = max(span.end_line, getattr(stmt, "end_lineno", None) or span.end_line)
        key = (span.line, span.col, rule)
        if key not in self.emitted:
            self.emitted[key] = Emitted(rule, message, span, first, last, fix, sink)

    def _sink(
        self, node: ast.AST, kind: str, scope: Scope, value: Val | None, *,
        cont: Val | None = None, dtype: DType | None = None, ctor: str = "",
        target: ast.Subscript | None = None, fix: Fix | None = None,
    ) -> None:
        """A value reaching a store/table sink: a finding, or a parameter-sink summary."""
        if value is not None and value.kind is Kind.PARAM:
            if self._sink_suppressed(node):
                return  # `# devptr: ignore[...]` on the sink covers the callers too
            if scope.summarizing and (kind != "store" or cont is not None):
                for p in value.params:
                    scope.sinks.append(ParamSink(
                        param=p, name="", kind=kind, cont=cont, dtype=dtype, ctor=ctor,
                        is_slice=is_slice(target), where=f"{self.path}:{getattr(node, 'lineno', 0)}",
                        span=self._span(node),
                    ))
            if not value.by_name or kind != "table" or ctor in cat.STACKING_CONSTRUCTORS:
                return  # np.concatenate([src_ptrs, ...]) of parameters: see _table
            value = Val(Kind.ADDR_SEQ, by_name=True, host=scope.host)  # named for addresses
        if kind == "table":
            self._emit(node, table_verdict(value, dtype, ctor), fix)
        else:
            self._emit(node, store_verdict(cont, value, target, fill=kind == "fill"), fix)

    def _sink_suppressed(self, node: ast.AST) -> bool:
        if "devptr:" not in self._source:
            return False
        if self._suppressions is None:
            self._suppressions = suppressions(self._source)
        stmt = self._stmt
        first: int = getattr(stmt, "lineno", 0) or getattr(node, "lineno", 1) or 1
        end: int | None = getattr(stmt, "end_lineno", None)
        last = end if end is not None else first
        return any(is_suppressed(self._suppressions, rule.value, first, last)
                   for rule in (Rule.DP001, Rule.DP002, Rule.DP006, Rule.DP008))

    # ------------------------------------------------------------- fixes

    def _owner_spans(self, node: ast.AST) -> list[tuple[str, Span]]:
        """``("owner", X)`` for every ``X.data_ptr()`` call under *node* (for the codemod)."""
        return [
            ("owner", self._span(sub.func.value))
            for sub in ast.walk(node)
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in cat.ADDRESS_METHODS and not sub.args and not sub.keywords
        ]

    def _store_fix(self, target: ast.Subscript, value_node: ast.expr | None,
                   cont: Val | None, val: Val | None) -> Fix | None:
        if value_node is None:
            return None
        if cont is None or cont.lib not in (Lib.TORCH, Lib.NUMPY) or cont.dtype not in (
            DType.I64, DType.U64, DType.BRANCH
        ):
            return None
        spans = (("container", self._span(target.value)), ("index", self._span(target.slice)),
                 ("value", self._span(value_node)), *self._owner_spans(value_node))
        several = isinstance(value_node, ast.List | ast.Tuple) and len(value_node.elts) >= 2 and not any(
            isinstance(e, ast.Starred) for e in value_node.elts
        )
        if is_slice(target) and not several:
            return Fix(FixKind.STORE, "unsafe", spans,
                       "a slice store broadcasts a shorter value; devptr.store() requires "
                       "one pointer per element")
        if not syn.is_nonnegative_index(target.slice, self._counters):
            return Fix(FixKind.STORE, "unsafe", spans,
                       "the index may be negative (devptr.store() raises where the original "
                       "counted from the end) or not an int")
        if val is not None and val.kind is not Kind.ADDR and not several:
            return Fix(FixKind.STORE, "unsafe", spans, "the value is not a single address")
        if val is not None and val.by_name:
            return Fix(FixKind.STORE, "unsafe", spans,
                       "the value is an address only by its name")
        return Fix(FixKind.STORE, "safe", spans)

    def _twos_fix(self, operand: ast.expr, val: Val | None, helper: ast.expr | None = None,
                  *, encoder: bool = False) -> Fix:
        spans = [("value", self._span(operand)), *self._owner_spans(operand)]
        if helper is not None:
            spans.append(("helper", self._span(helper)))
        facts = (("encoder", "ctypes"),) if encoder else ()
        if val is not None and val.kind is Kind.ADDR and not val.by_name and val.checked is None:
            return Fix(FixKind.TWOS, "safe", tuple(spans), facts=facts)
        return Fix(FixKind.TWOS, "unsafe", tuple(spans),
                   "DevicePtr(x) raises for values outside [0, 2**64) that the hand-written "
                   "form passed through; x is not known to come from data_ptr()", facts)

    def _table_fix(self, node: ast.Call, ctor: str, data_node: ast.expr | None,
                   dtype_node: ast.expr | None, data: Val | None) -> Fix | None:
        if data_node is None or ctor not in ("torch.tensor", "torch.as_tensor"):
            return None
        if len(node.args) != 1 or any(kw.arg not in ("dtype", "device") for kw in node.keywords):
            return None  # an argument ptr_tensor() has no counterpart for
        dt = None if dtype_node is None else syn.literal_dtype(dtype_node, self.names)
        if dtype_node is not None and dt not in (DType.I64, DType.U64):
            return None
        spans: list[tuple[str, Span]] = [("call", self._span(node)),
                                         ("value", self._span(data_node))]
        if dtype_node is not None:
            spans.append(("dtype", self._span(dtype_node)))
        device_node = syn.kwarg(node, "device")
        if device_node is not None:
            spans.append(("device", self._span(device_node)))
        spans += self._owner_spans(data_node)
        reason = ""
        if isinstance(data_node, ast.ListComp | ast.GeneratorExp) and len(data_node.generators) == 1:
            gen = data_node.generators[0]
            spans += [("source", self._span(gen.iter)), ("target", self._span(gen.target))]
        elif not isinstance(data_node, ast.List | ast.Tuple | ast.ListComp | ast.GeneratorExp):
            reason = "the data is not a literal list: it may be any iterable"
        if dtype_node is None and not (
            isinstance(data_node, ast.List | ast.Tuple) and data_node.elts
        ):
            reason = reason or (
                "with no dtype an empty iterable builds a float32 tensor, ptr_tensor() an "
                "int64 one"
            )
        if data is not None and data.by_name:
            reason = reason or "the data holds addresses only by its name"
        facts = (("encoding", "U64" if dt is DType.U64 else "I64"),)
        return Fix(FixKind.TABLE, "unsafe" if reason else "safe", tuple(spans), reason, facts)

    def _addresses_fix(self, node: ast.BinOp, addr_left: bool, scope: Scope) -> Fix | None:
        """The fix of ``addr + idx * stride`` (``idx`` a numpy array): ``devptr.addresses``."""
        base, other = (node.left, node.right) if addr_left else (node.right, node.left)
        index, stride = other, None
        if isinstance(other, ast.BinOp) and isinstance(other.op, ast.Mult):
            for i, s in ((other.left, other.right), (other.right, other.left)):
                v = self.eval(i, scope)
                if v is not None and v.kind in (Kind.ARRAY, Kind.ADDR_ARRAY) and v.lib is Lib.NUMPY:
                    index, stride = i, s
                    break
            else:
                return None
        spans = [("base", self._span(base)), ("index", self._span(index)),
                 *self._owner_spans(base)]
        if stride is not None:
            spans.append(("stride", self._span(stride)))
        return Fix(FixKind.ADDRESSES, "unsafe", tuple(spans),
                   "devptr.addresses needs a 1-D non-negative integer index, raises where "
                   "numpy wrapped past 2**64 and returns uint64 where this gave int64")

    def _dtype_branch_fix(self, node: ast.AST, test: ast.expr, uint64: ast.expr | None,
                          uint64_first: bool, target: ast.expr | None = None) -> Fix | None:
        """The fix of a per-platform dtype branch whose test is an XPU test of known shape."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        if isinstance(test, ast.UnaryOp) and negated:
            test = test.operand
        positive = True
        where: tuple[str, Span] | None = None
        if (
            isinstance(test, ast.Call) and not test.args and not test.keywords
            and isinstance(test.func, ast.Attribute) and test.func.attr == "is_xpu"
        ):
            where = ("platform", self._span(test.func.value))
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
            test.ops[0], ast.Eq | ast.NotEq
        ):
            positive = isinstance(test.ops[0], ast.Eq)
            for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
                if isinstance(other, ast.Constant) and other.value == "xpu" and isinstance(
                    side, ast.Attribute
                ) and side.attr == "type":
                    where = ("device", self._span(side))
        if where is None or (positive != negated) != uint64_first or uint64 is None:
            return None
        lib = (self.names.qual(uint64) or "").partition(".")[0]
        if lib not in ("torch", "numpy"):
            return None
        spans = [("value", self._span(node)), where]
        if target is not None:
            spans.append(("target", self._span(target)))
        return Fix(FixKind.DTYPE_BRANCH, "unsafe", tuple(spans),
                   "encoding_for() follows DEVPTR_ENCODING and register_backend(), which "
                   "the branch ignored", (("dtype_attr", f"{lib}_dtype"),))

    # ------------------------------------------------------------- summaries

    def _external_summary(self, name: str) -> Summary | None:
        if self.project is None:
            return None
        return self.project.lookup(name)

    def _note_unresolved(self, name: str) -> None:
        if "." in name and not self._report:
            self.unresolved.add(name)

    def _call_summary(
        self, node: ast.Call, summary: Summary, vals: list[Val | None], scope: Scope,
        name: str, *, method: bool = False,
    ) -> Val | None:
        """Apply a function summary at a call: sink findings at the arguments, the result."""
        def arg(i: int) -> tuple[Val | None, ast.expr | None]:
            if i < len(node.args) and not any(
                isinstance(a, ast.Starred) for a in node.args[: i + 1]
            ):
                return vals[i], node.args[i]
            pname = summary.params[i] if i < len(summary.params) else None
            for kw in node.keywords:
                if kw.arg is not None and kw.arg == pname:
                    return self.eval(kw.value, scope), kw.value
            return None, None

        short = name.rpartition(".")[2]
        for sink in summary.sinks:
            val, arg_node = arg(sink.param)
            if val is None or arg_node is None:
                continue
            if val.kind is Kind.PARAM:
                if scope.summarizing:
                    for p in val.params:
                        scope.sinks.append(ParamSink(
                            param=p, name="", kind=sink.kind, cont=sink.cont, dtype=sink.dtype,
                            ctor=sink.ctor, is_slice=sink.is_slice, where=sink.where,
                            span=sink.span,
                        ))
                continue
            if not carries_address(val) or val.by_name:
                continue
            if sink.kind == "table":
                verdict = table_verdict(val, sink.dtype, sink.ctor) if sink.ctor != "ctypes" else None
            else:
                verdict = store_verdict(sink.cont, val, None, fill=sink.kind == "fill")
            if verdict is not None:
                rule, message = verdict
                if sink.span is None:
                    self._emit(arg_node, (rule, f"{message} (in {short}() at {sink.where})"))
                else:  # reported once, at the helper's table: collapse_helper_findings
                    self._emit(arg_node, (rule, f"{message} (in {short}())"),
                               sink=(sink.where.rpartition(":")[0], sink.span))
        result: Val | None = summary.returns
        for i in sorted(summary.twos_params):
            val, arg_node = arg(i)
            if val is not None and val.kind is Kind.PARAM:
                return Val(Kind.PARAM, params=val.params, checked=DType.I64)
            if val is not None and val.kind is Kind.ADDR and arg_node is not None:
                self._emit(node, (Rule.DP004, f"two's complement of a device address by hand "
                                              f"(in {short}())"), self._twos_fix(arg_node, val, node.func))
                return Val(Kind.ADDR, checked=DType.I64, host=val.host)
            return None  # a hash or a key through the same helper: not an address
        for i in sorted(summary.returns_params):
            val, _ = arg(i)
            if val is not None and (carries_address(val) or val.kind is Kind.PARAM):
                return val
        return result

    def _summarize(self, scope: Scope, annotation: ast.expr | None,
                   params: tuple[str, ...]) -> Summary:
        returns = scope.returns
        ret: Val | None = None
        if any(r is not None and r.kind is Kind.ADDR and r.checked is None for r in returns):
            addrs = [r for r in returns if r is not None and r.kind is Kind.ADDR]
            ret = Val(Kind.ADDR, host=all(r.host for r in addrs),
                      by_name=all(r.by_name for r in addrs))
        elif any(r is not None and r.kind is Kind.ADDR_SEQ for r in returns):
            seqs = [r for r in returns if r is not None and r.kind is Kind.ADDR_SEQ]
            ret = Val(Kind.ADDR_SEQ, host=all(r.host for r in seqs),
                      by_name=all(r.by_name for r in seqs))
        elif any(r is not None and r.kind is Kind.ADDR_ARRAY for r in returns):
            ret = next(r for r in returns if r is not None and r.kind is Kind.ADDR_ARRAY)
        elif any(r is not None and r.kind is Kind.TUPLE and carries_address(r) for r in returns):
            ret = next(r for r in returns if r is not None and r.kind is Kind.TUPLE)
        if ret is None:
            ann = annotation_val(annotation, self.names)
            if ann is not None:
                ret = ann
            elif returns and all(r is not None and r.kind is Kind.ARRAY for r in returns):
                ret = returns[0]
        twos: set[int] = set()
        flows: set[int] = set()
        for r in returns:
            if r is not None and r.kind is Kind.PARAM:
                (twos if r.checked is DType.I64 else flows).update(r.params)
        sinks = tuple(s for s in scope.sinks if isinstance(s, ParamSink))
        return Summary(returns=ret, params=params, returns_params=frozenset(flows),
                       twos_params=frozenset(twos), sinks=sinks)

    # ------------------------------------------------------------- statements

    def _block(self, body: Iterable[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self._exec(stmt, scope)

    def _exec(self, stmt: ast.stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.Expr):
            outer, self._stmt = self._stmt, stmt
            try:
                self.eval(stmt.value, scope)
            finally:
                self._stmt = outer
            return
        if type(stmt) in _INERT_STATEMENTS:
            return  # nothing evaluated in them (their children are not expressions)
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
                ann = annotation_val(stmt.annotation, self.names)
                if ann is not None and ann.kind is Kind.MAPPING:
                    val = ann  # x: dict[int, int] = {}: a mapping whatever the value says
                elif val is None or (ann is not None and val.kind is Kind.PLAIN_LIST):
                    val = ann if ann is not None else val
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
        if any(syn.is_device_decorator(d, self.names) for d in fn.decorator_list):
            return  # Triton/CuTe device code: no host-side integer tables
        key = f"{scope.cls}.{fn.name}" if scope.cls else fn.name
        if scope.cls is not None and any(
            (self.names.qual(d) or "").rpartition(".")[2] in syn.PROPERTY_DECORATORS
            for d in fn.decorator_list
        ):
            self._properties.setdefault(fn.name, set()).add(key)
            if syn.is_abstract_body(fn):
                self._abstract.add(key)
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        if scope.cls is not None and positional and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list
        ):
            positional = positional[1:]
        params = tuple(a.arg for a in positional)
        if not self._may_report(fn, summarizing=not self._report):
            # nothing address-like in its text: its annotation and self attributes only
            if not self._report:
                self.functions.setdefault(key, Summary(
                    returns=annotation_val(fn.returns, self.names), params=params
                ))
                if scope.cls is not None:
                    self._collect_self_attrs(fn, scope)
            return
        inner = scope.child()
        inner.returns = []
        inner.sinks = []
        inner.summarizing = True
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            inner.env.pop(arg.arg, None)
        for i, arg in enumerate(positional):
            val = annotation_val(arg.annotation, self.names)
            inner.env[arg.arg] = val if val is not None and val.kind is not Kind.TUPLE else Val(
                Kind.PARAM, params=frozenset({i}), by_name=by_name(arg.arg) is not None
            )
        for arg in args.kwonlyargs:
            val = annotation_val(arg.annotation, self.names)
            if val is not None:
                inner.env[arg.arg] = val
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.eval(default, scope)
        self._block(fn.body, inner)
        if not self._report:
            made = self._summarize(inner, fn.returns, params)
            if made.interesting or key not in self.functions:
                self.functions[key] = made
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            known = bool(inner.returns) and all(
                r is not None and r.kind is not Kind.PARAM and not carries_address(r)
                for r in inner.returns
            )  # every return is a value it built (a list, an array), none an unknown one
            if known and not (made.returns_params or made.twos_params or self._hot(
                syn.SOURCE_TRIGGER, first, fn.end_lineno or first
            )):
                self._addressless.add(key)
        summary = self.functions.get(key)
        if summary is not None and summary.returns is not None and not (
            summary.params or summary.sinks
        ) and summary.returns.kind in (Kind.ADDR, Kind.ADDR_SEQ):
            scope.env[fn.name] = Val(
                Kind.ADDR_FUNC if summary.returns.kind is Kind.ADDR else Kind.ADDR_SEQ_FUNC,
                by_name=summary.returns.by_name, host=summary.returns.host,
            )

    def _class(self, cls: ast.ClassDef, scope: Scope) -> None:
        for base in [*cls.bases, *cls.decorator_list]:
            self.eval(base, scope)
        for kw in cls.keywords:
            self.eval(kw.value, scope)
        attrs = self.class_attrs.setdefault(cls.name, {})
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                val = annotation_val(stmt.annotation, self.names)
                if val is not None:
                    attrs.setdefault(stmt.target.id, val)
        inner = scope.child(cls=cls.name)
        inner.summarizing = False
        if not inner.host:
            inner.host = self._host_only(cls)
        self._block(cls.body, inner)

    def _host_only(self, cls: ast.ClassDef) -> bool:
        """Whether *cls* declares itself host-only (its addresses are host addresses).

        A class another class of the module derives from is not: its ``"cpu"`` may be a
        default that the subclasses override, and its methods run for them too.
        """
        known = self._host_classes.get(id(cls))
        if known is None:
            last = getattr(cls, "end_lineno", None) or len(self._lines)
            known = self._hot(syn.HOST_CLASS_TRIGGER, cls.lineno, last) and (
                syn.declares_host_only(cls, self.names)
            ) and cls.name not in self._derived_from()
            self._host_classes[id(cls)] = known
        return known

    def _derived_from(self) -> frozenset[str]:
        """The names the module's classes derive from: every name or attribute in their
        base and keyword lists (``class A(Base)``, ``class B(mod.Base, metaclass=M)``)."""
        if self._base_names is None:
            self._base_names = frozenset(
                n.id if isinstance(n, ast.Name) else n.attr
                for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef)
                for arg in (*c.bases, *(kw.value for kw in c.keywords))
                for n in ast.walk(arg) if isinstance(n, ast.Name | ast.Attribute)
            )
        return self._base_names

    def _assign(
        self, target: ast.expr, val: Val | None, value: ast.expr | None, scope: Scope
    ) -> None:
        if isinstance(target, ast.Name):
            if value is not None and (
                (val is None and syn.is_number_of_literal(value, self.names))
                or ((val is None or val.by_name) and self._gives_no_address(value, scope))
            ):
                # ptr = 0, ptr = np.int64(0): a counter; pointers = self._offsets(n): a
                # helper of this module that makes no address; not addresses by name
                scope.env[target.id] = None
            elif val is None:
                scope.env.pop(target.id, None)
            else:
                scope.env[target.id] = val
        elif isinstance(target, ast.Attribute):
            self.eval(target.value, scope)
            if self._is_self(target.value) and scope.cls is not None and val is not None:
                if val.kind is Kind.PARAM:
                    return
                known = self.class_attrs.setdefault(scope.cls, {})
                old = known.get(target.attr)
                if old is None or not (old.kind is Kind.MAPPING or (
                    old.kind is Kind.ARRAY and val.kind is Kind.ARRAY and val.dtype is None
                )):
                    known[target.attr] = val
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._assign(t, self.eval(v, scope), v, scope)
                return
            items: tuple[Val | None, ...] = ()
            if val is not None and val.kind is Kind.TUPLE:
                items = val.items
            elif val is not None and val.kind in (Kind.ADDR_SEQ, Kind.PARAM):
                items = tuple(
                    (val if val.kind is Kind.PARAM else Val(Kind.ADDR, by_name=val.by_name, host=val.host))
                    for _ in target.elts
                )
            for i, t in enumerate(target.elts):
                item = items[i] if i < len(items) else None
                self._assign(t.value if isinstance(t, ast.Starred) else t, item, None, scope)
        elif isinstance(target, ast.Subscript):
            self._store(target, val, value, scope)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, None, scope)

    def _gives_no_address(self, value: ast.expr, scope: Scope) -> bool:
        """Whether *value* calls a function or method of this module known to make no
        address (:attr:`_addressless`)."""
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and not self.names.is_imported(func.id):
            return func.id in self._addressless
        if isinstance(func, ast.Attribute) and self._is_self(func.value) and scope.cls:
            return f"{scope.cls}.{func.attr}" in self._addressless
        return False

    def _store(self, target: ast.Subscript, val: Val | None, value: ast.expr | None,
               scope: Scope) -> None:
        cont = self.eval(target.value, scope)
        self.eval(target.slice, scope)
        if cont is not None and cont.kind is Kind.PARAM:
            cont = None  # a parameter of unknown type: judged like any unknown container
        if cont is not None and cont.kind in (Kind.ADDR_SEQ, Kind.PLAIN_LIST) and (
            carries_address(val) or is_param(val)
        ) and isinstance(target.value, ast.Name):
            scope.env[target.value.id] = seq_of([cont, val]) or cont  # lst[i] = p
            return
        fix = self._store_fix(target, value, cont, val) if self._report else None
        self._sink(target, "store", scope, val, cont=cont, target=target, fix=fix)

    def _augassign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        val = self.eval(stmt.value, scope)
        target = stmt.target
        if isinstance(target, ast.Name):
            old = scope.env.get(target.id)
            if isinstance(stmt.op, ast.Add) and (
                (val is not None and val.kind in (Kind.ADDR_SEQ, Kind.PARAM))
                or (old is not None and old.kind is Kind.ADDR_SEQ)
            ):
                scope.env[target.id] = seq_of([old, val]) or ADDR_SEQ  # ptrs += [p]
            elif isinstance(stmt.op, ast.Sub | ast.Add) and syn.int_value(stmt.value) == syn.TWO_64:
                if old is not None and old.kind is Kind.ADDR:
                    self._emit(stmt, (Rule.DP004, "two's complement of a device address by hand "
                                                  "(+/- 2**64)"))  # a statement: no expression to rewrite
        elif isinstance(target, ast.Subscript):
            self._store(target, val, stmt.value, scope)
        else:
            self.eval(target, scope)

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: Scope) -> None:
        self._bind_iter(stmt.target, stmt.iter, scope)
        counter = syn.nonnegative_counter(stmt.target, stmt.iter, self._counters)
        if counter is not None:
            self._counters.append(counter)
        self._block(stmt.body, scope)
        if counter is not None:
            self._counters.pop()
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
                    hit = [v for v in column if carries_address(v) or is_param(v)]
                    self._assign(t, hit[0] if hit else None, None, scope)
                return
        self._assign(target, self._element(self.eval(it, scope)), None, scope)

    @staticmethod
    def _element(seq: Val | None) -> Val | None:
        if seq is None:
            return None
        if seq.kind is Kind.PARAM:
            return seq
        if seq.kind is Kind.ADDR_SEQ and seq.items and seq.items[0] is not None:
            return seq.items[0]  # a list of tuples: its row
        if seq.kind is Kind.ADDR_SEQ and seq.lib is not None:
            return Val(Kind.ADDR_ARRAY, lib=seq.lib, dtype=seq.dtype, host=seq.host)
        if seq.kind in (Kind.ADDR_SEQ, Kind.ADDR_ARRAY):
            return Val(Kind.ADDR, by_name=seq.by_name, checked=seq.checked, host=seq.host)
        if seq.kind is Kind.TUPLE:
            # for v in (hosts, ptrs, sizes): the element may be the list of addresses
            for item in seq.items:
                if carries_address(item):
                    return item
        return None

    def _if(self, stmt: ast.If, scope: Scope) -> None:
        self.eval(stmt.test, scope)
        branch = self._dtype_branch_stmt(stmt)
        self._block(stmt.body, scope)
        self._block(stmt.orelse, scope)
        if branch is not None:
            self._emit(stmt, (Rule.DP005, "per-platform pointer dtype chosen by an if statement"),
                       self._dtype_branch_stmt_fix(stmt))
            scope.env[branch] = Val(Kind.DTYPE, dtype=DType.BRANCH)

    def _dtype_branch_stmt_fix(self, stmt: ast.If) -> Fix | None:
        """The fix of a branch :meth:`_dtype_branch_stmt` recognised, when each side is that
        one assignment (``if is_xpu(): d = torch.uint64 / else: d = torch.int64``)."""
        if len(stmt.body) != 1 or len(stmt.orelse) != 1:
            return None
        first, second = stmt.body[0], stmt.orelse[0]
        assert isinstance(first, ast.Assign) and isinstance(second, ast.Assign)
        uint64_first = syn.literal_dtype(first.value, self.names) is DType.U64
        uint64 = first.value if uint64_first else second.value
        return self._dtype_branch_fix(stmt, stmt.test, uint64, uint64_first, first.targets[0])

    def _dtype_branch_stmt(self, stmt: ast.If) -> str | None:
        """``if is_xpu(): d = torch.uint64 / else: d = torch.int64`` -> ``"d"``."""
        if not stmt.orelse:
            return None

        def assigned(body: list[ast.stmt]) -> dict[str, DType]:
            out: dict[str, DType] = {}
            for s in body:
                if isinstance(s, ast.Assign) and len(s.targets) == 1:
                    t = s.targets[0]
                    dt = syn.literal_dtype(s.value, self.names)
                    if isinstance(t, ast.Name) and dt is not None:
                        out[t.id] = dt
            return out

        a, b = assigned(stmt.body), assigned(stmt.orelse)
        for name, dt in a.items():
            if {dt, b.get(name)} == {DType.U64, DType.I64} and syn.is_platform_test(stmt.test):
                return name
        return None


__all__ = ["ADDR", "Emitted", "ModuleAnalyzer"]
