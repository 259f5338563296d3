"""Fit rewritten lines into the target project's line length.

Only lines the migration added or changed are touched. A too-long line holding a call
the fixes built (``devptr.<...>(...)``) is wrapped the way black and ruff format wraps
it: first the arguments move to one indented line, then, if that is still too long, one
argument per line with a trailing comma. A too-long ``# TODO[devptr]:`` comment continues
on ``#   `` lines.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import Final

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devptr.migrate._base import TODO_CONTINUATION, TODO_PREFIX
from devptr.migrate._names import dotted

_MAX_ROUNDS: Final = 12


def added_lines(old: str, new: str) -> set[int]:
    """1-based numbers of the lines of ``new`` that are not kept lines of ``old``."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    found: set[int] = set()
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            found.update(range(j1 + 1, j2 + 1))
    return found


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
        for line in sorted(long_lines):
            holding = [c for c in calls if c[0] <= line <= c[1]]
            if not holding:
                continue
            start, _, _, call = min(holding, key=lambda c: (c[0], -c[1], c[2]))
            blocks = [s for s in statements if s[0] <= start <= s[1]]
            block_indent = max(blocks, key=lambda s: s[0])[2] if blocks else 0
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
