"""Inline suppressions: ``# devptr: ignore[DP001]`` (or ``# devptr: ignore`` for every rule).

A reason may follow: ``# devptr: ignore[DP004] -- the sanctioned signed encoding``.
"""

from __future__ import annotations

import re
from typing import Final

_SUPPRESS_RE: Final = re.compile(r"#\s*devptr:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")

ALL: Final = "*"


def suppressions(source: str) -> dict[int, frozenset[str]]:
    """Map 1-based line numbers to the rule codes suppressed there (``"*"`` for all)."""
    out: dict[int, frozenset[str]] = {}
    if "devptr:" not in source:
        return out
    for lineno, line in enumerate(source.splitlines(), start=1):
        if "devptr:" not in line:
            continue
        codes: set[str] = set()
        for match in _SUPPRESS_RE.finditer(line):
            listed = match.group(1)
            if listed is None:
                codes.add(ALL)
            else:
                codes.update(c.strip().upper() for c in listed.split(",") if c.strip())
        if codes:
            out[lineno] = frozenset(codes)
    return out


def is_suppressed(
    table: dict[int, frozenset[str]], code: str, first_line: int, last_line: int
) -> bool:
    """Whether a finding of *code* spanning ``first_line..last_line`` is suppressed."""
    for line in range(first_line, max(first_line, last_line) + 1):
        codes = table.get(line)
        if codes is not None and (ALL in codes or code in codes):
            return True
    return False
