"""Behaviour kept: the before and after forms of each rewrite, executed with fake tensors.

Each pattern re-creates a real vLLM 0.33.0 site. The after form is what the codemod
produces from the before form (nothing hand-written: the engine's finding and fix, applied
by the codemod), and both are executed:

- addresses below 2**63: both forms give the same bits;
- addresses at or above 2**63: the before form raises the real torch/numpy error (where it
  does on the installed torch) and the after form gives the right bits.

Runs on whichever torch is installed (CI: 2.13.0 and 2.14.1).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import pytest
import torch

import devptr
from devptr.lint.rules import Rule
from devptr.migrate import migrate_source
from devptr.testing import HIGH_ADDRESSES, FakeTensor, table_bits

LOW_ADDRESSES = (0x7F3A_0000_1000, 0x10_0000, (1 << 63) - 8)
TORCH_214 = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


def _forms(
    before: str, rule: Rule, *, unsafe_fixes: bool = False
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Execute the before form and the codemod's after form; return both namespaces.

    With ``unsafe_fixes`` the fix must be unsafe: without the flag the source must be left
    as it was, apart from a TODO naming the risk.
    """
    before = textwrap.dedent(before)
    if unsafe_fixes:
        held = migrate_source(before, rules=[rule], filename="pattern.py")
        assert not held.rewrites and held.todos == {rule: 1}, held.warnings
        assert "unsafe fix not applied" in held.new
    outcome = migrate_source(
        before, rules=[rule], filename="pattern.py", unsafe_fixes=unsafe_fixes
    )
    assert outcome.changed, "the codemod must rewrite this pattern"
    assert not outcome.todos, outcome.warnings
    namespaces = []
    for name, source in (("before.py", before), ("after.py", outcome.new)):
        ns: dict[str, Any] = {}
        exec(compile(source, name, "exec"), ns)
        namespaces.append(ns)
    return namespaces[0], namespaces[1], outcome.new


def _fakes(addresses: tuple[int, ...]) -> list[FakeTensor]:
    return [FakeTensor(a) for a in addresses]


def _assert_kept(
    run_before: Callable[..., Any],
    run_after: Callable[..., Any],
    expected: Callable[[tuple[int, ...]], list[int]],
    high_error: tuple[type[BaseException], str] | None,
) -> None:
    low = table_bits(run_before(_fakes(LOW_ADDRESSES)))
    assert low == table_bits(run_after(_fakes(LOW_ADDRESSES))) == expected(LOW_ADDRESSES)
    if high_error is None:
        high = table_bits(run_before(_fakes(HIGH_ADDRESSES)))
        assert high == table_bits(run_after(_fakes(HIGH_ADDRESSES))) == expected(HIGH_ADDRESSES)
    else:
        with pytest.raises(high_error[0], match=high_error[1]):
            run_before(_fakes(HIGH_ADDRESSES))
        assert table_bits(run_after(_fakes(HIGH_ADDRESSES))) == expected(HIGH_ADDRESSES)


def _same(addresses: tuple[int, ...]) -> list[int]:
    return list(addresses)


NP_OVERFLOW = (OverflowError, "Python int too large to convert to C long")
TORCH_OVERFLOW = (ValueError, "Overflow when unpacking long long")

# -- DP001 ---------------------------------------------------------------------------------

MAMBA_COPY_STORE = """
    import torch

    def run(states):
        # mamba_utils.collect_mamba_copy_meta: numpy alias of an int64 buffer, scalar writes
        dst_ptrs_np = torch.zeros(len(states), dtype=torch.int64).numpy()
        for offset, state in enumerate(states):
            dst_ptrs_np[offset] = state.data_ptr()
        return dst_ptrs_np
"""

SPEC_DECODE_STORE = """
    import torch

    def _reinterpret_u64_as_i64(value: int) -> int:
        return value if value < (1 << 63) else value - (1 << 64)

    class Ctx:
        block_table_ptrs: torch.Tensor

        def __init__(self, n, dtype):
            self.block_table_ptrs = torch.zeros(n, dtype=dtype)

        def initialize(self, block_tables):
            for i, bt in enumerate(block_tables):
                self.block_table_ptrs[i] = _reinterpret_u64_as_i64(bt.data_ptr())

    def run(tables, dtype=torch.int64):
        ctx = Ctx(len(tables), dtype)
        ctx.initialize(tables)
        return ctx.block_table_ptrs
"""

