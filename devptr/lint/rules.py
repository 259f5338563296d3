"""The rule catalogue shared by ``devptr check``, the mypy plugin and ``devptr migrate``.

One rule per way of getting a device address wrong (or, for convention rules, of handling
one correctly but outside devptr). Every rule has a :class:`Category`:

``defect``
    the code breaks for addresses >= 2**63 (Intel XPU sets bit 63) or behaves differently
    on torch 2.13 and 2.14. On by default.
``convention``
    the code is correct today (raw addresses in a uint64 table, a correct hand-written
    two's complement, int64 tensor arithmetic that wraps to the right bits) but bypasses
    devptr. Reported only when selected (``--select ALL`` or ``[tool.devptr] select``).
``host``
    the value is a host address (an mmap'd, pinned or ``cudaHostRegister``'d region, below
    2**47 on every platform), so the >= 2**63 failure cannot happen. Reported only when
    selected.

Each message says what really happens; ``tests/lint/test_messages.py`` executes the failing
spelling on the installed torch and numpy to keep the messages honest.
"""

from __future__ import annotations

import enum
from typing import Final, Literal

import attrs


class Rule(enum.Enum):
    """Rule identifiers. The value is the code users select and suppress (``DP001``)."""

    DP001 = "DP001"
    """A raw address stored into an int64 container, or into a torch uint64 tensor by
    setitem (fails on torch 2.13), or a two's-complement value into a uint64 one."""

    DP002 = "DP002"
    """A table built from raw addresses with a dtype that fails or loses bits."""

    DP003 = "DP003"
    """Address arithmetic with numpy arrays that overflows or promotes to float64."""

    DP004 = "DP004"
    """A hand-written two's-complement conversion of a device address (correct, convention)."""

    DP005 = "DP005"
    """A per-platform pointer dtype branch (``torch.uint64 if is_xpu() else torch.int64``)."""

    DP006 = "DP006"
    """Raw addresses written into a table that keeps the bits (uint64, ctypes) without devptr."""

    DP007 = "DP007"
    """A raw address combined with an int64 torch tensor: wraps to the int64 encoding."""

    DP008 = "DP008"
    """A host address (mmap'd, pinned, ``cudaHostRegister``'d) written into an integer table."""

    @property
    def info(self) -> RuleInfo:
        """This rule's :class:`RuleInfo`."""
        return RULES[self]


Category = Literal["defect", "convention", "host"]
"""Why a rule exists; only ``defect`` rules run by default."""

CATEGORIES: Final[tuple[Category, ...]] = ("defect", "convention", "host")


@attrs.frozen
class RuleInfo:
    """What a rule catches, what really happens, and the devptr fix."""

    rule: Rule
    name: str
    category: Category
    summary: str
    why: str
    fix: str
    mypy_code: str
    in_mypy_plugin: bool = True
    """Whether ``devptr.mypy_plugin`` reports this rule (syntax-only rules are engine-only)."""

    @property
    def default(self) -> bool:
        """Whether the rule runs without ``--select`` (defects only)."""
        return self.category == "defect"


