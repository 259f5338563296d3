"""DP007 wrapping-address-arithmetic: a raw address combined with a torch tensor (convention).

Detection: a raw device address (not a host one) combined with a torch tensor: an int64
tensor wraps an address >= 2**63 to its two's complement, the int64 encoding's bits. No fix.
"""

from __future__ import annotations

from typing import ClassVar

from devptr.lint.engine._values import Lib, Val
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit


class WrappingAddressArithmetic(RuleUnit):
    """DP007."""

    rule: ClassVar[Rule] = Rule.DP007
    name: ClassVar[str] = "wrapping-address-arithmetic"
    category: ClassVar[Category] = "convention"
    summary: ClassVar[str] = "raw address combined with an int64 torch tensor"
    why: ClassVar[str] = (
        "torch wraps an address >= 2**63 to its two's complement, which is the int64 "
        "encoding's bits: correct for int64 consumers, unchecked"
    )
    fix: ClassVar[str] = "devptr.addresses(base, index, stride, offset) then store/ptr_tensor"
    mypy_code: ClassVar[str] = "devptr-wrapping-arith"

    def arith(self, addr: Val, other: Val) -> str | None:
        if addr.host or other.lib is not Lib.TORCH:
            return None
        return (
            "raw address added to a torch tensor: an int64 tensor wraps an address >= 2**63 "
            "to its two's complement (the int64 encoding), unchecked"
        )


UNIT = WrappingAddressArithmetic()
