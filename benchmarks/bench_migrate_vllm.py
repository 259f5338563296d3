"""``devptr migrate`` on a real vLLM 0.33.0 tree: what changes, what is left, how long.

Copies the vLLM sources to a temporary folder (never into this repository), migrates the
copy with every rule, then checks that

- every changed file still compiles (``compile()``),
- ``devptr check`` on the migrated copy reports only sites the codemod marked with a
  ``# TODO[devptr]:`` comment (findings elsewhere are listed, not hidden),
- a second migration run changes nothing,

and writes ``benchmarks/results/migrate.md``. The full diff is written next to the copy
(its path is printed) so representative hunks can be quoted in ``docs/migrate.md``.

Run from the repository root::

    python -m benchmarks.bench_migrate_vllm [--jobs N] [--keep]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from devptr.lint.rules import Rule
from devptr.migrate import Outcome, collect_files, iter_outcomes

RESULTS = Path(__file__).parent / "results" / "migrate.md"
TODO_MARK = "TODO[devptr]:"


def _vllm_root() -> Path:
    """The folder holding ``vllm/`` (shared loader when present, else DEVPTR_VLLM_SRC)."""
    try:
        from benchmarks.vllm_tree import vllm_source_tree
    except ImportError:
        src = os.environ.get("DEVPTR_VLLM_SRC")
        if not src:
            raise SystemExit("set DEVPTR_VLLM_SRC to a folder containing vllm/") from None
        return Path(src)
    return vllm_source_tree()


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()}-core CPU ({model}), Python {platform.python_version()}"


def _migrate(root: Path, jobs: int) -> tuple[list[tuple[Path, Outcome]], float]:
    files = collect_files([root])
    start = time.perf_counter()
    pairs = list(zip(files, iter_outcomes(files, frozenset(Rule), jobs), strict=True))
    seconds = time.perf_counter() - start
    for path, outcome in pairs:
        if outcome.changed:
            path.write_bytes(outcome.new.encode("utf-8"))
    return pairs, seconds


def _todo_marked(source: str, line: int) -> bool:
    """Whether the innermost statement holding ``line`` has a TODO[devptr] comment above it."""
    lines = source.splitlines()
    tree = ast.parse(source)
    # the innermost statement is the one with the largest start line that contains `line`
    starts = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.stmt) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    start = max(starts) if starts else line
    k = start - 2
    while k >= 0 and lines[k].lstrip().startswith("#"):
        if TODO_MARK in lines[k]:
            return True
        k -= 1
    return False


def _check(root: Path, jobs: int) -> list[tuple[str, int, str, bool]] | None:
    """devptr check findings as (path, line, rule, todo-marked); None without the checker."""
    try:
        from devptr.lint.checker import check_paths
    except ImportError:
        return None
    files = collect_files([root])
    found = []
    for result in check_paths(files, frozenset(Rule), jobs=jobs):
        if not result.findings:
            continue
        source = Path(result.path).read_text(encoding="utf-8")
        for f in result.findings:
            rel = str(Path(result.path).relative_to(root))
            found.append((rel, f.line, f.code, _todo_marked(source, f.line)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", action="store_true", help="keep the migrated copy")
    args = parser.parse_args()

    source_root = _vllm_root()
    work = Path(tempfile.mkdtemp(prefix="devptr-migrate-"))
    before_copy = work / "before" / "vllm"
    tree = work / "after" / "vllm"
    shutil.copytree(source_root / "vllm", before_copy)
    shutil.copytree(source_root / "vllm", tree)
    print(f"migrating a copy in {tree}", file=sys.stderr)

    pairs, seconds = _migrate(tree, args.jobs)
    outcomes = [o for _, o in pairs]
    changed = [(p, o) for p, o in pairs if o.changed]
    failures = [(str(p.relative_to(tree)), o.error) for p, o in pairs if o.error]
    rewrites: Counter[Rule] = Counter()
    todos: Counter[Rule] = Counter()
    for o in outcomes:
        rewrites.update(o.rewrites)
        todos.update(o.todos)
    not_compiling = []
    for path, outcome in changed:
        try:
            compile(outcome.new, str(path), "exec")
        except SyntaxError as exc:
            not_compiling.append(f"{path.relative_to(tree)}: {exc}")
    diff_path = work / "migrate.diff"
    diff_path.write_text(
        "".join(o.diff().replace(str(tree) + "/", "") for _, o in changed), encoding="utf-8"
    )

    added = [ln for ln in diff_path.read_text(encoding="utf-8").splitlines() if ln.startswith("+")]
    todo_lines = sum(1 for ln in added if TODO_MARK in ln)
    checker_todo_lines = sum(1 for ln in added if TODO_MARK in ln and ln.endswith("(devptr check)"))

    checked_before = _check(before_copy, args.jobs)
    checked_after = _check(tree, args.jobs)

    second, seconds2 = _migrate(tree, args.jobs)
    second_changed = [str(p.relative_to(tree)) for p, o in second if o.changed]

    lines = [
        "# `devptr migrate` on vLLM 0.33.0",
        "",
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {_machine()}",
        f"- command: `python -m benchmarks.bench_migrate_vllm --jobs {args.jobs}` (in-process "
        f"equivalent of `devptr migrate vllm/ --jobs {args.jobs}` on a temporary copy)",
        "- tree: the `vllm/` folder of the 0.33.0 wheel (not committed here)",
        "",
        "## Migration",
        "",
        "| measure | value |",
        "|---|---|",
        f"| files scanned | {len(pairs)} |",
        f"| files changed | {len(changed)} |",
        f"| sites rewritten | {sum(rewrites.values())} |",
        f"| TODOs left | {sum(todos.values())} |",
        f"| files that failed to parse | {len(failures)} |",
        f"| wall time, first run | {seconds:.1f} s |",
        f"| changed files that do not compile | {len(not_compiling)} |",
        f"| files changed by a second run | {len(second_changed)} ({seconds2:.1f} s) |",
        f"| TODO comments written by a rule codemod | {todo_lines - checker_todo_lines} |",
        f"| TODO comments from the closing `devptr check` pass | {checker_todo_lines} |",
        "",
        "| rule | name | rewritten | TODOs |",
        "|---|---|---|---|",
    ]
    for rule in Rule:
        lines.append(f"| {rule.value} | {rule.info.name} | {rewrites[rule]} | {todos[rule]} |")
    lines += ["", "Files changed:", ""]
    for p, o in changed:
        parts = [f"{r.value} x{n}" for r, n in sorted(o.rewrites.items(), key=lambda x: x[0].value)]
        if o.todos:
            parts.append(f"TODOs {sum(o.todos.values())}")
        lines.append(f"- `{p.relative_to(tree)}`: " + ", ".join(parts))
    if failures:
        lines += ["", "Parse failures:", ""] + [f"- `{p}`: {e}" for p, e in failures]
    if not_compiling:
        lines += ["", "Not compiling:", ""] + [f"- {x}" for x in not_compiling]
    lines += ["", "## `devptr check` before and after", ""]
    if checked_before is None or checked_after is None:
        lines.append("`devptr check` (devptr.lint.checker) was not available: not run.")
    else:
        marked = [f for f in checked_after if f[3]]
        unmarked = [f for f in checked_after if not f[3]]
        per_before = Counter(f[2] for f in checked_before)
        per_after = Counter(f[2] for f in checked_after)
        lines += [
            "| rule | findings before | findings after | after, at TODO-marked sites |",
            "|---|---|---|---|",
        ]
        for code in sorted(set(per_before) | set(per_after)):
            at_todo = sum(1 for f in marked if f[2] == code)
            lines.append(f"| {code} | {per_before[code]} | {per_after[code]} | {at_todo} |")
        lines += [
            f"| total | {len(checked_before)} | {len(checked_after)} | {len(marked)} |",
            "",
            f"Findings after migration at sites without a TODO: {len(unmarked)}.",
        ]
        if unmarked:
            lines += [""] + [f"- `{p}:{n}` {c}" for p, n, c, _ in unmarked]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"\nfull diff: {diff_path}", file=sys.stderr)
    if args.keep:
        print(f"copies kept in {work} (delete when done)", file=sys.stderr)
    else:
        shutil.rmtree(work / "before")
        shutil.rmtree(work / "after")


if __name__ == "__main__":
    main()
