"""What the engine reports: :class:`Finding` (one rule violation at one span) and its
optional :class:`Fix` (what a mechanical rewrite needs, and whether it is safe)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Literal

import attrs

from devptr.lint.rules import RULES, Category, Rule


@attrs.frozen(order=True)
class Span:
    """A region of the file as written: 1-based lines, 0-based character columns.

    Columns count characters (not UTF-8 bytes, which is what :mod:`ast` reports), so a
    libcst rewrite can use them directly. ``end_col`` is exclusive.
    """

    line: int
    col: int
    end_line: int
    end_col: int


class FixKind(enum.Enum):
    """The mechanical rewrite a finding admits (``devptr migrate`` has one per kind)."""

    STORE = "store"
    """``cont[idx] = addr`` -> ``devptr.store(cont, idx, DevicePtr(addr))``; spans:
    ``container``, ``index``, ``value``, and an ``owner`` for each ``X.data_ptr()`` call in
    the value (the ``X``)."""

    FILL = "fill"
    """``cont.fill_(addr)`` -> ``devptr.store(cont, slice(None), DevicePtr(addr))``; spans:
    ``container``, ``value``."""

    TABLE = "table"
    """``torch.tensor(ptrs, dtype=...)`` -> ``devptr.ptr_tensor(ptrs, ...)``; spans: ``call``,
    ``value`` (the data), ``dtype`` and ``device`` (when given), ``source`` and ``target``
    (the iterable and the loop variable of a one-generator comprehension, when the data is
    one), and an ``owner`` for each ``X.data_ptr()`` call in the data. Fact ``encoding``:
    ``"I64"`` or ``"U64"``, the table's dtype (kept by the rewrite). The rewrite passes
    ``list(source)`` (never a bare iterable) for ``[t.data_ptr() for t in source]``, so it
    iterates ``source`` as the comprehension did."""

    TWOS = "twos"
    """A hand-written two's complement -> ``DevicePtr(x).signed``; spans: ``value`` (x),
    ``owner`` (``X`` when x is ``X.data_ptr()``), ``helper`` (the called function, when the
    spelling is a call of a two's-complement helper). Fact ``encoder``: ``"ctypes"`` when
    the finding is the call ``ctypes.c_int64(x)`` (whose ``.value`` is the spelling)."""

    DTYPE_BRANCH = "dtype-branch"
    """``torch.uint64 if is_xpu() else torch.int64`` -> ``encoding_for(...).torch_dtype``;
    spans: ``value`` (the branch expression or ``if`` statement), ``platform`` (``p`` of a
    ``p.is_xpu()`` test) or ``device`` (``d.type`` of a ``d.type == "xpu"`` test),
    ``target`` (the name an ``if`` statement assigns). Fact ``dtype_attr``:
    ``"torch_dtype"`` or ``"numpy_dtype"``. A branch whose test is not one of those
    spellings, or whose uint64 side is not the XPU side, has no fix."""

    ADDRESSES = "addresses"
    """``base + idx * stride`` on arrays -> ``devptr.addresses(base, idx, stride)``; spans:
    ``base`` (the address), ``index`` (the numpy array), ``stride`` (absent for
    ``base + idx``), and ``owner`` for each ``X.data_ptr()`` call in the base. Always
    unsafe."""


Safety = Literal["safe", "unsafe"]


@attrs.frozen
class Fix:
    """A mechanical rewrite for a finding.

    Parameters
    ----------
    kind
        Which rewrite.
    safety
        ``"safe"`` when the rewrite keeps the behaviour for every input the original
        accepted; ``"unsafe"`` otherwise (applied only with ``--unsafe-fixes``).
    spans
        Named sub-expressions the rewrite needs (see :class:`FixKind` for the names).
    unsafe_reason
        Why the fix is unsafe (empty when safe).
    facts
        Named facts the rewrite needs besides spans (see :class:`FixKind`).
    """

    kind: FixKind
    safety: Safety
    spans: tuple[tuple[str, Span], ...] = ()
    unsafe_reason: str = ""
    facts: tuple[tuple[str, str], ...] = ()

    def span(self, name: str) -> Span | None:
        """The span called *name*, if the fix has one."""
        for key, value in self.spans:
            if key == name:
                return value
        return None

    def all_spans(self, name: str) -> tuple[Span, ...]:
        """Every span called *name* (``owner`` may occur more than once)."""
        return tuple(value for key, value in self.spans if key == name)

    def fact(self, name: str) -> str:
        """The fact called *name* (empty when the fix has none)."""
        return dict(self.facts).get(name, "")


@attrs.frozen(order=True)
class Finding:
    """One rule violation.

    Parameters
    ----------
    path
        The file, as given to the engine.
    line, col, end_line, end_col
        The offending expression in the file as written (1-based lines, 0-based character
        columns, ``end_col`` exclusive).
    rule
        The rule violated.
    message
        What really happens at this site.
    category
        The rule's category (``"defect"``, ``"convention"`` or ``"host"``).
    fix
        The mechanical rewrite, when one exists.
    callers
        For a table built by a helper from its argument: ``path:line`` of each call that
        passes addresses in (the finding is reported once, at the helper's table).
    sink
        Before :func:`collapse_helper_findings`: the helper's table (path, span) a finding
        at a call reached; None for every finding the engine returns.
    """

    path: str
    line: int
    col: int
    rule: Rule = attrs.field(order=lambda r: r.value)
    end_line: int = attrs.field(order=False, default=0)
    end_col: int = attrs.field(order=False, default=0)
    message: str = attrs.field(order=False, default="")
    category: Category = attrs.field(order=False, default="defect")
    fix: Fix | None = attrs.field(order=False, default=None, eq=False)
    callers: tuple[str, ...] = attrs.field(order=False, default=(), eq=False)
    sink: tuple[str, Span] | None = attrs.field(order=False, default=None, eq=False)

    @property
    def code(self) -> str:
        """The rule code (``DP001``)."""
        return self.rule.value

    @property
    def span(self) -> Span:
        """The offending expression's :class:`Span`."""
        return Span(self.line, self.col, self.end_line, self.end_col)

    @property
    def name(self) -> str:
        """The rule's name (``raw-address-store``)."""
        return RULES[self.rule].name


def _line_key(where: str) -> tuple[str, int]:
    path, _, line = where.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def collapse_helper_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per defect: the findings at the calls of a helper that builds a table
    from its argument become one finding at the helper's table, naming the calls.

    A finding the helper's table has of its own (its argument is named like addresses)
    is merged into it, keeping its fix. Idempotent; the result is sorted.
    """
    direct: list[Finding] = []
    groups: dict[tuple[str, int, int, Rule], list[Finding]] = {}
    for f in findings:
        if f.sink is None:
            direct.append(f)
        else:
            path, span = f.sink
            groups.setdefault((path, span.line, span.col, f.rule), []).append(f)
    own = {(f.path, f.line, f.col, f.rule): f for f in direct}
    out = [f for f in direct if (f.path, f.line, f.col, f.rule) not in groups]
    for key, calls in groups.items():
        path, _, _, rule = key
        span = calls[0].sink[1] if calls[0].sink is not None else calls[0].span
        mine = own.get(key)
        callers = tuple(sorted({f"{c.path}:{c.line}" for c in calls} | set(
            mine.callers if mine is not None else ()), key=_line_key))
        named = [w.rpartition(":")[2] if w.rpartition(":")[0] == path else w
                 for w in callers[:8]]
        shown = ", ".join(named) + (f" and {len(callers) - 8} more" if len(callers) > 8 else "")
        shown = f"line {shown}" if len(callers) == 1 and named[0] != callers[0] else (
            f"lines {shown}" if all(n != w for n, w in zip(named, callers, strict=False))
            else shown)
        out.append(Finding(
            path=path, line=span.line, col=span.col, rule=rule, end_line=span.end_line,
            end_col=span.end_col, category=calls[0].category,
            message=f"{calls[0].message}; addresses passed in at {shown}",
            fix=mine.fix if mine is not None else None, callers=callers,
        ))
    return sorted(out)
