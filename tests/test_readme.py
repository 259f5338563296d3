"""Every ```python block of the README and docs/*.md runs as written, so examples cannot
drift from the code.

The blocks of one file run in order in one namespace (a later block may use an earlier
block's names), on the CPU under Triton's interpreter when there is no GPU. A block that
cannot run here says so on its first line, visibly, with a reason::

    # doc-test: compile-only -- needs one process per GPU and an initialised process group

Such a block is compiled (its syntax checked), not run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any devptr kernel is imported

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
COMPILE_ONLY = re.compile(r"# doc-test: compile-only -- (\S.*)")


def blocks(path: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of every python block of ``path``, in order."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


def compile_only_reason(code: str) -> str | None:
    first = code.split("\n", 1)[0]
    if not first.startswith("# doc-test"):
        return None
    m = COMPILE_ONLY.fullmatch(first.strip())
    assert m, f"a doc-test mark must read '# doc-test: compile-only -- <reason>' (got {first!r})"
    return m.group(1)


@pytest.mark.parametrize("path", [p for p in DOCS if blocks(p)], ids=lambda p: p.name)
def test_every_python_block_runs(path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"doc_{path.stem}"}
    for line, code in blocks(path):
        compiled = compile(code, f"{path.relative_to(ROOT)}:{line}", "exec")
        if compile_only_reason(code) is None:
            exec(compiled, namespace)


def test_the_docs_have_blocks_and_most_run() -> None:
    found = [(p, code) for p in DOCS for _, code in blocks(p)]
    run = [p for p, code in found if compile_only_reason(code) is None]
    assert len(found) >= 10 and len(run) >= len(found) - 5, [p.name for p, _ in found]


def test_quickstart_runs() -> None:
    namespace: dict[str, object] = {}
    exec(compile(blocks(README)[0][1], str(README), "exec"), namespace)
    buf = namespace["buf"]
    layers = namespace["layers"]
    table = namespace["table"]
    assert [p.addr for p in buf[:4]] == [t.data_ptr() for t in layers]  # type: ignore[attr-defined,index]
    assert table.tolist() == [t.data_ptr() for t in layers]  # type: ignore[attr-defined]
