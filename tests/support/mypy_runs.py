"""The suite's mypy runs, started in the background as soon as collection is done.

The typing tests (``tests/typing``) and the mypy plugin's tests (``tests/lint``) run real
mypy. A cold run (a fresh clone: no ``.mypy_cache``) type-checks torch and numpy first,
tens of seconds per set of options; run in the test that needs it, that time adds to the
suite's. So each test module declares its runs at import (:func:`register`, the names in
its module-level ``MYPY_RUNS``), the root ``conftest.py`` starts the runs of the modules
that have selected tests when collection finishes (:func:`start`), and a test asks for its
run's output with :func:`result`, waiting if needed.

Each run is a real ``python -m mypy`` process in the checkout (``PYTHONPATH`` and
``MYPYPATH`` name it, so this checkout's devptr and plugin are checked), with its own
cache under ``.mypy_cache/``. The runs go one after another on one background thread, so
the rest of the suite uses the other core meanwhile. :func:`stop` (at the end of the
session) kills a run still going and drops those not started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".mypy_cache"


@dataclass(frozen=True)
class MypyRun:
    """``python -m mypy *args`` in the checkout, with ``env`` added to the environment."""

    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MypyResult:
    stdout: str
    stderr: str
    status: int


_RUNS: dict[str, MypyRun] = {}
_started: dict[str, Future[MypyResult]] = {}
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_procs: list[subprocess.Popen[str]] = []
_stopping = threading.Event()


def register(name: str, args: Iterable[str], env: Mapping[str, str] | None = None) -> str:
    """Declare run ``name`` (at a test module's import); returns the name."""
    run = MypyRun(tuple(args), dict(env or {}))
    if _RUNS.setdefault(name, run) != run:
        raise ValueError(f"mypy run {name!r} registered twice with different arguments")
    return name


def config(name: str, text: str) -> Path:
    """Write a mypy configuration file for a run (beside the caches; returns its path)."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}.ini"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _execute(run: MypyRun) -> MypyResult:
    if _stopping.is_set():
        return MypyResult("", "the session ended before this mypy run started", -1)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(run.env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mypy", *run.args],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    _procs.append(proc)
    out, err = proc.communicate()
    return MypyResult(out, err, proc.returncode)


def start(names: Iterable[str]) -> None:
    """Queue the runs ``names`` (those not queued yet), in that order."""
    global _pool
    with _lock:
        for name in names:
            if name in _started:
                continue
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mypy-runs")
            _started[name] = _pool.submit(_execute, _RUNS[name])


def result(name: str) -> MypyResult:
    """The output of run ``name`` (started now if it was not queued; waits for it)."""
    start([name])
    return _started[name].result()


def start_for(items: Iterable[object]) -> None:
    """Start the runs declared (``MYPY_RUNS``) by the modules of the selected ``items``."""
    names: dict[str, None] = {}
    for item in items:
        for name in getattr(getattr(item, "module", None), "MYPY_RUNS", ()):
            names[name] = None
    start(names)


def stop() -> None:
    """End of the session: drop runs not started, kill one still running."""
    _stopping.set()
    for proc in _procs:
        if proc.poll() is None:
            proc.kill()
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
