"""`devptr demo` and the trap table it shows, on the installed torch."""

from __future__ import annotations

import io
import re

import pytest
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


def _render(width: int) -> str:
    buf = io.StringIO()
    run_demo(Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


ADDRESS = re.compile(r"DevicePtr\(0x[0-9a-f]+\)|0x[0-9a-f]{6,}|-?\b\d{12,}\b")
VERDICTS = (
    "all bit-exact",
    "byte-exact",
    "bytes match torch",
    "both encodings decode to the same addresses: yes",
    "ValueError: Overflow",
)


def _fake(token: str) -> bool:
    text = token.removeprefix("DevicePtr(").rstrip(")")
    value = int(text, 16) if text.startswith("0x") else int(text)
    return value < 0 or value >= 2**63 or text.startswith("0x7f3a")


def test_demo_is_readable_at_80_columns() -> None:
    wide, wide_again, narrow = _render(200), _render(200), _render(80)
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "\u2026" not in narrow  # rich's ellipsis: nothing cut
    # The fake (XPU-like, bit 63 set) addresses and the fake host region are the same in
    # every run; real tensors' addresses are not, so only the deterministic ones are compared.
    stable = {a for a in set(ADDRESS.findall(wide)) & set(ADDRESS.findall(wide_again)) if _fake(a)}
    assert len(stable) >= 30
    missing = sorted(a for a in stable if a not in set(ADDRESS.findall(narrow)))
    assert not missing, f"addresses not printed whole at 80 columns: {missing}"
    flat = " ".join(narrow.split())  # prose wraps at 80 columns; verdict words stay whole
    for verdict in VERDICTS:
        assert verdict in flat, verdict
    assert "MISMATCH" not in narrow and "fails" in narrow  # the trap verdicts are shown too
    # every trap's verdict appears next to its spelling, whole
    for o in run_traps():
        assert o.spelling.split()[0] in narrow


def test_cli_demo_subprocess() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "demo"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "all bit-exact" in proc.stdout


def test_piped_demo_honours_columns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`COLUMNS=80 devptr demo > file`: rich reads COLUMNS, and the demo keeps it (piped
    output without COLUMNS is widened to 120 instead of rich's 80)."""
    monkeypatch.setenv("COLUMNS", "80")
    run_demo()
    out = capsys.readouterr().out
    assert "all bit-exact" in out
    assert max(map(len, out.splitlines())) <= 80
    monkeypatch.delenv("COLUMNS")
    run_demo()
    assert max(map(len, capsys.readouterr().out.splitlines())) > 80
