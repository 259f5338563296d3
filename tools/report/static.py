"""The RFC's version-independent tables: rules, encodings per backend, counts on a real tree."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Final

from devptr._encoding import Encoding, encoding_for, register_backend
from devptr.lint.rules import RULES
from devptr.testing import encoding_environment


def plugin_codes() -> frozenset[str] | None:
    """The error codes ``devptr.mypy_plugin`` defines (None when mypy is not installed)."""
    try:
        from mypy.errorcodes import ErrorCode

        from devptr.lint import mypy_plugin
    except ImportError:
        return None
    return frozenset(v.code for v in vars(mypy_plugin).values() if isinstance(v, ErrorCode))


def rule_rows() -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The rule catalogue (``devptr.lint.rules``): code, name, what it flags, the fix."""
    header: tuple[str, ...] = ("rule", "name", "flags", "write instead", "reported by the mypy plugin")
    codes = plugin_codes()
    rows: list[tuple[str, ...]] = [
        (
            info.rule.value,
            f"`{info.name}`",
            info.summary,
            info.fix,
            _plugin_cell(info.mypy_code, codes),
        )
        for info in RULES.values()
    ]
    return header, rows


def _plugin_cell(code: str, codes: frozenset[str] | None) -> str:
    if codes is None:
        return "(mypy not installed)"
    return f"`{code}`" if code in codes else "no (`devptr check` only)"


def _encoding_state(env: str | None) -> contextlib.AbstractContextManager[None]:
    """Run with ``DEVPTR_ENCODING`` = ``env`` and the registry as it was; restore both."""
    return encoding_environment(env)


BACKENDS = ("cuda", "xpu", "cpu", "hpu")
"""Device types shown in the encoding table (ROCm builds of torch report ``cuda``)."""


def _enc(name: str) -> str:
    e = encoding_for(name)
    return f"`{e.name}` ({e.torch_dtype})"


def encoding_rows() -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """``encoding_for`` per backend: default, ``DEVPTR_ENCODING=U64``, ``register_backend``."""
    header = (
        "device type",
        "default `encoding_for()`",
        "`DEVPTR_ENCODING=U64`",
        "`DEVPTR_ENCODING=xpu=U64,cuda=I64`",
        "after `register_backend('cuda', Encoding.U64)`",
    )
    cols: list[list[str]] = []
    with _encoding_state(None):
        cols.append([_enc(b) for b in BACKENDS])
    with _encoding_state("U64"):
        cols.append([_enc(b) for b in BACKENDS])
    with _encoding_state("xpu=U64,cuda=I64"):
        cols.append([_enc(b) for b in BACKENDS])
    with _encoding_state(None):
        register_backend("cuda", Encoding.U64)
        cols.append([_enc(b) for b in BACKENDS])
    rows = [(f"`{b}`", *(c[i] for c in cols)) for i, b in enumerate(BACKENDS)]
    return header, rows


# -- devptr check on a real tree ----------------------------------------------------------
def run_check(tree: Path) -> dict[str, object]:
    """``devptr check TREE --format json`` in a subprocess; the parsed JSON."""
    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "check", str(tree), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"devptr check failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    data: dict[str, object] = json.loads(proc.stdout) if proc.stdout.strip() else {"findings": []}
    return data


def data_ptr_lines(tree: Path) -> tuple[int, int]:
    """Lines containing ``data_ptr()`` and the number of .py files holding them."""
    lines = files = 0
    for path in sorted(tree.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        n = sum("data_ptr()" in ln for ln in text.splitlines())
        lines += n
        files += n > 0
    return lines, files


_CHECK_CACHE: dict[Path, dict[str, object]] = {}


def _checked_tree(tree: Path) -> dict[str, object]:
    key = tree.resolve()
    if key not in _CHECK_CACHE:
        _CHECK_CACHE[key] = run_check(tree)
    return _CHECK_CACHE[key]


def _area(path: str, tree: Path) -> str:
    try:
        rel = Path(path).resolve().relative_to(tree.resolve())
    except ValueError:
        rel = Path(path)
    parts = rel.parts[:-1]
    return "/".join(parts[:2]) + "/" if parts else "(top level)"


def area_rows(tree: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Findings of ``devptr check`` on ``tree`` per folder (two levels deep), most first."""
    data = _checked_tree(tree)
    raw = data.get("findings", [])
    findings = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
    per: dict[str, list[dict[str, object]]] = {}
    for f in findings:
        per.setdefault(_area(str(f.get("path")), tree), []).append(f)
    rows: list[tuple[str, ...]] = []
    for area, fs in sorted(per.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        codes = Counter(str(f.get("code")) for f in fs)
        files = len({str(f.get("path")) for f in fs})
        rules = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in sorted(codes.items()))
        rows.append((f"`{area}`", str(len(fs)), str(files), rules))
    return ("folder", "findings", "files", "rules"), rows


PLATFORM_FOLDERS: Final = ("nvidia", "amd")
"""Model folders named for one vendor (``models/<model>/nvidia/...``): a name, not evidence of
where the code runs, so the RFC triages their findings instead of skipping them."""


def _platform(rel: str) -> str:
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] == "models" and parts[2] in PLATFORM_FOLDERS:
        return f"`models/*/{parts[2]}/`"
    return "elsewhere"


def platform_rows(tree: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Findings of ``devptr check`` on ``tree`` by vendor-named model folder, with each file."""
    data = _checked_tree(tree)
    raw = data.get("findings", [])
    findings = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
    per: dict[str, Counter[str]] = {}
    for f in findings:
        rel = Path(str(f.get("path"))).resolve().relative_to(tree.resolve()).as_posix()
        per.setdefault(_platform(rel), Counter())[rel] += 1
    rows: list[tuple[str, ...]] = []
    for name in (*(f"`models/*/{p}/`" for p in PLATFORM_FOLDERS), "elsewhere"):
        files = per.get(name, Counter())
        listed = ", ".join(f"`{k}`" + (f" x{n}" if n > 1 else "") for k, n in sorted(files.items()))
        rows.append((name, str(sum(files.values())), str(len(files)), listed))
    vendor = [per.get(f"`models/*/{p}/`", Counter()) for p in PLATFORM_FOLDERS]
    together = (str(sum(sum(c.values()) for c in vendor)), str(sum(len(c) for c in vendor)), "")
    rows.insert(len(PLATFORM_FOLDERS), ("vendor-named folders together", *together))
    return ("folder", "findings", "files", "which"), rows


def check_rows(tree: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Findings of ``devptr check`` on ``tree`` per rule, plus the ``data_ptr()`` census."""
    data = _checked_tree(tree)
    raw = data.get("findings", [])
    findings = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
    per_rule = Counter(str(f.get("code")) for f in findings)
    files_per_rule: dict[str, set[str]] = {}
    for f in findings:
        files_per_rule.setdefault(str(f.get("code")), set()).add(str(f.get("path")))
    header = ("rule", "name", "findings", "files")
    rows: list[tuple[str, ...]] = []
    for info in RULES.values():
        code = info.rule.value
        nfiles = len(files_per_rule.get(code, ()))
        rows.append((code, f"`{info.name}`", str(per_rule.get(code, 0)), str(nfiles)))
    all_files = {str(f.get("path")) for f in findings}
    rows.append(("all", "", str(len(findings)), str(len(all_files))))
    lines, nfiles = data_ptr_lines(tree)
    rows.append(("(census)", "lines containing `data_ptr()`", str(lines), str(nfiles)))
    return header, rows
