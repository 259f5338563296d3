"""The rule catalogue shared by ``devptr check``, the mypy plugin and ``devptr migrate``.

One rule per way of getting a device address wrong (or, for convention rules, of handling
one correctly but outside devptr). Each rule is one unit, a module of
:mod:`devptr.lint.engine.rules` (its detection, messages, fix and the fix's safety); this
module is the catalogue's public name. Every rule has a :class:`Category`:

``defect``
    the code breaks for addresses >= 2**63 (Intel XPU sets bit 63) or behaves differently
    on torch 2.13 and 2.14. On by default.
``convention``
    the code is correct today (raw addresses in a uint64 table, a correct hand-written
    two's complement, int64 tensor arithmetic that wraps to the right bits) but bypasses
    devptr. Reported only when selected (``--select ALL`` or ``[tool.devptr] select``).
``host``
    the value is a host address (an mmap'd, pinned or ``cudaHostRegister``'d region, below
    2**47 on every platform), so the >= 2**63 failure cannot happen. Reported only when
    selected.

Each message says what really happens; ``tests/lint/test_messages.py`` executes the failing
spelling on the installed torch and numpy to keep the messages honest.
"""

from __future__ import annotations

from devptr.lint.engine.rules import (
    CATEGORIES,
    DEFAULT_RULES,
    RULES,
    Category,
    Rule,
    RuleInfo,
    RuleUnit,
    rules_in,
)

__all__ = [
    "CATEGORIES", "DEFAULT_RULES", "RULES", "Category", "Rule", "RuleInfo", "RuleUnit", "rules_in",
]
