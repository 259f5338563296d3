"""mypy enforces the convention at call sites: the public API's types, pinned.

Runs real mypy (``python -m mypy --strict``, no plugin; started in the background at
collection, ``support.mypy_runs``) on a fixture of user code
(``fixtures/user_code.py``) and compares the lines it reports with the ``# E: code``
marks in the fixture: raw ints where addresses go are errors, DevicePtrs, tensors,
mixed sequences and uint64 arrays are not. The way attrs and numpy test their typing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import mypy_runs

pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "user_code.py"
MYPY_RUNS = [
    mypy_runs.register(
        "typing-fixtures",
        [
            "--strict",
            "--config-file=",
            "--no-error-summary",
            "--show-error-codes",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "typing-fixtures"),
            str(FIXTURE.relative_to(ROOT)),
        ],
        env={"MYPYPATH": str(ROOT)},  # this checkout's devptr, not an installed one
    )
]
MARK = re.compile(r"\s#\s*E:\s*([\w-]+)\s*$")
REPORTED = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[\w-]+)\]$")


def _expected() -> set[tuple[int, str]]:
    out = set()
    for k, line in enumerate(FIXTURE.read_text().splitlines(), start=1):
        m = MARK.search(line)
        if m:
            out.add((k, m.group(1)))
    return out


def test_mypy_pins_which_calls_are_errors() -> None:
    run = mypy_runs.result("typing-fixtures")
    stdout, stderr = run.stdout, run.stderr
    assert not stderr, stderr
    got = set()
    for line in stdout.splitlines():
        m = REPORTED.match(line)
        assert m, f"unexpected mypy output: {line}"
        assert m.group("path").endswith("user_code.py"), line  # nothing inside devptr
        got.add((int(m.group("line")), m.group("code")))
    expected = _expected()
    assert len(expected) >= 10
    assert got == expected, (
        f"missing errors {sorted(expected - got)}, unexpected errors {sorted(got - expected)}:\n{stdout}"
    )
