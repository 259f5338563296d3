"""Decisions at the sinks: which rule, if any, a store/table/arithmetic site violates.

Pure functions of abstract values. Every message says what happens on torch 2.13/2.14 and
numpy 2 for an address >= 2**63 (``tests/lint/test_messages.py`` executes each spelling).
"""

from __future__ import annotations

import ast

from devptr.lint.engine._syntax import TABLE_NAME_RE, last_name
from devptr.lint.engine._values import DType, Kind, Lib, Val
from devptr.lint.rules import Rule

Verdict = tuple[Rule, str] | None

TORCH_SETITEM_I64 = "torch raises 'ValueError: Overflow when unpacking long long'"
TORCH_SETITEM_U64 = (
    "torch 2.13 raises 'ValueError: Overflow when unpacking long long' (2.14 stores it)"
)
TORCH_NEG_U64 = "torch 2.14 raises 'OverflowError: can't convert negative int to unsigned'"
TORCH_FULL_I64 = "torch raises 'RuntimeError: value cannot be converted to type int64_t'"
NUMPY_I64 = "numpy raises 'OverflowError: Python int too large to convert to C long'"
NUMPY_NEG_U64 = "numpy raises 'OverflowError: Python integer ... out of bounds for uint64'"
NUMPY_FLOAT = "numpy builds float64 when an address >= 2**63 meets other values: low bits lost"
ARRAY_Q = "array('q') raises 'OverflowError: int too big to convert'"
BITS_KEPT = "the bits are kept, but nothing checks the values"


def carries_address(value: Val | None) -> bool:
    """Whether *value* is, or holds, raw addresses."""
    if value is None:
        return False
    if value.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY):
        return True
    if value.kind is Kind.TUPLE:
        return any(carries_address(v) for v in value.items)
    return False


def is_host(value: Val | None) -> bool:
    """Whether every address in *value* is a host address."""
    if value is None:
        return False
    if value.kind is Kind.TUPLE:
        found = [v for v in value.items if carries_address(v)]
        return bool(found) and all(is_host(v) for v in found)
    return value.host


def is_slice(target: ast.Subscript | None) -> bool:
    """Whether a subscript target is a slice (``t[a:b]``, ``t[i, :]``)."""
    if target is None:
        return False
    if isinstance(target.slice, ast.Slice):
        return True
    return isinstance(target.slice, ast.Tuple) and any(
        isinstance(e, ast.Slice) for e in target.slice.elts
    )


def looks_like_table(target: ast.Subscript) -> bool:
    """For containers of unknown type: a slice index and an address-table name."""
    if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return False  # a string key: a dict
    name = last_name(target.value)
    return is_slice(target) and name is not None and bool(TABLE_NAME_RE.search(name))


def _host(verdict: Verdict, value: Val) -> Verdict:
    if verdict is not None and is_host(value):
        return Rule.DP008, "host address (below 2**47) written into an integer table"
    return verdict


def store_verdict(
    cont: Val | None, value: Val | None, target: ast.Subscript | None, *, fill: bool = False
) -> Verdict:
    """Rule for ``cont[idx] = value`` (or ``cont.fill_(value)`` when *fill*)."""
    if not carries_address(value):
        return None
    assert value is not None
    return _host(_store(cont, value, target, fill), value)


def _store(cont: Val | None, value: Val, target: ast.Subscript | None, fill: bool) -> Verdict:
    if cont is not None and cont.kind not in (Kind.ARRAY, Kind.ADDR_ARRAY):
        return None  # dicts, lists, unknown objects
    if cont is None:
        if target is None or not looks_like_table(target) or value.by_name:
            return None
        if value.checked is not None or value.kind is Kind.ADDR_ARRAY:
            return None
        return Rule.DP001, (
            "raw device addresses stored by slice into a table of unknown dtype: if it is an "
            f"int64 tensor/array, {TORCH_SETITEM_I64} / {NUMPY_I64} for addresses >= 2**63"
        )
    if value.kind is Kind.ADDR_ARRAY:
        if value.dtype is DType.OTHER:
            return Rule.DP001, "address array of a non-64-bit dtype copied into a table"
        return Rule.DP006, f"address array copied into a table: {BITS_KEPT}"
    signed = value.checked is DType.I64
    dt = cont.dtype
    if cont.lib is Lib.CTYPES:
        return Rule.DP006, f"raw device address written into a ctypes array: {BITS_KEPT}"
    if cont.lib is Lib.PYARRAY:
        if dt is DType.I64:
            return Rule.DP001, f"raw device address stored into array('q'): {ARRAY_Q}"
        return Rule.DP006, f"raw device address stored into array('Q'): {BITS_KEPT}"
    if cont.lib is Lib.TORCH:
        if dt is DType.U64:
            if signed:
                return Rule.DP001, f"two's-complement value stored into a uint64 tensor: {TORCH_NEG_U64}"
            return Rule.DP001, (
                f"raw device address stored into a uint64 tensor by setitem: {TORCH_SETITEM_U64}"
            )
        if signed:
            return None  # the int64 encoding into an int64 tensor
        if fill:
            return Rule.DP001, f"raw device address passed to fill_ of an int64 tensor: {TORCH_FULL_I64}"
        if dt is DType.BRANCH:
            return Rule.DP001, (
                "raw device address stored into a per-platform-dtype tensor (int64 on "
                f"CUDA/ROCm): {TORCH_SETITEM_I64} for addresses >= 2**63"
            )
        if dt is DType.I64:
            return Rule.DP001, (
                f"raw device address stored into an int64 tensor: {TORCH_SETITEM_I64} for "
                "addresses >= 2**63"
            )
        return Rule.DP001, (
            "raw device address stored into a tensor of unknown dtype: "
            f"if int64, {TORCH_SETITEM_I64}; if uint64, {TORCH_SETITEM_U64}"
        )
    # numpy
    if dt is DType.U64:
        if signed:
            return Rule.DP001, f"two's-complement value stored into a uint64 array: {NUMPY_NEG_U64}"
        if value.checked is DType.U64:
            return None  # DevicePtr.addr into a uint64 array
        return Rule.DP006, f"raw device address stored into a uint64 numpy array: {BITS_KEPT}"
    if signed:
        return None
    if dt is DType.I64 or dt is DType.BRANCH:
        return Rule.DP001, (
            f"raw device address stored into an int64 numpy array: {NUMPY_I64} for addresses "
            ">= 2**63"
        )
    if dt is DType.OTHER:
        return Rule.DP001, "raw device address stored into a non-64-bit-integer array: bits lost"
    return None  # numpy array of unknown dtype: no claim


