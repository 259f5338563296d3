"""Regenerate the RFC's tables by running the code they describe: ``python -m tools.report``.

The blocks live in two documents: the RFC (``rfc/0001-device-pointer-convention.md``: the
trap summary, the alternatives' scores, two quotes) and its appendix (``rfc/0001-appendix.md``:
everything else). ``--update FILE`` / ``--check FILE`` handle the blocks FILE holds.

Usage (from the repository root)::

    python -m tools.report                       # print every block for the installed torch
    python -m tools.report --update rfc/0001-appendix.md
    python -m tools.report --update rfc/0001-device-pointer-convention.md
    python -m tools.report --check rfc/0001-appendix.md   # exit 1 on a diff
    python -m tools.report --only traps,alt-summary
    python -m tools.report --update rfc/0001-appendix.md --vllm-tree DIR
    python -m tools.report --plot rfc/0001-appendix.md   # the cost figure
    python -m tools.report --claims                      # numbers without a source (all docs)
    python -m tools.report --claims README.md            # ... in one file

Tables that depend on the torch version have one column per version (``torch 2.13``,
``torch 2.14``): a run fills the installed version's column and keeps the others, so run
``--update`` once under each torch. ``--vllm-tree`` also runs ``devptr check`` on an
unpacked vLLM source tree (slow; the block is left alone without it).

This module is not imported by ``import devptr``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs
import numpy as np
import torch

from tools.report.md import (
    VERSION_HEADER_RE,
    Block,
    Check,
    StaticTable,
    VersionedTable,
    compare_block,
    find_blocks,
    merge_column,
    open_marker,
    parse_table,
    render_block,
    update_text,
)
from tools.report.quote import Quote, quote_table

RFC_PATH: Final = Path("rfc/0001-device-pointer-convention.md")
"""The RFC, relative to the repository root."""
APPENDIX_PATH: Final = Path("rfc/0001-appendix.md")
"""The RFC's appendix (generated tables, per-option details, benchmark quotes)."""
LAMPORT_PATH: Final = Path("rfc/0001-note-lamport.md")
"""The Lamport all-reduce note (not part of the migration plan)."""
DOC_PATHS: Final = (RFC_PATH, APPENDIX_PATH, LAMPORT_PATH)
"""Every document holding generated blocks; each block lives in exactly one of them."""
TRAP_SUMMARY: Final = (
    "`int64_tensor[k] = HI`",
    "`int64_tensor[k] = HI - 2**64`",
    "`uint64_tensor[k] = HI`",
    "`uint64_tensor[k] = HI - 2**64`",
)
"""The four rows of the RFC's summary of the torch 2.13/2.14 sign trap."""
PLOT_PATH: Final = Path("img/0001-alt-cost.png")
"""The cost figure, relative to the RFC's folder."""


def installed_version() -> str:
    """``'2.13'`` for torch 2.13.0+cpu: the column this run fills."""
    base = torch.__version__.split("+")[0]
    return ".".join(base.split(".")[:2])


def _prov(extra: str = "") -> str:
    from tools.report.traps import provenance

    return provenance() + (f", {extra}" if extra else "")


def _cpu() -> str:
    """``CPU: <model>, <n> cores`` (Linux ``/proc/cpuinfo``; the platform string elsewhere)."""
    import os
    import platform

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"CPU: {model}, {os.cpu_count()} cores"


def _triton_version() -> str:
    try:
        import triton
    except ImportError:
        return "triton not installed"
    from tools.report.alt import triton_mode

    return f"triton {triton.__version__} ({triton_mode()})"


def _versioned(
    name: str,
    keys: tuple[str, ...],
    rows: Callable[[], Sequence[tuple[tuple[str, ...], str]]],
    check: Check = "exact",
    extra: Callable[[], str] = lambda: "",
) -> BlockSpec:
    def make() -> Block:
        return Block(name, VersionedTable(keys, tuple(rows()), _prov(extra())), check)

    return BlockSpec(name, make)


