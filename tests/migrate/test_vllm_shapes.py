"""What vLLM's own tests need of a migration (issue 21): names, doubles, platforms.

Each case is a re-creation of a vLLM 0.33.0 shape, migrated with the adopter recipe
(every rule, unsafe fixes on) through the real pipeline, then executed.
"""

from __future__ import annotations

import textwrap
from typing import Any
from unittest.mock import MagicMock, patch

import numpy as np
import torch

from devptr.lint.rules import Rule
from devptr.migrate import migrate_source

DESCRIPTOR_BUFFERS = """
    from typing import NamedTuple

    import numpy as np
    import torch

    _PTR_DTYPE = torch.uint64 if current_platform.is_xpu() else torch.int64


    class DescriptorBuffers(NamedTuple):
        src_ptrs: torch.Tensor
        src_np: np.ndarray

        def add_copies(self, first, sources):
            self.src_np[first : first + len(sources)] = sources


    def acquire(n):
        src = torch.empty(n, dtype=_PTR_DTYPE)
        return DescriptorBuffers(src, src.numpy())
"""


class _Platform:
    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def is_xpu(self) -> bool:
        return self.device_type == "xpu"


def _run(source: str, device_type: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"current_platform": _Platform(device_type)}
    exec(compile(source, "descriptor_buffers.py", "exec"), ns)
    return ns


def test_numpy_alias_writes_are_kept_for_the_doubles_vllm_patches_in() -> None:
    source = textwrap.dedent(DESCRIPTOR_BUFFERS)
    out = migrate_source(source, rules=list(Rule), filename="descriptor_buffers.py",
                         unsafe_fixes=True)  # fmt: skip
    # only the dtype branch changes: the alias writes stay (no store() on a proven
    # container is possible here, and none is written)
    assert out.rewrites == {Rule.DP005: 1}, out.warnings
    assert "self.src_np[first : first + len(sources)] = sources" in out.new
    assert "default=devptr.Encoding.I64" in out.new
    for form in (source, out.new):
        ns = _run(form, "cuda")
        bufs = ns["acquire"](2)
        bufs.add_copies(0, np.array([2**63, 8], dtype=np.uint64))  # uint64 into int64: bits
        assert bufs.src_ptrs.numpy().view(np.uint64).tolist() == [2**63, 8]
        # vLLM's EC worker tests patch torch.empty with a MagicMock (test_load_path_...)
        double = MagicMock()
        with patch("torch.empty", return_value=double):
            mocked = ns["acquire"](2)
            mocked.add_copies(0, np.array([1000, 2000], dtype=np.uint64))
        double.numpy.return_value.__setitem__.assert_called_once()


def test_unknown_device_types_keep_the_branch_answer_at_import() -> None:
    source = textwrap.dedent(DESCRIPTOR_BUFFERS)
    out = migrate_source(source, rules=[Rule.DP005], filename="descriptor_buffers.py",
                         unsafe_fixes=True)  # fmt: skip
    for device_type, dtype in (("", torch.int64), ("tpu", torch.int64), ("npu", torch.int64),
                               ("xpu", torch.uint64), ("cuda", torch.int64)):  # fmt: skip
        assert _run(source, device_type)["_PTR_DTYPE"] is dtype
        assert _run(out.new, device_type)["_PTR_DTYPE"] is dtype
