"""A figure for the RFC's cost table, drawn from the document's own (tested) block.

The figure reads the ``alt-cost`` block of the RFC, so it shows exactly the numbers the
table holds, for every torch column present. Needs matplotlib (``pip install devptr[plot]``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.report.md import PROVENANCE_KEY, VERSION_HEADER_RE, find_blocks, parse_seconds, parse_table


def _legend(name: str, provenance: str) -> str:
    """``torch 2.13 (2-core CPU)`` from the column's provenance cell."""
    m = re.search(r"(\d+) cores", provenance)
    return f"{name} ({m.group(1)}-core CPU)" if m else name


def plot_costs(doc_text: str, out: Path) -> Path:
    """Draw the ``alt-cost`` block as grouped horizontal bars (log scale); return ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    header, rows = parse_table(find_blocks(doc_text)["alt-cost"])
    versions = [(i, h) for i, h in enumerate(header) if VERSION_HEADER_RE.match(h)]
    prov = next((r for r in rows if r[0] == PROVENANCE_KEY), None)
    rows = [r for r in rows if r[0] != PROVENANCE_KEY]
    labels = [f"{r[0].split('.')[0]}: {r[1].replace('`', '')}" for r in rows]
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.6))
    height = 0.8 / max(len(versions), 1)
    for k, (col, name) in enumerate(versions):
        vals = [parse_seconds(r[col]) for r in rows]
        ys = [i + k * height for i in range(len(rows))]
        ax.barh(
            ys,
            [v * 1e9 if v is not None else 0.0 for v in vals],
            height=height,
            label=_legend(name, prov[col] if prov is not None else ""),
        )
    ax.set_yticks([i + height * (len(versions) - 1) / 2 for i in range(len(rows))])
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("host time per pointer (ns, log scale; lower is better)")
    ax.set_title("Cost per pointer of each alternative (rfc/0001, section 8)")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