def _static(name: str, table: Callable[[], tuple[tuple[str, ...], Sequence[tuple[str, ...]]]]) -> BlockSpec:
    def make() -> Block:
        header, rows = table()
        return Block(name, StaticTable(header, tuple(tuple(r) for r in rows)))

    return BlockSpec(name, make)


@attrs.frozen
class BlockSpec:
    """A block name and how to produce it (lazily: some run Triton or time things)."""

    name: str
    make: Callable[[], Block]
    needs_tree: bool = False


def _traps() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.traps import trap_rows

    return trap_rows()


def _trap_summary() -> Sequence[tuple[tuple[str, ...], str]]:
    return [r for r in _traps() if r[0][0] in TRAP_SUMMARY]


def _numpy() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.traps import numpy_rows

    return numpy_rows()


def _uops() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.traps import uint64_op_rows

    return uint64_op_rows()


def _kernel() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.alt import kernel_rows

    return kernel_rows()


def _compile_key() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.alt import compile_key_rows

    return compile_key_rows()


def _triton_only() -> str:
    try:
        import triton
    except ImportError:
        return "triton not installed"
    return f"triton {triton.__version__}"


def _summary() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.alt import summary_rows

    return summary_rows()


def _alt(key: str) -> Callable[[], Sequence[tuple[tuple[str, ...], str]]]:
    def rows() -> Sequence[tuple[tuple[str, ...], str]]:
        from tools.report.alt import ALTERNATIVES, alternative_rows

        alt = next(a for a in ALTERNATIVES if a.key == key)
        return alternative_rows(alt)

    return rows


def _cost() -> Sequence[tuple[tuple[str, ...], str]]:
    from tools.report.alt import cost_rows

    return cost_rows()


def _rules() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
    from tools.report.static import rule_rows

    return rule_rows()


def _encodings() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
    from tools.report.static import encoding_rows

    return encoding_rows()


REPO_ROOT: Final = Path(__file__).resolve().parents[2]
"""The checkout this module runs from (results files are read relative to it)."""


QUOTES: Final[dict[str, Quote]] = {
    "perf-core": Quote(Path("benchmarks/results/core.md"), "Summary", 0),
    "perf-kernels": Quote(Path("benchmarks/results/kernels.md"), "Alignment classes", 0),
    "perf-kernels-launch": Quote(Path("benchmarks/results/kernels.md"), "Launch with the tables ready", 0),
    "perf-kernels-host": Quote(Path("benchmarks/results/kernels.md"), "Preparing and uploading", 0),
    "perf-kernels-adapter": Quote(Path("benchmarks/results/kernels.md"), "The Mamba adapter's real path", 0),
    "perf-ec": Quote(Path("benchmarks/results/ec_connector.md"), "Building descriptors", 0),
    "perf-ec-gpu": Quote(Path("benchmarks/results/ec_connector.md"), "GPU: D2H", 0),
    "perf-lamport-eager": Quote(Path("benchmarks/results/lamport.md"), "Eager and graph", 0),
    "perf-lamport": Quote(Path("benchmarks/results/lamport.md"), "Eager and graph", 1),
    "perf-lint": Quote(Path("benchmarks/results/lint.md"), "Summary", 0),
    "perf-lint-dev": Quote(Path("benchmarks/results/lint.md"), "development trees (split of 2026-12-02", 0),
    "perf-lint-test": Quote(Path("benchmarks/results/lint.md"), "test trees (split of 2026-12-02", 0),
    "perf-migrate": Quote(Path("benchmarks/results/migrate.md"), "Migration", 0),
    "perf-migrate-rules": Quote(Path("benchmarks/results/migrate.md"), "Migration", 1),
    "perf-migrate-check": Quote(Path("benchmarks/results/migrate.md"), "before and after", 0),
    "perf-convention-same": Quote(Path("benchmarks/results/convention_gpu.md"), "Same kernel", 0),
    "perf-convention-transfers": Quote(Path("benchmarks/results/convention_gpu.md"), "Host transfers", 0),
    "perf-convention-host": Quote(Path("benchmarks/results/convention_host.md"), "H200 host", 0),
    "perf-review-precopy": Quote(Path("benchmarks/results/convention_gpu.md"), "Fused pre-copy against", 0),
    "perf-review-ec": Quote(
        Path("benchmarks/results/convention_gpu.md"), "The EC path against a copy-engine", 0
    ),
    "perf-review-sync": Quote(Path("benchmarks/results/convention_gpu.md"), "Hidden sync", 0),
    "perf-review-sync-loop": Quote(Path("benchmarks/results/convention_gpu.md"), "Hidden sync", 1),
}
"""Tables quoted whole from the other parts' results files (``tests/tools/test_quotes.py``
compares every row; a quote cannot drop rows)."""


