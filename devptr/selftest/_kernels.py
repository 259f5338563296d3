"""Probe kernels of ``devptr selftest`` (imported only once Triton and its mode are settled).

- :func:`_addr_echo_kernel`: takes an address as a scalar (the ``addr_jit`` rule of
  :mod:`devptr.kernels`) and stores its 64 bits, unsigned, into ``out_ptr[0]``; with
  ``DEREF`` it also loads one int32 from the address into ``out_ptr[1]``.
- :func:`_lt_kernel`: ``out[0] = tab[0] < tab[1]`` after the unsigned bitcast (kernel rule R8).
"""

import triton
import triton.language as tl

from devptr.kernels import addr_jit


@addr_jit(addr_params=["src_addr"])
def _addr_echo_kernel(src_addr: tl.int64, out_ptr, DEREF: tl.constexpr):  # type: ignore[no-untyped-def]
    addr = src_addr.to(tl.int64)  # a no-op when compiled; the interpreter ignores annotations
    tl.store(out_ptr, addr)
    if DEREF:
        value = tl.load(addr.to(tl.pointer_type(tl.int32)))
        tl.store(out_ptr + 1, value.to(tl.int64))


@triton.jit
def _lt_kernel(tab_ptr, out_ptr):  # type: ignore[no-untyped-def]
    a = tl.load(tab_ptr).to(tl.uint64, bitcast=True)
    b = tl.load(tab_ptr + 1).to(tl.uint64, bitcast=True)
    tl.store(out_ptr, (a < b).to(tl.int32))
