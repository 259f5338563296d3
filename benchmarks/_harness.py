"""The one timing harness of the benchmarks: host, CUDA-event and CUDA-graph timing.

Every benchmark times through this module, so every results file reports the same thing:
the **median** per-call time over ``repeat`` samples, with its **spread** (min, p25, p75,
max), on a machine described the same way (:func:`machine`, :func:`header`).

Clocks
------
- :func:`host`: ``time.perf_counter_ns`` around ``number`` back-to-back calls, ``repeat``
  times. Needs nothing but the standard library (no torch, no triton).
- :func:`host_interleaved`: several functions timed in alternation (A, B, A, B, ...), so a
  load on a shared machine hits all of them alike; compare them side by side.
- :func:`cuda_events`: CUDA events around ``number`` eager calls on the current stream.
- :func:`cuda_graph`: ``number`` calls captured into one CUDA graph, each sample one replay
  between CUDA events (launch overhead removed).
- :func:`triton_bench`: ``triton.testing.do_bench`` / ``do_bench_cudagraph`` (they flush
  the L2 cache between calls), with every sample kept (``return_mode="all"``, present in
  triton 3.x: checked on 3.6, 3.8 and 3.9).
- :func:`on_device`: CUDA events on a CUDA device, the host clock (after the call)
  otherwise, for scripts that run on both.

All samples are per call, in nanoseconds (:class:`Timing`). Nothing here asserts a speed.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

Fn = Callable[[], object]


@dataclasses.dataclass(frozen=True)
class Timing:
    """Per-call times of one function, in nanoseconds: one sample per timed round.

    ``clock`` names how they were taken (``"host"``, ``"cuda-event"``, ``"cuda-graph"``,
    ``"triton"``, ``"triton-graph"``); ``number`` is the calls per sample.
    """

    samples_ns: tuple[float, ...]
    clock: str = "host"
    number: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples_ns", tuple(float(x) for x in self.samples_ns))
        if not self.samples_ns:
            raise ValueError("a Timing needs at least one sample")

    @property
    def median_ns(self) -> float:
        return float(statistics.median(self.samples_ns))

    @property
    def min_ns(self) -> float:
        return float(min(self.samples_ns))

    @property
    def max_ns(self) -> float:
        return float(max(self.samples_ns))

    def quantile_ns(self, q: float) -> float:
        """The ``q`` quantile (0 <= q <= 1), linear between order statistics."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be within [0, 1] (got {q})")
        xs = sorted(self.samples_ns)
        pos = q * (len(xs) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))

    @property
    def p25_ns(self) -> float:
        return self.quantile_ns(0.25)

    @property
    def p75_ns(self) -> float:
        return self.quantile_ns(0.75)

    @property
    def iqr_ns(self) -> float:
        """Interquartile range: p75 - p25."""
        return self.p75_ns - self.p25_ns

    @property
    def median_us(self) -> float:
        return self.median_ns / 1e3

    @property
    def min_us(self) -> float:
        return self.min_ns / 1e3

    @property
    def median_ms(self) -> float:
        return self.median_ns / 1e6

    @property
    def median_s(self) -> float:
        return self.median_ns / 1e9

    def summary(self) -> dict[str, float | int | str]:
        """Median and spread in ns, for JSON results."""
        return {
            "clock": self.clock,
            "samples": len(self.samples_ns),
            "number": self.number,
            "median_ns": self.median_ns,
            "min_ns": self.min_ns,
            "p25_ns": self.p25_ns,
            "p75_ns": self.p75_ns,
            "max_ns": self.max_ns,
        }

    def format(self, unit: str = "us", digits: int = 2) -> str:
        """``'1.23 us (IQR 1.20-1.31, min 1.18, n=7)'``: the median with its spread."""
        scale = _UNITS[unit]
        f = f"{{:.{digits}f}}"
        return (
            f"{f.format(self.median_ns / scale)} {unit} (IQR {f.format(self.p25_ns / scale)}-"
            f"{f.format(self.p75_ns / scale)}, min {f.format(self.min_ns / scale)}, "
            f"n={len(self.samples_ns)})"
        )


