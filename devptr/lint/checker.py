"""``devptr check``'s engine: files in, findings out.

No type information is needed: each file is parsed with :mod:`ast` and analyzed on its
own. Files that cannot contain a finding (no ``data_ptr``, no uint64, no 2**63/2**64
constant, no address-named list next to a table constructor) are skipped before parsing,
which keeps large trees fast.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Final

import attrs

from devptr.lint._analyzer import analyze
from devptr.lint._config import Config
from devptr.lint._findings import Finding
from devptr.lint._suppress import is_suppressed, suppressions
from devptr.lint.rules import Rule

_STRONG_TRIGGER: Final = re.compile(
    r"data_ptr|buffer_ptrs|signal_pad_ptrs|\*\*\s*6[34]|<<\s*6[34]|c_int64|c_longlong|"
    r"struct\.pack|DevicePtr"
)
"""Text that can start a finding by itself (an address source or a 2**63/2**64 constant)."""

_U64: Final = re.compile(r"uint64")
_I64: Final = re.compile(r"(?<!u)int64")
_PLATFORM: Final = re.compile(r"xpu|platform|device|cuda|rocm|hip", re.IGNORECASE)
_NAME_TRIGGER: Final = re.compile(r"ptrs|addrs|addresses|_addr")
_TABLE_TRIGGER: Final = re.compile(r"tensor\(|as_tensor\(|asarray\(|array\(|fromiter\(|full\(")


def may_have_findings(source: str) -> bool:
    """Cheap text test run before parsing: False means the file cannot have a finding.

    A finding needs an address source (``data_ptr``, symmetric-memory peer lists, a
    2**63/2**64 constant, ``DevicePtr``), or a uint64/int64 pair next to a platform test
    (DP005), or an address-named list next to a table constructor.
    """
    if _STRONG_TRIGGER.search(source):
        return True
    if _U64.search(source) and _I64.search(source) and _PLATFORM.search(source):
        return True
    return bool(_NAME_TRIGGER.search(source) and _TABLE_TRIGGER.search(source))


@attrs.frozen
class FileResult:
    """Findings in one file, or the reason it could not be checked."""

    path: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    parsed: bool = False


def check_source(source: str, path: str = "<string>", rules: frozenset[Rule] | None = None) -> (
    list[Finding]
):
    """Check one module's source text.

    Parameters
    ----------
    source
        Python source.
    path
        Path to report.
    rules
        Rules to keep (default: all).

    Returns
    -------
    list of Finding
        Unsuppressed findings, sorted by position.

    Raises
    ------
    SyntaxError
        When *source* does not parse.
    """
    tree = ast.parse(source, filename=path)
    found = analyze(tree, path, source)
    table = suppressions(source)
    keep = rules if rules is not None else frozenset(Rule)
    return [
        f for f in found
        if f.rule in keep and not is_suppressed(table, f.code, f.line, f.end_line)
    ]


def check_file(path: Path, rules: frozenset[Rule] | None = None) -> FileResult:
    """Check one file; unreadable or unparsable files give a result with ``error`` set."""
    shown = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FileResult(shown, error=f"cannot read: {exc}")
    if not may_have_findings(source):
        return FileResult(shown)
    try:
        findings = check_source(source, shown, rules)
    except SyntaxError as exc:
        return FileResult(shown, error=f"syntax error at line {exc.lineno}: {exc.msg}")
    except RecursionError:
        return FileResult(shown, error="too deeply nested to analyze")
    except Exception as exc:  # a checker bug must not hide the other files' findings
        return FileResult(shown, error=f"internal checker error: {exc!r}")
    return FileResult(shown, tuple(findings), parsed=True)


def iter_python_files(
    paths: Sequence[Path], config: Config, *, force_exclude: bool = False
) -> Iterator[Path]:
    """Python files under *paths*.

    Files named explicitly are kept even if excluded, unless *force_exclude* (what
    pre-commit needs, since it passes every changed file by name).
    """
    seen: set[Path] = set()
    for root in paths:
        if root.is_file():
            if force_exclude and config.is_excluded(root):
                continue
            if root not in seen:
                seen.add(root)
                yield root
            continue
        for file in sorted(root.rglob("*.py")):
            if file in seen or config.is_excluded(file):
                continue
            seen.add(file)
            yield file


def _check_chunk(args: tuple[list[str], frozenset[Rule]]) -> list[FileResult]:
    files, rules = args
    return [check_file(Path(f), rules) for f in files]


def check_paths(
    files: Sequence[Path],
    rules: frozenset[Rule],
    *,
    jobs: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    """Check *files*, optionally in *jobs* worker processes.

    Parameters
    ----------
    files
        Files to check (see :func:`iter_python_files`).
    rules
        Rules to report.
    jobs
        Worker processes; 1 checks in this process.
    on_progress
        Called with the number of files just finished.

    Returns
    -------
    list of FileResult
        In the order of *files*.
    """
    if jobs <= 1 or len(files) < 64:
        out = []
        for f in files:
            out.append(check_file(f, rules))
            if on_progress is not None:
                on_progress(1)
        return out
    size = max(8, len(files) // (jobs * 8))
    chunks = [[str(f) for f in files[i : i + size]] for i in range(0, len(files), size)]
    results: list[FileResult] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for chunk, res in zip(chunks, pool.map(_check_chunk, [(c, rules) for c in chunks]),
                              strict=True):
            results.extend(res)
            if on_progress is not None:
                on_progress(len(chunk))
    return results
