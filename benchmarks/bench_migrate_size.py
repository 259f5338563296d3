"""``devptr migrate`` and ``devptr check`` on one generated file of growing size.

Usage::

    python -m benchmarks.bench_migrate_size [--sizes 40000,250000,1000000,5000000]
        [--timeout 600]

Each size is a generated module (in a temporary folder) of small functions, each with two
default-rule findings (an int64 tensor store and an int64 table of ``data_ptr()`` values),
so findings grow with the size. Both commands run as real subprocesses (``devptr check F``
and ``devptr migrate F --check``); wall time per run, or "> timeout". Prints Markdown.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import header

_FUNCTION = (
    "def f{i}(x, y):\n"
    "    T[{k}] = x.data_ptr()\n"
    "    u = torch.tensor([x.data_ptr(), y.data_ptr()], dtype=torch.int64)\n"
    "    return u\n"
    "\n"
)


def generated(size: int) -> str:
    """A module of about ``size`` bytes with two findings per function."""
    parts = ["import torch\n\nT = torch.zeros(16, dtype=torch.int64)\n\n"]
    total = len(parts[0])
    i = 0
    while total < size:
        part = _FUNCTION.format(i=i, k=i % 16)
        parts.append(part)
        total += len(part)
        i += 1
    return "".join(parts)


def timed(args: list[str], timeout: float) -> float | None:
    """Wall seconds of the command, or None past ``timeout``."""
    start = time.perf_counter()
    try:
        subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40000,250000,1000000,5000000")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    devptr = [sys.executable, "-m", "devptr.cli"]
    rows = ["| file size | findings | `check` | `migrate --check` | migrate / check |",
            "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"gen_{size}.py"
            path.write_text(generated(size))
            findings = 2 * path.read_text().count("def f")
            check = timed([*devptr, "check", str(path)], args.timeout)
            migrate = timed([*devptr, "migrate", str(path), "--check"], args.timeout)

            def cell(t: float | None) -> str:
                return f"> {args.timeout:.0f} s" if t is None else f"{t:.1f} s"

            ratio = f"{migrate / check:.1f}x" if migrate and check else "-"
            rows.append(f"| {path.stat().st_size / 1e6:.2f} MB | {findings} | {cell(check)} | "
                        f"{cell(migrate)} | {ratio} |")
            print(rows[-1], file=sys.stderr, flush=True)
    print(header())
    print("\n".join(rows))


if __name__ == "__main__":
    main()
