
"""DP003: before/after pairs, no-ops and TODOs for the arithmetic codemod."""

from __future__ import annotations

from _migrate_support import TwiceCodemodTest

from devptr.lint.rules import Rule


class TestArithmeticRewrites(TwiceCodemodTest):
    RULE = Rule.DP003

    def test_named_uint64_base(self) -> None:
        # uint64 arithmetic keeps every address: not a DP003 finding, not rewritten
        code = """
            import numpy as np

            def save(bufs, src, slots, block_size):
                # addresses are added up in uint64
                src_base = np.uint64(src.view(-1).data_ptr())
                bufs.add_copies(0, src_base + slots.astype(np.uint64) * np.uint64(block_size))
        """
        self.assertCodemod(code, code, unsafe_fixes=True)

    def test_inline_int64_form_keeps_numpy_import_in_use(self) -> None:
        before = """
            import numpy as np

            def rows(dest, starts, row_bytes):
                return dest.data_ptr() + np.asarray(starts) * row_bytes
        """
        after = """
            import numpy as np
            import devptr

            def rows(dest, starts, row_bytes):
                return devptr.addresses(devptr.DevicePtr.of(dest), np.asarray(starts), row_bytes)
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_inline_uint64_form_is_not_a_defect(self) -> None:
        # uint64 arithmetic keeps every address: not a DP003 finding, not rewritten
        code = """
            import numpy as np

            def dst(buf, slots, block):
                return np.uint64(buf.data_ptr()) + slots.astype(np.uint64) * np.uint64(block)
        """
        self.assertCodemod(code, code, unsafe_fixes=True)

    def test_noop_on_scalar_arithmetic(self) -> None:
        code = """
            import numpy as np

            def f(cache, i, seg, src_base, first_blocks, block_size):
                a = cache.data_ptr() + i * seg
                b = src_base + first_blocks * block_size
                c = np.uint64(7) + np.uint64(1)
                return a, b, c
        """
        self.assertCodemod(code, code)

    def test_base_with_other_uses_is_not_a_defect(self) -> None:
        # uint64 arithmetic keeps every address: not a DP003 finding, not rewritten
        code = """
            import numpy as np

            def f(t, slots, s):
                base = np.uint64(t.data_ptr())
                log(base)
                return base + slots.astype(np.uint64) * np.uint64(s)
        """
        self.assertCodemod(code, code, unsafe_fixes=True)
