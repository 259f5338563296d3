"""`devptr selftest` runs here (CPU: interpreter) and reports every check; on a GPU, the same
checks run compiled and the graph check runs too."""

from __future__ import annotations

import os
import subprocess
import sys

from support.gpu import HAS_GPU

from devptr.selftest import format_report, run_selftest

NAMES = ["allocations", "tables", "kernels", "addr-arg cache", "graph capture"]


def test_every_check_passes_or_skips_with_a_reason() -> None:
    target, results = run_selftest()
    assert [r.name for r in results] == NAMES
    for r in results:
        assert r.status in ("pass", "skip"), (r.name, r.detail)
        assert r.detail
    graph = results[-1]
    assert graph.status == ("pass" if HAS_GPU else "skip")
    report = format_report(target, results)
    assert report.count("\n| ") == len(NAMES) + 1  # header + one row per check
    assert "5 of 5 checks without failure" in report


def test_cli_prints_the_report_and_exits_zero() -> None:
    env = dict(os.environ)
    if not HAS_GPU:
        env["TRITON_INTERPRET"] = "1"
    out = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "selftest"], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "| tables | pass |" in out.stdout and "selftest on" in out.stdout


def test_a_failing_check_is_reported_as_fail() -> None:
    import torch

    from devptr.selftest._checks import Target, check_tables

    bogus = Target(torch.device("meta"), "meta", True, "meta device")
    result = check_tables(bogus)
    assert result.status == "FAIL" and result.detail


def _missing_devices() -> list[str]:
    import torch

    cuda = "cuda:99" if HAS_GPU else "cuda"  # a CUDA device this machine does not have
    xpu = [] if hasattr(torch, "xpu") and torch.xpu.is_available() else ["xpu:0"]
    return [cuda, *xpu, "bogus", "cuda:x"]


def test_a_bad_or_missing_device_is_one_line_and_exit_2() -> None:
    procs = {  # one process per device, all started at once (each imports torch)
        device: subprocess.Popen(
            [sys.executable, "-m", "devptr.cli", "selftest", "--device", device],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for device in _missing_devices()
    }
    for device, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        assert out.returncode == 2, (device, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr, (device, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("devptr selftest: "), (device, out.stderr)
        assert repr(device) in lines[0] or device in lines[0], (device, lines)
