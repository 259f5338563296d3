# ruff: noqa: E501 - expected outputs hold the long lines and TODO comments the codemod writes
"""DP002: before/after pairs, no-ops and TODOs for the table codemod."""

from __future__ import annotations

from _migrate_support import TwiceCodemodTest

from devptr.lint.rules import Rule


class TestTableRewrites(TwiceCodemodTest):
    RULE = Rule.DP002

    def test_int64_comprehension_keeps_int64(self) -> None:
        before = """
            import torch

            def _base_addrs(tensors, device):
                return torch.tensor(
                    [tensor.data_ptr() for tensor in tensors],
                    dtype=torch.int64,
                    device=device,
                )
        """
        after = """
            import torch
            import devptr

            def _base_addrs(tensors, device):
                return devptr.ptr_tensor(list(tensors), encoding=devptr.Encoding.I64, device=device)
        """
        self.assertCodemod(before, after)

    def test_uint64_literal_list_keeps_uint64(self) -> None:
        before = """
            import torch

            srcs = torch.tensor([src.data_ptr()], dtype=torch.uint64, device=device)
        """
        after = """
            import torch
            import devptr

            srcs = devptr.ptr_tensor([src], encoding=devptr.Encoding.U64, device=device)
        """
        self.assertCodemod(before, after, rules=[Rule.DP006])

    def test_projection_in_comprehension_and_long(self) -> None:
        # without a dtype the comprehension's fix is unsafe (empty: float32): test_safety.py
        before = """
            import torch

            ptrs = torch.tensor([cl.kv_cache.data_ptr() for cl in layers], dtype=torch.int64)
            more = torch.tensor([a.data_ptr(), b.data_ptr() + 8], dtype=torch.long)
        """
        after = """
            import torch
            import devptr

            ptrs = devptr.ptr_tensor([cl.kv_cache for cl in layers], encoding=devptr.Encoding.I64)
            more = devptr.ptr_tensor([devptr.DevicePtr.of(a), devptr.DevicePtr.of(b, offset=8)], encoding=devptr.Encoding.I64)
        """
        self.assertCodemod(before, after)

    def test_noop_without_addresses(self) -> None:
        code = """
            import torch

            strides = torch.tensor([t.stride(0) for t in ts], dtype=torch.int64)
            key = tuple(w.data_ptr() for w in weights)
            layout = torch.tensor([0, comm_size], dtype=torch.int64, device="cuda")
        """
        self.assertCodemod(code, code)

    def test_mixed_list_variable_gets_todo(self) -> None:
        before = """
            import torch

            def build(n, peers, flag):
                ptrs = [0] * n
                ptrs += peers
                ptrs.append(flag.data_ptr())
                return torch.tensor(ptrs, dtype=torch.int64, device="cuda")
        """
        after = """
            import torch

            def build(n, peers, flag):
                ptrs = [0] * n
                ptrs += peers
                ptrs.append(flag.data_ptr())
                # TODO[devptr]: DP002 torch.tensor() of raw device addresses with int64: torch raises 'ValueError: Overflow when unpacking long long' for addresses >= 2**63 (devptr check); no mechanical rewrite for this shape
                return torch.tensor(ptrs, dtype=torch.int64, device="cuda")
        """
        self.assertCodemod(before, after)

    def test_two_dimensional_and_odd_dtype_get_todo(self) -> None:
        before = """
            import torch

            peer = torch.tensor(
                [[v[u].data_ptr() for v in views] for u in range(2)],
                dtype=torch.int64,
            )
            odd = torch.tensor([t.data_ptr() for t in ts], dtype=_PTR_DTYPE)
        """
        # A dtype the engine cannot read (``_PTR_DTYPE``) is not reported: it may be uint64.
        after = """
            import torch

            # TODO[devptr]: DP002 torch.tensor() of raw device addresses with int64: torch raises 'ValueError: Overflow when unpacking long long' for addresses >= 2**63 (devptr check); no mechanical rewrite for this shape
            peer = torch.tensor(
                [[v[u].data_ptr() for v in views] for u in range(2)],
                dtype=torch.int64,
            )
            odd = torch.tensor([t.data_ptr() for t in ts], dtype=_PTR_DTYPE)
        """
        self.assertCodemod(before, after)


class TestTableSafety(TwiceCodemodTest):
    """The comprehension collapse keeps iterating what the comprehension iterated."""

    RULE = Rule.DP002

    def test_collapse_keeps_the_iteration_with_list(self) -> None:
        # ``list(E)`` iterates E exactly as the comprehension did, whatever E is; a
        # display is passed as it is. (The codemod no longer guesses which names hold lists.)
        before = """
            import torch

            def tables(caches, layers):
                ks = [c[0] for c in caches]
                a = torch.tensor([k.data_ptr() for k in ks], dtype=torch.int64)
                b = torch.tensor([v.data_ptr() for v in caches.values()], dtype=torch.int64)
                c = torch.tensor([x.data_ptr() for x in layers], dtype=torch.int64)
                return a, b, c
        """
        after = """
            import torch
            import devptr

            def tables(caches, layers):
                ks = [c[0] for c in caches]
                a = devptr.ptr_tensor(list(ks), encoding=devptr.Encoding.I64)
                b = devptr.ptr_tensor(list(caches.values()), encoding=devptr.Encoding.I64)
                c = devptr.ptr_tensor(list(layers), encoding=devptr.Encoding.I64)
                return a, b, c
        """
        self.assertCodemod(before, after)

    def test_uint64_table_is_convention_left_alone_by_default(self) -> None:
        code = """
            import torch

            srcs = torch.tensor([src.data_ptr()], dtype=torch.uint64, device=device)
        """
        self.assertCodemod(code, code)

    def test_no_op_without_addresses(self) -> None:
        code = """
            import torch

            sizes = torch.tensor([t.numel() for t in ts], dtype=torch.int64)
        """
        self.assertCodemod(code, code)
