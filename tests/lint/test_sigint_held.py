"""``sigint_held``: an interrupt that arrives during the block is delivered after it, even
when the kernel hands the signal to another thread (the case that left a temporary file of
``devptr migrate`` behind: SIGINT reached a progress thread, and Python raised
``KeyboardInterrupt`` inside ``mkstemp`` in the main thread)."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

from devptr.lint.engine._pool import interrupts_recorded, sigint_held

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")


class _Killer:
    """A thread started before the block (so SIGINT is unblocked in it, as in a progress
    bar's refresh thread) that sends the process SIGINT on request: the kernel may deliver
    it to this thread, whose mask lets it in."""

    def __init__(self) -> None:
        self._go = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._go.wait()
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this very thread
        self._done.set()

    def kill(self) -> None:
        self._go.set()
        assert self._done.wait(5.0)
        self._thread.join(5.0)


def test_an_interrupt_during_the_block_is_raised_after_it() -> None:
    finished = []
    killer = _Killer()
    with pytest.raises(KeyboardInterrupt):
        with sigint_held():
            killer.kill()
            total = 0
            for i in range(200_000):  # many bytecodes: Python checks its signals in between
                total += i
            finished.append(total)
    assert finished == [sum(range(200_000))]  # the block ran to its end first


def test_the_previous_handler_is_back_after_the_block() -> None:
    before = signal.getsignal(signal.SIGINT)
    with sigint_held():
        pass
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):  # and it is the one that runs afterwards
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):
            pass


def test_a_handler_of_the_callers_receives_the_held_signal() -> None:
    got: list[int] = []
    killer = _Killer()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        with sigint_held():
            killer.kill()
            for _ in range(10_000):
                pass
            assert got == []  # not during the block
        assert got == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_interrupt_a_finalizer_swallowed_is_still_recorded() -> None:
    # Python prints a KeyboardInterrupt raised inside __del__ (or a weakref callback, such as
    # importlib's module-lock one) as "Exception ignored" and goes on: the command must
    # still learn that Ctrl-C came (devptr check once finished and exited 1 after it)
    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)
            for _ in range(10_000):  # the handler runs here, inside the finalizer
                pass

    swallowed: list[type[BaseException] | None] = []
    before = signal.getsignal(signal.SIGINT)
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: swallowed.append(u.exc_type)  # what Python would print
    try:
        with interrupts_recorded() as interrupted:
            assert not interrupted()
            Finalized()  # collected at once; its KeyboardInterrupt is swallowed
            assert swallowed == [KeyboardInterrupt]
            assert interrupted()
    finally:
        sys.unraisablehook = hook
    assert signal.getsignal(signal.SIGINT) is before
