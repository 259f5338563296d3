"""The rule catalogue shared by ``devptr check``, the mypy plugin and ``devptr migrate``.

One rule per way of getting a device address wrong. Each rule says what it catches, why
it is wrong (with the real error it produces on Intel XPU, where addresses have bit 63
set) and what to write instead.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs


class Rule(enum.Enum):
    """Rule identifiers. The value is the code users see and suppress (``DP001``)."""

    DP001 = "DP001"
    """A raw address (``data_ptr()`` int) stored into an integer tensor or array element/slice."""

    DP002 = "DP002"
    """An integer table built from raw addresses (``torch.tensor``/``np.array``/... of ptrs)."""

    DP003 = "DP003"
    """Address arithmetic mixing a raw address with int64 numpy arrays or tensors."""

    DP004 = "DP004"
    """A two's-complement spelling (``x - 2**64 if x >= 2**63 else x`` or a named helper)."""

    DP005 = "DP005"
    """A per-platform pointer dtype branch (``torch.uint64 if is_xpu() else torch.int64``)."""

    DP006 = "DP006"
    """Raw addresses written into a uint64 numpy array or uint64 table without devptr."""

    @property
    def info(self) -> RuleInfo:
        return RULES[self]


@attrs.frozen
class RuleInfo:
    """What a rule catches, why it is wrong, and the devptr fix."""

    rule: Rule
    name: str
    summary: str
    why: str
    fix: str
    mypy_code: str
    in_mypy_plugin: bool = True
    """Whether ``devptr.mypy_plugin`` reports this rule (syntax-only rules are AST-only)."""


RULES: Final[dict[Rule, RuleInfo]] = {
    Rule.DP001: RuleInfo(
        rule=Rule.DP001,
        name="raw-address-store",
        summary="raw device address stored into an integer tensor or array",
        why=(
            "an address >= 2**63 (Intel XPU) fails in int64 containers with "
            "'ValueError: Overflow when unpacking long long' (torch) or 'OverflowError: Python "
            "int too large to convert to C long' (numpy); uint64 torch setitem fails on torch "
            "2.13 and accepts only the opposite sign on 2.14"
        ),
        fix="devptr.store(container, index, DevicePtr.of(t)) or a PtrBuffer",
        mypy_code="devptr-raw-store",
    ),
    Rule.DP002: RuleInfo(
        rule=Rule.DP002,
        name="raw-address-table",
        summary="integer table built from raw device addresses",
        why=(
            "torch.tensor([p], dtype=torch.int64) raises 'Overflow when unpacking long long' for "
            "p >= 2**63; np.array without dtype may silently become float64 and lose low bits"
        ),
        fix="devptr.ptr_tensor(tensors_or_ptrs, encoding=..., device=...)",
        mypy_code="devptr-raw-table",
    ),
    Rule.DP003: RuleInfo(
        rule=Rule.DP003,
        name="raw-address-arithmetic",
        summary="address arithmetic mixing a raw address with int64 arrays or tensors",
        why=(
            "numpy 2 promotes uint64 op int64 to float64 (low address bits lost) and int64 "
            "arrays overflow for addresses >= 2**63; results wrap silently"
        ),
        fix="devptr.addresses(base, index, stride, offset) (uint64, overflow-checked)",
        mypy_code="devptr-raw-arith",
    ),
    Rule.DP004: RuleInfo(
        rule=Rule.DP004,
        name="twos-complement-spelling",
        summary="hand-written two's-complement address conversion",
        why=(
            "the signed value is right only for int64 containers: torch 2.14 rejects it for "
            "uint64 tensors ('can't convert negative int to unsigned') and signed comparisons "
            "in kernels break silently"
        ),
        fix="DevicePtr(addr).signed / .encode(Encoding.I64), or devptr.store",
        mypy_code="devptr-twos-complement",
        in_mypy_plugin=False,
    ),
    Rule.DP005: RuleInfo(
        rule=Rule.DP005,
        name="per-platform-pointer-dtype",
        summary="per-platform pointer dtype branch",
        why=(
            "each module re-decides the encoding; the branch drifts between modules and torch "
            "versions and hides the consumer's real ABI"
        ),
        fix="devptr.encoding_for(device).torch_dtype (one registry, env override DEVPTR_ENCODING)",
        mypy_code="devptr-platform-dtype",
        in_mypy_plugin=False,
    ),
    Rule.DP006: RuleInfo(
        rule=Rule.DP006,
        name="unchecked-uint64-address",
        summary="raw device addresses written into a uint64 table without devptr",
        why=(
            "the bits survive in numpy uint64 arrays and torch.tensor(..., dtype=torch.uint64), "
            "but nothing checks the values: a two's-complement (negative) value raises "
            "'OverflowError: Python int too large to convert to C long' in numpy and is "
            "rejected by torch, np.uint64 scalars mixed with int64 silently become float64, and "
            "the same table filled through torch setitem fails on torch 2.13; each module "
            "re-implements the same fill"
        ),
        fix="PtrBuffer.fill / fill_strided, devptr.addresses(...), or devptr.ptr_tensor(...)",
        mypy_code="devptr-unchecked-u64",
    ),
}
