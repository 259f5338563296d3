"""Safe fixes keep behaviour for every input the original accepted; the rest wait for a flag.

Each case executes the original and the migrated code on inputs the original accepted and
that an unguarded rewrite would break (issue 13): a stacked tensor iterated by a
comprehension, an unknown platform in a dtype branch, a one-element list broadcast over a
slice, a hash that is not an address. Real torch tensors and ``devptr.testing`` fakes with
high addresses; runs on whichever torch is installed (CI: 2.13 and 2.14).
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
import torch

from devptr.lint.rules import Rule
from devptr.migrate import Outcome, migrate_source
from devptr.testing import HIGH_ADDRESSES, FakeTensor, encoding_environment


def _migrate(code: str, **options: Any) -> Outcome:
    """The engine's safety judgement, applied by the codemod."""
    return migrate_source(textwrap.dedent(code), filename="case.py", **options)


def _run(code: str, name: str, *args: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(code, "case.py", "exec"), namespace)
    return namespace[name](*args)


def _bits(t: torch.Tensor) -> list[int]:
    return [int(v) % 2**64 for v in t.view(torch.int64).tolist()]


STACKED = """
    import torch

    def table(layers):
        return torch.tensor([x.data_ptr() for x in layers], dtype=torch.int64)
"""


def test_comprehension_over_a_stacked_tensor_keeps_iterating_it() -> None:
    """sglang pool_host/mha.py: ``layers`` is one stacked tensor on the NPU path."""
    out = _migrate(STACKED)
    assert "devptr.ptr_tensor(list(layers)" in out.new
    stacked = torch.zeros(4, 16)
    rows = [torch.zeros(16) for _ in range(3)]
    for layers in (stacked, rows, tuple(rows), iter(rows)):
        before = _run(textwrap.dedent(STACKED), "table", layers)
        again = iter(rows) if not isinstance(layers, (torch.Tensor, list, tuple)) else layers
        assert _bits(_run(out.new, "table", again)) == _bits(before)
    fakes = [FakeTensor(a) for a in HIGH_ADDRESSES]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        _run(textwrap.dedent(STACKED), "table", fakes)
    assert _bits(_run(out.new, "table", fakes)) == list(HIGH_ADDRESSES)


def test_collapsed_form_would_break_the_stacked_tensor() -> None:
    """What the old rewrite produced raises where the original worked."""
    import devptr

    with pytest.raises(devptr.PtrTypeError):
        devptr.ptr_tensor(torch.zeros(4, 16), encoding=devptr.Encoding.I64)


DTYPE_BRANCH = """
    import torch

    def ptr_dtype(platform):
        return torch.uint64 if platform.is_xpu() else torch.int64
"""


class _Platform:
    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def is_xpu(self) -> bool:
        return self.device_type == "xpu"


def test_dtype_branch_is_convention_and_unsafe() -> None:
    assert not _migrate(DTYPE_BRANCH).changed  # convention: not selected by default
    held = _migrate(DTYPE_BRANCH, rules=[Rule.DP005])
    assert held.rewrites == {} and held.todos == {Rule.DP005: 1}
    assert "unsafe fix not applied" in held.new and "torch.uint64 if" in held.new
    applied = _migrate(DTYPE_BRANCH, rules=[Rule.DP005], unsafe_fixes=True)
    assert applied.unsafe == {Rule.DP005: 1}
    for known in ("cuda", "xpu", "cpu"):
        platform = _Platform(known)
        assert _run(applied.new, "ptr_dtype", platform) == _run(
            textwrap.dedent(DTYPE_BRANCH), "ptr_dtype", platform
        )
    for unknown in ("", "tpu", "musa"):  # device types vLLM has: the branch's int64, no error
        platform = _Platform(unknown)
        assert _run(textwrap.dedent(DTYPE_BRANCH), "ptr_dtype", platform) is torch.int64
        assert _run(applied.new, "ptr_dtype", platform) is torch.int64
    with encoding_environment("U64"):  # why the fix is unsafe: it follows DEVPTR_ENCODING
        platform = _Platform("cuda")
        assert _run(textwrap.dedent(DTYPE_BRANCH), "ptr_dtype", platform) is torch.int64
        assert _run(applied.new, "ptr_dtype", platform) is torch.uint64


