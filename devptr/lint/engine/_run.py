"""Running the engine: one source text, one file, or a tree (with cross-module summaries)."""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from devptr.lint.catalogue import SOURCE_SPELLINGS
from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._evaluator import Evaluator
from devptr.lint.engine._files import (
    DefaultExcludes,
    Excludes,
    iter_python_files,
    read_source,
    universal_newlines,
)
from devptr.lint.engine._finding import Finding, collapse_helper_findings
from devptr.lint.engine._pool import worker_pool
from devptr.lint.engine._project import ModuleNamer, ProjectIndex, module_name
from devptr.lint.engine._suppress import is_suppressed, suppressions
from devptr.lint.engine._values import Summary, Val
from devptr.lint.engine.rules import RULES, Rule, RuleSet
from devptr.lint.errors import SourceError

if TYPE_CHECKING:
    from devptr.lint._config import Config

_STRONG_TOKENS: Final = syn.covering(SOURCE_SPELLINGS | {"_ptrs"})
"""Text that can start a finding by itself: the catalogue's source spellings, and names
of address lists (``peer_ptrs``)."""

_POW: Final = re.compile(r"\*\*\s*6[34]")
_SHIFT: Final = re.compile(r"<<\s*6[34]")
"""``2**63``/``2**64`` and ``1 << 63``/``1 << 64`` (two patterns: each keeps its literal
prefix, which the regex engine searches for fast)."""
_I64: Final = re.compile(r"(?<!u)int64")
_PLATFORM_TOKENS: Final = ("xpu", "platform", "device", "cuda", "rocm", "hip")
_NAME_TOKENS: Final = ("ptrs", "addrs", "addresses", "_addr")
_TABLE_TOKENS: Final = ("tensor(", "as_tensor(", "asarray(", "array(", "fromiter(", "full(",
                        "stack(")


def may_have_findings(source: str) -> bool:
    """Cheap text test run before parsing: False means the file cannot have a finding on
    its own (it may still pass addresses to a helper of another module; see
    :func:`analyze_paths`)."""
    if any(token in source for token in _STRONG_TOKENS):
        return True
    if ("**" in source and _POW.search(source)) or ("<<" in source and _SHIFT.search(source)):
        return True
    if "uint64" in source and _I64.search(source):
        lowered = source.lower()
        if any(token in lowered for token in _PLATFORM_TOKENS):
            return True
    return any(t in source for t in _NAME_TOKENS) and any(t in source for t in _TABLE_TOKENS)


def analyze_source(
    source: str,
    path: str = "<string>",
    *,
    project: ProjectIndex | None = None,
    module: str = "",
    rules: frozenset[Rule] | None = None,
    honour_suppressions: bool = True,
) -> list[Finding]:
    """Analyze one module's source text.

    Parameters
    ----------
    source
        Python source.
    path
        The path put into findings and messages.
    project
        Summaries of the other modules of the tree (calls into them are understood).
    module
        The module's dotted name (for relative imports); derived from *path* when empty
        and *path* exists.
    rules
        Keep only these rules (default: every rule, whatever its category).
    honour_suppressions
        Drop findings suppressed by ``# devptr: ignore[...]`` comments.

    Returns
    -------
    list of Finding
        Sorted by position.

    Raises
    ------
    SyntaxError
        When *source* does not parse.
    """
    return collapse_helper_findings(
        _analyze(source, path, project, module, rules, honour_suppressions).findings
    )


@attrs.frozen
class _Analysis:
    """One module's findings and what the rest of the tree learns from it."""

    findings: list[Finding]
    functions: dict[str, Summary]
    unresolved: set[str]
    """Calls into other modules that got addresses."""
    properties: dict[str, Val]
    """Its properties that give addresses."""
    attr_reads: set[str]
    """Attributes named like addresses it reads that another module's property may give."""


def _analyze(
    source: str, path: str, project: ProjectIndex | None, module: str,
    rules: frozenset[Rule] | None, honour: bool, *, is_package: bool = False,
) -> _Analysis:
    if not module and path != "<string>" and os.path.isfile(path):
        module, is_package = module_name(Path(path))
    tree = ast.parse(source, filename=path)
    analyzer = Evaluator(tree, source, path, module, project, is_package=is_package,
                         rules=RuleSet(rules))
    emitted = analyzer.run()
    table = suppressions(source) if honour else {}
    out = []
    for e in emitted:
        if table and is_suppressed(table, e.rule.value, e.stmt_first, e.stmt_last):
            continue
        out.append(Finding(
            path=path, line=e.span.line, col=e.span.col, rule=e.rule,
            end_line=e.span.end_line, end_col=e.span.end_col, message=e.message,
            category=RULES[e.rule].category, fix=e.fix, sink=e.sink,
        ))
    return _Analysis(sorted(out), analyzer.functions, analyzer.unresolved,
                     analyzer.exported_properties(), analyzer.attr_reads)


@attrs.frozen
class FileResult:
    """Findings in one file, or the reason it could not be analyzed."""

    path: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    parsed: bool = False


