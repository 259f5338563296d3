"""Turn the JSON of ``bench_kernels_gpu.py`` / ``bench_mamba_host.py`` into a plot and tables.

    python benchmarks/bench_kernels_report.py DIR   # DIR holds the two JSON files

writes ``benchmarks/results/kernels_bandwidth.png`` (needs matplotlib) and prints markdown
tables for ``benchmarks/results/kernels.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def _size(z: int) -> str:
    return f"{z // (1 << 20)} MiB" if z >= 1 << 20 else f"{z // 1024} KiB" if z >= 1024 else f"{z} B"


def plot(bench: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = {
        "devptr": "devptr batch_memcpy",
        "vllm_style": "vLLM-style kernel",
        "foreach_copy_": "torch._foreach_copy_",
    }
    fig, ax = plt.subplots(figsize=(7, 4.2))
    sizes = [r["segment_bytes"] for r in bench["sweep"]]
    for key, label in names.items():
        ax.plot(sizes, [r["results"][key]["GBps"] for r in bench["sweep"]], marker="o", label=label)
    ax.axhline(bench["ceiling_GBps"], color="k", ls="--", lw=1, label="1 GiB copy_ (ceiling)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [_size(z) for z in sizes])
    ax.set_xlabel("segment size (256 MiB per batch)")
    ax.set_ylabel("GB/s (read + write)")
    m = bench["machine"]
    ax.set_title(f"{m.get('gpu', '?')}, torch {m['torch']}, triton {m['triton']}", fontsize=9)
    ax.set_ylim(0, bench["ceiling_GBps"] * 1.1)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def tables(bench: dict[str, Any], host: dict[str, Any] | None) -> str:
    out = [f"Ceiling (1 GiB device-to-device `copy_`, same run): **{bench['ceiling_GBps']:,.0f} GB/s**.", ""]
    out += [
        "| case | devptr us | % of ceiling | vLLM-style us | speed-up | foreach_copy_ us | speed-up "
        "| copy_ loop us |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in bench["cases"]:
        res = r["results"]
        d = res["devptr"]
        v = res.get("vllm_style", {}).get("us")
        f = res.get("foreach_copy_", {}).get("us")
        lp = res.get("copy_loop", {}).get("us")
        cell = lambda x: f"{x:,.1f}" if x is not None else "-"  # noqa: E731
        ratio = lambda x, d=d: f"{x / d['us']:.1f}x" if x is not None else "-"  # noqa: E731
        ok = "" if d["correct"] else " (WRONG BYTES)"
        out.append(
            f"| {r['case']}{ok} | {d['us']:,.1f} | {d['of_ceiling']:.0%} | {cell(v)} | {ratio(v)} | "
            f"{cell(f)} | {ratio(f)} | {cell(lp)} |"
        )
    out += ["", "Tuning sweep (% of ceiling; `devptr` = the launcher's own choices):", ""]
    labels = [k for k in bench["cases"][0]["results"] if k.startswith("devptr")]
    out += ["| case | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for r in bench["cases"]:
        out.append(
            f"| {r['case']} | "
            + " | ".join(f"{r['results'][k]['of_ceiling']:.0%}" for k in labels if k in r["results"])
            + " |"
        )
    out += ["", "Segment-size sweep (GB/s, 256 MiB per batch):", ""]
    out += ["| segment | devptr | vLLM-style | foreach_copy_ |", "|---|---:|---:|---:|"]
    for r in bench["sweep"]:
        res = r["results"]
        out.append(
            f"| {_size(r['segment_bytes'])} | {res['devptr']['GBps']:,.0f} | "
            f"{res['vllm_style']['GBps']:,.0f} | {res['foreach_copy_']['GBps']:,.0f} |"
        )
    if host:
        out += [
            "",
            f"Host side, one step = collect {host['entries']} entries + host-to-device (median us):",
            "",
            "| vLLM's way | vLLM writes only (addresses precomputed) | devptr | devptr / vLLM "
            "| same tables |",
            "|---:|---:|---:|---:|---|",
            f"| {host['vllm_way_us']:,.1f} | {host['vllm_writes_only_us']:,.1f} | {host['devptr_us']:,.1f} | "
            f"{host['ratio_devptr_over_vllm']:.2f} | {host['same_tables']} |",
        ]
        if "e2e_devptr_us" in host:
            out += [
                "",
                f"End to end (tables + copies + kernel): vLLM-style {host['e2e_vllm_us']:,.0f} us, "
                f"devptr {host['e2e_devptr_us']:,.0f} us.",
            ]
    return "\n".join(out)


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    bench = json.loads((src / "kernels_bench.json").read_text())
    host_path = src / "mamba_host_bench.json"
    host = json.loads(host_path.read_text()) if host_path.exists() else None
    png = HERE / "results" / "kernels_bandwidth.png"
    plot(bench, png)
    print(tables(bench, host))
    print(f"\n(plot: {png.relative_to(HERE.parent)})")


if __name__ == "__main__":
    main()