def _quoted(name: str, quote: Quote) -> BlockSpec:
    def make() -> Block:
        return Block(name, quote_table(REPO_ROOT, quote), check="none")

    return BlockSpec(name, make)


ALT_KEYS: Final = ("twos", "u64-setitem", "per-platform", "build-view", "devptr", "small-helper")


def specs(vllm_tree: Path | None = None) -> list[BlockSpec]:
    """Every generated block of the RFC, in document order."""
    out = [
        _versioned("traps-summary", ("spelling",), _trap_summary),
        _versioned("traps", ("spelling",), _traps),
        _versioned("numpy", ("expression",), _numpy),
        _versioned("uint64-ops", ("operation on a CPU `torch.uint64` tensor `u`",), _uops),
        _static("rules", _rules),
        _static("encodings", _encodings),
        _versioned("kernel-compare", ("table", "kernel code"), _kernel, extra=_triton_version),
        _versioned("compile-key", ("table handed to the kernel",), _compile_key, extra=_triton_only),
        _versioned("alt-summary", ("alternative",), _summary, extra=_triton_version),
        *(_versioned(f"alt-{k}", ("step", "code"), _alt(k), extra=_triton_version) for k in ALT_KEYS),
        _versioned("alt-cost", ("alternative", "operation (per pointer)"), _cost, check="timing", extra=_cpu),
        *(_quoted(name, q) for name, q in QUOTES.items()),
    ]
    if vllm_tree is not None:
        tree = vllm_tree

        def check_table() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
            from tools.report.static import check_rows

            return check_rows(tree)

        def area_table() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
            from tools.report.static import area_rows

            return area_rows(tree)

        out.append(attrs.evolve(_static("vllm-check", check_table), needs_tree=True))
        out.append(attrs.evolve(_static("vllm-check-areas", area_table), needs_tree=True))

        def platform_table() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
            from tools.report.static import platform_rows

            return platform_rows(tree)

        out.append(attrs.evolve(_static("vllm-check-platforms", platform_table), needs_tree=True))

        def compare_table() -> tuple[tuple[str, ...], Sequence[tuple[str, ...]]]:
            from tools.report.kernel_scan import kernel_compare_rows

            return kernel_compare_rows(tree)

        out.append(attrs.evolve(_static("vllm-kernel-compares", compare_table), needs_tree=True))
    return out


def generate(names: Sequence[str] | None = None, vllm_tree: Path | None = None) -> list[Block]:
    """Run the generators (all, or those named)."""
    chosen = [s for s in specs(vllm_tree) if names is None or s.name in names]
    if names is not None:
        unknown = set(names) - {s.name for s in specs(vllm_tree)}
        if unknown:
            raise SystemExit(f"tools.report: unknown block(s): {', '.join(sorted(unknown))}")
    return [s.make() for s in chosen]


def check_document(text: str, blocks: Sequence[Block], version: str) -> list[str]:
    """Every difference between ``text``'s blocks and ``blocks`` (installed version only)."""
    found = find_blocks(text)
    problems: list[str] = []
    for b in blocks:
        if b.name not in found:
            problems.append(f"{b.name}: block missing from the document")
            continue
        problems.extend(compare_block(found[b.name], b, version))
    return problems


