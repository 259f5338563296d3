"""devptr's environment variables are parsed strictly (issue 22 item 21): a value that is not
one of the accepted spellings is an error naming the variable and the value, never a silent
default. ``DEVPTR_CHECKED`` is read at import, so each value is tried in a separate process
(one process re-imports the module for every value; the test process is left alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ACCEPTED = {"1": True, "true": True, "TRUE": True, " 0 ": False, "false": False, "": False}
REFUSED = ["2", "y", "yes", "on", "enable", "-1", "ture"]

PROBE = """
import importlib, json, os, sys
out = {}
for value in json.loads(sys.argv[1]):
    os.environ["DEVPTR_CHECKED"] = value
    sys.modules.pop("devptr._checked", None)
    try:
        out[value] = importlib.import_module("devptr._checked").ENABLED
    except Exception as exc:
        out[value] = [type(exc).__name__, isinstance(exc, ValueError), str(exc)]
print(json.dumps(out))
"""


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("DEVPTR_")}
    full.update(env, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=full, capture_output=True, text=True, timeout=300
    )


def test_checked_accepts_0_1_true_false_empty_and_refuses_the_rest() -> None:
    out = _run(PROBE, json.dumps([*ACCEPTED, *REFUSED]))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for value, on in ACCEPTED.items():
        assert got[value] is on, (value, got[value])
    for value in REFUSED:
        name, is_value_error, message = got[value]
        assert name == "InvalidValueError" and is_value_error, got[value]
        assert message.startswith(f"environment variable DEVPTR_CHECKED={value!r} is invalid"), message


def test_encoding_typo_is_an_error_at_the_first_lookup_not_at_import() -> None:
    code = (
        "import devptr\n"
        "try:\n    devptr.encoding_for('cuda')\n"
        "except devptr.UnknownBackendError as e:\n    print('ERR', e)\n"
    )
    out = _run(code, DEVPTR_ENCODING="cdua=U64")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERR environment variable DEVPTR_ENCODING='cdua=U64' is invalid")
