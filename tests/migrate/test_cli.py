"""``devptr migrate`` through the command line, on a small tree of vLLM-like modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devptr.cli import app

FIXTURE_TREE = Path(__file__).parent / "fixtures" / "tree"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    dst = tmp_path / "tree"
    shutil.copytree(FIXTURE_TREE, dst)
    return dst


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["migrate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_check_reports_and_writes_nothing(tree: Path) -> None:
    before = _snapshot(tree)
    code, out, err = _invoke(str(tree), "--check")
    assert code == 1
    assert out == ""
    assert _snapshot(tree) == before
    assert "7 files scanned, 2 would change, 0 failed" in err
    assert "DP002" in err and "TODO" in err


def test_diff_prints_unified_diff_and_exits_1(tree: Path) -> None:
    before = _snapshot(tree)
    code, out, _ = _invoke(str(tree), "--diff")
    assert code == 1
    assert _snapshot(tree) == before
    assert out.count("\n--- ") + out.startswith("--- ") == 2
    assert out.count("\n+++ ") == 2
    assert "+        devptr.store(table, i, devptr.DevicePtr.of(layer))" in out
    # the store into a container the engine cannot type is not touched by default
    assert "dst_ptrs_np" not in out
    # DP005 is a convention rule: not selected, not touched
    assert "-_PTR_DTYPE = torch.uint64 if current_platform.is_xpu() else torch.int64" not in out


def test_write_then_second_run_changes_nothing(tree: Path) -> None:
    original = _snapshot(tree)
    code, _, err = _invoke(str(tree), "--select", "ALL", "--unsafe-fixes")
    assert code == 0, err
    migrated = _snapshot(tree)
    changed = {k for k in migrated if migrated[k] != original[k]}
    assert changed == {
        "pkg/mamba_like.py", "pkg/ec_like.py", "pkg/lamport_like.py", "pkg/table_like.py"
    }
    for name, text in migrated.items():
        compile(text, name, "exec")
    lamport = migrated["pkg/lamport_like.py"]
    assert "# TODO[devptr]: DP002 " in lamport
    # the calls pass parameters of unknown origin (no findings); the spelling in the helper
    # (its parameter named for an address) is rewritten
    assert "return devptr.DevicePtr(ptr).signed" in lamport
    assert "devptr.ptr_tensor(list(caches.values()),encoding=devptr.Encoding.I64" in "".join(
        lamport.split()
    )
    assert "warning: " in err and "pkg/lamport_like.py:" in err
    # run twice: nothing left to change
    code, _, err2 = _invoke(str(tree), "--check", "--select", "ALL", "--unsafe-fixes")
    assert code == 0, err2
    assert "0 would change" in err2
    assert "warning:" not in err2  # nothing new to report
    assert _snapshot(tree) == migrated


def test_migrated_tree_behaves(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The migrated modules import and run with high fake addresses."""
    import torch

    from devptr.testing import HIGH_ADDRESSES, FakeTensor, table_bits

    assert _invoke(str(tree), "--select", "ALL", "--unsafe-fixes")[0] == 0
    monkeypatch.syspath_prepend(str(tree))
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    from pkg import lamport_like, mamba_like  # type: ignore[import-not-found]

    ctx = mamba_like.SpecDecodeContext()
    ctx.state_base_addrs = torch.zeros(4, dtype=torch.int64)
    ctx.block_table_ptrs = torch.zeros(4, dtype=torch.int64)
    fakes = [FakeTensor(a) for a in HIGH_ADDRESSES]
    ctx.initialize(fakes, fakes)
    assert table_bits(ctx.state_base_addrs) == list(HIGH_ADDRESSES)
    table = lamport_like.kv_tables(dict(enumerate(fakes)), "cpu")
    assert table.dtype == torch.int64
    assert table_bits(table) == list(HIGH_ADDRESSES)


def test_select_limits_rules(tree: Path) -> None:
    code, out, _ = _invoke(str(tree), "--diff", "--select", "dp005", "--unsafe-fixes")
    assert code == 1
    assert out.count("\n+++ ") == 1
    assert out.count("devptr.encoding_for(") == 2
    assert out.count("default=devptr.Encoding.I64") == 2
    assert "devptr.store" not in out


def test_unknown_rule_and_parse_failure_exit_2(tree: Path) -> None:
    code, _, err = _invoke(str(tree), "--select", "DP999")
    assert code == 2 and "--select: unknown rule selector 'DP999'" in err
    code, _, err = _invoke(str(tree), "--select", "DP001", "--ignore", "DP001,DPX")
    assert code == 2 and "--ignore: unknown rule selector 'DPX'" in err
    (tree / "pkg" / "broken.py").write_text("x = t.data_ptr(\n")
    code, _, err = _invoke(str(tree), "--check")
    assert code == 2
    assert "broken.py: parse failed" in err
    assert "1 failed" in err


def test_jobs_give_the_same_diff(tree: Path) -> None:
    serial = _invoke(str(tree), "--diff")
    parallel = _invoke(str(tree), "--diff", "--jobs", "2")
    assert serial[0] == parallel[0] == 1
    assert serial[1] == parallel[1]


