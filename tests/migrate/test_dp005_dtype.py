# ruff: noqa: E501 - expected outputs hold the long lines the codemod writes

"""DP005: before/after pairs, no-ops and TODOs for the platform-dtype codemod."""

from __future__ import annotations

from _migrate_support import TwiceCodemodTest

from devptr.lint.rules import Rule


class TestPlatformDtypeRewrites(TwiceCodemodTest):
    RULE = Rule.DP005

    def test_module_constant(self) -> None:
        before = """
            import torch
            from vllm.platforms import current_platform

            # CUDA wants int64, XPU uint64
            _PTR_DTYPE = torch.uint64 if current_platform.is_xpu() else torch.int64
        """
        after = """
            import torch
            from vllm.platforms import current_platform
            import devptr

            # CUDA wants int64, XPU uint64
            _PTR_DTYPE = devptr.encoding_for(current_platform.device_type, default=devptr.Encoding.I64).torch_dtype
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_inverted_numpy_and_device_type_forms(self) -> None:
        before = """
            import numpy as np
            import torch

            a = np.int64 if not platform.is_xpu() else np.uint64
            b = torch.uint64 if dev.type == "xpu" else torch.int64
            c = torch.int64 if "xpu" != t.device.type else torch.uint64
        """
        after = """
            import numpy as np
            import torch
            import devptr

            a = devptr.encoding_for(platform.device_type, default=devptr.Encoding.I64).numpy_dtype
            b = devptr.encoding_for(dev.type, default=devptr.Encoding.I64).torch_dtype
            c = devptr.encoding_for(t.device.type, default=devptr.Encoding.I64).torch_dtype
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_statement_form(self) -> None:
        before = """
            import torch

            def new_buffers(n):
                # pick the pointer dtype
                if current_platform.is_xpu():
                    ptr_dtype = torch.uint64
                else:
                    ptr_dtype = torch.int64
                return torch.empty(n, dtype=ptr_dtype)
        """
        after = """
            import torch
            import devptr

            def new_buffers(n):
                # pick the pointer dtype
                ptr_dtype = devptr.encoding_for(current_platform.device_type, default=devptr.Encoding.I64).torch_dtype
                return torch.empty(n, dtype=ptr_dtype)
        """
        self.assertCodemod(before, after, unsafe_fixes=True)

    def test_noop_on_unrelated_branches(self) -> None:
        code = """
            import torch

            ids = torch.int64 if native else torch.int32
            idx = torch.uint64 if use_u64 else torch.int64
        """
        self.assertCodemod(code, code)

    def test_unreadable_xpu_test_gets_todo(self) -> None:
        before = """
            import torch

            dt = torch.uint64 if torch.xpu.is_available() else torch.int64
            wrong_way = torch.int64 if current_platform.is_xpu() else torch.uint64
        """
        after = """
            import torch

            # TODO[devptr]: DP005 per-platform pointer dtype (uint64 vs int64 branch) (devptr check)
            dt = torch.uint64 if torch.xpu.is_available() else torch.int64
            # TODO[devptr]: DP005 per-platform pointer dtype (uint64 vs int64 branch) (devptr check)
            wrong_way = torch.int64 if current_platform.is_xpu() else torch.uint64
        """
        self.assertCodemod(before, after, unsafe_fixes=True)
