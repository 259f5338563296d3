"""Add ``import devptr`` where a rewritten module can use it.

The import goes after the last top-level import that comes before the first top-level
statement using ``devptr`` (so a module-level use still follows it, and a later
``import``-after-code block is not jumped over), or, without such an import, after the
docstring and ``from __future__`` imports.
"""

from __future__ import annotations

import re

import libcst as cst

from devptr.migrate._names import dotted

USES: re.Pattern[str] = re.compile(r"(?<![\w.])devptr\.")
"""Text that uses the name ``devptr`` (a statement using it needs the import above it)."""


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _binds_devptr(stmt: cst.BaseStatement) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                if dotted(alias.name) == "devptr" and alias.asname is None:
                    return True
    return False


def _is_preamble(stmt: cst.BaseStatement, index: int) -> bool:
    """A module docstring (first statement) or a ``from __future__`` import."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if index == 0 and isinstance(small, cst.Expr):
        return isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    return (
        isinstance(small, cst.ImportFrom)
        and isinstance(small.module, cst.Name)
        and small.module.value == "__future__"
    )


def ensure_devptr_import(module: cst.Module) -> cst.Module:
    """``module`` with ``import devptr`` added where needed (unchanged when present)."""
    body = list(module.body)
    if any(_binds_devptr(stmt) for stmt in body):
        return module
    first_use = next(
        (k for k, stmt in enumerate(body) if USES.search(module.code_for_node(stmt))),
        len(body),
    )
    after = 0
    for k, stmt in enumerate(body[:first_use]):
        if _is_import(stmt) or _is_preamble(stmt, k):
            after = k + 1
    new = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(cst.Name("devptr"))])])
    rest = body[after:]
    if rest and not _is_import(rest[0]):
        head = rest[0]
        lines = list(head.leading_lines)
        if not lines or lines[0].comment is not None:
            rest[0] = head.with_changes(leading_lines=[cst.EmptyLine(), *lines])
    return module.with_changes(body=[*body[:after], new, *rest])
