"""Triton kernels that compare an entry they loaded from a pointer table (R6's audit list).

A kernel parameter whose name holds ``ptrs`` or ``addr`` and that is loaded with
``tl.load(param + i)`` is read as a table; a ``<``/``>``/``<=``/``>=`` comparison or a
``min``/``max`` that uses the loaded value is what R6 asks to bitcast first. Syntax only (the
module's AST, no import): a name is not a type, so each row is read by hand in the appendix.
"""

from __future__ import annotations

import ast
from pathlib import Path

_CMP = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)
_MINMAX = frozenset({"tl.minimum", "tl.maximum", "tl.min", "tl.max", "min", "max"})


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _table_param(expr: ast.expr, params: set[str]) -> str | None:
    """The table parameter ``expr`` indexes (``tab_ptr + i`` or ``tab_ptr``), if any."""
    base = expr.left if isinstance(expr, ast.BinOp) else expr
    if isinstance(base, ast.Name) and base.id in params and ("ptrs" in base.id or "addr" in base.id):
        return base.id
    return None


def _loaded_entries(fn: ast.FunctionDef) -> dict[str, str]:
    """local name -> table parameter it was loaded from."""
    params = {a.arg for a in fn.args.args}
    out: dict[str, str] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if not ast.unparse(node.value.func).endswith("load") or not node.value.args:
            continue
        table = _table_param(node.value.args[0], params)
        if table and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = table
    return out


def _compares(fn: ast.FunctionDef, loaded: dict[str, str]) -> list[str]:
    hits: list[str] = []
    for node in ast.walk(fn):
        uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & loaded.keys()
        if not uses:
            continue
        is_cmp = isinstance(node, ast.Compare) and any(isinstance(o, _CMP) for o in node.ops)
        is_minmax = isinstance(node, ast.Call) and ast.unparse(node.func) in _MINMAX
        if is_cmp or is_minmax:
            hits.append(f"`{ast.unparse(node)}`")
    return hits


def kernel_compare_rows(tree: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Every jitted kernel that loads a pointer-table parameter, with what it compares."""
    rows: list[tuple[str, ...]] = []
    for path in sorted(tree.rglob("*.py")):
        try:
            module = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for fn in ast.walk(module):
            if not (isinstance(fn, ast.FunctionDef) and _is_jit(fn)):
                continue
            loaded = _loaded_entries(fn)
            if not loaded:
                continue
            rel = path.relative_to(tree).as_posix()
            tables = ", ".join(f"`{t}`" for t in sorted(set(loaded.values())))
            hits = _compares(fn, loaded)
            rows.append((f"`{rel}:{fn.lineno}` `{fn.name}`", tables, "; ".join(hits) if hits else "none"))
    return ("kernel", "tables it loads entries from", "comparisons of a loaded entry"), rows