PROMPT_EMBEDS_STORE = """
    import torch

    def run(tensors):
        # int64 table written element by element, a null entry for a missing mask
        table = torch.zeros(len(tensors) + 1, dtype=torch.int64)
        for i, t in enumerate(tensors):
            table[i] = t.data_ptr()
        mask = None
        table[len(tensors)] = 0 if mask is None else mask.data_ptr()
        return table[: len(tensors)]
"""


def test_dp001_numpy_scalar_store() -> None:
    before, after, new = _forms(MAMBA_COPY_STORE, Rule.DP001)
    assert "devptr.store(dst_ptrs_np, offset, devptr.DevicePtr.of(state))" in new
    _assert_kept(before["run"], after["run"], _same, NP_OVERFLOW)


def test_dp001_torch_scalar_store_with_null() -> None:
    before, after, _ = _forms(PROMPT_EMBEDS_STORE, Rule.DP001)
    _assert_kept(before["run"], after["run"], _same, TORCH_OVERFLOW)


def test_dp004_helper_before_a_store_int64_and_uint64() -> None:
    # The helper's value fits int64, so the int64 store is no DP001 defect; the helper call
    # is a DP004 (convention) fix, and the helper stays as a one-line alias for importers
    # (vLLM's tests import it).
    assert not migrate_source(textwrap.dedent(SPEC_DECODE_STORE), rules=[Rule.DP001]).changed
    before, after, new = _forms(SPEC_DECODE_STORE, Rule.DP004)
    assert "self.block_table_ptrs[i] = devptr.DevicePtr.of(bt).signed" in new
    assert "    return devptr.DevicePtr(value).signed" in new
    _assert_kept(before["run"], after["run"], _same, None)
    # what vLLM's test_reinterpret_u64_as_i64_preserves_pointer_bits asks of the helper
    edges = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1234, (1 << 64) - 1]
    for form in (before, after):
        table = torch.zeros(len(edges), dtype=torch.int64)
        for i, p in enumerate(edges):
            table[i] = form["_reinterpret_u64_as_i64"](p)
        assert table_bits(table) == edges
    # uint64 table: the signed value is rejected by torch 2.14's setitem, before and after
    high = _fakes(HIGH_ADDRESSES)
    for form in (before, after):
        if TORCH_214:
            with pytest.raises(OverflowError, match="can't convert negative int to unsigned"):
                form["run"](high, torch.uint64)
        else:
            assert table_bits(form["run"](high, torch.uint64)) == list(HIGH_ADDRESSES)


# -- DP002 ---------------------------------------------------------------------------------

RECOVERSSM_TABLE = """
    import torch

    def run(tensors):
        device = "cpu"

        def _base_addrs(tensors):
            return torch.tensor(
                [tensor.data_ptr() for tensor in tensors],
                dtype=torch.int64,
                device=device,
            )

        return _base_addrs(tensors)
"""

WARMUP_TABLE = """
    import torch

    def run(tensors, device="cpu"):
        return torch.cat(
            [torch.tensor([t.data_ptr()], dtype=torch.uint64, device=device) for t in tensors]
        )
"""


def test_dp002_int64_table_stays_int64() -> None:
    before, after, new = _forms(RECOVERSSM_TABLE, Rule.DP002)
    assert "list(tensors), encoding=devptr.Encoding.I64, device=device" in new
    assert after["run"](_fakes(HIGH_ADDRESSES)).dtype == torch.int64
    _assert_kept(before["run"], after["run"], _same, TORCH_OVERFLOW)


def test_dp002_uint64_table_stays_uint64() -> None:
    before, after, _ = _forms(WARMUP_TABLE, Rule.DP006)
    assert after["run"](_fakes(HIGH_ADDRESSES)).dtype == torch.uint64
    _assert_kept(before["run"], after["run"], _same, None)


# -- DP003 ---------------------------------------------------------------------------------

EC_SAVE_ARITH = """
    import numpy as np

    def run(srcs, block_size=4096):
        # ec_connector save_caches: uint64 base + slots * block
        slots = np.array([0, 3, 7], dtype=np.int64)
        out = []
        for src in srcs:
            src_base = np.uint64(src.data_ptr())
            out.extend(src_base + slots.astype(np.uint64) * np.uint64(block_size))
        return np.array(out, dtype=np.uint64)
"""

