"""Every finding without an applied fix gets a TODO, once, at the line as written."""

from __future__ import annotations

import textwrap

from devptr.lint.rules import Rule
from devptr.migrate import migrate_source


def todo_blocks(text: str) -> list[tuple[int, str]]:
    """(index of the line after the comment, whole comment text) of each TODO[devptr]."""
    lines = text.splitlines()
    found = []
    for k, line in enumerate(lines):
        if line.strip().startswith("# TODO[devptr]:"):
            parts, j = [line.strip()[2:]], k + 1
            while lines[j].strip().startswith("#   "):
                parts.append(lines[j].strip()[4:])
                j += 1
            found.append((j, " ".join(parts)))
    return found


CONCAT = textwrap.dedent(
    """
    import torch


    def tables(ts, cache):
        ptrs = [t.data_ptr() for t in ts]
        return torch.tensor(ptrs + [0], dtype=torch.int64), torch.tensor(
            [t.data_ptr() for t in ts], dtype=torch.int64
        )
    """
)


def test_checker_finding_the_codemods_cannot_prove_is_marked_once() -> None:
    first = migrate_source(CONCAT, filename="m.py")
    # the literal comprehension table is rewritten; the table built from a concatenation
    # (followed by the engine, not by the codemod) gets a TODO above its statement
    assert first.rewrites == {Rule.DP002: 1}
    assert "devptr.ptr_tensor(list(ts),encoding=devptr.Encoding.I64)" in "".join(first.new.split())
    assert "torch.tensor(ptrs + [0], dtype=torch.int64)" in first.new
    lines = first.new.splitlines()
    blocks = todo_blocks(first.new)
    assert len(blocks) == 1
    after, text = blocks[0]
    # --unsafe-fixes has no rewrite for it either: the TODO does not promise one
    assert text.startswith("TODO[devptr]: DP002 torch.tensor() of raw device addresses")
    assert text.endswith("no mechanical rewrite for this shape") and "--unsafe-fixes" not in text
    assert migrate_source(CONCAT, filename="m.py", unsafe_fixes=True).new == first.new
    assert lines[after].startswith("    return torch.tensor(ptrs + [0]")
    assert max(map(len, lines)) <= 88
    assert first.todos == {Rule.DP002: 1}
    assert [w.split(":")[1] for w in first.warnings] == ["7"]  # the line as written
    second = migrate_source(first.new, filename="m.py")
    assert not second.changed
    assert second.todos == {} and second.warnings == ()


def test_unrecognised_table_gets_checker_todo() -> None:
    code = textwrap.dedent(
        """
        import torch


        def lora_ptrs(weights, device):
            tensor_ptrs = []
            for w in weights:
                tensor_ptrs.append(w.data_ptr())
            return async_tensor_h2d(tensor_ptrs, dtype=torch.uint64, device=device)
        """
    )
    assert not migrate_source(code, filename="lora.py").changed  # DP006: convention
    first = migrate_source(code, filename="lora.py", rules=[Rule.DP006])
    assert first.changed and not first.rewrites
    blocks = todo_blocks(first.new)
    assert len(blocks) == 1
    after, text = blocks[0]
    assert text.startswith("TODO[devptr]: DP006") and text.endswith("(devptr check)")
    assert first.new.splitlines()[after] == (
        "    return async_tensor_h2d(tensor_ptrs, dtype=torch.uint64, device=device)"
    )
    # the warning names the line of the file as written
    assert [w.split(":")[1] for w in first.warnings] == ["9"]
    assert any(w.startswith("lora.py:") and "DP006" in w for w in first.warnings)
    assert first.todos == {Rule.DP006: 1}
    again = migrate_source(first.new, filename="lora.py", rules=[Rule.DP006])
    assert not again.changed and again.todos == {} and again.warnings == ()


def test_marking_respects_select() -> None:
    code = "import torch\nt = async_tensor_h2d([w.data_ptr()], dtype=torch.uint64, device='cuda')\n"
    assert not migrate_source(code).changed
    assert not migrate_source(code, rules=[Rule.DP004]).changed
    assert migrate_source(code, rules=[Rule.DP006]).changed
