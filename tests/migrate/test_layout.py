"""Formatting of the output: the project's line length, import placement, line positions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from devptr.migrate._engine import migrate_file
from devptr.migrate._imports import ensure_devptr_import
from devptr.migrate._project import line_length_for
from devptr.migrate._runner import parse_rules

TABLE = textwrap.dedent(
    """
    import torch


    def layer_table(layers):
        table = torch.zeros(len(layers), dtype=torch.int64)
        for i, layer in enumerate(layers):
            table[i] = layer.data_ptr()
        return table
    """
)


def test_line_length_comes_from_the_nearest_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    for name in ("a", "b", "c"):
        (tmp_path / name / "sub").mkdir(parents=True)
    assert line_length_for(tmp_path / "a" / "sub" / "m.py") == 100  # from above
    (tmp_path / "b" / "pyproject.toml").write_text(
        "[tool.black]\nline-length = 70\n[tool.ruff]\nline-length = 120\n"
    )
    assert line_length_for(tmp_path / "b" / "sub" / "m.py") == 120  # ruff before black
    (tmp_path / "c" / "sub" / "ruff.toml").write_text("line-length = 60\n")
    assert line_length_for(tmp_path / "c" / "sub" / "m.py") == 60
    bare = tmp_path.parent / f"{tmp_path.name}-bare"
    bare.mkdir()
    assert line_length_for(bare / "m.py") == 88


def test_migrate_file_wraps_to_the_projects_line_length(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 50\n")
    path = tmp_path / "m.py"
    path.write_text(TABLE)
    out = migrate_file(path, parse_rules(), "m.py")
    assert out.rewrites and out.error is None
    added = [ln for ln in out.new.splitlines() if ln not in TABLE.splitlines()]
    assert added and max(map(len, added)) <= 50
    assert "devptr.store(\n" in out.new
    compile(out.new, "m.py", "exec")
    path.write_text(out.new)
    assert not migrate_file(path, parse_rules(), "m.py").changed


def test_import_goes_after_the_last_import_before_the_first_use() -> None:
    code = textwrap.dedent(
        '''
        """Doc."""
        from __future__ import annotations

        import torch

        DTYPE = devptr.Encoding.I64.torch_dtype

        import numpy as np
        '''
    ).lstrip()
    out = ensure_devptr_import(cst.parse_module(code)).code
    lines = out.splitlines()
    assert lines.index("import devptr") == lines.index("import torch") + 1
    assert lines.index("import devptr") < lines.index("DTYPE = devptr.Encoding.I64.torch_dtype")
    late = "import torch\n\n\ndef f(t):\n    return devptr.DevicePtr.of(t)\n\n\nimport numpy as np\n"
    lines = ensure_devptr_import(cst.parse_module(late)).code.splitlines()
    assert lines.index("import devptr") == 1  # not after the import that follows code
    docstring_only = '"""Doc."""\nx = devptr.DevicePtr.NULL\n'
    assert ensure_devptr_import(cst.parse_module(docstring_only)).code == (
        '"""Doc."""\nimport devptr\n\nx = devptr.DevicePtr.NULL\n'
    )
    present = "import devptr\nx = devptr.DevicePtr.NULL\n"
    assert ensure_devptr_import(cst.parse_module(present)).code == present
