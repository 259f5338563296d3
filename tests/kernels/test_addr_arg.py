"""The scalar-address rule (``devptr.kernels.addr_jit`` / ``addr_arg``): one compile-cache
entry across low, >= 2**63, unaligned and small addresses.

On a CPU the interpreter keeps no compile cache, so the specialisation key is computed with
Triton's own binder (the function the compiled launcher calls). On a GPU the kernel is
compiled and its cache is counted.
"""

from __future__ import annotations

import pytest
import torch
import triton.language as tl
from support.gpu import gpu

from devptr import DevicePtr
from devptr.kernels import AddrParamError, addr_arg, addr_jit, compiled_variants, specialization_key
from devptr.testing import HIGH_ADDRESSES

ADDRS = (0x7F3A_0000_1000, 0x7F3A_0000_1008, HIGH_ADDRESSES[2], HIGH_ADDRESSES[1], 4096)
"""A CUDA-like address, the same + 8 (not divisible by 16), two with bit 63 set, a small one."""


def _plain(addr, out_ptr):  # type: ignore[no-untyped-def]
    pass


def test_plain_int_argument_keys_vary() -> None:
    """The problem: an unannotated int gets a different key per value class."""
    import triton

    kernel = triton.jit(_plain)
    out = torch.zeros(2, dtype=torch.int64)
    keys = {specialization_key(kernel, a, out)[0] for a in ADDRS}
    assert ("u64", "D") in keys and ("i64", "D") in keys and ("i64", "") in keys
    assert ("i32", "D") in keys


def test_addr_rule_has_one_key() -> None:
    from devptr.selftest._kernels import _addr_echo_kernel

    out = torch.zeros(2, dtype=torch.int64)
    keys = {specialization_key(_addr_echo_kernel, addr_arg(DevicePtr(a)), out, DEREF=False) for a in ADDRS}
    assert len(keys) == 1, keys
    assert next(iter(keys))[0] == ("i64", "")


def test_addr_arg_values_round_trip(kernel_device: torch.device) -> None:
    from devptr.selftest._kernels import _addr_echo_kernel

    out = torch.zeros(2, dtype=torch.int64, device=kernel_device)
    for a in ADDRS:
        _addr_echo_kernel[(1,)](addr_arg(DevicePtr(a)), out, DEREF=False)
        assert int(out.cpu()[0]) % (1 << 64) == a
    data = torch.tensor([-5, 99], dtype=torch.int32, device=kernel_device)
    _addr_echo_kernel[(1,)](addr_arg(DevicePtr.of(data, 4)), out, DEREF=True)
    assert int(out.cpu()[1]) == 99


def test_addr_arg_refuses_raw_ints() -> None:
    with pytest.raises(AddrParamError, match="DevicePtr"):
        addr_arg(0x1000)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        addr_arg(0x1000)  # type: ignore[arg-type]


def test_addr_jit_requires_int64_annotation() -> None:
    def unannotated(src_addr, out_ptr):  # type: ignore[no-untyped-def]
        pass

    def wrong(src_addr: int, out_ptr):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(AddrParamError, match=r"tl\.int64"):
        addr_jit(addr_params=["src_addr"])(unannotated)
    with pytest.raises(AddrParamError, match=r"tl\.int64"):
        addr_jit(addr_params=["src_addr"])(wrong)
    with pytest.raises(AddrParamError, match="no parameter"):
        addr_jit(addr_params=["dst_addr"])(wrong)


@gpu
def test_compile_cache_stays_at_one_entry() -> None:
    from devptr.selftest._kernels import _addr_echo_kernel

    out = torch.zeros(2, dtype=torch.int64, device="cuda")
    _addr_echo_kernel[(1,)](addr_arg(DevicePtr.of(out)), out, DEREF=False)
    torch.cuda.synchronize()
    before = compiled_variants(_addr_echo_kernel)  # other tests may have compiled DEREF=True
    for a in ADDRS:
        _addr_echo_kernel[(1,)](addr_arg(DevicePtr(a)), out, DEREF=False)
    torch.cuda.synchronize()
    assert compiled_variants(_addr_echo_kernel) == before
    # the contrast: the same kernel body without the rule compiles per value class
    import triton

    plain = triton.jit(_echo_plain)
    for a in ADDRS:
        plain[(1,)](a, out)  # the raw int, as code without the rule passes it
    torch.cuda.synchronize()
    assert compiled_variants(plain) >= 3


def _echo_plain(addr, out_ptr):  # type: ignore[no-untyped-def]
    tl.store(out_ptr, addr.to(tl.uint64).to(tl.int64, bitcast=True))
