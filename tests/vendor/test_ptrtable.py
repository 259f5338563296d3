"""The vendorable module as a file an engine copies: torch and numpy only, no import-time side
effects, within its line budget, its own environment variable, and usable under torch.compile.
The behaviour it shares with the core is tested once, for both, in ``test_parity.py``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from vendor_impls import load_copy

from devptr.vendor import ptrtable

SOURCE = Path(ptrtable.__file__)
MAX_LINES = 200
"""The budget: an engine owns the file outright (issue 21 item 5)."""


def test_imports_only_torch_numpy_and_the_standard_library() -> None:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            roots.add((node.module or "").split(".")[0])
    allowed = {"torch", "numpy", "__future__"} | set(sys.stdlib_module_names)
    assert roots <= allowed, roots - allowed


def test_within_its_line_budget() -> None:
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"{SOURCE.name} has {len(lines)} lines (budget {MAX_LINES})"


def test_import_has_no_side_effects(tmp_path: Path) -> None:
    """Importing a copy reads no environment: an invalid value is an error at the first lookup,
    naming the variable, not at import."""
    copy = tmp_path / "ptrtable_copy.py"
    copy.write_text(SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
    code = (
        "import ptrtable_copy as m\n"
        "assert m._env is None and m.taken is None and m.BACKENDS == {'xpu': m.Encoding.U64}\n"
        "try:\n    m.encoding_for('cuda')\nexcept m.UnknownBackendError as e:\n    print('LOOKUP', e)\n"
    )
    env = {**os.environ, "DEVPTR_ENCODING": "cdua=U64", "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("LOOKUP environment variable DEVPTR_ENCODING='cdua=U64' is invalid")


def test_the_embedding_project_names_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = load_copy(tmp_path, name="engine_ptrtable")
    monkeypatch.setenv("DEVPTR_ENCODING", "U64")
    monkeypatch.setenv("ENGINE_PTR_ENCODING", "cuda=U64")
    m.use_environment("ENGINE_PTR_ENCODING")
    assert m.encoding_for("cuda") is m.Encoding.U64 and m.encoding_for("hip") is m.Encoding.I64
    m.use_environment(None)  # no variable at all
    assert m.encoding_for("cuda") is m.Encoding.I64
    monkeypatch.setenv("ENGINE_PTR_ENCODING", "CUDA=U64")
    with pytest.raises(m.UnknownBackendError, match="ENGINE_PTR_ENCODING='CUDA=U64'"):
        m.use_environment("ENGINE_PTR_ENCODING")


def test_backends_table_is_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = load_copy(tmp_path, name="registry_ptrtable")
    monkeypatch.setenv("DEVPTR_ENCODING", "npu=U64")
    with pytest.raises(m.UnknownBackendError, match="'npu=U64'"):
        m.use_environment()  # not a torch device type, not registered yet
    m.BACKENDS["npu"] = m.Encoding.I64
    m.use_environment()
    assert m.encoding_for("npu") is m.Encoding.U64 and m.encoding_for("npu:1") is m.Encoding.U64


def test_torch_compile_graph_breaks_around_store() -> None:
    """Inside ``torch.compile`` store() graph-breaks and writes the right bits; with
    ``fullgraph=True`` Dynamo refuses it (numpy, ``data_ptr()``): build tables outside."""
    import torch._dynamo

    table = np.zeros(2, dtype=np.uint64)
    x = torch.zeros(4)

    def step(t: torch.Tensor) -> torch.Tensor:
        ptrtable.store(table, slice(0, 2), [t, t])
        return t + 1

    torch._dynamo.reset()
    out = torch.compile(step, backend="eager")(x)
    assert torch.equal(out, x + 1) and table.tolist() == [x.data_ptr()] * 2
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(step, backend="eager", fullgraph=True)(x)
    torch._dynamo.reset()
