"""``devptr migrate`` on three trees it was not written on: vLLM 0.33.0, sglang, LMCache.

Each tree is unzipped from its wheel into a cache folder (never into this repository;
``pip download --no-deps``), copied to a temporary folder and migrated there with the
command's defaults (the defect rules, safe fixes only, every core), then checked:

- every changed file still compiles (``compile()``);
- a second run changes nothing and reports nothing;
- every finding the engine (``devptr check``'s analysis) still reports sits under a
  ``# TODO[devptr]: <rule>`` comment right above its innermost statement;
- added lines fit the tree's line length (88 when the wheel ships no configuration).

The same is done for ``--select ALL --unsafe-fixes`` (every rule, every fix), for counts.
Results go to ``benchmarks/results/migrate.md`` (the hand-written review below its marker
line is kept) and each tree's diff next to the temporary copy (its path is printed).

Run from the repository root::

    python -m benchmarks.bench_migrate [--trees vllm,sglang,lmcache] [--single-job sglang]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from benchmarks import _harness as H
from devptr.lint.engine import FileResult, analyze_files
from devptr.lint.rules import Rule
from devptr.migrate import Outcome, collect_files, iter_outcomes
from devptr.migrate._runner import parse_rules
from tools.wheel_sources import source_root

RESULTS = Path(__file__).parent / "results" / "migrate.md"
REVIEW_MARK = "<!-- review: hand-written below this line; the benchmark keeps it -->"
TODO_MARK = "# TODO[devptr]:"


def tree_root(name: str) -> Path:
    """The folder holding the package ``name`` of the tree (downloaded on first use)."""
    return source_root(name) / name


def _todo_marked(lines: list[str], spans: list[tuple[int, int]], line: int, rule: str) -> bool:
    """Whether the innermost statement holding ``line`` has a TODO for ``rule`` above it."""
    starts = [s for s, e in spans if s <= line <= e]
    k = (max(starts) if starts else line) - 2
    while k >= 0 and lines[k].lstrip().startswith(("#", "@")):
        if lines[k].lstrip().startswith(f"{TODO_MARK} {rule}"):
            return True
        k -= 1
    return False


def _findings(files: list[Path], rules: frozenset[Rule], jobs: int | None) -> list[FileResult]:
    """The engine's findings over ``files``, as ``devptr check`` reports them."""
    return analyze_files(files, rules, jobs=jobs or os.cpu_count() or 1)


def _migrate(root: Path, files: list[Path], jobs: int | None, rules: frozenset[Rule],
             unsafe: bool, analysis: list[FileResult] | None = None,
             ) -> tuple[list[tuple[Path, Outcome]], float]:  # fmt: skip
    start = time.perf_counter()
    outcomes = iter_outcomes(files, rules, jobs, unsafe_fixes=unsafe, analysis=analysis)
    pairs = list(zip(files, outcomes, strict=True))
    seconds = time.perf_counter() - start
    for path, outcome in pairs:
        if outcome.changed:
            path.write_bytes(outcome.new.encode("utf-8"))
    return pairs, seconds