def test_cli_works_without_libcst() -> None:
    """`devptr demo --help` and `devptr migrate --help` do not need libcst."""
    script = (
        "import sys; sys.modules['libcst'] = None\n"
        "from typer.testing import CliRunner\n"
        "from devptr.cli import app\n"
        "r = CliRunner().invoke(app, ['migrate', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(app, ['migrate', '.'])\n"
        "assert r.exit_code == 2 and 'needs libcst' in r.stderr, r.output\n"
        "assert 'libcst' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_default_run_applies_safe_defect_fixes_and_counts_what_it_wrote(tree: Path) -> None:
    original = _snapshot(tree)
    code, _, err = _invoke(str(tree))
    assert code == 0, err
    migrated = _snapshot(tree)
    added = sum(migrated[k].count("# TODO[devptr]:") - original[k].count("# TODO[devptr]:")
                for k in migrated)  # fmt: skip
    table = err[err.index("devptr migrate") :]
    total = next(ln for ln in table.splitlines() if "total" in ln)
    numbers = [int(x) for x in total.replace("│", " ").split() if x.isdigit()]
    assert numbers[-1] == added  # TODOs counted == TODO comments written
    for name, text in migrated.items():
        if text != original[name]:
            assert max(len(line) for line in text.splitlines()) <= 88, name
    # every warning names a line of the file as written: the statement it marks
    for line in err.splitlines():
        if line.startswith("warning: "):
            path, number = line[len("warning: ") :].split(":")[:2]
            rel = str(Path(path).relative_to(tree)) if Path(path).is_absolute() else path
            source = original[rel].splitlines()
            assert source[int(number) - 1].strip(), line
    assert _invoke(str(tree), "--check")[0] == 0


def test_select_and_ignore_are_repeatable_and_comma_separated() -> None:
    from devptr.lint.rules import Rule
    from devptr.migrate._runner import parse_rules

    assert parse_rules(["DP001", "dp004,DP005"]) == {Rule.DP001, Rule.DP004, Rule.DP005}
    assert parse_rules("ALL", ["DP004", "DP005,DP006"]) == set(Rule) - {
        Rule.DP004, Rule.DP005, Rule.DP006
    }
    assert parse_rules(None, ["DP001"]) == parse_rules() - {Rule.DP001}


def test_help_names_the_rules_todo_syntax_and_default_jobs() -> None:
    import os

    from devptr.lint.rules import Rule
    from devptr.migrate._runner import default_jobs

    result = CliRunner().invoke(app, ["migrate", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.split())
    codes = [r.value for r in Rule]
    assert f"{codes[0]}-{codes[-1]}" in text
    assert "# TODO[devptr]: DPxxx <why>" in text
    assert "--unsafe-fixes" in text and "every core" in text
    assert default_jobs() == (os.cpu_count() or 1)


def test_diff_goes_to_the_redirected_stdout_under_a_terminal(tree: Path, tmp_path: Path) -> None:
    """`devptr migrate src --diff > mig.patch` typed in a terminal (stderr is the tty)."""
    import os
    import pty

    leader, follower = pty.openpty()
    patch = tmp_path / "mig.patch"
    try:
        with patch.open("w") as out:
            proc = subprocess.run(
                [sys.executable, "-m", "devptr.cli", "migrate", str(tree), "--diff"],
                stdin=follower,
                stdout=out,
                stderr=follower,
                env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
                timeout=120,
                check=False,
            )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 1
    text = patch.read_text()
    assert text.count("\n+++ ") == 2 and "devptr.store(table, i" in text
    assert b"devptr migrate" in seen and b"+++ " not in seen


def test_finding_through_a_helper_of_another_module_is_marked(tmp_path: Path) -> None:
    """The tree is analysed as `devptr check` does: helpers across modules are followed."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tables.py").write_text(
        "import torch\n\n\ndef make_table(rows):\n    return torch.tensor(rows, dtype=torch.int64)\n"
    )
    user = (
        "from pkg.tables import make_table\n\n\n"
        "def build(ts):\n    return make_table([t.data_ptr() for t in ts])\n"
    )
    (pkg / "user.py").write_text(user)
    (pkg / "other.py").write_text(user.replace("build", "build_again"))
    code, _, err = _invoke(str(pkg))
    assert code == 0, err
    # one defect, one TODO: at the helper's table, naming both calls (issue 23)
    assert (pkg / "user.py").read_text() == user
    text = (pkg / "tables.py").read_text()
    assert text.count("# TODO[devptr]: DP002") == 1
    lines = text.splitlines()
    todo = next(i for i, ln in enumerate(lines) if ln.strip().startswith("# TODO[devptr]: DP002"))
    after = next(i for i in range(todo + 1, len(lines)) if not lines[i].strip().startswith("#"))
    assert lines[after] == "    return torch.tensor(rows, dtype=torch.int64)"
    block = " ".join(ln.strip("# ") for ln in lines[todo:after])
    assert "other.py:5" in block and "user.py:5" in block
    assert "pkg/tables.py:5:" in err and err.count("warning:") == 1
    code, _, err = _invoke(str(pkg), "--check")
    assert code == 0 and "warning:" not in err


def test_migrate_walks_files_like_check_and_honours_exclude(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.devptr]\nexclude = ["pkg/table_like.py"]\n')
    (tree / "build").mkdir()
    (tree / "build" / "copy.py").write_text("x = t.data_ptr()\n")
    code, out, err = _invoke(str(tree), "--diff")
    assert "7 files scanned" not in err and "6 files scanned" in err
    assert "table_like.py" not in out and "build/copy.py" not in out
    assert code == 1  # the other file with a fix still changes
