"""Ctrl-C during ``--jobs 2`` runs of both tools (issue 22, item 6).

A real ``devptr migrate``/``devptr check`` subprocess on a tree big enough for worker
processes, in its own process group; SIGINT goes to the whole group at a random moment of
the run, as a terminal's Ctrl-C does. Each trial requires: the command exits within
``EXIT_S`` with status 130 and says it was interrupted, no process of the group is left,
and (migrate) every file is byte for byte the old or the new version, with no temporary
file left. Before, it hung in 6 of 135 trials (migrate) and 3 of 38 (check): a few trials
cannot show that every time, but they catch a regression that hangs often.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXIT_S = 10.0
"""Limit for the exit after SIGINT (it takes well under a second; the margin is for a
loaded CI machine: on the 2-core CI box, with another pytest run beside it, one trial of
``migrate --jobs 2`` exited with 130 after more than 5 s; a hang, the defect this guards
against, never exits)."""
TRIALS = 3
FILES = {"check": 70, "migrate": 24}
"""check uses workers from 64 files on; migrate from 2 files with findings."""
BODY = "".join(
    f"\n\ndef put_{k}(x, y):\n"
    f"    T[{k % 4}] = x.data_ptr()\n"
    f"    return torch.tensor([x.data_ptr(), y.data_ptr()], dtype=torch.int64)\n"
    for k in range(4)
)
SOURCE = "import torch\n\nT = torch.zeros(4, dtype=torch.int64)\n" + BODY


def _command(tool: str, root: Path) -> list[str]:
    extra = ["--format", "json"] if tool == "check" else []
    return [sys.executable, "-m", "devptr.cli", tool, str(root), "--jobs", "2", *extra]


def _make_tree(root: Path, files: int) -> None:
    for k in range(files):
        pkg = root / f"pkg{k % 4}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / f"mod_{k}.py").write_text(SOURCE)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _group_gone(pgid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _reference(tool: str, root: Path) -> float:
    start = time.monotonic()
    subprocess.run(_command(tool, root), capture_output=True, timeout=300, check=False)
    return time.monotonic() - start


def _sigint_default() -> None:
    """The child as a terminal's Ctrl-C finds it: SIGINT's default action. A run started in
    the background (``nohup``, ``cmd &`` in a non-interactive shell) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler: the test would measure
    its launcher, not devptr."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
@pytest.mark.parametrize("tool", ["migrate", "check"])
def test_ctrl_c_with_two_jobs_exits_promptly_and_leaves_files_old_or_new(
    tmp_path: Path, tool: str
) -> None:
    old_tree = tmp_path / "old"
    _make_tree(old_tree, FILES[tool])
    old = _snapshot(old_tree)
    done_tree = tmp_path / "done"
    shutil.copytree(old_tree, done_tree)
    full = _reference(tool, done_tree)
    new = _snapshot(done_tree)
    if tool == "migrate":
        assert all(new[k] != old[k] for k in old), "the reference run changed every file"
    rng = random.Random(f"{tool}-22")
    interrupted = 0
    for trial in range(TRIALS):
        work = tmp_path / f"trial{trial}"
        shutil.copytree(old_tree, work)
        proc = subprocess.Popen(_command(tool, work), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                preexec_fn=_sigint_default)
        try:
            time.sleep(rng.uniform(0.45, 0.85) * full)
            if proc.poll() is not None:
                proc.communicate()
                continue  # finished before the interrupt: nothing to test in this trial
            os.killpg(proc.pid, signal.SIGINT)
            start = time.monotonic()
            _, err = proc.communicate(timeout=EXIT_S)
            took = time.monotonic() - start
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"{tool} trial {trial}: still running {EXIT_S} s after SIGINT")
        interrupted += 1
        # 130: stopped by a handler (typer's, while imports ran, says nothing); -SIGINT:
        # the signal came while Python started or shut down, outside the command
        assert proc.returncode in (130, -signal.SIGINT), (trial, proc.returncode,
                                                          err.decode()[-2000:])
        assert took < EXIT_S
        assert _group_gone(proc.pid, 2.0), f"{tool} trial {trial}: workers left running"
        after = _snapshot(work)
        assert set(after) == set(old), "a file appeared or vanished (temporary file?)"
        for name, data in after.items():
            assert data in (old[name], new[name]), f"{name} is neither old nor new"
    assert interrupted >= 1, "every run ended before the interrupt came"