def table_verdict(data: Val | None, dtype: DType | None, ctor: str) -> Verdict:
    """Rule for a table constructor (``torch.tensor(data, dtype=...)``) over *data*.

    *ctor* is the catalogue name (``torch.tensor``, ``numpy.stack``, ``array.array``).
    """
    if data is None or data.kind not in (Kind.ADDR, Kind.ADDR_SEQ, Kind.TUPLE):
        return None
    if not carries_address(data):
        return None
    return _host(_table(data, dtype, ctor), data)


def _table(data: Val, dtype: DType | None, ctor: str) -> Verdict:
    short = ctor.replace("numpy.", "np.")
    signed = data.checked is DType.I64
    if data.checked is not None and data.checked is dtype:
        return None  # [p.addr ...] as uint64, [p.signed ...] as int64: encoded already
    if ctor == "array.array":
        if dtype is DType.I64:
            return Rule.DP002, f"array('q') built from raw device addresses: {ARRAY_Q}"
        if dtype is DType.U64:
            return Rule.DP006, f"array('Q') built from raw device addresses: {BITS_KEPT}"
        return None
    if ctor.startswith("torch."):
        if dtype is DType.U64:
            if signed:
                return Rule.DP002, f"{short}(..., dtype=torch.uint64) of two's-complement values: {TORCH_NEG_U64}"
            return Rule.DP006, f"{short}(..., dtype=torch.uint64) of raw device addresses: {BITS_KEPT}"
        if signed:
            return None
        fails = TORCH_FULL_I64 if ctor == "torch.full" else TORCH_SETITEM_I64
        spelled = {
            DType.I64: "int64", DType.BRANCH: "a per-platform dtype (int64 on CUDA/ROCm)",
            None: "no dtype (int64 inferred)", DType.OTHER: "a non-64-bit dtype",
        }[dtype]
        if dtype is DType.OTHER:
            return Rule.DP002, f"{short}() of raw device addresses with {spelled}: bits lost"
        return Rule.DP002, (
            f"{short}() of raw device addresses with {spelled}: {fails} for addresses >= 2**63"
        )
    # numpy
    if dtype is DType.U64:
        if signed:
            return Rule.DP002, f"{short}(..., dtype=uint64) of two's-complement values: {NUMPY_NEG_U64}"
        return Rule.DP006, f"{short}(..., dtype=uint64) of raw device addresses: {BITS_KEPT}"
    if signed:
        return None
    if dtype is DType.I64 or dtype is DType.BRANCH:
        return Rule.DP002, f"{short}(..., dtype=int64) of raw device addresses: {NUMPY_I64}"
    if dtype is DType.OTHER:
        return Rule.DP002, f"{short}() of raw device addresses with a non-64-bit dtype: bits lost"
    return Rule.DP002, f"{short}() of raw device addresses without a dtype: {NUMPY_FLOAT}"


def ctypes_verdict(data: Val | None) -> Verdict:
    """Rule for ``(c_uint64 * n)(*ptrs)`` / ``c_int64`` arrays: the bits survive."""
    if not carries_address(data):
        return None
    assert data is not None
    return _host((Rule.DP006, f"ctypes 64-bit array built from raw device addresses: {BITS_KEPT}"), data)


def arith_verdict(addr: Val, other: Val) -> Verdict:
    """Rule for ``addr op other`` where *addr* is a raw address and *other* an array."""
    if addr.host:
        return None
    if other.lib is Lib.TORCH:
        return Rule.DP007, (
            "raw address added to a torch tensor: an int64 tensor wraps an address >= 2**63 "
            "to its two's complement (the int64 encoding), unchecked"
        )
    if other.dtype is DType.U64 and not addr.np_scalar:
        return None
    if other.dtype is DType.U64:
        return None
    if other.dtype is DType.OTHER:
        return Rule.DP003, "raw address combined with a non-integer array: low bits lost"
    if addr.np_scalar:
        return Rule.DP003, (
            "np.uint64 address combined with a signed array: numpy promotes to float64 and "
            "loses the low address bits"
        )
    return Rule.DP003, (
        f"raw address combined with an int64 numpy array: {NUMPY_I64} for addresses >= 2**63"
    )
