"""`devptr demo` and the trap table it shows, on the installed torch."""

from __future__ import annotations

import io

import torch
from rich.console import Console

from devptr.demo import run_demo
from devptr.demo.traps import run_traps

TORCH_214 = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


def test_traps_match_measured_behaviour() -> None:
    got = {o.spelling: o for o in run_traps()}
    assert not got["torch.tensor([HI], dtype=torch.int64)"].ok
    assert "Overflow when unpacking long long" in got["int64_tensor[k] = HI"].detail
    assert got["int64_tensor[k] = HI - 2**64"].ok
    assert got["torch.tensor([HI], dtype=torch.uint64)"].ok
    assert "too large to convert to C long" in got["np.zeros(n, np.int64)[k] = HI"].detail
    assert "float64" in got["np.uint64(HI) + np.int64(1)"].detail
    # the version trap: opposite signs accepted
    assert got["uint64_tensor[k] = HI"].ok is TORCH_214
    assert got["uint64_tensor[k] = HI - 2**64"].ok is not TORCH_214


def test_demo_runs_and_is_bit_exact() -> None:
    buf = io.StringIO()
    run_demo(Console(file=buf, width=160, color_system=None))
    out = buf.getvalue()
    assert "all bit-exact" in out
    assert "MISMATCH" not in out
    assert "Overflow when unpacking long long" in out


def test_cli_demo_subprocess() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "demo"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "all bit-exact" in proc.stdout
