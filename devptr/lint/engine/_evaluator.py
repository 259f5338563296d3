"""The address-provenance evaluator: one class that walks a module's statements in order,
evaluates their expressions to abstract values, and hands each site to the rule units.

The flow analysis is deliberately simple: one environment per function (closures see a copy
of the enclosing one), branches are walked in sequence, loops once. Facts come from the
address sources of :mod:`devptr.lint.catalogue`, annotations, allocator calls with a
``dtype=``, and summaries: what each function of the module (and, through a
:class:`~devptr.lint.engine._project.ProjectIndex`, of the scanned tree) returns and which
of its parameters reach a table sink. The module is walked twice: the first walk computes
the summaries, the second reports.

What a site is (a store, a table constructor, a ctypes array, address arithmetic, a
two's-complement spelling, a per-platform dtype branch) is the evaluator's; which rule it
violates, the message, the fix and its safety are the units' (:mod:`devptr.lint.engine.rules`),
and only the selected units are asked (:class:`~devptr.lint.engine.rules.RuleSet`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from devptr.lint import catalogue as cat
from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._annotations import annotation_val
from devptr.lint.engine._fix import Fix, Span
from devptr.lint.engine._names import Names
from devptr.lint.engine._scope import (
    ADDR_SEQ_BY_NAME,
    CHECKED_I64,
    CHECKED_U64,
    Scope,
    by_name,
    element_of,
    holds_addr,
    on_host,
    seq_of,
    summary_of,
)
from devptr.lint.engine._source import SourceText
from devptr.lint.engine._suppress import is_suppressed, suppressions
from devptr.lint.engine._values import (
    ADDR,
    ADDR_SEQ,
    DEVPTR,
    MAPPING,
    PLAIN_LIST,
    DType,
    Kind,
    Lib,
    ParamSink,
    Summary,
    Val,
    carries_address,
    is_addr,
    is_arrayish,
    is_param,
)
from devptr.lint.engine.rules import Rule, RuleSet, Verdict
from devptr.lint.engine.rules import dp001_store as dp001
from devptr.lint.engine.rules import dp002_table as dp002
from devptr.lint.engine.rules import dp003_arith as dp003
from devptr.lint.engine.rules import dp004_twos as dp004
from devptr.lint.engine.rules import dp005_dtype as dp005

if TYPE_CHECKING:
    from devptr.lint.engine._project import ProjectIndex


_INERT_STATEMENTS: Final = frozenset({
    ast.Import, ast.ImportFrom, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal,
})
"""Statements without expressions to evaluate."""

_ADDR_OPS: Final = (ast.Add, ast.Sub, ast.BitAnd, ast.BitOr)
_NO_VALUE: Final[Val | None] = None
HOST_ADDR: Final = Val(Kind.ADDR, host=True)
DEVICE_ADDR_PAIR: Final = Val(Kind.TUPLE, items=(None, ADDR))

_CAST_METHODS: Final = frozenset({"to", "astype", "type"})
"""Methods converting an array or tensor to the dtype they are given."""


def _joined_addresses(vals: list[Val]) -> Val | None:
    """One value for the addresses several properties of one name return (None for
    none)."""
    if not vals:
        return None
    if len(vals) == 1:
        return vals[0]
    if vals[0].kind is Kind.ADDR_SEQ:
        return seq_of(vals)
    return Val(Kind.ADDR, host=all(v.host for v in vals))


_FILL_VALUE_ARG: Final = {"fill_": 0, "fill": 0, "index_fill_": 2}
"""Methods of :data:`~devptr.lint.catalogue.STORE_METHODS` that fill an array with one
value, and the position of that value (``t.index_fill_(dim, index, value)``)."""

_PARAM_SINK_RULES: Final = (Rule.DP001, Rule.DP002, Rule.DP006, Rule.DP008)
"""The rules a suppression on a helper's sink covers for the helper's callers."""


def _called(fn: Val) -> Val:
    """The value a call of an address function (``ADDR_FUNC``/``ADDR_SEQ_FUNC``) gives."""
    return Val(Kind.ADDR if fn.kind is Kind.ADDR_FUNC else Kind.ADDR_SEQ, by_name=fn.by_name,
               host=fn.host)


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


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


class Evaluator:
    """Evaluate one parsed module and report what the selected rules find in it.

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
    rules
        The rules to report (default: every rule). Summaries do not depend on them.
    """

    def __init__(self, tree: ast.Module, source: str, path: str = "<string>", module: str = "",
                 project: ProjectIndex | None = None, *, is_package: bool = False,
                 rules: RuleSet | None = None) -> None:
        self.tree = tree
        self.path = path
        self.module = module
        self.project = project
        self.names = Names(tree, module, is_package=is_package)
        self.rules = rules if rules is not None else RuleSet()
        self.text = SourceText(source)
        self.emitted: dict[tuple[int, int, Rule], Emitted] = {}
        self.functions: dict[str, Summary] = {}
        self.class_attrs: dict[str, dict[str, Val]] = {}
        self.unresolved: set[str] = set()
        """Qualified names of calls to functions of other modules that got addresses."""
        self.counters: list[str] = []
        """Names of the enclosing ``for`` loops' non-negative counters (``range``,
        ``enumerate``): indices a ``devptr.store`` fix keeps."""
        self._suppressions: dict[int, frozenset[str]] | None = None
        self._tainted: tuple[str, ...] | None = None
        self._report = False
        self._stmt: ast.stmt | None = None
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
        self._quiet_nodes: set[int] = set()
        self._narrowed: set[int] = set()
        """Table constructor calls converted at once to a dtype narrower than 64 bits."""
        self._host_classes: dict[int, bool] = {}
        self._base_names: frozenset[str] | None = None
        self._evaluated: tuple[ast.Call, list[Val | None], list[Val | None]] | None = None
        """The call whose arguments :meth:`_args_kw` evaluated last, with their values."""
        self._other: dict[type[ast.AST], Callable[[Any, Scope], Val | None]] = {
            ast.Compare: self._compare, ast.UnaryOp: self._unary, ast.IfExp: self._ifexp,
            ast.ListComp: self._comprehension, ast.GeneratorExp: self._comprehension,
            ast.SetComp: self._comprehension, ast.DictComp: self._dictcomp,
            ast.List: self._display, ast.Tuple: self._display, ast.Set: self._display,
            ast.Dict: self._dict, ast.Lambda: self._lambda, ast.Starred: self._wrapped,
            ast.Await: self._wrapped, ast.NamedExpr: self._namedexpr, ast.BoolOp: self._boolop,
        }
        """The handlers of the expressions :meth:`eval` does not test for first."""

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

    def _walk_module(self) -> None:
        self._block(self.tree.body, Scope({}, None))

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
        last = getattr(fn, "end_lineno", None) or len(self.text.lines)
        if self.text.hot(syn.FUNCTION_TRIGGER, first, last):
            return True
        if summarizing:
            return self.text.hot(syn.SINK_TRIGGER, first, last)
        return self._tainted is not None and self.text.hot(self._tainted, first, last)

    # ------------------------------------------------------ positions (FixContext)

    def span(self, node: ast.AST) -> Span:
        """*node*'s position in the file as written (character columns)."""
        return self.text.span(node)

    def owner_spans(self, node: ast.AST) -> list[tuple[str, Span]]:
        """``("owner", X)`` for every ``X.data_ptr()`` call under *node* (for the codemod)."""
        return [
            ("owner", self.span(sub.func.value))
            for sub in ast.walk(node)
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in cat.ADDRESS_METHODS and not sub.args and not sub.keywords
        ]

    # ------------------------------------------------------------- reporting

    def _reports(self, rule: Rule) -> bool:
        """Whether this walk reports *rule* (the second walk, and the rule is selected)."""
        return self._report and rule in self.rules.active

    def _emit(self, node: ast.AST, verdict: Verdict, fix: Fix | None = None, *,
              sink: tuple[str, Span] | None = None) -> None:
        if verdict is None or not self._report:
            return
        rule, message = verdict
        span = self.span(node)
        stmt = self._stmt
        first = min(span.line, getattr(stmt, "lineno", span.line))
        last = max(span.end_line, getattr(stmt, "end_lineno", None) or span.end_line)
        key = (span.line, span.col, rule)
        if key not in self.emitted:
            self.emitted[key] = Emitted(rule, message, span, first, last, fix, sink)

    def _store_verdict(self, cont: Val | None, value: Val | None, target: ast.Subscript | None,
                       *, fill: bool = False) -> Verdict:
        """The selected rule a store of *value* into *cont* violates, and its message."""
        if not carries_address(value):
            return None
        assert value is not None
        for unit in self.rules.store:
            message = unit.store(cont, value, target, fill=fill)
            if message is not None:
                return unit.rule, message
        return None

    def _table_verdict(self, data: Val | None, dtype: DType | None, ctor: str) -> Verdict:
        """The selected rule a table constructor *ctor* over *data* violates."""
        if data is None or data.kind not in (Kind.ADDR, Kind.ADDR_SEQ, Kind.TUPLE) or (
            not carries_address(data)
        ):
            return None
        for unit in self.rules.table:
            message = unit.table(data, dtype, ctor)
            if message is not None:
                return unit.rule, message
        return None

    def _ctypes_verdict(self, data: Val | None) -> Verdict:
        if not carries_address(data):
            return None
        assert data is not None
        for unit in self.rules.ctypes_array:
            message = unit.ctypes_array(data)
            if message is not None:
                return unit.rule, message
        return None

    def _arith_verdict(self, addr: Val, other: Val) -> Verdict:
        for unit in self.rules.arith:
            message = unit.arith(addr, other)
            if message is not None:
                return unit.rule, message
        return None

    def _sink(
        self, node: ast.AST, kind: str, scope: Scope, value: Val | None, *,
        cont: Val | None = None, dtype: DType | None = None, ctor: str = "",
        target: ast.Subscript | None = None, fix: Callable[[], Fix | None] | None = None,
    ) -> None:
        """A value reaching a store/table sink: a finding, or a parameter-sink summary.
        *fix* builds the finding's fix (called only when a selected rule reports it)."""
        if value is not None and value.kind is Kind.PARAM:
            if self._sink_suppressed(node):
                return  # `# devptr: ignore[...]` on the sink covers the callers too
            if scope.summarizing and (kind != "store" or cont is not None):
                for p in value.params:
                    scope.sinks.append(ParamSink(
                        param=p, name="", kind=kind, cont=cont, dtype=dtype, ctor=ctor,
                        is_slice=syn.is_slice(target),
                        where=f"{self.path}:{getattr(node, 'lineno', 0)}", span=self.span(node),
                    ))
            if not value.by_name or kind != "table" or ctor in cat.STACKING_CONSTRUCTORS:
                return  # np.concatenate([src_ptrs, ...]) of parameters: see _table
            value = Val(Kind.ADDR_SEQ, by_name=True, host=scope.host)  # named for addresses
        if not self._report:
            return
        if kind == "table":
            verdict = self._table_verdict(value, dtype, ctor)
        else:
            verdict = self._store_verdict(cont, value, target, fill=kind == "fill")
        if verdict is not None:
            self._emit(node, verdict, fix() if fix is not None else None)

    def _sink_suppressed(self, node: ast.AST) -> bool:
        source = self.text.text
        if "devptr:" not in source:
            return False
        if self._suppressions is None:
            self._suppressions = suppressions(source)
        stmt = self._stmt
        first: int = getattr(stmt, "lineno", 0) or getattr(node, "lineno", 1) or 1
        end: int | None = getattr(stmt, "end_lineno", None)
        last = end if end is not None else first
        return any(is_suppressed(self._suppressions, rule.value, first, last)
                   for rule in _PARAM_SINK_RULES)

    def _twos_spelling(self, node: ast.AST, message: str, fix: Callable[[], Fix | None]) -> None:
        """A two's-complement spelling of an address at *node* (DP004, when selected)."""
        if self._reports(Rule.DP004):
            self._emit(node, (Rule.DP004, message), fix())

    # ------------------------------------------------------------- summaries

    def _external_summary(self, name: str) -> Summary | None:
        if self.project is None:
            return None
        return self.project.lookup(name)

    def _note_unresolved(self, name: str) -> None:
        if "." in name and not self._report:
            self.unresolved.add(name)

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
        return _joined_addresses([v for v in vals if not v.by_name])

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
        return _joined_addresses([
            v for m in sorted(self._imported_modules)
            if (v := self.project.properties.get(m, {}).get(attr)) is not None
        ])

    def exported_properties(self) -> dict[str, Val]:
        """The module's properties that give addresses (:meth:`property_value`), by name:
        what modules importing this one learn (recorded in the project index)."""
        return {attr: val for attr in sorted(self._properties)
                if (val := self.property_value(attr)) is not None}

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
            self._summary_sink(sink, *arg(sink.param), scope, short)
        for i in sorted(summary.twos_params):
            val, arg_node = arg(i)
            if val is not None and val.kind is Kind.PARAM:
                return Val(Kind.PARAM, params=val.params, checked=DType.I64)
            if val is not None and val.kind is Kind.ADDR and arg_node is not None:
                if self._reports(Rule.DP004):
                    self._emit(node, (Rule.DP004, dp004.by_hand(f"in {short}()")),
                               dp004.twos_fix(self, arg_node, val, node.func))
                return Val(Kind.ADDR, checked=DType.I64, host=val.host)
            return None  # a hash or a key through the same helper: not an address
        for i in sorted(summary.returns_params):
            val, _ = arg(i)
            if val is not None and (carries_address(val) or val.kind is Kind.PARAM):
                return val
        return summary.returns

    def _summary_sink(self, sink: ParamSink, val: Val | None, arg_node: ast.expr | None,
                      scope: Scope, short: str) -> None:
        """A helper's parameter sink at a call: a finding at the argument, or (while this
        function is summarized) a sink of its own parameter."""
        if val is None or arg_node is None:
            return
        if val.kind is Kind.PARAM:
            if scope.summarizing:
                for p in val.params:
                    scope.sinks.append(ParamSink(
                        param=p, name="", kind=sink.kind, cont=sink.cont, dtype=sink.dtype,
                        ctor=sink.ctor, is_slice=sink.is_slice, where=sink.where, span=sink.span,
                    ))
            return
        if not carries_address(val) or val.by_name or not self._report:
            return
        if sink.kind == "table":
            verdict = self._table_verdict(val, sink.dtype, sink.ctor) if sink.ctor != "ctypes" else None
        else:
            verdict = self._store_verdict(sink.cont, val, None, fill=sink.kind == "fill")
        if verdict is None:
            return
        rule, message = verdict
        if sink.span is None:
            self._emit(arg_node, (rule, f"{message} (in {short}() at {sink.where})"))
        else:  # reported once, at the helper's table: collapse_helper_findings
            self._emit(arg_node, (rule, f"{message} (in {short}())"),
                       sink=(sink.where.rpartition(":")[0], sink.span))

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
            self._statement(stmt, scope)
        finally:
            self._stmt = outer

    def _statement(self, stmt: ast.stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(stmt, scope)
        elif isinstance(stmt, ast.ClassDef):
            self._class(stmt, scope)
        elif isinstance(stmt, ast.Assign):
            val = self.eval(stmt.value, scope)
            for target in stmt.targets:
                self._assign(target, val, stmt.value, scope)
        elif isinstance(stmt, ast.AnnAssign):
            self._annassign(stmt, scope)
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

    def _annassign(self, stmt: ast.AnnAssign, scope: Scope) -> None:
        val = self.eval(stmt.value, scope) if stmt.value is not None else None
        ann = annotation_val(stmt.annotation, self.names)
        if ann is not None and ann.kind is Kind.MAPPING:
            val = ann  # x: dict[int, int] = {}: a mapping whatever the value says
        elif val is None or (ann is not None and val.kind is Kind.PLAIN_LIST):
            val = ann if ann is not None else val
        self._assign(stmt.target, val, stmt.value, scope)

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
        positional = [*fn.args.posonlyargs, *fn.args.args]
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
        inner = self._parameters(fn, positional, scope)
        self._block(fn.body, inner)
        if not self._report:
            made = summary_of(inner, fn.returns, params, self.names)
            if made.interesting or key not in self.functions:
                self.functions[key] = made
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            known = bool(inner.returns) and all(
                r is not None and r.kind is not Kind.PARAM and not carries_address(r)
                for r in inner.returns
            )  # every return is a value it built (a list, an array), none an unknown one
            if known and not (made.returns_params or made.twos_params or self.text.hot(
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

    def _parameters(self, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                    positional: list[ast.arg], scope: Scope) -> Scope:
        """The scope of *fn*'s body: its positional parameters bound to ``PARAM`` values
        (or their annotations), keyword-only ones to their annotations."""
        args = fn.args
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
        return inner

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
            last = getattr(cls, "end_lineno", None) or len(self.text.lines)
            known = self.text.hot(syn.HOST_CLASS_TRIGGER, cls.lineno, last) and (
                syn.declares_host_only(cls, self.names)
            ) and cls.name not in self._derived_from()
            self._host_classes[id(cls)] = known
        return known

    def _derived_from(self) -> frozenset[str]:
        """The names the module's classes derive from (computed once)."""
        if self._base_names is None:
            self._base_names = syn.base_names(self.tree)
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
            self._assign_attribute(target, val, scope)
        elif isinstance(target, ast.Tuple | ast.List):
            self._unpack(target, val, value, scope)
        elif isinstance(target, ast.Subscript):
            self._store(target, val, value, scope)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, None, scope)

    def _assign_attribute(self, target: ast.Attribute, val: Val | None, scope: Scope) -> None:
        self.eval(target.value, scope)
        if _is_self(target.value) and scope.cls is not None and val is not None:
            if val.kind is Kind.PARAM:
                return
            known = self.class_attrs.setdefault(scope.cls, {})
            old = known.get(target.attr)
            if old is None or not (old.kind is Kind.MAPPING or (
                old.kind is Kind.ARRAY and val.kind is Kind.ARRAY and val.dtype is None
            )):
                known[target.attr] = val

    def _unpack(self, target: ast.Tuple | ast.List, val: Val | None, value: ast.expr | None,
                scope: Scope) -> None:
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

    def _gives_no_address(self, value: ast.expr, scope: Scope) -> bool:
        """Whether *value* calls a function or method of this module known to make no
        address (:attr:`_addressless`)."""
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and not self.names.is_imported(func.id):
            return func.id in self._addressless
        if isinstance(func, ast.Attribute) and _is_self(func.value) and scope.cls:
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
        self._sink(target, "store", scope, val, cont=cont, target=target,
                   fix=lambda: dp001.store_fix(self, target, value, cont, val))

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
                    # a statement: no expression to rewrite
                    self._twos_spelling(stmt, dp004.by_hand("+/- 2**64"), lambda: None)
        elif isinstance(target, ast.Subscript):
            self._store(target, val, stmt.value, scope)
        else:
            self.eval(target, scope)

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: Scope) -> None:
        self._bind_iter(stmt.target, stmt.iter, scope)
        counter = syn.nonnegative_counter(stmt.target, stmt.iter, self.counters)
        if counter is not None:
            self.counters.append(counter)
        self._block(stmt.body, scope)
        if counter is not None:
            self.counters.pop()
        self._block(stmt.orelse, scope)

    def _bind_iter(self, target: ast.expr, it: ast.expr, scope: Scope) -> None:
        """Bind a loop/comprehension target to the element value of *it*."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name):
            if it.func.id == "zip" and isinstance(target, ast.Tuple):
                for t, arg in zip(target.elts, it.args, strict=False):
                    self._assign(t, element_of(self.eval(arg, scope)), None, scope)
                return
            if it.func.id == "enumerate" and isinstance(target, ast.Tuple) and it.args:
                elem = element_of(self.eval(it.args[0], scope))
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
        self._assign(target, element_of(self.eval(it, scope)), None, scope)

    def _if(self, stmt: ast.If, scope: Scope) -> None:
        self.eval(stmt.test, scope)
        branch = syn.dtype_branch_target(stmt, self.names)
        self._block(stmt.body, scope)
        self._block(stmt.orelse, scope)
        if branch is not None:
            if self._reports(Rule.DP005):
                self._emit(stmt, (Rule.DP005, dp005.STATEMENT), dp005.statement_fix(self, stmt))
            scope.env[branch] = Val(Kind.DTYPE, dtype=DType.BRANCH)

    # ------------------------------------------------------------- expressions

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
        handler = self._other.get(type(node))
        if handler is not None:
            return handler(node, scope)
        return self._children(node, scope)

    def _children(self, node: ast.expr, scope: Scope) -> Val | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.eval(child, scope)
            elif isinstance(child, ast.comprehension):
                self.eval(child.iter, scope)
        return None

    def _compare(self, node: ast.Compare, scope: Scope) -> Val | None:
        self.eval(node.left, scope)
        for cmp in node.comparators:
            self.eval(cmp, scope)
        return None

    def _unary(self, node: ast.UnaryOp, scope: Scope) -> Val | None:
        self.eval(node.operand, scope)
        return None

    def _wrapped(self, node: ast.Starred | ast.Await, scope: Scope) -> Val | None:
        return self.eval(node.value, scope)

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp,
                       scope: Scope) -> Val | None:
        inner = scope.child()
        for gen in node.generators:
            self._bind_iter(gen.target, gen.iter, inner)
            for cond in gen.ifs:
                self.eval(cond, inner)
        return seq_of([self.eval(node.elt, inner)])

    def _dictcomp(self, node: ast.DictComp, scope: Scope) -> Val | None:
        inner = scope.child()
        for gen in node.generators:
            self._bind_iter(gen.target, gen.iter, inner)
        self.eval(node.key, inner)
        self.eval(node.value, inner)
        return MAPPING

    def _display(self, node: ast.List | ast.Tuple | ast.Set, scope: Scope) -> Val | None:
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

    def _dict(self, node: ast.Dict, scope: Scope) -> Val | None:
        for k in node.keys:
            self.eval(k, scope)
        for v in node.values:
            self.eval(v, scope)
        return MAPPING

    def _lambda(self, node: ast.Lambda, scope: Scope) -> Val | None:
        inner = scope.child()
        for arg in node.args.args:
            inner.env.pop(arg.arg, None)
        body = self.eval(node.body, inner)
        if body is not None and body.kind in (Kind.ADDR, Kind.ADDR_SEQ):
            return Val(Kind.ADDR_FUNC if body.kind is Kind.ADDR else Kind.ADDR_SEQ_FUNC,
                       by_name=body.by_name, host=body.host)
        return None

    def _namedexpr(self, node: ast.NamedExpr, scope: Scope) -> Val | None:
        val = self.eval(node.value, scope)
        self._assign(node.target, val, node.value, scope)
        return val

    def _boolop(self, node: ast.BoolOp, scope: Scope) -> Val | None:
        options = [self.eval(v, scope) for v in node.values]
        for item in options:
            if item is not None and (carries_address(item) or is_param(item) or is_arrayish(item)):
                return item
        return None

    def _attribute(self, node: ast.Attribute, scope: Scope) -> Val | None:
        if node.attr in syn.DTYPE_ATTRS:
            dt = syn.literal_dtype(node, self.names)
            if dt is not None and dt is not DType.OTHER:
                return Val(Kind.DTYPE, dtype=dt)
        if _is_self(node.value) and scope.cls is not None:
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
        return self._attribute_of(recv, node)

    @staticmethod
    def _attribute_of(recv: Val, node: ast.Attribute) -> Val | None:
        """``recv.attr`` for a known receiver value."""
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

    def _ifexp(self, node: ast.IfExp, scope: Scope) -> Val | None:
        self.eval(node.test, scope)
        body = self.eval(node.body, scope)
        orelse = self.eval(node.orelse, scope)
        operand = syn.twos_ifexp_operand(node)
        if operand is not None:
            for branch in (node.body, node.orelse):
                self._quiet_nodes.add(id(branch))
            return self._twos(node, operand, scope, "x - 2**64 if x >= 2**63 else x")
        if syn.is_dtype_branch(node, self.names):
            if self._reports(Rule.DP005):
                self._emit(node, (Rule.DP005, dp005.EXPRESSION), dp005.expression_fix(self, node))
            return Val(Kind.DTYPE, dtype=DType.BRANCH)
        for v in (body, orelse):
            if v is not None and v.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.DEVPTR, Kind.PARAM):
                return v
        return body if body is not None else orelse

    def _twos(self, node: ast.expr, operand: ast.expr, scope: Scope, spelled: str) -> Val | None:
        """A two's-complement spelling over *operand*: reported only when it is an address."""
        val = self.eval(operand, scope)
        if val is not None and val.kind is Kind.PARAM:
            if syn.names_an_address(operand):
                self._twos_spelling(node, dp004.by_hand(spelled),
                                    lambda: dp004.twos_fix(self, operand, None))
            return Val(Kind.PARAM, params=val.params, checked=DType.I64)
        if is_addr(val) or (val is None and syn.names_an_address(operand)):
            self._twos_spelling(node, dp004.by_hand(spelled),
                                lambda: dp004.twos_fix(self, operand, val))
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
            # no fix: `x - 2**64` alone is half a spelling (its guard is elsewhere)
            self._twos_spelling(node, dp004.by_hand("+/- 2**64"), lambda: None)
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
                return self._address_and_array(node, a, b, a is left, scope)
        if is_addr(left) or is_addr(right):
            return self._address_arith(node, left, right)
        if isinstance(node.op, ast.Add) and (
            (left is not None and left.kind is Kind.ADDR_SEQ)
            or (right is not None and right.kind is Kind.ADDR_SEQ)
        ):
            return seq_of([left, right])  # [a] + [b]: list concatenation
        return self._arrays_arith(node, left, right)

    def _address_and_array(self, node: ast.BinOp, addr: Val, array: Val, addr_left: bool,
                           scope: Scope) -> Val:
        """``addr op array``: an address array (DP003/DP007 by the array's library)."""
        verdict = self._arith_verdict(addr, array) if self._report else None
        fix = None
        if verdict is not None and verdict[0] is Rule.DP003 and isinstance(
            node.op, ast.Add
        ) and not addr.np_scalar:  # DevicePtr() takes a Python int, not np.uint64
            fix = dp003.addresses_fix(self, node, addr_left, scope)
        self._emit(node, verdict, fix)
        return Val(Kind.ADDR_ARRAY, lib=array.lib, dtype=array.dtype, host=addr.host)

    def _address_arith(self, node: ast.BinOp, left: Val | None, right: Val | None) -> Val | None:
        """Arithmetic on an address and a scalar: an address, or a distance or size."""
        if isinstance(node.op, ast.Sub) and is_addr(left) and is_addr(right):
            return None  # a distance, not an address
        if not isinstance(node.op, _ADDR_OPS):
            return None  # p % 16, p // page: alignment and sizes
        if isinstance(node.op, ast.Sub) and not is_addr(left):
            return None  # limit - p: room left, not an address
        addr = left if is_addr(left) else right
        other = right if addr is left else left
        if addr is not None and addr.np_scalar and self._report and syn.is_signed_numpy_scalar(
            node.right if addr is left else node.left, self.names
        ):
            self._emit(node, self._arith_verdict(addr, Val(Kind.ARRAY, lib=Lib.NUMPY)))
        if other is not None and other.kind is Kind.ADDR_SEQ:
            return None
        if addr is not None and addr.checked is not None:
            return Val(Kind.ADDR, by_name=addr.by_name, host=addr.host)
        return addr

    def _arrays_arith(self, node: ast.BinOp, left: Val | None, right: Val | None) -> Val | None:
        """Arithmetic between arrays: an address array stays one (uint64 with int64: DP003)."""
        for a, b in ((left, right), (right, left)):
            if a is not None and a.kind is Kind.ADDR_ARRAY:
                if b is not None and b.kind is Kind.ARRAY and b.dtype is DType.I64 and (
                    a.dtype is DType.U64 and b.lib is Lib.NUMPY
                ) and self._reports(Rule.DP003):
                    self._emit(node, (Rule.DP003, dp003.MIXED_ARRAYS))
                return a
        if is_arrayish(left):
            return left
        if is_arrayish(right):
            return right
        return None

    # --------------------------------------------------------------------- calls

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
        """The positional arguments' values (keywords are evaluated too), remembered for
        :meth:`_call` (which then evaluates nothing twice when :meth:`_method_call` falls
        through to it)."""
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
        known, val = self._catalogued_call(node, name, vals, scope)
        if known:
            return val
        known, val = self._conversion_call(node, name, vals)
        if known:
            return val
        return self._helper_call(node, name, vals, kws, scope)

    def _catalogued_call(
        self, node: ast.Call, name: str, vals: list[Val | None], scope: Scope
    ) -> tuple[bool, Val | None]:
        """A call of a catalogue name (constructors, sinks, allocators, sources): whether
        *name* is one, and the value."""
        base = name.rpartition(".")[2]
        if name in cat.DEVPTR_CONSTRUCTORS or name == "DevicePtr" or name.endswith(
            ("DevicePtr.of", "DevicePtr.from_signed")
        ):
            return True, DEVPTR
        if name in cat.DEVPTR_SINKS:
            return True, None
        if name in cat.TABLE_SINKS:
            return True, self._table(node, name, vals, scope)
        if name in cat.ALLOCATORS or name == "torch.from_numpy":
            return True, self._allocation(node, name, vals, scope)
        if name == "numpy.copyto" and len(vals) >= 2 and is_addr(vals[1]):
            # np.copyto(dst, src): dst receives the addresses
            self._sink(node, "store", scope, vals[1], cont=self.eval(node.args[0], scope))
            return True, None
        if name in cat.OUT_UFUNCS:
            out = syn.kwarg(node, "out")
            if out is not None and any(is_addr(v) or (
                v is not None and v.kind is Kind.ADDR_ARRAY) for v in vals
            ):
                cont = self.eval(out, scope)
                addr = next(v for v in vals if v is not None and v.kind in (
                    Kind.ADDR, Kind.ADDR_ARRAY))
                self._sink(node, "store", scope, addr, cont=cont)
            return True, None
        if name in cat.MAPPING_CONSTRUCTORS or base in ("defaultdict", "OrderedDict"):
            return True, MAPPING
        if name in cat.ADDRESS_FUNCTIONS:
            return True, ADDR
        if name in cat.ADDRESS_PAIR_FUNCTIONS:
            return True, DEVICE_ADDR_PAIR
        if name in cat.HOST_ADDRESS_FUNCTIONS:
            return True, HOST_ADDR
        if base in cat.ADDRESS_FUNCTION_SUFFIXES:
            return True, (
                DEVICE_ADDR_PAIR if base.startswith("cu") else ADDR_SEQ if "shared" in base else ADDR
            )
        return False, None

    def _conversion_call(
        self, node: ast.Call, name: str, vals: list[Val | None]
    ) -> tuple[bool, Val | None]:
        """A conversion that keeps or encodes an address (``c_void_p``, ``c_int64``,
        ``ctypes.cast``, ``int``, ``np.uint64``, ``list``, ``map``, ``struct``)."""
        base = name.rpartition(".")[2]
        first = vals[0] if vals else None
        if name in cat.VOID_POINTER_TYPES and is_addr(first):
            return True, first
        if name in cat.SIGNED_ENCODERS and is_addr(first):
            operand = node.args[0]
            self._twos_spelling(node, dp004.through(name),
                                lambda: dp004.twos_fix(self, operand, first, encoder=True))
            return True, CHECKED_I64  # ctypes.c_int64(p).value: the int64 encoding
        if name == "ctypes.cast" and len(node.args) == 2:
            target = node.args[1]
            if isinstance(target, ast.Call) and target.args:
                dt = syn.literal_dtype(target.args[0], self.names)
                if dt in (DType.I64, DType.U64):
                    return True, Val(Kind.ARRAY, lib=Lib.CTYPES, dtype=dt)
        if base == "int" and (is_addr(first) or is_param(first)):
            return True, first
        if name in ("numpy.uint64", "numpy.ulonglong") and is_addr(first):
            return True, Val(Kind.ADDR, np_scalar=True, host=first.host if first else False)
        if base in ("list", "tuple", "sorted", "reversed") and first is not None:
            if first.kind in (Kind.ADDR_SEQ, Kind.PARAM):
                return True, first
            if first.kind is Kind.ADDR_ARRAY:
                return True, ADDR_SEQ
        if base == "map" and node.args:
            fn = node.args[0]
            if (first is not None and first.kind is Kind.ADDR_FUNC) or (
                isinstance(fn, ast.Attribute) and fn.attr in cat.ADDRESS_METHODS
            ):
                return True, ADDR_SEQ
        if name == "struct.unpack" and syn.is_struct_twos(node, self.names):
            self._twos_spelling(node, dp004.through("struct q/Q"), lambda: None)
            return True, Val(Kind.ADDR_SEQ, checked=DType.I64)
        return False, None

    def _helper_call(self, node: ast.Call, name: str, vals: list[Val | None],
                     kws: list[Val | None], scope: Scope) -> Val | None:
        """A call of a function of this module, of the tree, or of an unknown one."""
        func = node.func
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
        return by_name(name.rpartition(".")[2])  # get_group_data_ptrs(...): named for addresses

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
                    if self._report:
                        self._emit(node, self._ctypes_verdict(data))
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
        return Val(Kind.ARRAY, lib=lib, dtype=dt, host=syn.is_host_allocation(node, self.names))

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
        dt = syn.py_array_dtype(dtype_node) if name == cat.PY_ARRAY else (
            DType.I64 if name == "torch.LongTensor" else self._dtype_of(dtype_node, scope)
        )
        dtype_unknown = dtype_node is not None and dt is None
        joined = self._joined(name, lib, data_node, data, dt, scope)
        if joined is not None:
            return joined
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
                found = data
                self._sink(node, "table", scope, data, dtype=dt, ctor=name,
                           fix=lambda: dp002.table_fix(self, node, name, data_node, dtype_node, found))
                return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt)
        return Val(Kind.ARRAY, lib=lib, dtype=dt)

    def _joined(self, name: str, lib: Lib, data_node: ast.expr | None, data: Val | None,
                dt: DType | None, scope: Scope) -> Val | None:
        """The value of a constructor that joins arrays (``np.stack``, ``torch.cat``), or
        None when *name* is not one or its data is not arrays."""
        stacking = name in cat.STACKING_CONSTRUCTORS
        if stacking and isinstance(data_node, ast.List | ast.Tuple) and any(
            is_arrayish(self.eval(e, scope)) for e in data_node.elts
        ):
            # arrays stacked: address arrays only if the list holds addresses (or a
            # parameter); a list literal of plain tensors evaluates to PLAIN_LIST / TUPLE
            holds = carries_address(data) or is_param(data)
            return Val(Kind.ADDR_ARRAY if holds else Kind.ARRAY, lib=lib, dtype=dt)
        if stacking and data is not None and data.kind is Kind.ADDR_SEQ and data.lib is not None:
            return Val(Kind.ADDR_ARRAY, lib=lib, dtype=dt or data.dtype, host=data.host)
        if stacking and data is not None and data.by_name and carries_address(data):
            # np.concatenate([src_ptrs, dst_ptrs]): values only *named* for addresses, most
            # often int64 arrays, which join into int64: no float64 loss to report
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
        if name in ("torch.stack", "torch.cat", "torch.concat"):
            if data is not None and data.kind is Kind.ADDR_ARRAY:
                return data
            return Val(Kind.ARRAY, lib=lib, dtype=dt)
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
        if _is_self(func.value) and scope.cls is not None:
            summary = self.functions.get(f"{scope.cls}.{attr}")
            if summary is not None:
                vals = self._evaluated_args(node, scope)
                return self._call_summary(node, summary, vals, scope, attr, method=True)
            attr_val = self.class_attrs.get(scope.cls, {}).get(attr)
            if attr_val is not None and attr_val.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC):
                self._args_kw(node, scope)
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
            self._grow(func, attr, recv, vals[-1], scope)
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
        return self._array_method(node, attr, recv)

    def _grow(self, func: ast.Attribute, attr: str, recv: Val | None, arg: Val | None,
              scope: Scope) -> None:
        """``lst.append(p)``, ``lst.extend(ptrs)``...: the list now holds addresses."""
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
                return
        if gained and (recv is None or recv.kind in (Kind.PLAIN_LIST, Kind.ADDR_SEQ, Kind.PARAM)):
            before = [recv] if recv is not None and recv.kind in (Kind.ADDR_SEQ, Kind.PARAM) else []
            self._assign(func.value, seq_of([*before, arg]), None, scope)

    def _array_method(self, node: ast.Call, attr: str, recv: Val) -> Val | None:
        """``recv.attr(...)`` for a known receiver: views, conversions, copies of arrays."""
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


__all__ = ["ADDR", "Emitted", "Evaluator"]