RULES: Final[dict[Rule, RuleInfo]] = {
    Rule.DP001: RuleInfo(
        rule=Rule.DP001,
        name="raw-address-store",
        category="defect",
        summary="raw device address stored into a container that rejects it",
        why=(
            "an address >= 2**63 raises 'ValueError: Overflow when unpacking long long' in an "
            "int64 torch tensor (setitem), 'RuntimeError: value cannot be converted to type "
            "int64_t without overflow' (fill_), 'OverflowError: Python int too large to convert "
            "to C long' in an int64 numpy array; a uint64 torch tensor rejects it by setitem on "
            "torch 2.13 and rejects the two's-complement value on torch 2.14"
        ),
        fix="devptr.store(container, index, DevicePtr(addr)) or a PtrBuffer",
        mypy_code="devptr-raw-store",
    ),
    Rule.DP002: RuleInfo(
        rule=Rule.DP002,
        name="raw-address-table",
        category="defect",
        summary="integer table built from raw device addresses with a dtype that breaks",
        why=(
            "torch.tensor/as_tensor([p]) with int64 or no dtype raises 'ValueError: Overflow "
            "when unpacking long long' for p >= 2**63, numpy int64 and array('q') raise "
            "OverflowError, and numpy without a dtype (array, stack, column_stack, concatenate) "
            "silently builds float64 and loses the low address bits"
        ),
        fix="devptr.ptr_tensor(tensors_or_ptrs, encoding=..., device=...)",
        mypy_code="devptr-raw-table",
    ),
    Rule.DP003: RuleInfo(
        rule=Rule.DP003,
        name="raw-address-arithmetic",
        category="defect",
        summary="address arithmetic on numpy arrays that overflows or loses bits",
        why=(
            "an int64 numpy array plus an address >= 2**63 raises 'OverflowError: Python int "
            "too large to convert to C long'; a uint64 array combined with an int64 one "
            "silently promotes to float64 and loses the low address bits"
        ),
        fix="devptr.addresses(base, index, stride, offset) (uint64, overflow-checked)",
        mypy_code="devptr-raw-arith",
    ),
    Rule.DP004: RuleInfo(
        rule=Rule.DP004,
        name="twos-complement-spelling",
        category="convention",
        summary="hand-written two's-complement conversion of a device address",
        why=(
            "correct for int64 consumers, but each module re-implements it and the signed "
            "value is wrong for uint64 ones (torch 2.14 rejects it by setitem: 'can't convert "
            "negative int to unsigned')"
        ),
        fix="DevicePtr(addr).signed / .encode(Encoding.I64), or devptr.store",
        mypy_code="devptr-twos-complement",
        in_mypy_plugin=False,
    ),
    Rule.DP005: RuleInfo(
        rule=Rule.DP005,
        name="per-platform-pointer-dtype",
        category="convention",
        summary="per-platform pointer dtype branch",
        why=(
            "each module re-decides the encoding (uint64 on XPU, int64 elsewhere); correct "
            "where written, but the branches drift between modules"
        ),
        fix="devptr.encoding_for(device).torch_dtype (one registry, env override DEVPTR_ENCODING)",
        mypy_code="devptr-platform-dtype",
        in_mypy_plugin=False,
    ),
    Rule.DP006: RuleInfo(
        rule=Rule.DP006,
        name="unchecked-uint64-address",
        category="convention",
        summary="raw device addresses written into a bit-preserving table without devptr",
        why=(
            "the bits survive (numpy uint64, torch.tensor(..., dtype=torch.uint64), "
            "array('Q'), ctypes c_uint64/c_int64 arrays), but nothing checks the values and "
            "each module re-implements the same fill"
        ),
        fix="PtrBuffer.fill / fill_strided, devptr.addresses(...), or devptr.ptr_tensor(...)",
        mypy_code="devptr-unchecked-u64",
    ),
    Rule.DP007: RuleInfo(
        rule=Rule.DP007,
        name="wrapping-address-arithmetic",
        category="convention",
        summary="raw address combined with an int64 torch tensor",
        why=(
            "torch wraps an address >= 2**63 to its two's complement, which is the int64 "
            "encoding's bits: correct for int64 consumers, unchecked"
        ),
        fix="devptr.addresses(base, index, stride, offset) then store/ptr_tensor",
        mypy_code="devptr-wrapping-arith",
    ),
    Rule.DP008: RuleInfo(
        rule=Rule.DP008,
        name="host-address-table",
        category="host",
        summary="host address (mmap'd, pinned or registered host memory) in an integer table",
        why=(
            "host addresses are below 2**47 on every platform, so the >= 2**63 failures "
            "cannot happen; reported for audits only"
        ),
        fix="nothing required; devptr.store/ptr_tensor keep it uniform",
        mypy_code="devptr-host-address",
        in_mypy_plugin=False,
    ),
}


def rules_in(category: Category) -> frozenset[Rule]:
    """The rules of one category."""
    return frozenset(r for r, info in RULES.items() if info.category == category)


DEFAULT_RULES: Final[frozenset[Rule]] = rules_in("defect")
"""What runs without ``--select``: the defects."""
