"""``devptr check`` through the real CLI app: exit codes, formats, configuration."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devptr.cli import app
from devptr.lint.rules import Rule
from tests.lint._expect import FIXTURES, expected, fixture, fixture_files

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
_TEXT = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): (?P<code>DP\d{3}) .+$")


def _check(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["check", *args])
    return result.exit_code, result.stdout


def _all_expected() -> set[tuple[str, int, str]]:
    return {(p.name, line, code) for p in fixture_files() for line, code in expected(p, "check")}


def test_text_output_lists_every_expected_finding_and_exits_1() -> None:
    code, out = _check(str(FIXTURES), "--no-progress", "--select", "ALL")
    assert code == 1
    got = set()
    for line in out.splitlines():
        m = _TEXT.match(line)
        assert m is not None, line
        got.add((Path(m["path"]).name, int(m["line"]), m["code"]))
    assert got == _all_expected()


def test_negative_files_exit_0_with_no_output() -> None:
    negatives = [str(p) for p in fixture_files() if p.stem.endswith("_negative")]
    code, out = _check(*negatives)
    assert (code, out.strip()) == (0, "")


def test_json_format() -> None:
    code, out = _check(str(FIXTURES), "--format", "json", "--select", "ALL")
    assert code == 1
    payload = json.loads(out)
    assert payload["errors"] == []
    got = {(Path(f["path"]).name, f["line"], f["code"]) for f in payload["findings"]}
    assert got == _all_expected()
    first = payload["findings"][0]
    assert set(first) == {"path", "line", "column", "end_line", "end_column", "code", "name",
                          "category", "message", "fix", "autofix"}


def test_defaults_report_defects_only() -> None:
    code, out = _check(str(FIXTURES))
    assert code == 1
    got = {(Path(m["path"]).name, int(m["line"]), m["code"])
           for m in map(_TEXT.match, out.splitlines()) if m}
    from devptr.lint.rules import DEFAULT_RULES

    assert got == {e for e in _all_expected() if Rule(e[2]) in DEFAULT_RULES}
    assert {code for _, _, code in got} == {"DP001", "DP002", "DP003"}


def test_select_is_comma_separated_and_repeatable() -> None:
    one = _check(str(FIXTURES), "--select", "DP004,DP006")
    two = _check(str(FIXTURES), "--select", "DP004", "--select", "DP006")
    assert one == two
    assert {m["code"] for m in map(_TEXT.match, one[1].splitlines()) if m} == {"DP004", "DP006"}
    by_category = _check(str(FIXTURES), "--select", "convention")
    assert {m["code"] for m in map(_TEXT.match, by_category[1].splitlines()) if m} == {
        "DP004", "DP005", "DP006", "DP007"}


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
def test_selection_errors_name_the_flag(flag: str) -> None:
    result = runner.invoke(app, ["check", str(FIXTURES), flag, "DP001,DP9"])
    assert result.exit_code == 2
    assert f"{flag}: unknown rule selector 'DP9'" in result.stderr
    assert "[tool.devptr]" not in result.stderr


@pytest.mark.parametrize("command", ["check", "migrate"])
@pytest.mark.parametrize("flag", ["--select", "--ignore"])
@pytest.mark.parametrize("value", ["", ",", " , "])
def test_empty_selection_is_an_error_naming_the_flag(command: str, flag: str, value: str) -> None:
    result = runner.invoke(app, [command, str(fixture("dp001_positive.py")), flag, value])
    assert result.exit_code == 2, result.output
    assert f"{flag}: empty rule selection" in result.stderr


@pytest.mark.parametrize("command", ["check", "migrate"])
def test_a_selection_that_leaves_no_rule_is_an_error(command: str) -> None:
    result = runner.invoke(
        app, [command, str(fixture("dp001_positive.py")), "--select", "DP001", "--ignore", "DP0"]
    )
    assert result.exit_code == 2
    assert "the selection enables no rule" in result.stderr


@pytest.mark.parametrize("command", ["check", "migrate"])
@pytest.mark.parametrize("table", ["select = []", 'select = ["XX1"]', 'ignore = ["DP9"]'])
def test_empty_or_unknown_configured_selection_exits_2_in_both_commands(
    tmp_path: Path, command: str, table: str
) -> None:
    pkg = _project(tmp_path, table)
    result = runner.invoke(app, [command, str(pkg)])
    assert result.exit_code == 2
    assert "[tool.devptr]" in result.stderr


@pytest.mark.parametrize("table", ['select = ["DP006"]', 'select = ["ALL"]\nignore = ["DP001"]',
                                   'select = ["DP001"]',
                                   'select = ["ALL"]\nignore = ["convention"]'])
def test_check_and_migrate_read_the_same_configuration(tmp_path: Path, table: str) -> None:
    """The rules migrate acts on (fixes or TODOs, its summary table) are the rules check
    reports, under the same [tool.devptr] table, for the same files (exclude included)."""
    pkg = _project(tmp_path, table + '\nexclude = ["pkg/generated"]')
    check = runner.invoke(app, ["check", str(pkg), "--format", "json"])
    checked = [(Path(f["path"]).name, f["code"]) for f in json.loads(check.stdout)["findings"]]
    assert checked  # the tree holds DP001 and DP006 sites; each table keeps some
    migrate = runner.invoke(app, ["migrate", str(pkg), "--check"])
    acted = {m[1]: int(m[2]) + int(m[4]) for m in re.finditer(
        r"(DP\d{3})\W+[a-z0-9-]+\W+(\d+)\W+(\d+)\W+(\d+)", migrate.stderr)}
    assert len(acted) == len(Rule), migrate.stderr
    assert {code for code, n in acted.items() if n} == {code for _, code in checked}
    assert sum(acted.values()) == len(checked)
    assert "1 files scanned" in migrate.stderr  # generated/ excluded by both


def test_sarif_format() -> None:
    code, out = _check(str(fixture("dp001_positive.py")), "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.value for r in Rule]
    lines = {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"]}
    assert lines == {line for line, _ in expected(fixture("dp001_positive.py"), "check")}
    assert {r["level"] for r in run["results"]} == {"error"}


def test_json_stays_on_stdout_under_a_terminal(tmp_path: Path) -> None:
    """Run the real command with stdout and stderr on a pseudo-terminal: the JSON is the
    whole of stdout (no progress bar, no colour codes), the summary goes to stderr."""
    import os
    import pty
    import subprocess
    import sys

    files = [str(FIXTURES)] * 1
    out_master, out_slave = pty.openpty()
    err_master, err_slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "devptr.cli", "check", *files, "--format", "json",
         "--select", "ALL", "--progress"],
        stdout=out_slave, stderr=err_slave, stdin=subprocess.DEVNULL, env=env,
    )
    os.close(out_slave)
    os.close(err_slave)
    chunks = []
    while True:
        try:
            data = os.read(out_master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(out_master)
    os.close(err_master)
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    assert proc.returncode == 1
    payload = json.loads(text)
    got = {(Path(f["path"]).name, f["line"], f["code"]) for f in payload["findings"]}
    assert got == _all_expected()


def test_github_format() -> None:
    code, out = _check(str(fixture("dp005_positive.py")), "--format", "github", "--select", "ALL")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(expected(fixture("dp005_positive.py"), "check"))
    assert all(re.match(r"^::warning file=.+,line=\d+,col=\d+,.*title=DP005 .+::.+", ln)
               for ln in lines)


def test_select_and_ignore_options() -> None:
    code, out = _check(str(FIXTURES), "--select", "DP004")
    assert code == 1
    assert {m["code"] for m in map(_TEXT.match, out.splitlines()) if m} == {"DP004"}
    code, out = _check(str(fixture("dp004_positive.py")), "--ignore", "DP004")
    assert (code, out.strip()) == (0, "")


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.devptr]\n{table}\n")
    pkg = tmp_path / "pkg"
    (pkg / "generated").mkdir(parents=True)
    src = (fixture("dp006_positive.py")).read_text() + (
        "\n\ndef extra(t: torch.Tensor) -> None:\n"
        "    table = torch.empty(2, dtype=torch.int64)\n"
        "    table[0] = t.data_ptr()\n"
    )
    (pkg / "mod.py").write_text(src)
    (pkg / "generated" / "gen.py").write_text(src)
    return pkg


def test_pyproject_ignore_and_exclude(tmp_path: Path) -> None:
    pkg = _project(tmp_path, 'ignore = ["DP006"]\nexclude = ["pkg/generated"]')
    code, out = _check(str(pkg))
    assert code == 1
    found = [_TEXT.match(line) for line in out.splitlines()]
    assert [(Path(m["path"]).name, m["code"]) for m in found if m] == [("mod.py", "DP001")]


def test_pyproject_select(tmp_path: Path) -> None:
    pkg = _project(tmp_path, 'select = ["DP006"]')
    code, out = _check(str(pkg))
    codes = {m["code"] for m in map(_TEXT.match, out.splitlines()) if m}
    assert code == 1 and codes == {"DP006"}
    assert any("generated" in line for line in out.splitlines())


@pytest.mark.parametrize("table", ['colour = "red"', 'select = ["XX1"]', "ignore = 3"])
def test_bad_configuration_exits_2(tmp_path: Path, table: str) -> None:
    pkg = _project(tmp_path, table)
    result = runner.invoke(app, ["check", str(pkg)])
    assert result.exit_code == 2


@pytest.mark.parametrize("command", ["check", "migrate"])
def test_malformed_pyproject_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    pkg = _project(tmp_path, 'select = ["DP001"')  # an unclosed array: not TOML
    result = runner.invoke(app, [command, str(pkg)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "not valid TOML" in result.output + (result.stderr if result.stderr_bytes else "")


def test_missing_path_exits_2(tmp_path: Path) -> None:
    assert runner.invoke(app, ["check", str(tmp_path / "nope")]).exit_code == 2


def test_syntax_error_is_reported_and_exits_2(tmp_path: Path) -> None:
    """Issue 22 (16): a file that does not parse is reported and the run fails (exit 2),
    while the other files are still checked."""
    (tmp_path / "bad.py").write_text("def f(:\n    x.data_ptr()\n")
    (tmp_path / "good.py").write_text("import torch\nt = torch.zeros(2, dtype=torch.int64)\n"
                                      "def f(x):\n    t[0] = x.data_ptr()\n")
    code, out = _check(str(tmp_path))
    assert code == 2
    assert "bad.py: error: syntax error at line 1" in out
    assert "good.py:4:5: DP001" in out


def test_devptr_follows_its_own_convention() -> None:
    code, out = _check(str(REPO / "devptr"))
    assert (code, out.strip()) == (0, "")


def test_force_exclude_applies_to_named_files(tmp_path: Path) -> None:
    pkg = _project(tmp_path, 'exclude = ["pkg/generated"]')
    named = str(pkg / "generated" / "gen.py")
    assert _check(named)[0] == 1
    assert _check(named, "--force-exclude") == (0, "")


def test_pre_commit_hook_definition() -> None:
    yaml = pytest.importorskip("yaml")

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    ids = {h["id"]: h for h in hooks}
    assert set(ids) == {"devptr-check", "devptr-check-system"}
    isolated = ids["devptr-check"]
    # the isolated hook installs devptr without its dependencies (no torch), then only
    # what `python -m devptr.lint` imports
    deps = isolated["additional_dependencies"]
    assert deps[0] == "--no-deps" and not any(d.startswith(("torch", "numpy")) for d in deps)
    assert isolated["entry"].split()[:3] == ["python", "-m", "devptr.lint"]
    assert ids["devptr-check-system"]["entry"].split()[:2] == ["devptr", "check"]
    for hook in hooks:
        assert "--force-exclude" in hook["entry"]
        assert "python" in hook["types_or"]


def test_docs_cover_every_rule() -> None:
    from devptr.lint.rules import RULES

    docs = (REPO / "docs" / "lint.md").read_text()
    for rule, info in RULES.items():
        assert f"### {rule.value} {info.name}" in docs
        if info.in_mypy_plugin:
            assert f"`{info.mypy_code}`" in docs


def test_progress_bar_and_statistics_do_not_change_findings() -> None:
    result = runner.invoke(
        app, ["check", str(FIXTURES), "--progress", "--statistics", "--jobs", "2", "--select", "ALL"]
    )
    assert result.exit_code == 1
    got = {
        (Path(m["path"]).name, int(m["line"]), m["code"])
        for m in map(_TEXT.match, result.stdout.splitlines())
        if m
    }
    assert got == _all_expected()
    assert f"{len(got)} finding(s)" in result.stderr


@pytest.mark.slow
def test_pre_commit_hook_environment_runs_without_torch(tmp_path: Path) -> None:
    """Install the hook the way pre-commit does (``pip install . <additional_dependencies>``
    into a fresh venv), run its entry on a fixture: findings, and no torch or numpy there."""
    import subprocess
    import venv

    yaml = pytest.importorskip("yaml")
    hook = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}[
        "devptr-check"]
    env_dir = tmp_path / "hook-env"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", str(REPO),
                    *hook["additional_dependencies"]], check=True, capture_output=True)
    entry = hook["entry"].split()
    assert entry[0] == "python"
    proc = subprocess.run([python, *entry[1:], str(fixture("dp002_positive.py"))],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "DP002" in proc.stdout
    listed = subprocess.run([python, "-m", "pip", "list"], capture_output=True, text=True,
                            check=True).stdout.lower()
    assert "torch" not in listed and "numpy" not in listed
