"""Cut a large module into parts that libcst can parse, edit and print one at a time.

libcst costs about 40 us per byte of source to parse, resolve positions, transform and
print (and about 1.3 KB of memory per byte), so a 5 MB generated module took many minutes
and gigabytes in one piece. A module of more than :data:`PART_LINES` lines is cut between
top-level statements into parts of about that many lines; each part with findings is
migrated on its own (its positions offset to the file's lines), and a part without any is
copied as text, never parsed. A cut is made only where nothing but blank lines separates
two top-level statements, so every comment stays with the statement it precedes (a TODO
of an earlier run is seen above its statement) and joining the parts gives the module
back byte for byte.

What needs the whole module is kept whole: a file with a two's-complement fix (DP004,
which may delete a helper once no call is left, or an import it leaves unused) is migrated
in one piece, and ``import devptr`` is placed by :func:`devptr.migrate._imports` on the
parts up to the first one that uses it.
"""

from __future__ import annotations

import ast
import io
import itertools
from typing import Final

import attrs

PART_LINES: Final = 2000
"""Lines per part (a cut waits for the next blank-line gap between top-level statements)."""


@attrs.frozen
class Part:
    """Lines ``first`` to ``last`` of the module (1-based), as ``text``."""

    first: int
    last: int
    text: str


def source_lines(code: str) -> list[str]:
    """``code``'s lines with their ends, split where Python splits lines (``\\n``,
    ``\\r\\n``, ``\\r``; not form feeds or Unicode line separators)."""
    return io.StringIO(code, newline="").readlines()


def split(code: str, tree: ast.Module) -> list[Part]:
    """``code`` (whose parse is ``tree``) as parts of about :data:`PART_LINES` lines."""
    part_lines = PART_LINES
    lines = source_lines(code)
    if len(lines) <= part_lines:
        return [Part(1, len(lines), code)]
    cuts: list[int] = []  # 1-based first lines of the parts after the first
    last_cut = 1
    previous_end = 0
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        end = stmt.end_lineno or stmt.lineno
        gap = lines[previous_end : first - 1]
        if (previous_end and first > previous_end and first - last_cut >= part_lines
                and all(not line.strip() for line in gap)):
            cuts.append(previous_end + 1)
            last_cut = previous_end + 1
        previous_end = max(previous_end, end)
    bounds = [1, *cuts, len(lines) + 1]
    return [Part(a, b - 1, "".join(lines[a - 1 : b - 1])) for a, b in itertools.pairwise(bounds)]