def _merge(other: Path, version: str, doc: Path, names: Sequence[str] | None) -> int:
    """``--merge-from``: bring another run's version column into ``doc``."""
    theirs = find_blocks(other.read_text(encoding="utf-8"))
    text = doc.read_text(encoding="utf-8")
    ours = find_blocks(text)
    merged = 0
    for name, body in ours.items():
        if (names is not None and name not in names) or name not in theirs:
            continue
        header = parse_table(body)[0]
        if not any(VERSION_HEADER_RE.match(h) for h in header):
            continue
        new = merge_column(body, theirs[name], version)
        text = text.replace(f"{open_marker(name)}\n{body}", f"{open_marker(name)}\n{new}", 1)
        merged += 1
    doc.write_text(text, encoding="utf-8")
    print(f"merged the torch {version} column of {merged} block(s) from {other} into {doc}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.report",
        description="Regenerate the RFC's tables on the installed torch/numpy.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", type=Path, metavar="FILE", help="rewrite FILE's generated blocks")
    mode.add_argument("--check", type=Path, metavar="FILE", help="exit 1 when FILE's blocks differ")
    mode.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="draw FILE's cost table to rfc/img/0001-alt-cost.png (needs matplotlib)",
    )
    mode.add_argument(
        "--merge-from",
        nargs=3,
        metavar=("OTHER", "VERSION", "FILE"),
        help="copy the 'torch VERSION' column of OTHER's blocks (a copy of the document updated on "
        "another machine) into FILE's (with --only: those blocks)",
    )
    mode.add_argument(
        "--claims",
        nargs="*",
        type=Path,
        metavar="FILE",
        help="print every number in FILE (default: the RFC, README and docs) that names no source "
        "or is not found in it; exit 1 if any",
    )
    parser.add_argument("--only", default=None, help="comma-separated block names")
    parser.add_argument("--vllm-tree", type=Path, default=None, help="vLLM source tree for `devptr check`")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    version = installed_version()
    if args.claims is not None:
        from tools.report.claims import check_all

        untraced = check_all(REPO_ROOT, args.claims or None)
        for problem in untraced:
            print(problem)
        print(f"{len(untraced)} untraced claim(s) or broken source link(s)")
        return 1 if untraced else 0
    if args.plot is not None:
        from tools.report.plot import plot_costs

        out = plot_costs(args.plot.read_text(encoding="utf-8"), args.plot.parent / PLOT_PATH)
        print(f"wrote {out}")
        return 0
    if args.merge_from is not None:
        return _merge(Path(args.merge_from[0]), args.merge_from[1], Path(args.merge_from[2]), names)
    target = args.update if args.update is not None else args.check
    if target is not None and names is None:
        present = set(find_blocks(target.read_text(encoding="utf-8")))
        names = [s.name for s in specs(args.vllm_tree) if s.name in present]
    blocks = generate(names, args.vllm_tree)
    if args.update is not None:
        text = args.update.read_text(encoding="utf-8")
        new, missing = update_text(text, blocks, version)
        for name in missing:
            print(f"tools.report: no block {name!r} in {args.update}", file=sys.stderr)
        if new != text:
            args.update.write_text(new, encoding="utf-8")
        print(
            f"updated {len(blocks) - len(missing)} block(s) in {args.update} "
            f"(torch {version} column; torch {torch.__version__}, numpy {np.__version__})"
        )
        return 1 if missing else 0
    if args.check is not None:
        problems = check_document(args.check.read_text(encoding="utf-8"), blocks, version)
        for p in problems:
            print(p)
        print(f"{len(problems)} difference(s) for torch {version} in {args.check}")
        return 1 if problems else 0
    for b in blocks:
        print(f"<!-- devptr-report:{b.name} -->")
        print(render_block(None, b, version), end="")
        print(f"<!-- /devptr-report:{b.name} -->\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