def measure(name: str, source: Path, work: Path, label: str, rules: frozenset[Rule],
            unsafe: bool, jobs: int | None) -> dict[str, object]:  # fmt: skip
    """Migrate a fresh copy of ``source`` and check the result."""
    copy = work / label / name
    shutil.copytree(source, copy)
    files = collect_files([copy])
    start = time.perf_counter()
    before = _findings(files, rules, jobs)  # the engine on the tree as written
    analysis_seconds = time.perf_counter() - start
    pairs, seconds = _migrate(copy, files, jobs, rules, unsafe, before)
    seconds += analysis_seconds
    changed = [(p, o) for p, o in pairs if o.changed]
    fixes: Counter[Rule] = Counter()
    unsafe_n: Counter[Rule] = Counter()
    todos: Counter[Rule] = Counter()
    for _, o in pairs:
        fixes.update(o.rewrites)
        unsafe_n.update(o.unsafe)
        todos.update(o.todos)
    written_todos = sum(o.new.count(TODO_MARK) - o.old.count(TODO_MARK) for _, o in changed)
    not_compiling = []
    long_lines = 0
    for path, o in changed:
        try:
            compile(o.new, str(path), "exec")
        except SyntaxError as exc:
            not_compiling.append(f"{path.relative_to(copy)}: {exc}")
        old = set(o.old.splitlines())
        long_lines += sum(1 for ln in o.new.splitlines() if ln not in old and len(ln) > 88)
    diff = work / f"{name}-{label}.diff"
    diff.write_text("".join(o.diff().replace(str(copy) + "/", "") for _, o in changed))
    after = _findings(files, rules, jobs)  # the engine on the migrated tree
    second, seconds2 = _migrate(copy, files, jobs, rules, unsafe, after)
    second_changed = [p for p, o in second if o.changed]
    second_reported = sum(len(o.warnings) for _, o in second)
    unmarked = []
    left = 0
    for path, result in zip(files, after, strict=True):
        found = result.findings
        if not found:
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        spans = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(ast.parse(text))
                 if isinstance(n, ast.stmt)]  # fmt: skip
        for f in found:
            left += 1
            if not _todo_marked(lines, spans, f.line, f.rule.value):
                unmarked.append(f"{path.relative_to(copy)}:{f.line} {f.rule.value}")
    return {
        "files": len(pairs), "changed": len(changed), "seconds": seconds, "fixes": fixes,
        "unsafe": unsafe_n, "todos": todos, "written_todos": written_todos,
        "failures": [(str(p.relative_to(copy)), o.error) for p, o in pairs if o.error],
        "not_compiling": not_compiling, "long_lines": long_lines,
        "second_changed": len(second_changed), "second_reported": second_reported,
        "before": sum(len(r.findings) for r in before),
        "seconds2": seconds2, "left": left, "unmarked": unmarked, "diff": diff,
        "per_file": [(str(p.relative_to(copy)), o) for p, o in changed],
    }  # fmt: skip


NAMES = {"vllm": "vLLM 0.33.0", "sglang": "sglang 0.5.23", "lmcache": "LMCache 0.5.6"}
Result = dict[str, object]


def _c(r: Result, key: str) -> Counter[Rule]:
    value = r[key]
    assert isinstance(value, Counter)
    return value


def _n(r: Result, key: str) -> int:
    value = r[key]
    return len(value) if isinstance(value, list) else int(value)  # type: ignore[call-overload]


def _summary(results: dict[str, Result]) -> list[str]:
    trees = list(results)
    rows: list[tuple[str, Callable[[Result], str]]] = [
        ("files scanned", lambda r: str(r["files"])),
        ("files changed", lambda r: str(r["changed"])),
        ("fixes applied (of which unsafe)",
         lambda r: f"{sum(_c(r, 'fixes').values())} ({sum(_c(r, 'unsafe').values())})"),
        ("TODO comments counted / written",
         lambda r: f"{sum(_c(r, 'todos').values())} / {r['written_todos']}"),
        ("files that failed to parse", lambda r: str(_n(r, "failures"))),
        ("changed files that do not compile", lambda r: str(_n(r, "not_compiling"))),
        ("added lines over 88 columns", lambda r: str(r["long_lines"])),
        ("second run: files changed, warnings", lambda r: f"{r['second_changed']}, {r['second_reported']}"),
        ("wall time: first run (with the tree analysis) / second run (migration only)",
         lambda r: f"{r['seconds']:.1f} s / {r['seconds2']:.1f} s"),
    ]  # fmt: skip
    out = ["| measure | " + " | ".join(NAMES[t] for t in trees) + " |",
           "|---|" + "---|" * len(trees)]  # fmt: skip
    out += [f"| {label} | " + " | ".join(f(results[t]) for t in trees) + " |" for label, f in rows]
    out += ["", "| rule | name | " + " | ".join(f"{NAMES[t]} fixes / TODOs" for t in trees) + " |",
            "|---|---|" + "---|" * len(trees)]  # fmt: skip
    for rule in Rule:
        cells = [f"{_c(results[t], 'fixes')[rule]} / {_c(results[t], 'todos')[rule]}" for t in trees]
        if any(c != "0 / 0" for c in cells):
            out.append(f"| {rule.value} | {rule.info.name} | " + " | ".join(cells) + " |")
    return [*out, ""]


