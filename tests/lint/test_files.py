"""``devptr check`` reads files as Python does and says when it could not (issue 22, 16-17).

BOM and coding cookies follow :mod:`tokenize`'s rules; a file that cannot be read, decoded
or parsed makes the run exit 2 in every output format (SARIF: an error notification and
``executionSuccessful: false``); SARIF locations are percent-encoded URIs relative to
``%SRCROOT%``. Real files, the real command through typer's runner.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from devptr.cli import app

STORE = (
    "import torch\n\n"
    "T = torch.zeros(4, dtype=torch.int64)\n\n\n"
    "def put(x):\n"
    "    T[0] = x.data_ptr()\n"
)
_URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
"""The characters RFC 3986 allows in a URI (anything else must be percent-encoded)."""


def _check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check", *args])
    return result.exit_code, result.stdout


def test_bom_and_coding_cookie_files_are_analysed(tmp_path: Path) -> None:
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + STORE.encode())
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nN = '\xe9'\n" + STORE.encode())
    code, out = _check(str(tmp_path))
    assert code == 1, out
    assert f"{tmp_path / 'bom.py'}:7:5: DP001" in out
    assert f"{tmp_path / 'latin.py'}:9:5: DP001" in out


def _broken_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "good.py").write_text(STORE)
    (root / "bad_utf8.py").write_bytes(b"x = '\xff'\n")
    (root / "bom_and_latin1.py").write_bytes(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    (root / "bad_syntax.py").write_text("def (:\n    x.data_ptr()\n")
    return root


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_unreadable_files_fail_the_run_in_every_format(tmp_path: Path, fmt: str) -> None:
    """Issue 22 (16): check exited 0 when files could not be read or parsed."""
    root = _broken_tree(tmp_path)
    code, out = _check(str(root), "--format", fmt)
    assert code == 2
    for name in ("bad_utf8.py", "bom_and_latin1.py", "bad_syntax.py"):
        assert name in out
    if fmt == "json":
        payload = json.loads(out)
        assert len(payload["errors"]) == 3 and len(payload["findings"]) == 1
    if fmt == "sarif":
        run = json.loads(out)["runs"][0]
        invocation = run["invocations"][0]
        assert invocation["executionSuccessful"] is False
        notes = invocation["toolExecutionNotifications"]
        assert sorted(n["level"] for n in notes) == ["error"] * 3
        assert all(n["message"]["text"] for n in notes)


def test_a_clean_sarif_run_is_successful(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(STORE)
    code, out = _check(str(tmp_path), "--format", "sarif")
    assert code == 1
    assert json.loads(out)["runs"][0]["invocations"][0]["executionSuccessful"] is True


def _resolve(run: dict[str, Any], location: dict[str, Any]) -> Path:
    """The file a SARIF artifactLocation names, resolved as a SARIF consumer does."""
    art = location["physicalLocation"]["artifactLocation"]
    assert _URI_CHARS.match(art["uri"]), art["uri"]
    assert not art["uri"].startswith("/")
    base = run["originalUriBaseIds"][art["uriBaseId"]]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    absolute = urllib.parse.urljoin(base, art["uri"])
    assert urllib.parse.urlsplit(absolute).fragment == ""
    assert urllib.parse.urlsplit(absolute).query == ""
    return Path(urllib.request.url2pathname(urllib.parse.urlsplit(absolute).path))


def test_sarif_uris_are_percent_encoded_and_relative_to_srcroot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 (17): raw paths with spaces or non-ASCII failed the SARIF 2.1.0 schema
    (``uri`` is a ``uri-reference``), and ``%`` or ``#`` in a name pointed to another file."""
    names = ["with space.py", "caf\u00e9.py", "100%.py", "a#b.py", "q?.py", "plain.py"]
    sub = tmp_path / "src dir"
    sub.mkdir()
    for name in names:
        (sub / name).write_text(STORE)
    (sub / "bad #1.py").write_bytes(b"x = '\xff'\n")
    monkeypatch.chdir(tmp_path)
    code, out = _check("src dir", "--format", "sarif")
    assert code == 2
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    named = {_resolve(run, r["locations"][0]) for r in run["results"]}
    assert named == {(sub / n).resolve() for n in names}
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [_resolve(run, n["locations"][0]) for n in notes] == [(sub / "bad #1.py").resolve()]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in run["results"]}
    assert "src%20dir/caf%C3%A9.py" in uris and "src%20dir/100%25.py" in uris
    assert "src%20dir/a%23b.py" in uris


def test_a_path_outside_the_working_directory_gets_an_absolute_file_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x y.py").write_text(STORE)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _, out = _check(str(tmp_path / "x y.py"), "--format", "sarif")
    art = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
        "artifactLocation"]
    assert "uriBaseId" not in art
    assert art["uri"] == (tmp_path / "x y.py").as_uri() and "%20" in art["uri"]
