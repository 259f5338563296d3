"""The mypy plugin on the fixture files, through a real ``mypy.api.run``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lint._expect import FIXTURES, expected, fixture, fixture_files

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
    path = fixture("types_unchanged.py")
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
        "import sys, devptr, devptr.lint, devptr.lint.engine, devptr.lint.command\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mypy', 'libcst'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_checker_imports_neither_torch_nor_numpy() -> None:
    """What the pre-commit hook relies on: `python -m devptr.lint` needs no torch."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['devptr.lint', '--help']\n"
        "try:\n    runpy.run_module('devptr.lint', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "from devptr.lint.engine import analyze_source\n"
        "analyze_source('import torch\\ntorch.tensor([x.data_ptr()])\\n')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, capture_output=True)


README_INSTALL = 'pip install -e "/path/to/devptr[mypy]"'


@pytest.mark.slow
def test_plugin_works_after_the_readme_install(tmp_path: Path) -> None:
    """Follow the README's commands exactly in a fresh venv (no system site-packages), from
    the user's own project folder: `python -m venv`, `pip install -e "/path/to/devptr[mypy]"`
    (this checkout), then mypy with the plugin on a module that stores a data_ptr() into a
    tensor. pip downloads what the venv needs (torch included), so this is slow and opt-in
    (support.opt_in); pip's index settings come from the environment as usual."""
    import shlex
    import venv

    assert README_INSTALL in (REPO / "README.md").read_text()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.mypy]\nplugins = ["devptr.mypy_plugin"]\n')
    (project / "mod.py").write_text(
        "import torch\n\n\ndef f(t: torch.Tensor) -> None:\n"
        "    table = torch.empty(1, dtype=torch.int64)\n    table[0] = t.data_ptr()\n"
    )
    install = shlex.split(README_INSTALL.replace("/path/to/devptr", str(REPO)))
    subprocess.run([str(python), "-m", *install], check=True, cwd=project, capture_output=True)
    proc = subprocess.run([str(python), "-m", "mypy", "mod.py"], cwd=project,
                          capture_output=True, text=True, check=False)
    assert "Cannot find implementation" not in proc.stdout, proc.stdout
    assert "mod.py:6: error:" in proc.stdout and "[devptr-raw-store]" in proc.stdout, proc.stdout
