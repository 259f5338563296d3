"""Small timing helpers shared by the CPU benchmarks (median of repeats, side by side)."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def per_call_us(fn: Callable[[], object], *, number: int, repeat: int = 7) -> float:
    """Median over ``repeat`` runs of the time of one call, in microseconds."""
    fn()  # warm-up
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(runs)


def machine() -> str:
    """A one-line description of this machine and software."""
    import numpy
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")
        )
        cpu = model
    except (OSError, StopIteration):
        pass
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    return (
        f"{cpu}, {os.cpu_count()} cores, {gpu}; Python {platform.python_version()}, "
        f"torch {torch.__version__}, numpy {numpy.__version__}"
    )


def header(command: str) -> str:
    """Markdown lines: command, date, machine."""
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], capture_output=True, text=True).stdout
    return f"- command: `{command}`\n- date: {date.strip()}\n- machine: {machine()}\n"


def command_line() -> str:
    """How this script was invoked."""
    return "python " + " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
