"""The GPU benchmark script stays runnable: its ``--quick`` CPU mode (Triton interpreter)
runs every case through the kernel path and checks each devptr batch byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    torch.cuda.is_available(),
    reason=(
        "CPU-machine path (Triton interpreter); GPU machines run the compiled kernel path in "
        "test_ec_gpu.py (the GPU image's triton 3.6 interpreter fails under numpy 2.5)"
    ),
)
def test_bench_ec_gpu_quick_mode(tmp_path: Path) -> None:
    env = dict(os.environ, OUT=str(tmp_path), TRITON_INTERPRET="1")
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_ec_gpu.py"), "--quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads((tmp_path / "ec_gpu.json").read_text())
    assert doc["path"] == "kernel" and doc["quick"] is True
    assert [(r["direction"], r["block_bytes"]) for r in doc["results"]] == [
        ("D2H", 4096),
        ("D2H", 16384),
        ("H2D", 4096),
        ("H2D", 16384),
    ]
    assert "| D2H | 4 KiB |" in out.stdout
