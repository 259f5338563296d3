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
from devptr.testing import HIGH_ADDRESSES, FakeTensor, encoding_environment, table_bits


def _migrate(code: str, **options: Any) -> Outcome:
    """The engine's safety judgement, applied by the codemod."""
    return migrate_source(textwrap.dedent(code), filename="case.py", **options)


def _run(code: str, name: str, *args: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(code, "case.py", "exec"), namespace)
    return namespace[name](*args)


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
        assert table_bits(_run(out.new, "table", again)) == table_bits(before)
    fakes = [FakeTensor(a) for a in HIGH_ADDRESSES]
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        _run(textwrap.dedent(STACKED), "table", fakes)
    assert table_bits(_run(out.new, "table", fakes)) == list(HIGH_ADDRESSES)


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
    assert table_bits(_run(source, "fill", one, 3)) == [expected] * 3  # broadcast
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


# ------------------------------------------------------------------ issue 23 cases

NEGATIVE_INDEX = """
    import torch

    def last(x, i):
        table = torch.zeros(4, dtype=torch.int64)
        table[-1] = x.data_ptr()
        table[i] = x.data_ptr() + 64
        return table
"""


def test_negative_and_non_literal_indices_are_not_safe() -> None:
    """``t[-1] = p`` writes the last slot; ``devptr.store(t, -1, ...)`` raises."""
    source = textwrap.dedent(NEGATIVE_INDEX)
    held = _migrate(NEGATIVE_INDEX)
    assert held.rewrites == {} and held.todos == {Rule.DP001: 2}
    assert "the index may be negative" in held.new
    x = torch.zeros(8)
    for i in (-1, -4, 0, 2):
        assert table_bits(_run(held.new, "last", x, i)) == table_bits(_run(source, "last", x, i))
    import devptr

    forced = _migrate(NEGATIVE_INDEX, unsafe_fixes=True)
    assert forced.unsafe == {Rule.DP001: 2}
    with pytest.raises(devptr.CapacityError):
        _run(forced.new, "last", x, 0)  # the literal -1 now raises: why it is unsafe


COUNTED = """
    import torch

    def table(ts):
        out = torch.zeros(len(ts) + 1, dtype=torch.int64)
        for i, t in enumerate(ts):
            out[i] = t.data_ptr()
        for j in range(2, 3):
            out[j - 2 + len(ts)] = ts[0].data_ptr()
        return out
"""


def test_counter_and_len_indices_are_safe_and_equivalent() -> None:
    out = _migrate(COUNTED)
    assert out.rewrites == {Rule.DP001: 1} and out.unsafe == {}  # j - 2 is not provably >= 0
    assert "devptr.store(out, i, devptr.DevicePtr.of(t))" in out.new
    source = textwrap.dedent(COUNTED)
    for ts in ([torch.zeros(2)], [torch.zeros(3), torch.zeros(5)]):
        assert table_bits(_run(out.new, "table", ts)) == table_bits(_run(source, "table", ts))
    high = [FakeTensor(a) for a in HIGH_ADDRESSES[:2]]
    with pytest.raises(ValueError, match="Overflow"):
        _run(source, "table", high)
    with pytest.raises(ValueError, match="Overflow"):  # the unproven j store is left as is
        _run(out.new, "table", high)


EMPTY = """
    import torch

    def untyped(ts):
        return torch.tensor([t.data_ptr() for t in ts])

    def typed(ts):
        return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)

    def pair(a, b):
        return torch.tensor([a.data_ptr(), b.data_ptr()])
"""


def _same_table(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Same dtype and contents: the bits for address tables, the values for the float32
    tensor an empty iterable gave before the rewrite."""
    if before.dtype != after.dtype:
        return False
    if before.dtype in (torch.int64, torch.uint64):
        return table_bits(before) == table_bits(after)
    return bool(before.tolist() == after.tolist())


def test_empty_iterables_keep_their_dtype() -> None:
    source = textwrap.dedent(EMPTY)
    out = _migrate(EMPTY)
    assert out.todos == {Rule.DP002: 1} and out.rewrites == {Rule.DP002: 2}
    assert "an empty iterable" in out.new
    rows = [torch.zeros(2), torch.zeros(3)]
    for ts in ([], rows, tuple(rows), {i: r for i, r in enumerate(rows)}.values()):
        for name in ("untyped", "typed"):
            before, after = _run(source, name, ts), _run(out.new, name, ts)
            assert _same_table(before, after), (name, ts)
    for name, args in (("typed", (iter(rows),)), ("pair", tuple(rows))):
        again = (iter(rows),) if name == "typed" else args
        before, after = _run(source, name, *args), _run(out.new, name, *again)
        assert _same_table(before, after)
    assert table_bits(_run(out.new, "typed", [FakeTensor(a) for a in HIGH_ADDRESSES])) == list(
        HIGH_ADDRESSES)


NO_REWRITE = """
    import torch

    def table(ts):
        return torch.tensor(tuple(t.data_ptr() for t in ts), dtype=torch.int64)
"""


def test_a_todo_promises_only_a_fix_that_exists() -> None:
    held = _migrate(NO_REWRITE)
    assert held.todos == {Rule.DP002: 1}
    assert "--unsafe-fixes" not in held.new and "no mechanical rewrite" in held.new
    forced = _migrate(NO_REWRITE, unsafe_fixes=True)
    assert forced.new == held.new and forced.rewrites == {}


def test_applying_a_fix_removes_its_todo() -> None:
    first = _migrate(NEGATIVE_INDEX)
    assert first.new.count("TODO[devptr]: DP001") == 2
    second = migrate_source(first.new, filename="case.py", unsafe_fixes=True)
    assert second.rewrites == {Rule.DP001: 2}
    assert "TODO[devptr]" not in second.new and "#   " not in second.new
    third = migrate_source(second.new, filename="case.py", unsafe_fixes=True)
    assert not third.changed


NOT_ADDRESSES = """
    import torch

    def put(table, base_ptr, t):
        out = torch.zeros(2, dtype=torch.int64)
        out[0] = base_ptr
        out[1] = t.data_ptr()
        return out
"""


def test_values_that_are_not_addresses_are_kept() -> None:
    """``base_ptr`` is an address only by its name: a negative sentinel stays storable."""
    source = textwrap.dedent(NOT_ADDRESSES)
    out = _migrate(NOT_ADDRESSES, unsafe_fixes=False)
    assert "out[0] = base_ptr" in out.new
    x = torch.zeros(2)
    for sentinel in (-1, 0, 4096):
        assert table_bits(_run(out.new, "put", None, sentinel, x)) == table_bits(
            _run(source, "put", None, sentinel, x))
