"""The closing pass: what ``devptr check`` still finds gets a TODO, once."""

from __future__ import annotations

import textwrap

from devptr.lint.rules import Rule
from devptr.migrate import migrate_source

EC_LOAD = textwrap.dedent(
    """
    import numpy as np


    def load(bufs, region, src, block_ids, block_size):
        dst_base = region.blocks.data_ptr()
        src_base = np.uint64(src.data_ptr())
        slots, first_blocks = np.unique(block_ids), np.asarray(block_ids)
        bufs.add_copies(
            0,
            src_base + slots.astype(np.uint64) * np.uint64(block_size),
            dst_base + first_blocks * block_size,
        )
    """
)


def test_checker_finding_the_codemods_cannot_prove_is_marked_once() -> None:
    first = migrate_source(EC_LOAD, filename="ec.py")
    # the uint64 spelling is rewritten; `dst_base + first_blocks * block_size` is not
    # (the codemod does not follow tuple unpacking), but devptr check flags it: a TODO
    # goes above the statement holding it
    assert first.rewrites == {Rule.DP003: 1}
    assert "devptr.addresses(src_base, slots, block_size)" in first.new
    assert "dst_base + first_blocks * block_size" in first.new
    lines = first.new.splitlines()
    todo = [k for k, line in enumerate(lines) if "TODO[devptr]" in line]
    assert len(todo) == 1
    assert lines[todo[0]].strip().startswith("# TODO[devptr]: DP003 ")
    assert lines[todo[0]].endswith("(devptr check)")
    assert lines[todo[0] + 1] == "    bufs.add_copies("
    assert first.todos == {Rule.DP003: 1}
    second = migrate_source(first.new, filename="ec.py")
    assert not second.changed
    assert second.todos == {}


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
    first = migrate_source(code, filename="lora.py")
    assert first.changed and not first.rewrites
    todo_lines = [line for line in first.new.splitlines() if "TODO[devptr]" in line]
    assert len(todo_lines) == 1
    assert todo_lines[0].strip().startswith("# TODO[devptr]: DP006")
    assert todo_lines[0].endswith("(devptr check)")
    assert first.new.splitlines().index(todo_lines[0]) + 1 == first.new.splitlines().index(
        "    return async_tensor_h2d(tensor_ptrs, dtype=torch.uint64, device=device)"
    )
    assert any(w.startswith("lora.py:") and "DP006" in w for w in first.warnings)
    assert first.todos == {Rule.DP006: 1}
    again = migrate_source(first.new, filename="lora.py")
    assert not again.changed and again.todos == {}


def test_marking_can_be_turned_off_and_respects_select() -> None:
    code = "import torch\nt = async_tensor_h2d([w.data_ptr()], dtype=torch.uint64, device='cuda')\n"
    assert not migrate_source(code, mark_findings=False).changed
    assert not migrate_source(code, rules=[Rule.DP004]).changed
    assert migrate_source(code, rules=[Rule.DP006]).changed
