"""The mypy plugin on the fixture files, through a real ``mypy.api.run``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint._expect import FIXTURES, expected, fixture_files

mypy_api = pytest.importorskip("mypy.api")

REPO = Path(__file__).resolve().parents[2]
_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z0-9-]+)\]$")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[tuple[int, str]]]:
    """Run mypy once over every fixture; map file name -> {(line, code)}."""
    tmp = tmp_path_factory.mktemp("mypy")
    config = tmp / "mypy.ini"
    config.write_text(
        "[mypy]\n"
        "plugins = devptr.mypy_plugin\n"
        f"mypy_path = {REPO}\n"
        "python_version = 3.11\n"
        "enable_error_code = devptr-unchecked-u64, devptr-wrapping-arith\n"
        "[mypy-devptr.*]\n"
        "follow_imports = silent\n"
    )
    cache = REPO / ".mypy_cache" / "devptr-lint-tests"
    stdout, stderr, _status = mypy_api.run(
        ["--config-file", str(config), "--cache-dir", str(cache), "--no-error-summary",
         "--hide-error-context", "--show-error-codes", *map(str, fixture_files())]
    )
    assert not stderr, stderr
    out: dict[str, set[tuple[int, str]]] = {p.name: set() for p in fixture_files()}
    for raw in stdout.splitlines():
        m = _LINE.match(raw)
        assert m is not None or ": note:" in raw, f"unparsed mypy output: {raw}"
        if m is not None:
            out.setdefault(Path(m["path"]).name, set()).add((int(m["line"]), m["code"]))
    return out


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.stem)
def test_plugin_codes(path: Path, mypy_errors: dict[str, set[tuple[int, str]]]) -> None:
    got = mypy_errors[path.name]
    want = expected(path, "mypy")
    assert got == want, f"missing: {sorted(want - got)}, unexpected: {sorted(got - want)}"


def _reveals(path: Path, plugin: bool, tmp: Path) -> list[str]:
    config = tmp / f"mypy-{plugin}.ini"
    config.write_text(
        "[mypy]\n"
        + ("plugins = devptr.mypy_plugin\n" if plugin else "")
        + f"mypy_path = {REPO}\npython_version = 3.11\n"
    )
    cache = REPO / ".mypy_cache" / f"devptr-lint-tests-{plugin}"
    stdout, _err, _status = mypy_api.run(
        ["--config-file", str(config), "--cache-dir", str(cache), "--no-error-summary",
         str(path)]
    )
    return [line.split(": ", 1)[1] for line in stdout.splitlines() if ": note: " in line]


def test_plugin_changes_no_other_type(tmp_path: Path) -> None:
    path = FIXTURES / "types_unchanged.py"
    with_plugin = _reveals(path, True, tmp_path)
    without = _reveals(path, False, tmp_path)
    n = len(path.read_text().split("reveal_type(")) - 1
    assert len(with_plugin) == len(without) == n
    assert with_plugin[:-1] == without[:-1]
    assert with_plugin[-1] == 'note: Revealed type is "devptr.lint._raw.RawAddress"'
    assert without[-1] == 'note: Revealed type is "int"'


def test_fixtures_exist() -> None:
    assert FIXTURES.is_dir() and len(fixture_files()) >= 12


def test_importing_devptr_does_not_import_mypy() -> None:
    code = (
        "import sys, devptr, devptr.lint, devptr.lint.checker, devptr.lint.command\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mypy', 'libcst'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