BROADCAST = """
    import torch

    def fill(ts, n):
        table = torch.zeros(n, dtype=torch.int64)
        table.numpy()[:] = [t.data_ptr() for t in ts]
        return table
"""

PAIR = """
    import numpy as np

    def fill(a, b):
        table = np.zeros(2, dtype=np.int64)
        table[0:2] = [a.data_ptr(), b.data_ptr()]
        return table
"""


def test_slice_store_that_may_broadcast_is_unsafe() -> None:
    source = textwrap.dedent(BROADCAST)
    held = _migrate(BROADCAST)
    assert held.todos == {Rule.DP001: 1} and "broadcast" in held.new
    applied = _migrate(BROADCAST, unsafe_fixes=True)
    one = [torch.zeros(2)]
    expected = one[0].data_ptr()
    assert _bits(_run(source, "fill", one, 3)) == [expected] * 3  # broadcast
    import devptr

    with pytest.raises(devptr.LengthMismatchError):
        _run(applied.new, "fill", one, 3)


def test_slice_store_of_two_addresses_into_a_proven_table_is_safe() -> None:
    out = _migrate(PAIR)
    assert out.rewrites == {Rule.DP001: 1} and out.unsafe == {}
    a, b = torch.zeros(2), torch.zeros(3)
    before = _run(textwrap.dedent(PAIR), "fill", a, b)
    after = _run(out.new, "fill", a, b)
    assert before.tolist() == after.tolist()
    high = [FakeTensor(x) for x in HIGH_ADDRESSES[:2]]
    with pytest.raises(OverflowError):
        _run(textwrap.dedent(PAIR), "fill", *high)
    assert [int(v) for v in _run(out.new, "fill", *high).view(np.uint64)] == list(
        HIGH_ADDRESSES[:2]
    )


HASH_KEY = """
    def _key(h):
        return h if h < (1 << 63) else h - (1 << 64)

    def watermark(blob):
        return _key(hash(blob))

    def address(t):
        return _key(t.data_ptr())
"""


def test_twos_complement_of_a_hash_is_not_touched() -> None:
    assert not _migrate(HASH_KEY).changed  # DP004 is a convention rule
    out = _migrate(HASH_KEY, rules=[Rule.DP004])
    assert out.rewrites == {Rule.DP004: 1}
    assert "return devptr.DevicePtr.of(t).signed" in out.new
    # the engine knows hash() is not an address: no finding, no TODO, no rewrite even
    # with --unsafe-fixes (the codemod once applied DevicePtr(hash(blob)), which raises)
    assert "_key(hash(blob))" in out.new and out.todos == {}
    forced = _migrate(HASH_KEY, rules=[Rule.DP004], unsafe_fixes=True)
    assert forced.new == out.new
    source = textwrap.dedent(HASH_KEY)
    negative = next(b for b in map(str, range(1000)) if hash(b) < 0)
    for blob in ("a", b"xyz", 12345, -7, negative):
        assert _run(forced.new, "watermark", blob) == _run(source, "watermark", blob)
    for a in HIGH_ADDRESSES:
        assert _run(out.new, "address", FakeTensor(a)) == _run(source, "address", FakeTensor(a))


def test_store_into_unproven_container_is_left_alone() -> None:
    # ``bufs.table.numpy()`` has no dtype the engine knows: not a defect finding, so the
    # codemod does not guess (it used to rewrite it with --unsafe-fixes)
    code = """
        def put(bufs, i, t):
            table = bufs.table.numpy()
            table[i] = t.data_ptr()
    """
    for unsafe in (False, True):
        assert not _migrate(code, unsafe_fixes=unsafe).changed