_UNITS: dict[str, float] = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def paired_ratios(a: Timing, b: Timing) -> Timing:
    """Per-sample ratios ``a / b`` of two interleaved timings (same round count), as a Timing.

    For :func:`host_interleaved` results: round *k* of ``a`` and of ``b`` ran back to back,
    so their ratio cancels most of a shared machine's load. The "ns" of the result are the
    plain ratios (``median_ns`` is the median ratio).
    """
    if len(a.samples_ns) != len(b.samples_ns):
        raise ValueError(
            f"paired ratios need equal sample counts ({len(a.samples_ns)} vs {len(b.samples_ns)})"
        )
    return Timing(tuple(x / y for x, y in zip(a.samples_ns, b.samples_ns, strict=True)), "ratio", 1)


# -- host -------------------------------------------------------------------------------------
def _check_counts(number: int, repeat: int) -> None:
    if number < 1 or repeat < 1:
        raise ValueError(f"number and repeat must be >= 1 (got {number}, {repeat})")


def autorange(fn: Fn, *, min_time_s: float = 0.02, max_number: int = 1 << 20) -> int:
    """A call count (1, 2, 5, 10, 20, 50, ...) whose batch takes at least ``min_time_s``."""
    number = 1
    while True:
        for k in (1, 2, 5):
            n = number * k
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            if (time.perf_counter_ns() - t0) / 1e9 >= min_time_s or n >= max_number:
                return n
        number *= 10


def host(fn: Fn, *, number: int = 1, repeat: int = 7, warmup: int = 1) -> Timing:
    """Host wall time of one call: ``repeat`` samples of ``number`` back-to-back calls.

    Uses ``time.perf_counter_ns``. For GPU work the host clock measures launch cost only;
    use :func:`cuda_events` or :func:`cuda_graph` for device time.
    """
    return host_interleaved({"fn": fn}, number=number, repeat=repeat, warmup=warmup)["fn"]


def host_interleaved(
    fns: Mapping[str, Fn], *, number: int = 1, repeat: int = 7, warmup: int = 1
) -> dict[str, Timing]:
    """Host time of each function, the functions run in alternation within every round.

    Each round runs every function ``number`` times, one after the other, so a load on the
    machine hits all of them alike; many short rounds let the minimum see quiet moments.
    """
    _check_counts(number, repeat)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    runs: dict[str, list[float]] = {k: [] for k in fns}
    clock = time.perf_counter_ns
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            for _ in range(number):
                fn()
            runs[name].append((clock() - t0) / number)
    return {k: Timing(tuple(v), "host", number) for k, v in runs.items()}


# -- CUDA ---------------------------------------------------------------------------------------
def cuda_events(fn: Fn, *, number: int = 1, repeat: int = 7, warmup: int = 2) -> Timing:
    """Device time of one call: CUDA events around ``number`` eager calls, ``repeat`` times.

    Times the current stream (and whatever ``fn`` makes it wait for). Synchronises before
    the first sample.
    """
    import torch

    _check_counts(number, repeat)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e6 / number)
    return Timing(tuple(samples), "cuda-event", number)


def capture_graph(fn: Fn, *, number: int = 10, warmup: int = 2) -> torch.cuda.CUDAGraph:
    """A CUDA graph of ``number`` calls of ``fn`` (warmed up on a side stream, as capture needs)."""
    import torch

    if number < 1:
        raise ValueError(f"number must be >= 1 (got {number})")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(number):
            fn()
    torch.cuda.synchronize()
    return graph


def time_replays(
    graph: torch.cuda.CUDAGraph,
    *,
    number: int,
    repeat: int = 7,
    before: Fn | None = None,
) -> Timing:
    """Device time per captured call: ``repeat`` replays of ``graph`` (``number`` calls each).

    ``before`` runs before each replay, outside the timed region (a barrier, a reset).
    """
    import torch

    _check_counts(number, repeat)
    graph.replay()  # warm-up replay
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e6 / number)
    return Timing(tuple(samples), "cuda-graph", number)


def cuda_graph(fn: Fn, *, number: int = 10, repeat: int = 7, warmup: int = 2) -> Timing:
    """Device time of one call without launch overhead: ``number`` calls in one CUDA graph,
    ``repeat`` replays, each between CUDA events."""
    graph = capture_graph(fn, number=number, warmup=warmup)
    try:
        return time_replays(graph, number=number, repeat=repeat)
    finally:
        del graph


