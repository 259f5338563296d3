"""The shapes of the rewrites ``devptr migrate`` applies by default on vLLM 0.33.0, sglang
and LMCache (``benchmarks/results/migrate.md``), executed before and after.

Each case is a re-creation of a rewritten site (not its code), migrated with the defaults
(engine on) and executed on real tensors and on ``devptr.testing`` fakes with addresses
below and at or above 2**63: the same int64 bits where the original worked, the right
bits where it raised. Runs on whichever torch is installed (CI: 2.13 and 2.14).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import torch

from devptr.migrate import migrate_source
from devptr.testing import HIGH_ADDRESSES, FakeTensor, table_bits

LOW = (0x7F3A_0000_1000, 0x10_0000, (1 << 63) - 8)


class _Layer:
    def __init__(self, kv_cache: Any) -> None:
        self.kv_cache = kv_cache


SHAPES = {
    # vLLM hf3fs_connector: a dict's values
    "dict_values": (
        """
        import torch

        class Conn:
            def __init__(self, kv_caches, device):
                self._kv_caches = kv_caches
                self._device = device
                self._kvcache_ptrs = torch.tensor(
                    [cache.data_ptr() for cache in self._kv_caches.values()],
                    dtype=torch.int64,
                    device=self._device,
                )

        def run(items):
            return Conn(dict(enumerate(items)), "cpu")._kvcache_ptrs
        """,
        "list(self._kv_caches.values()), encoding=devptr.Encoding.I64",
        lambda items: [items],
    ),
    # vLLM dspark_mla: an attribute of each element
    "projection": (
        """
        import torch

        def run(cache_layers):
            cache_ptrs = torch.tensor(
                [cl.kv_cache.data_ptr() for cl in cache_layers],
                dtype=torch.int64,
            )
            return cache_ptrs
        """,
        "[cl.kv_cache for cl in cache_layers]",
        lambda items: [[_Layer(t) for t in items], tuple(_Layer(t) for t in items)],
    ),
    # vLLM recoverssm / LMCache cpu cache_context: any iterable of tensors, dtype long
    "iterable": (
        """
        import torch

        def run(tensors):
            return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.long)
        """,
        "list(tensors), encoding=devptr.Encoding.I64",
        lambda items: [list(items), tuple(items), iter(list(items))],
    ),
}


def _bits(t: torch.Tensor) -> list[int]:
    assert t.dtype == torch.int64  # the rewrite keeps the table's dtype
    return table_bits(t)


def _run(code: str, arg: Any) -> Any:
    ns: dict[str, Any] = {}
    exec(compile(code, "shape.py", "exec"), ns)
    return ns["run"](arg)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_default_rewrite_keeps_the_bits(name: str) -> None:
    before, spelled, inputs = SHAPES[name]
    before = textwrap.dedent(before)
    out = migrate_source(before, filename="shape.py")
    assert out.unsafe == {} and sum(out.rewrites.values()) == 1, out.warnings
    assert spelled in " ".join(out.new.split())
    real = [torch.zeros(3), torch.zeros(5), torch.zeros(2, 2)]
    for items in (real, [FakeTensor(a) for a in LOW]):
        for old_arg, new_arg in zip(inputs(items), inputs(items), strict=True):
            assert _bits(_run(out.new, new_arg)) == _bits(_run(before, old_arg))
    high = [FakeTensor(a) for a in HIGH_ADDRESSES]
    for old_arg, new_arg in zip(inputs(high), inputs(high), strict=True):
        with pytest.raises((ValueError, RuntimeError), match="Overflow when unpacking long long"):
            _run(before, old_arg)
        assert _bits(_run(out.new, new_arg)) == list(HIGH_ADDRESSES)
    if name == "iterable":  # one stacked tensor: rows are iterated, as before
        stacked = torch.zeros(4, 8)
        assert _bits(_run(out.new, stacked)) == _bits(_run(before, stacked))
