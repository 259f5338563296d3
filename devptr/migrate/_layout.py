"""Fit rewritten lines into the target project's line length.

Only lines the migration added or changed are touched. A too-long line holding a call
the fixes built (``devptr.<...>(...)``) is wrapped the way black and ruff format wraps
it: first the arguments move to one indented line, then, if that is still too long, one
argument per line with a trailing comma. A too-long ``# TODO[devptr]:`` comment continues
on ``#   `` lines.
"""

from __future__ import annotations

import bisect
import difflib
import textwrap
from collections import Counter
from typing import Final

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devptr.migrate._base import TODO_CONTINUATION, TODO_PREFIX
from devptr.migrate._names import dotted
from devptr.migrate._spans import innermost_by_line

_MAX_ROUNDS: Final = 12


_DIFF_CELLS: Final = 40_000
"""Largest ``len(a) * len(b)`` of a stretch without an anchor line that is matched with
:class:`difflib.SequenceMatcher` (whose cost grows with that product); a larger one counts
all its new lines as added (at worst, an old over-long line there is wrapped too)."""


def _anchors(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int,
             ) -> list[tuple[int, int]]:
    """Lines that occur once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``, in an order both
    agree on (the longest increasing run, as patience diff does): ``(i, j)`` pairs."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_a = {a[i]: i for i in range(alo, ahi) if count_a[a[i]] == 1}
    pairs = [(where_a[b[j]], j) for j in range(blo, bhi)
             if count_b[b[j]] == 1 and b[j] in where_a]
    # longest run of pairs increasing in i (they are increasing in j already)
    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = []
    for k, (i, _) in enumerate(pairs):
        pos = bisect.bisect_left(tails, i)
        back.append(tail_at[pos - 1] if pos else -1)
        if pos == len(tails):
            tails.append(i)
            tail_at.append(k)
        else:
            tails[pos] = i
            tail_at[pos] = k
    out: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    return out[::-1]


def added_lines(old: str, new: str) -> set[int]:
    """1-based numbers of the lines of ``new`` that are not kept lines of ``old``.

    A patience-style line diff, linear in the lines but for the sort of the anchors: the
    common head and tail are kept, lines unique on both sides anchor the rest, and the
    stretches between anchors are matched with :mod:`difflib` when small (a whole-file
    :class:`difflib.SequenceMatcher` took seconds to minutes on generated files with many
    repeated lines: issue 22).
    """
    a, b = old.splitlines(), new.splitlines()
    kept: set[int] = set()
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            kept.add(blo)
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            kept.add(bhi - 1)
            ahi, bhi = ahi - 1, bhi - 1
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, b, alo, ahi, blo, bhi)
        if anchors:
            for i, j in anchors:
                kept.add(j)
                stack.append((alo, i, blo, j))
                alo, blo = i + 1, j + 1
            stack.append((alo, ahi, blo, bhi))
        elif (ahi - alo) * (bhi - blo) <= _DIFF_CELLS:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            for block in matcher.get_matching_blocks():
                kept.update(range(blo + block.b, blo + block.b + block.size))
    return {j + 1 for j in range(len(b)) if j not in kept}


def _overlong(old: str, new: str, limit: int) -> set[int]:
    lines = new.splitlines()
    return {
        n
        for n in added_lines(old, new)
        if len(lines[n - 1]) > limit and not lines[n - 1].lstrip().startswith("#")
    }


def _is_devptr_call(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    name = dotted(node.func)
    return name is not None and name.startswith("devptr.") and bool(node.args)


def _state(call: cst.Call) -> int:
    """0: on one line; 1: arguments on their own line; 2: one argument per line."""
    if not isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return 0
    comma = call.args[0].comma
    if len(call.args) > 1 and isinstance(comma, cst.Comma):
        return 2 if isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace) else 1
    return 2 if isinstance(call.args[-1].comma, cst.Comma) else 1


def _newline(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=True,
        last_line=cst.SimpleWhitespace(indent),
    )


def _wrapped(call: cst.Call, state: int, outer: str, unit: str) -> cst.Call:
    """``call`` one wrapping step further (``outer``: its line's indent past the block's)."""
    inner = outer + unit
    args = list(call.args)
    last = len(args) - 1
    new_args = []
    for k, arg in enumerate(args):
        if state == 0:  # hug: a, b, c on one line
            comma: cst.Comma | cst.MaybeSentinel = (
                cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                if k < last
                else cst.MaybeSentinel.DEFAULT
            )
            new_args.append(arg.with_changes(comma=comma, whitespace_after_arg=(
                _newline(outer) if k == last else cst.SimpleWhitespace("")
            )))
        else:  # one per line, trailing comma
            after = _newline(inner if k < last else outer)
            new_args.append(
                arg.with_changes(
                    comma=cst.Comma(whitespace_after=after),
                    whitespace_after_arg=cst.SimpleWhitespace(""),
                )
            )
    return call.with_changes(whitespace_before_args=_newline(inner), args=new_args)


class _Rewrap(cst.CSTTransformer):
    def __init__(self, targets: dict[int, tuple[int, str]], unit: str) -> None:
        super().__init__()
        self._targets = targets
        self._unit = unit

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        target = self._targets.get(id(original_node))
        if target is None:
            return updated_node
        return _wrapped(updated_node, target[0], target[1], self._unit)


def fit_calls(module: cst.Module, old: str, limit: int) -> cst.Module:
    """Wrap the devptr calls of added lines longer than ``limit`` (see the module doc)."""
    for _ in range(_MAX_ROUNDS):
        code = module.code
        long_lines = _overlong(old, code, limit)
        if not long_lines:
            return module
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        statements: list[tuple[int, int, int]] = []
        calls: list[tuple[int, int, int, cst.Call]] = []
        for node, pos in positions.items():
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                statements.append((pos.start.line, pos.end.line, pos.start.column))
            elif isinstance(node, cst.Call) and _is_devptr_call(node) and _state(node) < 2:
                calls.append((pos.start.line, pos.end.line, pos.start.column, node))
        lines = code.splitlines()
        targets: dict[int, tuple[int, str]] = {}
        ordered = sorted(long_lines)
        outermost: dict[int, tuple[int, int, int, cst.Call]] = {}
        for c in calls:  # for each long line, the outermost devptr call holding it
            k = bisect.bisect_left(ordered, c[0])
            while k < len(ordered) and ordered[k] <= c[1]:
                best = outermost.get(ordered[k])
                if best is None or (c[0], -c[1], c[2]) < (best[0], -best[1], best[2]):
                    outermost[ordered[k]] = c
                k += 1
        starts = {c[0] for c in outermost.values()}
        block = innermost_by_line([(s[0], s[1], s[2]) for s in statements], max(starts, default=0))
        for line in ordered:
            if line not in outermost:
                continue
            start, _, _, call = outermost[line]
            indent = block[start]
            block_indent = indent if indent is not None else 0
            text = lines[start - 1]
            line_indent = len(text) - len(text.lstrip())
            outer = " " * max(0, line_indent - block_indent)
            targets[id(call)] = (_state(call), outer)
        if not targets:
            return module
        module = module.visit(_Rewrap(targets, module.default_indent))
    return module


def wrap_todos(old: str, new: str, limit: int) -> str:
    """``new`` with its added ``# TODO[devptr]:`` comments longer than ``limit`` wrapped."""
    keep_ends = new.splitlines(keepends=True)
    added = added_lines(old, new)
    out: list[str] = []
    for number, raw in enumerate(keep_ends, start=1):
        body = raw.rstrip("\r\n")
        stripped = body.lstrip()
        if number not in added or len(body) <= limit or not stripped.startswith(TODO_PREFIX):
            out.append(raw)
            continue
        end = raw[len(body) :] or "\n"
        indent = body[: len(body) - len(stripped)]
        width = max(20, limit - len(indent) - len(TODO_CONTINUATION))
        text = stripped[2:]  # without "# "
        first, *rest = textwrap.wrap(
            text, width=width, break_long_words=True, break_on_hyphens=False
        )
        out.append(f"{indent}# {first}{end}")
        if rest:
            again = textwrap.wrap(
                " ".join(rest), width=width, break_long_words=True, break_on_hyphens=False
            )
            out.extend(f"{indent}{TODO_CONTINUATION}{part}{end}" for part in again)
    return "".join(out)