@attrs.frozen
class _Job:
    path: str
    rules: frozenset[Rule] | None
    project: ProjectIndex | None = None
    force: bool = False
    module: str = ""
    is_package: bool = False


@attrs.frozen
class _Done:
    result: FileResult
    module: str = ""
    functions: dict[str, Summary] = attrs.field(factory=dict)
    unresolved: frozenset[str] = frozenset()
    properties: dict[str, Val] = attrs.field(factory=dict)
    attr_reads: frozenset[str] = frozenset()


def _run_job(job: _Job) -> _Done:
    shown = job.path
    try:
        source = universal_newlines(read_source(shown).text)
    except SourceError as exc:
        return _Done(FileResult(shown, error=str(exc)))
    if not job.force and not may_have_findings(source):
        return _Done(FileResult(shown))
    module = job.module
    try:
        done = _analyze(
            source, shown, job.project, module, job.rules, True, is_package=job.is_package
        )
    except SyntaxError as exc:
        return _Done(FileResult(shown, error=f"syntax error at line {exc.lineno}: {exc.msg}"))
    except RecursionError:
        return _Done(FileResult(shown, error="too deeply nested to analyze"))
    except ValueError as exc:  # null bytes (a SyntaxError from Python 3.12 on)
        return _Done(FileResult(shown, error=f"syntax error: {exc}"))
    except Exception as exc:  # an engine bug must not hide the other files' findings
        return _Done(FileResult(shown, error=f"internal engine error: {exc!r}"))
    keep = {k: v for k, v in done.functions.items() if v.exported}
    return _Done(FileResult(shown, tuple(done.findings), parsed=True), module, keep,
                 frozenset(done.unresolved), done.properties, frozenset(done.attr_reads))


def _run_chunk(jobs: list[_Job]) -> list[_Done]:
    with _fewer_collections():  # also in workers that were not forked (spawn)
        return [_run_job(j) for j in jobs]


def _summarize_job(job: _Job) -> tuple[str, dict[str, Summary]]:
    try:
        source = universal_newlines(read_source(job.path).text)
        tree = ast.parse(source, filename=job.path)
        analyzer = Evaluator(tree, source, job.path, job.module, None,
                             is_package=job.is_package)
        return job.module, {k: v for k, v in analyzer.summarize().items() if v.exported}
    except (SyntaxError, RecursionError, ValueError):  # SourceError is a ValueError
        return "", {}


def _map(jobs: list[_Job], n_jobs: int, on_progress: Callable[[int], None] | None,
         pool: ProcessPoolExecutor | None) -> list[_Done]:
    if pool is None or len(jobs) < 64:
        out = []
        for j in jobs:
            out.append(_run_job(j))
            if on_progress is not None:
                on_progress(1)
        return out
    size = max(8, len(jobs) // (n_jobs * 8))
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    results: list[_Done] = []
    for chunk, res in zip(chunks, pool.map(_run_chunk, chunks), strict=True):
        results.extend(res)
        if on_progress is not None:
            on_progress(len(chunk))
    return results


def analyze_paths(
    paths: Sequence[Path],
    config: Config | None = None,
    *,
    rules: frozenset[Rule] | None = None,
    jobs: int = 1,
    on_progress: Callable[[int], None] | None = None,
    force_exclude: bool = False,
) -> list[FileResult]:
    """Analyze the files of a tree, with cross-module summaries.

    First pass: every file whose text can hold a finding is analyzed on its own (in
    *jobs* worker processes), which also yields its functions' summaries and the calls
    into other modules that received addresses. The modules those calls name are
    summarized on demand. Second pass: files that call an informative function of another
    module are analyzed again with the :class:`ProjectIndex`.

    Parameters
    ----------
    paths
        Files and folders (walked with :func:`iter_python_files` and *config*'s excludes).
    config
        ``[tool.devptr]`` settings (default: none; every rule is reported).
    rules
        Rules to report (default: ``config.rules()`` with a config, else every rule).
    force_exclude
        Apply excludes to files named explicitly too.
    jobs
        Worker processes; 1 analyzes in this process.
    on_progress
        Called with the number of files just finished (first pass).

    Returns
    -------
    list of FileResult
        One per Python file, in walking order.
    """
    cfg: Excludes = config if config is not None else DefaultExcludes()
    if rules is None and config is not None:
        rules = config.rules()
    files = list(iter_python_files(paths, cfg, force_exclude=force_exclude))
    paths_ = [str(f) for f in files]
    return _analyze_files(paths_, rules, jobs, on_progress)


_GC_GEN0: Final = 100_000
"""Allocations between young-generation collections while a tree is analyzed (CPython's
default is 700). Parsing and the abstract evaluation allocate millions of short-lived
objects that reference counting frees; with the default, a fifth of the time went into
collections that found nothing."""


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Raise the cyclic collector's young-generation threshold for the block (restored
    after it; worker processes forked inside it inherit it)."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], _GC_GEN0), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def analyze_files(
    files: Sequence[str | Path],
    rules: frozenset[Rule] | None,
    *,
    jobs: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    """Analyze *files* (already walked, e.g. by :func:`iter_python_files`) as one tree,
    with cross-module summaries: one :class:`FileResult` per file, in order. *rules*
    default: every rule."""
    return _analyze_files([str(f) for f in files], rules, jobs, on_progress)