HISPARSE_ARITH = """
    import numpy as np

    def run(dests, row_bytes=256):
        starts = [0, 1, 5]
        out = []
        for dest in dests:
            out.extend(dest.data_ptr() + np.asarray(starts) * row_bytes)
        return out
"""


def _strided(slots: list[int], stride: int) -> Callable[[tuple[int, ...]], list[int]]:
    def expected(addresses: tuple[int, ...]) -> list[int]:
        return [a + s * stride for a in addresses for s in slots]

    return expected


def test_dp003_int64_arithmetic() -> None:
    before, after, new = _forms(HISPARSE_ARITH, Rule.DP003, unsafe_fixes=True)
    assert "devptr.addresses(devptr.DevicePtr.of(dest),np.asarray(starts),row_bytes)" in "".join(
        new.split()
    )
    lows = tuple(a for a in LOW_ADDRESSES if a < (1 << 62))
    highs = tuple(a for a in HIGH_ADDRESSES if a + 5 * 256 < (1 << 64))
    expected = _strided([0, 1, 5], 256)
    assert table_bits(before["run"](_fakes(lows))) == table_bits(after["run"](_fakes(lows)))
    assert table_bits(after["run"](_fakes(lows))) == expected(lows)
    with pytest.raises(OverflowError, match=NP_OVERFLOW[1]):
        before["run"](_fakes(highs))
    assert table_bits(after["run"](_fakes(highs))) == expected(highs)


def test_dp003_uint64_arithmetic_is_not_a_defect() -> None:
    # uint64 arithmetic keeps every address below 2**64: no finding, no rewrite
    source = textwrap.dedent(EC_SAVE_ARITH)
    assert not migrate_source(source, rules=[Rule.DP003], unsafe_fixes=True).changed
    ns: dict[str, Any] = {}
    exec(compile(source, "before.py", "exec"), ns)
    safe_high = tuple(a for a in HIGH_ADDRESSES if a + 7 * 4096 < (1 << 64))
    expected = _strided([0, 3, 7], 4096)
    for addresses in (LOW_ADDRESSES, safe_high):
        assert table_bits(ns["run"](_fakes(addresses))) == expected(addresses)


# -- DP004 ---------------------------------------------------------------------------------

XPUMEM_ARGS = """
    def run(tensors):
        def _to_i64_ptr(ptr: int) -> int:
            return ptr if ptr < (1 << 63) else ptr - (1 << 64)

        # the values handed to a custom op whose schema says `int` (int64)
        return [_to_i64_ptr(t.data_ptr()) for t in tensors]
"""


def test_dp004_same_signed_values_everywhere() -> None:
    before, after, new = _forms(XPUMEM_ARGS, Rule.DP004)
    assert "_to_i64_ptr" not in new
    for addresses in (LOW_ADDRESSES, HIGH_ADDRESSES):
        got = before["run"](_fakes(addresses))
        assert got == after["run"](_fakes(addresses))
        assert all(-(1 << 63) <= v < (1 << 63) for v in got)  # fits a custom-op int
        assert table_bits(got) == list(addresses)
    # a custom-op int argument takes the signed value, never the raw high address
    t = torch.zeros(1, dtype=torch.int64)
    t.fill_(after["run"](_fakes((HIGH_ADDRESSES[-1],)))[0])
    assert table_bits(t) == [HIGH_ADDRESSES[-1]]


# -- DP005 ---------------------------------------------------------------------------------

EC_PTR_DTYPE = """
    import torch

    def run(current_platform):
        _PTR_DTYPE = torch.uint64 if current_platform.is_xpu() else torch.int64
        return _PTR_DTYPE
"""


class _Platform:
    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def is_xpu(self) -> bool:
        return self.device_type == "xpu"


@pytest.mark.parametrize("device_type", ["cuda", "xpu", "cpu"])
def test_dp005_same_dtype_per_platform(
    device_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEVPTR_ENCODING", raising=False)
    before, after, _ = _forms(EC_PTR_DTYPE, Rule.DP005, unsafe_fixes=True)
    dtype = before["run"](_Platform(device_type))
    assert dtype == after["run"](_Platform(device_type))
    # and the table built with that dtype holds the address bits on the host path
    table = torch.empty(len(HIGH_ADDRESSES), dtype=dtype)
    devptr.store(table, slice(0, None), [devptr.DevicePtr(a) for a in HIGH_ADDRESSES])
    assert table_bits(table) == list(HIGH_ADDRESSES)
