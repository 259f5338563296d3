"""The README's quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python block"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    buf = namespace["buf"]
    layers = namespace["layers"]
    table = namespace["table"]
    assert [p.addr for p in buf[:4]] == [t.data_ptr() for t in layers]  # type: ignore[attr-defined,index]
    assert table.tolist() == [t.data_ptr() for t in layers]  # type: ignore[attr-defined]
