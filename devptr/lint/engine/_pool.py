"""Worker processes that a Ctrl-C stops at once.

A terminal's Ctrl-C sends SIGINT to every process of the foreground group: with a plain
:class:`~concurrent.futures.ProcessPoolExecutor`, each worker raised ``KeyboardInterrupt``
wherever it was (sometimes holding the result queue's lock), and the parent's
``shutdown(wait=True)`` then waited forever for a queue nobody would drain (``devptr
check --jobs 2`` hung in 3 of 38 trials, ``devptr migrate --jobs 2`` in 6 of 135). Here the
workers ignore SIGINT, so only the parent sees it; when the ``with`` block is left by an
exception (``KeyboardInterrupt`` included) or a generator holding it is closed, pending work
is cancelled and the workers are terminated instead of waited for. Workers only compute
(neither tool writes a file from a worker), so terminating them loses nothing.

A worker terminated while sending a result can leave the pool's manager thread blocked
for ever in ``recv`` of the half-sent message, and the interpreter joins that (non-daemon)
thread at exit: 1 hang in 12 Ctrl-C trials of ``devptr check --jobs 2`` even with the
workers terminated. So the commands leave through :func:`exit_now` once interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Final, NoReturn

_JOIN_S: Final = 2.0
"""How long a terminated worker is waited for (it exits at once unless the OS is stuck)."""


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold SIGINT back for the block (main thread); it is delivered when the block ends.

    For the few system calls that must not be cut in two: forking the workers (a child
    interrupted before it ignores SIGINT printed a traceback, and the parent's interrupt
    could be lost) and a file's write-and-rename (an interrupt inside ``mkstemp`` left its
    temporary file behind). Two layers: the signal is blocked in this thread (POSIX), and
    Python's SIGINT handler is replaced for the block by one that only records the signal.
    The second layer is the one that holds: a process-directed SIGINT is delivered to any
    thread that does not block it (a progress bar's refresh thread, the worker pool's
    manager), and Python then runs its handler in the main thread at the next bytecode,
    masked or not. After the block the recorded signal goes to the previous handler
    (``KeyboardInterrupt`` by default).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def record(signum: int, frame: object) -> None:
        caught.append(signum)

    previous = signal.signal(signal.SIGINT, record)
    masked = hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masked else None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a pending SIGINT runs record()
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)  # default_int_handler: raises KeyboardInterrupt
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def interrupts_recorded() -> Iterator[Callable[[], bool]]:
    """For a command's run (main thread): SIGINT raises ``KeyboardInterrupt`` as usual and
    is also recorded; the yielded function says whether one came. A ``KeyboardInterrupt``
    raised inside a weak-reference callback or a ``__del__`` (an import's module-lock
    callback, say) is printed as "Exception ignored" and lost; the command then asks this
    before it reports success, so a Ctrl-C is never lost. The previous handler is back
    after the block."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received: list[int] = []

    def on_sigint(signum: int, frame: Any) -> None:
        received.append(signum)
        signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield lambda: bool(received)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _terminate(pool: ProcessPoolExecutor) -> None:
    workers = list((pool._processes or {}).values())  # no public handle on the workers
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    for worker in workers:
        worker.join(_JOIN_S)


@contextlib.contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """``jobs`` worker processes that ignore SIGINT; terminated if the block fails.

    With the fork start method every worker starts at the first task: that first task (a
    no-op) runs here, with SIGINT held, so no worker is forked while SIGINT is handled.
    """
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
    try:
        with sigint_held():
            pool.submit(int).result()
        yield pool
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown()


def exit_now(status: int) -> NoReturn:
    """Flush stdout and stderr and end the process at once, without joining the worker
    pool's threads (see the module docstring). For the commands' interrupt path only."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
