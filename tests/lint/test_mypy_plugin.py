"""The mypy plugin on the fixture files, through real mypy runs (``python -m mypy``,
started in the background at collection: ``support.mypy_runs``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import mypy_runs

from tests.lint._expect import FIXTURES, expected, fixture, fixture_files

pytest.importorskip("mypy.api")

REPO = Path(__file__).resolve().parents[2]
_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z0-9-]+)\]$")
TYPES_UNCHANGED = fixture("types_unchanged.py")

# One run with the plugin over every fixture (types_unchanged.py's reveal_type notes
# included), one without it on types_unchanged.py: what the plugin changes.
_PLUGIN_CONFIG = (
    "[mypy]\n"
    "plugins = devptr.mypy_plugin\n"
    f"mypy_path = {REPO}\n"
    "python_version = 3.11\n"
    "enable_error_code = devptr-unchecked-u64, devptr-wrapping-arith\n"
    "[mypy-devptr.*]\n"
    "follow_imports = silent\n"
)
_PLAIN_CONFIG = f"[mypy]\nmypy_path = {REPO}\npython_version = 3.11\n"
MYPY_RUNS = [
    mypy_runs.register(
        "devptr-lint-tests",
        ["--config-file", str(mypy_runs.config("devptr-lint-tests", _PLUGIN_CONFIG)),
         "--cache-dir", str(REPO / ".mypy_cache" / "devptr-lint-tests"), "--no-error-summary",
         "--hide-error-context", "--show-error-codes", *map(str, fixture_files())],
    ),
    mypy_runs.register(
        "devptr-lint-tests-no-plugin",
        ["--config-file", str(mypy_runs.config("devptr-lint-tests-no-plugin", _PLAIN_CONFIG)),
         "--cache-dir", str(REPO / ".mypy_cache" / "devptr-lint-tests-no-plugin"),
         "--no-error-summary", "--hide-error-context", str(TYPES_UNCHANGED)],
    ),
]


@pytest.fixture(scope="module")
def mypy_errors() -> dict[str, set[tuple[int, str]]]:
    """mypy with the plugin over every fixture; map file name -> {(line, code)}."""
    run = mypy_runs.result("devptr-lint-tests")
    stdout, stderr = run.stdout, run.stderr
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


def _reveals(run: str, path: Path) -> list[str]:
    """The notes mypy run ``run`` printed for ``path``, in order (``note: Revealed ...``)."""
    stdout = mypy_runs.result(run).stdout
    return [
        line.split(": ", 1)[1]
        for line in stdout.splitlines()
        if ": note: " in line and Path(line.split(":", 1)[0]).name == path.name
    ]


def test_plugin_changes_no_other_type() -> None:
    path = TYPES_UNCHANGED
    with_plugin = _reveals("devptr-lint-tests", path)
    without = _reveals("devptr-lint-tests-no-plugin", path)
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
