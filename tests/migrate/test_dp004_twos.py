"""DP004: before/after pairs, no-ops and TODOs for the two's-complement codemod."""

from __future__ import annotations

from _migrate_support import TwiceCodemodTest

from devptr.lint.rules import Rule


class TestTwosComplementRewrites(TwiceCodemodTest):
    RULE = Rule.DP004

    def test_nested_helper_body_rewritten(self) -> None:
        # The engine reports the spelling inside the helper (its parameter is named for an
        # address); the calls pass parameters of unknown origin, so they are not findings.
        before = """
            import torch

            def memcpy(dst_ptr: int, src_ptr: int, n: int) -> None:
                def _to_i64_ptr(ptr: int) -> int:
                    # custom-op ints are signed
                    return ptr if ptr < (1 << 63) else ptr - (1 << 64)

                torch.ops._C.memcpy(_to_i64_ptr(dst_ptr), _to_i64_ptr(src_ptr), n)
        """
        after = """
            import torch
            import devptr

            def memcpy(dst_ptr: int, src_ptr: int, n: int) -> None:
                def _to_i64_ptr(ptr: int) -> int:
                    # custom-op ints are signed
                    return devptr.DevicePtr(ptr).signed

                torch.ops._C.memcpy(_to_i64_ptr(dst_ptr), _to_i64_ptr(src_ptr), n)
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_inline_spellings(self) -> None:
        # ``q`` is not known to be an address (it may be a hash): no finding, left alone.
        before = """
            a = ptr if ptr < 2**63 else ptr - 2**64
            b = (t.data_ptr() - (1 << 64)) if t.data_ptr() >= (1 << 63) else t.data_ptr()
            c = q - 0x10000000000000000 if q > 0x7FFFFFFFFFFFFFFF else q
        """
        after = """
            import devptr

            a = devptr.DevicePtr(ptr).signed
            b = devptr.DevicePtr.of(t).signed
            c = q - 0x10000000000000000 if q > 0x7FFFFFFFFFFFFFFF else q
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_ctypes_spelling_and_unused_import_removed(self) -> None:
        before = """
            import ctypes

            arg = ctypes.c_int64(t.data_ptr()).value
        """
        after = """
            import devptr

            arg = devptr.DevicePtr.of(t).signed
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_module_helper_kept_as_alias(self) -> None:
        # vLLM's tests import this private helper: it stays, as a one-line alias onto the
        # convention (docstring and signature kept), and its callers use devptr directly.
        before = """
            def _reinterpret_u64_as_i64(value: int) -> int:
                \"\"\"Keep the bits.\"\"\"
                # comment that goes with the old body
                return value if value < (1 << 63) else value - (1 << 64)


            def use(t):
                return _reinterpret_u64_as_i64(t.data_ptr())
        """
        after = """
            import devptr

            def _reinterpret_u64_as_i64(value: int) -> int:
                \"\"\"Keep the bits.\"\"\"
                return devptr.DevicePtr(value).signed


            def use(t):
                return devptr.DevicePtr.of(t).signed
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_noop_on_other_conditionals(self) -> None:
        code = """
            a = p if p < 2**32 else p - 2**32
            b = x if x < (1 << 63) else y - (1 << 64)
            mask = h & ((1 << 64) - 1)
        """
        self.assertCodemod(code, code)

    def test_public_helper_kept_as_alias(self) -> None:
        before = """
            def to_signed(v):
                return v if v < (1 << 63) else v - (1 << 64)

            x = to_signed(addr)
        """
        after = """
            import devptr

            def to_signed(v):
                return devptr.DevicePtr(v).signed

            x = devptr.DevicePtr(addr).signed
        """
        self.assertCodemod(before, after, unsafe_fixes=True)
