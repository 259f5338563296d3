# ruff: noqa: E501 - expected outputs hold the long lines and TODO comments the codemod writes
"""DP001: before/after pairs, no-ops and TODOs for the store codemod."""

from __future__ import annotations

from _migrate_support import TwiceCodemodTest, fixture

from devptr.lint.rules import Rule


class TestStoreRewrites(TwiceCodemodTest):
    RULE = Rule.DP001

    def test_store_into_untyped_numpy_alias_is_not_a_finding(self) -> None:
        # The codemod used to guess that a ``.np`` attribute is an array and rewrite the
        # store; the engine does not type it, reports nothing, so nothing is touched.
        code = """
            import numpy as np

            def collect(bufs, state, offset):
                dst_np = bufs.dst_ptrs.np
                dst_np[offset] = state[3].data_ptr()  # keep me
        """
        self.assertCodemod(code, code, unsafe_fixes=True)

    def test_store_of_an_encoded_value_is_not_a_defect(self) -> None:
        # The helper's two's complement makes the value fit int64: the store works for every
        # address, so DP001 (a defect rule) has nothing to fix; the spelling is DP004
        # (convention), rewritten only when selected (test_dp004_twos).
        code = """
            import torch

            def _reinterpret_u64_as_i64(value: int) -> int:
                return value if value < (1 << 63) else value - (1 << 64)

            class Ctx:
                state_base_addrs: torch.Tensor

                def init(self, tables):
                    for i, bt in enumerate(tables):
                        self.state_base_addrs[i] = _reinterpret_u64_as_i64(
                            bt.data_ptr()
                        )
        """
        self.assertCodemod(code, code, unsafe_fixes=True)

    def test_offset_and_null_placeholder(self) -> None:
        before = """
            import torch

            ptrs = torch.zeros(4, dtype=torch.uint64)
            ptrs[0] = buf.data_ptr() + 64
            ptrs[1] = 0 if mask is None else mask.data_ptr()
        """
        after = """
            import torch
            import devptr

            ptrs = torch.zeros(4, dtype=torch.uint64)
            devptr.store(ptrs, 0, devptr.DevicePtr.of(buf, offset=64))
            devptr.store(ptrs, 1, devptr.DevicePtr.NULL if mask is None else devptr.DevicePtr.of(mask))
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_slice_store_of_comprehension(self) -> None:
        before = """
            import numpy as np

            table = np.zeros(8, dtype=np.int64)
            table[2:4] = [t.data_ptr() for t in pair]
        """
        after = """
            import numpy as np
            import devptr

            table = np.zeros(8, dtype=np.int64)
            devptr.store(table, slice(2, 4), [devptr.DevicePtr.of(t) for t in pair])
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_noop_on_lists_dicts_and_non_addresses(self) -> None:
        code = """
            import torch

            addresses = {}
            ptrs = []
            sizes = torch.zeros(4, dtype=torch.int64)

            def f(cache, name, i, spec):
                addresses[name] = cache.data_ptr()
                ptrs[i] = cache.data_ptr()
                sizes[i] = spec.num_elements * cache.element_size()
                cached = (cache.data_ptr(), spec)
        """
        self.assertCodemod(code, code)

    def test_store_into_an_unknown_container_is_left_to_the_engine(self) -> None:
        # A container of unknown type (here a parameter) may be a dict or a list: the
        # engine does not report a scalar store into it, so nothing is marked.
        code = """
            def fill(buf, t):
                buf[0] = t.data_ptr()
        """
        self.assertCodemod(code, code, expected_warnings=[])

    def test_slice_store_of_arithmetic_gets_todo(self) -> None:
        before = """
            def fill(descriptors, source, blocks, stride):
                descriptors.src_np[0:4] = source.data_ptr() + blocks * stride
        """
        after = """
            def fill(descriptors, source, blocks, stride):
                # TODO[devptr]: DP001 raw device addresses stored by slice into a table of unknown dtype: if it is an int64 tensor/array, torch raises 'ValueError: Overflow when unpacking long long' / numpy raises 'OverflowError: Python int too large to convert to C long' for addresses >= 2**63 (devptr check)
                descriptors.src_np[0:4] = source.data_ptr() + blocks * stride
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_named_slice_of_arithmetic_into_uint64_array_is_not_a_defect(self) -> None:
        # numpy uint64 arrays take every address: DP006 (convention), not DP001; never
        # rewritten as an offset pointer (``sl`` is a slice, the value an array).
        code = """
            import numpy as np

            dst_np = np.zeros(8, dtype=np.uint64)

            def fill(destination, starts, row_bytes):
                sl = slice(0, 8, 2)
                dst_np[sl] = destination.data_ptr() + starts * row_bytes
        """
        self.assertCodemod(code, code, unsafe_fixes=True)

    def test_slice_store_of_a_named_list_gets_todo_even_when_unsafe_allowed(self) -> None:
        # ``ptrs`` is a list: there is no element to wrap in DevicePtr, so no rewrite
        code = """
            import torch

            def fill(kv_caches):
                table = torch.zeros(len(kv_caches), dtype=torch.int64)
                ptrs = [t.data_ptr() for t in kv_caches]
                table.numpy()[:] = ptrs
                return table
        """
        first = self.migrate(fixture(code), unsafe_fixes=True)
        self.assertEqual(first.rewrites, {})
        self.assertIn("no mechanical rewrite for this shape", first.new)
