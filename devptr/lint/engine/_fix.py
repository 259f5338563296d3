"""A finding's mechanical rewrite: :class:`Fix` (what the rewrite needs, and whether it is
safe), its :class:`FixKind` and the :class:`Span` positions both use.

Below the rule units (:mod:`devptr.lint.engine.rules`): each unit builds the fixes of its
findings from these classes, and :class:`~devptr.lint.engine._finding.Finding` carries them.
"""

from __future__ import annotations

import enum
from typing import Literal

import attrs


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
