"""What every rule unit declares (:class:`RuleUnit`), the rule codes (:class:`Rule`) and
what the evaluator hands a rule's fix builders (:class:`FixContext`).

A unit is one module of this package (``dp001_store`` ... ``dp008_host``): its code,
category and documentation, its detection at the sites the evaluator reports (a store, a
table constructor, a ctypes array, address arithmetic; DP004 and DP005 at the spellings
the evaluator recognises), its messages, the fix its findings carry and that fix's
safety, and the name of the libcst rewrite that applies the fix (``rewrite``, imported
only by ``devptr migrate``: the checker never imports libcst).
"""

from __future__ import annotations

import ast
import enum
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Protocol

if TYPE_CHECKING:
    from devptr.lint.engine._fix import FixKind, Span
    from devptr.lint.engine._names import Names
    from devptr.lint.engine._scope import Scope
    from devptr.lint.engine._values import DType, Val


class Rule(enum.Enum):
    """Rule identifiers. The value is the code users select and suppress (``DP001``)."""

    DP001 = "DP001"
    """A raw address stored into an int64 container, or into a torch uint64 tensor by
    setitem (fails on torch 2.13), or a two's-complement value into a uint64 one."""

    DP002 = "DP002"
    """A table built from raw addresses with a dtype that fails or loses bits."""

    DP003 = "DP003"
    """Address arithmetic with numpy arrays that overflows or promotes to float64."""

    DP004 = "DP004"
    """A hand-written two's-complement conversion of a device address (correct, convention)."""

    DP005 = "DP005"
    """A per-platform pointer dtype branch (``torch.uint64 if is_xpu() else torch.int64``)."""

    DP006 = "DP006"
    """Raw addresses written into a table that keeps the bits (uint64, ctypes) without devptr."""

    DP007 = "DP007"
    """A raw address combined with an int64 torch tensor: wraps to the int64 encoding."""

    DP008 = "DP008"
    """A host address (mmap'd, pinned, ``cudaHostRegister``'d) written into an integer table."""

    @property
    def info(self) -> RuleUnit:
        """This rule's unit (its :class:`RuleUnit`)."""
        from devptr.lint.engine.rules import RULES

        return RULES[self]


Category = Literal["defect", "convention", "host"]
"""Why a rule exists; only ``defect`` rules run by default."""

CATEGORIES: Final[tuple[Category, ...]] = ("defect", "convention", "host")

Verdict = tuple[Rule, str] | None
"""The rule a site violates and the message, or None."""


class FixContext(Protocol):
    """What a unit's fix builder reads from the evaluator (positions, names, values)."""

    names: Names
    counters: list[str]
    """Names of the enclosing loops' non-negative counters (``range``, ``enumerate``)."""

    def span(self, node: ast.AST) -> Span:
        """*node*'s position in the file as written (character columns)."""
        ...

    def owner_spans(self, node: ast.AST) -> list[tuple[str, Span]]:
        """``("owner", X)`` for every ``X.data_ptr()`` call under *node*."""
        ...

    def eval(self, node: ast.expr | None, scope: Scope) -> Val | None:
        """The abstract value of *node*."""
        ...


class RuleUnit:
    """One rule: what it catches, what really happens, and the devptr fix.

    Subclasses set the class attributes and override the site hooks their rule judges;
    a hook returns the finding's message, or None when the site is not this rule's. The
    hooks of the rules of one kind of site are exclusive: a site is one rule's at most.
    The evaluator calls the hooks of the selected rules only, after it has established
    that the value at the site carries an address.
    """

    rule: ClassVar[Rule]
    name: ClassVar[str]
    category: ClassVar[Category]
    summary: ClassVar[str]
    why: ClassVar[str]
    fix: ClassVar[str]
    """What to write instead (documentation, not the mechanical fix)."""
    mypy_code: ClassVar[str]
    in_mypy_plugin: ClassVar[bool] = True
    """Whether ``devptr.mypy_plugin`` reports this rule (syntax-only rules are engine-only)."""
    fix_kinds: ClassVar[tuple[FixKind, ...]] = ()
    """The mechanical fixes this rule's findings may carry (built in this rule's module,
    or, for DP006 and DP008, by the unit whose rewrite it is)."""
    rewrite: ClassVar[str] = ""
    """The module of ``devptr migrate`` that applies this unit's fix kind (``fix_kinds[0]``):
    named here, imported only by the codemod."""

    @property
    def default(self) -> bool:
        """Whether the rule runs without ``--select`` (defects only)."""
        return self.category == "defect"

    def store(
        self, cont: Val | None, value: Val, target: ast.Subscript | None, *, fill: bool
    ) -> str | None:
        """``cont[idx] = value`` (``cont.fill_(value)`` when *fill*; *target* None when the
        store is inside a helper, judged at its call)."""
        return None

    def table(self, data: Val, dtype: DType | None, ctor: str) -> str | None:
        """A table constructor (``torch.tensor(data, dtype=...)``; *ctor* its catalogue name)."""
        return None

    def ctypes_array(self, data: Val) -> str | None:
        """``(c_uint64 * n)(*data)`` / ``c_int64`` arrays."""
        return None

    def arith(self, addr: Val, other: Val) -> str | None:
        """``addr op other``: a raw address combined with an array."""
        return None

    def __repr__(self) -> str:
        return f"<rule {self.rule.value} {self.name}>"
