"""Scopes, and the value helpers of the evaluator: sequences, rows, elements, summaries."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from typing import Final

import attrs

from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._annotations import annotation_val
from devptr.lint.engine._names import Names
from devptr.lint.engine._values import DType, Kind, ParamSink, Summary, Val, carries_address

ADDR_BY_NAME: Final = Val(Kind.ADDR, by_name=True)
CHECKED_U64: Final = Val(Kind.ADDR, checked=DType.U64)
CHECKED_I64: Final = Val(Kind.ADDR, checked=DType.I64)
ADDR_SEQ_BY_NAME: Final = Val(Kind.ADDR_SEQ, by_name=True)


class Scope:
    """Names visible in one function body, plus the enclosing class (for ``self.x``).

    ``summarizing`` is set while the body of a function is walked with its parameters bound
    to ``PARAM`` values; ``sinks`` collects the parameters that reach a table sink.
    """

    def __init__(self, env: dict[str, Val | None], cls: str | None) -> None:
        self.env = env
        """Known local names; ``None`` for a name bound to a literal (``ptr = 0``): known
        not to be an address whatever the name says."""
        self.cls = cls
        self.returns: list[Val | None] = []
        self.sinks: list[object] = []
        self.summarizing = False
        self.host = False
        """Inside a class that declares itself host-only (see
        :func:`~devptr.lint.engine._syntax.declares_host_only`): every address is a host
        address."""

    def child(self, cls: str | None = None) -> Scope:
        """A nested scope seeing a copy of this one's names (same summary collectors)."""
        inner = Scope(dict(self.env), cls if cls is not None else self.cls)
        inner.sinks = self.sinks
        inner.summarizing = self.summarizing
        inner.host = self.host
        return inner


def seq_of(items: Iterable[Val | None]) -> Val | None:
    """The sequence value holding *items*: None without addresses or parameters.

    Keeps a shared encoding (all from ``DevicePtr.addr``), whether every address is only
    known by name, and whether all are host addresses. Parameters win: a list built from
    a parameter is a ``PARAM`` value while a function is summarized.
    """
    found: list[Val] = []
    rows: list[Val] = []
    params: set[int] = set()
    named = False
    for v in items:
        if v is None:
            continue
        if v.kind is Kind.PARAM:
            params.update(v.params)
            named = named or v.by_name
        elif v.kind is Kind.TUPLE:
            inner = seq_of(v.items)
            if inner is not None and inner.kind is Kind.PARAM:
                params.update(inner.params)
            elif inner is not None:
                found.append(inner)
                rows.append(v)
        elif carries_address(v):
            found.append(v)
            if v.kind is Kind.ADDR_SEQ and v.items:
                rows.extend(r for r in v.items if r is not None)
    if params and not found:
        return Val(Kind.PARAM, params=frozenset(params), by_name=named)
    if not found:
        return None
    checked = {v.checked for v in found}
    return Val(
        Kind.ADDR_SEQ,
        checked=checked.pop() if len(checked) == 1 else None,
        by_name=all(v.by_name for v in found),
        host=all(v.host for v in found),
        items=_row_of(rows) if len(rows) == len(found) else (),
    )


def _row_of(rows: list[Val]) -> tuple[Val | None, ...]:
    """For a list of tuples (``[(t.data_ptr(), n), ...]``): its row, one value per position
    (an address where any row holds one there), so ``for p, n in rows`` binds ``p`` to the
    addresses and ``n`` to nothing. Empty when the rows differ in length."""
    width = {len(r.items) for r in rows}
    if len(width) != 1:
        return ()
    row: list[Val | None] = []
    for i in range(width.pop()):
        column = [v for r in rows if (v := r.items[i]) is not None and carries_address(v)]
        row.append(None if not column else column[0] if len(column) == 1 else attrs.evolve(
            column[0], host=all(c.host for c in column), by_name=all(c.by_name for c in column)))
    return (Val(Kind.TUPLE, items=tuple(row)),)


def holds_addr(v: Val | None) -> bool:
    """Whether *v* is a known (not name-guessed) address value or address function."""
    return v is not None and (
        v.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC) or (carries_address(v) and not v.by_name)
    )


def on_host(v: Val | None) -> Val | None:
    """*v* with every address in it marked as a host address."""
    if v is None or v.host:
        return v
    if v.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY):
        return attrs.evolve(v, host=True, items=tuple(on_host(i) for i in v.items))
    if v.kind is Kind.TUPLE and carries_address(v):
        return attrs.evolve(v, items=tuple(on_host(i) for i in v.items))
    return v


@functools.lru_cache(maxsize=4096)
def by_name(name: str) -> Val | None:
    """An otherwise unknown name that says it holds an address (``base_addr``, ``src_ptr``)."""
    if syn.ADDRESS_SCALAR_NAME_RE.search(name):
        return ADDR_BY_NAME
    if syn.ADDRESS_LIST_NAME_RE.search(name):
        return ADDR_SEQ_BY_NAME
    return None


def element_of(seq: Val | None) -> Val | None:
    """The value of one element of *seq* (a loop or comprehension target over it)."""
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


def _returned(returns: list[Val | None]) -> Val | None:
    """What a function returns, from the values of its ``return`` statements."""
    if any(r is not None and r.kind is Kind.ADDR and r.checked is None for r in returns):
        addrs = [r for r in returns if r is not None and r.kind is Kind.ADDR]
        return Val(Kind.ADDR, host=all(r.host for r in addrs), by_name=all(r.by_name for r in addrs))
    if any(r is not None and r.kind is Kind.ADDR_SEQ for r in returns):
        seqs = [r for r in returns if r is not None and r.kind is Kind.ADDR_SEQ]
        return Val(Kind.ADDR_SEQ, host=all(r.host for r in seqs), by_name=all(r.by_name for r in seqs))
    if any(r is not None and r.kind is Kind.ADDR_ARRAY for r in returns):
        return next(r for r in returns if r is not None and r.kind is Kind.ADDR_ARRAY)
    if any(r is not None and r.kind is Kind.TUPLE and carries_address(r) for r in returns):
        return next(r for r in returns if r is not None and r.kind is Kind.TUPLE)
    return None


def summary_of(scope: Scope, annotation: ast.expr | None, params: tuple[str, ...],
               names: Names) -> Summary:
    """The summary of a function whose body was walked in *scope* (its returns and the
    parameter sinks it collected); *annotation* is its return annotation."""
    returns = scope.returns
    ret = _returned(returns)
    if ret is None:
        ann = annotation_val(annotation, names)
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
