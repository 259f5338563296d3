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
    assert "6 files scanned, 3 would change, 0 failed" in err
    assert "DP002" in err and "TODO" in err


def test_diff_prints_unified_diff_and_exits_1(tree: Path) -> None:
    before = _snapshot(tree)
    code, out, _ = _invoke(str(tree), "--diff")
    assert code == 1
    assert _snapshot(tree) == before
    assert out.count("\n--- ") + out.startswith("--- ") == 3
    assert out.count("\n+++ ") == 3
    assert "+        devptr.store(dst_ptrs_np, offset, devptr.DevicePtr.of(state[dest_block_id]))" in out
    assert "-_PTR_DTYPE = torch.uint64 if current_platform.is_xpu() else torch.int64" in out


def test_write_then_second_run_changes_nothing(tree: Path) -> None:
    original = _snapshot(tree)
    code, _, err = _invoke(str(tree))
    assert code == 0, err
    migrated = _snapshot(tree)
    changed = {k for k in migrated if migrated[k] != original[k]}
    assert changed == {"pkg/mamba_like.py", "pkg/ec_like.py", "pkg/lamport_like.py"}
    for name, text in migrated.items():
        compile(text, name, "exec")
    lamport = migrated["pkg/lamport_like.py"]
    assert "# TODO[devptr]: DP002 table built from a list variable" in lamport
    assert "_to_i64_ptr" not in lamport
    assert "devptr.ptr_tensor(caches.values(), encoding=devptr.Encoding.I64" in lamport
    assert "warning: " in err and "pkg/lamport_like.py:" in err
    # run twice: nothing left to change
    code, _, err2 = _invoke(str(tree), "--check")
    assert code == 0, err2
    assert "0 would change" in err2
    assert _snapshot(tree) == migrated


def test_migrated_tree_behaves(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The migrated modules import and run with high fake addresses."""
    import torch

    from devptr.testing import HIGH_ADDRESSES, FakeTensor

    assert _invoke(str(tree))[0] == 0
    monkeypatch.syspath_prepend(str(tree))
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    from pkg import lamport_like, mamba_like  # type: ignore[import-not-found]

    ctx = mamba_like.SpecDecodeContext()
    ctx.state_base_addrs = torch.zeros(4, dtype=torch.int64)
    ctx.block_table_ptrs = torch.zeros(4, dtype=torch.int64)
    fakes = [FakeTensor(a) for a in HIGH_ADDRESSES]
    ctx.initialize(fakes, fakes)
    assert [v % 2**64 for v in ctx.state_base_addrs.tolist()] == list(HIGH_ADDRESSES)
    table = lamport_like.kv_tables(dict(enumerate(fakes)), "cpu")
    assert table.dtype == torch.int64
    assert [v % 2**64 for v in table.tolist()] == list(HIGH_ADDRESSES)


def test_select_limits_rules(tree: Path) -> None:
    code, out, _ = _invoke(str(tree), "--diff", "--select", "dp005")
    assert code == 1
    assert out.count("\n+++ ") == 1
    assert out.count("devptr.encoding_for(current_platform.device_type).torch_dtype") == 2
    assert "devptr.store" not in out


def test_unknown_rule_and_parse_failure_exit_2(tree: Path) -> None:
    code, _, err = _invoke(str(tree), "--select", "DP999")
    assert code == 2 and "unknown rule 'DP999'" in err
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
