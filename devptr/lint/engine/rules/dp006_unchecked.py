"""DP006 unchecked-uint64-address: raw device addresses written into a bit-preserving table
without devptr (convention).

Detection: the stores and tables DP001/DP002 do not claim because the bits survive: a
uint64 numpy array, ``torch.tensor(..., dtype=torch.uint64)``, ``array('Q')``, ctypes
64-bit arrays, an address array copied into a table, and a store by index into a container
of unknown dtype named like an address table; host values are DP008's. Fix: the STORE and
TABLE fixes of DP001 and DP002 (built there, same safety; they change no bits here).
"""

from __future__ import annotations

import ast
from typing import ClassVar

from devptr.lint.engine import _syntax as syn
from devptr.lint.engine._fix import FixKind
from devptr.lint.engine._values import DType, Kind, Lib, Val, is_host
from devptr.lint.engine.rules._messages import BITS_KEPT, NUMPY_I64
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit
from devptr.lint.engine.rules.dp001_store import unknown_store
from devptr.lint.engine.rules.dp002_table import encoded_already


def store_message(
    cont: Val | None, value: Val, target: ast.Subscript | None, fill: bool
) -> str | None:
    """The DP006 message of a store of *value* into *cont*, host addresses or not."""
    if unknown_store(cont, value, target):
        return None
    if cont is None:
        assert target is not None
        name = syn.last_name(target.value)
        if syn.looks_like_table(target) or name is None or not syn.TABLE_NAME_RE.search(name):
            return None
        if value.kind is Kind.ADDR and (
            not isinstance(target.slice, ast.Constant) or isinstance(target.slice.value, int)
        ):
            return (
                "raw device address stored into a table of unknown dtype (named like an "
                "address table): a uint64 array keeps the bits unchecked; an int64 one "
                f"would raise for addresses >= 2**63 ({NUMPY_I64})"
            )
        return None
    if value.kind is Kind.ADDR_ARRAY:
        return None if value.dtype is DType.OTHER else f"address array copied into a table: {BITS_KEPT}"
    if cont.lib is Lib.CTYPES:
        return f"raw device address written into a ctypes array: {BITS_KEPT}"
    if cont.lib is Lib.PYARRAY:
        return None if cont.dtype is DType.I64 else f"raw device address stored into array('Q'): {BITS_KEPT}"
    if cont.lib is Lib.TORCH or cont.dtype is not DType.U64:
        return None
    if value.checked is DType.I64 or value.checked is DType.U64:
        return None  # a two's-complement value (DP001) or DevicePtr.addr
    return f"raw device address stored into a uint64 numpy array: {BITS_KEPT}"


def table_message(data: Val, dtype: DType | None, ctor: str) -> str | None:
    """The DP006 message of a table *ctor* over *data*, host addresses or not."""
    if encoded_already(data, dtype) or dtype is not DType.U64:
        return None
    if ctor == "array.array":
        return f"array('Q') built from raw device addresses: {BITS_KEPT}"
    if data.checked is DType.I64:
        return None  # two's-complement values into uint64: DP002
    short = ctor.replace("numpy.", "np.")
    if ctor.startswith("torch."):
        return f"{short}(..., dtype=torch.uint64) of raw device addresses: {BITS_KEPT}"
    return f"{short}(..., dtype=uint64) of raw device addresses: {BITS_KEPT}"


CTYPES_MESSAGE = f"ctypes 64-bit array built from raw device addresses: {BITS_KEPT}"


class UncheckedUint64Address(RuleUnit):
    """DP006."""

    rule: ClassVar[Rule] = Rule.DP006
    name: ClassVar[str] = "unchecked-uint64-address"
    category: ClassVar[Category] = "convention"
    summary: ClassVar[str] = "raw device addresses written into a bit-preserving table without devptr"
    why: ClassVar[str] = (
        "the bits survive (numpy uint64, torch.tensor(..., dtype=torch.uint64), "
        "array('Q'), ctypes c_uint64/c_int64 arrays), but nothing checks the values and "
        "each module re-implements the same fill"
    )
    fix: ClassVar[str] = "PtrBuffer.fill / fill_strided, devptr.addresses(...), or devptr.ptr_tensor(...)"
    mypy_code: ClassVar[str] = "devptr-unchecked-u64"
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.STORE, FixKind.TABLE)

    def store(
        self, cont: Val | None, value: Val, target: ast.Subscript | None, *, fill: bool
    ) -> str | None:
        return None if is_host(value) else store_message(cont, value, target, fill)

    def table(self, data: Val, dtype: DType | None, ctor: str) -> str | None:
        return None if is_host(data) else table_message(data, dtype, ctor)

    def ctypes_array(self, data: Val) -> str | None:
        return None if is_host(data) else CTYPES_MESSAGE


UNIT = UncheckedUint64Address()