def _files(results: dict[str, Result]) -> list[str]:
    out: list[str] = []
    for tree, r in results.items():
        changed = r["per_file"]
        assert isinstance(changed, list)
        fixed = [(p, o) for p, o in changed if o.rewrites]
        out.append(f"- {NAMES[tree]}: " + ("none" if not fixed else ""))
        for p, o in fixed:
            parts = [f"{k.value} x{v}" for k, v in sorted(o.rewrites.items(), key=lambda x: x[0].value)]
            unsafe = sum(o.unsafe.values())
            out.append(f"  - `{p}`: " + ", ".join(parts) + (f" ({unsafe} unsafe)" if unsafe else ""))
        for key, title in (("unmarked", "finding not under a TODO"), ("not_compiling", "not compiling")):
            items = r[key]
            assert isinstance(items, list)
            out += [f"  - {title}: `{x}`" for x in items]
    return [*out, ""]


def render(runs: dict[str, dict[str, Result]], args: argparse.Namespace) -> str:
    """The results file (without the hand-written review)."""
    single = [t for t in runs.get("single", {})]
    lines = [
        "# `devptr migrate` on vLLM 0.33.0, sglang 0.5.23 and LMCache 0.5.6",
        "",
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {H.machine_line()}",
        f"- command: `python -m benchmarks.bench_migrate --trees {args.trees}"
        + (f" --single-job {','.join(single)}" if single else "") + "` (in-process "
        "equivalent of `devptr migrate <tree>` on a temporary copy, every core unless said)",
        "- trees: the package folder of each wheel (`pip download --no-deps`), not committed",
        "",
    ]
    if "defaults" in runs:
        lines += ["## Migration with the defaults (defect rules, safe fixes)", "",
                  *_summary(runs["defaults"])]  # fmt: skip
    if "all" in runs:
        lines += ["## Every rule, every fix (`--select ALL --unsafe-fixes`)", "",
                  *_summary(runs["all"])]  # fmt: skip
    lines += [
        "## Engine findings before and after (the rules of each run)",
        "",
        "| tree | run | findings before | findings after | after, not under a TODO at their statement |",
        "|---|---|---|---|---|",
    ]
    for label, key in (("defaults", "defaults"), ("ALL, unsafe", "all")):
        for tree, r in runs.get(key, {}).items():
            lines.append(f"| {NAMES[tree]} | {label} | {r['before']} | {r['left']} | {_n(r, 'unmarked')} |")
    lines += ["", "## Files with fixes", ""]
    if "defaults" in runs:
        lines += ["Defaults:", "", *_files(runs["defaults"])]
    if "all" in runs:
        lines += ["`--select ALL --unsafe-fixes`:", "", *_files(runs["all"])]
    if single:
        lines += ["## Speed: every core against one job (defaults)", "",
                  "| tree | every core | one job |", "|---|---|---|"]  # fmt: skip
        for tree in single:
            lines.append(f"| {NAMES[tree]} | {runs['defaults'][tree]['seconds']:.1f} s | "
                         f"{runs['single'][tree]['seconds']:.1f} s |")  # fmt: skip
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trees", default="vllm,sglang,lmcache")
    parser.add_argument("--jobs", type=int, default=None, help="default: every core")
    parser.add_argument("--single-job", default="", help="trees also timed with --jobs 1")
    parser.add_argument("--no-all", action="store_true", help="skip the ALL+unsafe run")
    parser.add_argument("--only-all", action="store_true", help="only the ALL+unsafe run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file to write")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="devptr-migrate-"))
    print(f"working in {work}", file=sys.stderr)
    runs: dict[str, dict[str, Result]] = {}
    single = {t for t in args.single_job.split(",") if t}
    for name in [t for t in args.trees.split(",") if t]:
        source = tree_root(name)
        todo = [] if args.only_all else [("defaults", parse_rules(), False, args.jobs)]
        if not args.no_all:
            todo.append(("all", parse_rules("ALL"), True, args.jobs))
        if name in single:
            todo.append(("single", parse_rules(), False, 1))
        for key, rules, unsafe, jobs in todo:
            result = measure(name, source, work, key, rules, unsafe, jobs)
            runs.setdefault(key, {})[name] = result
            print(f"{name} {key}: {result['seconds']:.1f} s, diff {result['diff']}", file=sys.stderr)
            shutil.rmtree(work / key / name)
    review = ""
    out: Path = args.out
    if out.is_file() and REVIEW_MARK in out.read_text(encoding="utf-8"):
        review = out.read_text(encoding="utf-8").split(REVIEW_MARK, 1)[1]
    out.write_text(render(runs, args) + "\n" + REVIEW_MARK + review, encoding="utf-8")
    print(f"wrote {out}; diffs in {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