def triton_bench(fn: Fn, *, graph: bool = False, warmup_ms: int = 25, rep_ms: int = 100) -> Timing:
    """``triton.testing.do_bench`` (or ``do_bench_cudagraph`` when ``graph``), every sample kept.

    Triton clears the L2 cache before each call of ``do_bench`` (cold-cache timing); the
    graph variant replays ``fn`` captured back to back. Needs triton and a CUDA GPU.
    """
    import torch
    import triton.testing

    if graph:
        with torch.cuda.stream(torch.cuda.Stream()):  # capture needs a side stream
            ms: Any = triton.testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="all")
    else:
        ms = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    values = [float(ms)] if isinstance(ms, (int, float)) else [float(x) for x in ms]
    return Timing(tuple(v * 1e6 for v in values), "triton-graph" if graph else "triton", 1)


def on_device(device: Any, fn: Fn, *, number: int = 1, repeat: int = 7, warmup: int = 2) -> Timing:
    """:func:`cuda_events` when ``device`` is a CUDA device, else :func:`host` time.

    On the host path a call is complete when it returns (CPU tensors), so host time is the
    work's time.
    """
    if getattr(device, "type", str(device).split(":")[0]) == "cuda":
        return cuda_events(fn, number=number, repeat=repeat, warmup=warmup)
    return host(fn, number=number, repeat=repeat, warmup=warmup)


# -- the machine ------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str | None:
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = __import__(module)
        except Exception:  # absent or broken: reported as absent
            return None
    return str(getattr(mod, "__version__", "?"))


def machine() -> dict[str, str]:
    """This machine and its software: CPU model, cores, load average, GPU, versions.

    Keys: ``cpu``, ``cores``, ``load``, ``gpu``, ``python``, ``torch``, ``triton``,
    ``numpy``, ``cuda`` (the last four absent when the package is not installed).
    """
    info: dict[str, str] = {"cpu": _cpu_model(), "cores": str(os.cpu_count())}
    try:
        info["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on Windows
        info["load"] = "?"
    info["gpu"] = "no GPU"
    torch_v = _version("torch")
    if torch_v is not None:
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            name = torch.cuda.get_device_name(0)
            info["gpu"] = name if n == 1 else f"{n} x {name}"
            if torch.version.cuda:
                info["cuda"] = str(torch.version.cuda)
    info["python"] = platform.python_version()
    for pkg in ("torch", "triton", "numpy"):
        v = torch_v if pkg == "torch" else _version(pkg)
        if v is not None:
            info[pkg] = v
    return info


def machine_line(info: Mapping[str, str] | None = None) -> str:
    """One line: ``'<cpu>, 2 cores (load 0.31 0.40 0.28), no GPU; Python 3.12.1, torch ...'``."""
    m = dict(machine() if info is None else info)
    sw = [f"Python {m['python']}"]
    sw += [f"{k} {m[k]}" for k in ("torch", "triton", "numpy") if k in m]
    if "cuda" in m:
        sw.append(f"CUDA {m['cuda']}")
    return f"{m['cpu']}, {m['cores']} cores (load {m['load']}), {m['gpu']}; " + ", ".join(sw)


def utc_now() -> str:
    """``'2026-11-30 18:20 UTC'``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def command_line(argv: Sequence[str] | None = None) -> str:
    """How this script was invoked: ``'python benchmarks/bench_x.py --out f.md'``."""
    args = list(sys.argv if argv is None else argv)
    return "python " + " ".join([os.path.relpath(args[0]), *args[1:]])


def header(command: str | None = None) -> str:
    """Markdown list lines for a results file: command, date, machine."""
    cmd = command_line() if command is None else command
    return f"- command: `{cmd}`\n- date: {utc_now()}\n- machine: {machine_line()}\n"


def meta(command: str | None = None) -> dict[str, Any]:
    """The same facts for JSON results: command, date and :func:`machine`'s keys."""
    return {"command": command_line() if command is None else command, "date": utc_now(), **machine()}