def _analyze_files(
    paths: list[str], rules: frozenset[Rule] | None, jobs: int,
    on_progress: Callable[[int], None] | None,
) -> list[FileResult]:
    with _fewer_collections():
        return _one_per_defect(_analyze_tree(paths, rules, jobs, on_progress))


def _one_per_defect(results: list[FileResult]) -> list[FileResult]:
    """The results with each helper's table reported once, in the helper's file
    (:func:`collapse_helper_findings`), whichever files its callers are in."""
    if not any(f.sink is not None for r in results for f in r.findings):
        return results
    by_path: dict[str, list[Finding]] = {r.path: [] for r in results}
    for f in collapse_helper_findings(f for r in results for f in r.findings):
        by_path.setdefault(f.path, []).append(f)
    return [attrs.evolve(r, findings=tuple(by_path[r.path])) for r in results]


def _analyze_tree(
    paths: list[str], rules: frozenset[Rule] | None, jobs: int,
    on_progress: Callable[[int], None] | None,
) -> list[FileResult]:
    namer = ModuleNamer()
    modules = [namer(Path(p)) for p in paths]
    first = [_Job(p, rules, module=m, is_package=pkg) for p, (m, pkg) in zip(paths, modules,
                                                                            strict=True)]
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(worker_pool(jobs)) if jobs > 1 and len(paths) >= 64 else None
        done = _map(first, jobs, on_progress, pool)
        index = ProjectIndex(modules={m: Path(p) for p, (m, _) in zip(paths, modules,
                                                                      strict=True)})
        for d in done:
            if d.functions:
                index.add(d.module, d.functions)
            index.add_properties(d.module, d.properties)
        wanted = {
            mod for d in done for name in d.unresolved
            if index.lookup(name) is None and (mod := index.module_of(name)) is not None
        }
        done_modules = {d.module for d in done if d.result.parsed}
        by_module = {m: i for i, (m, _) in enumerate(modules)}
        summarize = [first[by_module[mod]] for mod in sorted(wanted - done_modules)]
        summaries = (
            pool.map(_summarize_job, summarize, chunksize=max(1, len(summarize) // (jobs * 4)))
            if pool is not None and len(summarize) >= 16 else map(_summarize_job, summarize)
        )
        for module, functions in summaries:
            if module:
                index.add(module, functions)
        if not len(index) and not index.properties:
            return [d.result for d in done]
        property_names = index.property_names()
        spellings = _Spellings(index.source_spellings())
        unparsed = [i for i, d in enumerate(done) if not d.result.parsed and d.result.error is None]
        mentions = dict(zip(unparsed, spellings.mentioned([paths[i] for i in unparsed], pool, jobs),
                            strict=True))
        again: list[int] = []
        for i, d in enumerate(done):
            if d.result.error is not None:
                continue
            if d.result.parsed and not any(index.lookup(n) for n in d.unresolved) and not (
                d.attr_reads & property_names
            ):
                continue
            if not d.result.parsed and not mentions[i]:
                continue
            again.append(i)
        second = _map([attrs.evolve(first[i], project=index, force=True) for i in again], jobs,
                      None, pool)
    results = [d.result for d in done]
    for i, d in zip(again, second, strict=True):
        if d.result.parsed or d.result.error is not None:
            results[i] = d.result
    return results


class _Spellings:
    """Which files not analyzed in the first pass may call a function of the tree that
    returns addresses (:meth:`ProjectIndex.source_spellings`): they must import (the word
    ``import``), spell the function's name as a word and its module's last component."""

    def __init__(self, spellings: dict[str, frozenset[str]]) -> None:
        self._names = [
            (name, sorted(words), re.compile(rf"\b{re.escape(name)}\b"))
            for name, words in sorted(spellings.items())
        ]

    def mentioned(self, paths: list[str], pool: ProcessPoolExecutor | None,
                  jobs: int) -> list[bool]:
        """:meth:`mentioned_in` for each of *paths* (in the worker processes of *pool*)."""
        if not self._names or not paths:
            return [False] * len(paths)
        if pool is None or len(paths) < 256:
            return [self.mentioned_in(p) for p in paths]
        size = max(64, len(paths) // (jobs * 4))
        chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
        return [hit for part in pool.map(self._mentioned_chunk, chunks) for hit in part]

    def _mentioned_chunk(self, paths: list[str]) -> list[bool]:
        return [self.mentioned_in(p) for p in paths]

    def mentioned_in(self, path: str) -> bool:
        """Whether the file at *path* spells one of the functions (False if unreadable)."""
        if not self._names:
            return False
        try:
            text = read_source(path).text
        except SourceError:
            return False
        if "import" not in text:
            return False
        return any(
            name in text and ("" in words or any(w in text for w in words))
            and pattern.search(text) is not None
            for name, words, pattern in self._names
        )
