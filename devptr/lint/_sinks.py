"""Decisions at the sinks: which rule, if any, a store/table/arithmetic site violates.

Pure functions of abstract values; the analyzer calls them with what it knows.
"""

from __future__ import annotations

import ast

from devptr.lint._patterns import TABLE_NAME_RE, last_name
from devptr.lint._values import DType, Kind, Lib, Val
from devptr.lint.rules import Rule

Verdict = tuple[Rule, str] | None


def _describe(cont: Val | None) -> str:
    if cont is None:
        return "an integer table of unknown dtype"
    dtype = {
        DType.U64: "uint64 ",
        DType.I64: "int64 ",
        DType.OTHER: "",
        DType.BRANCH: "per-platform dtype (int64 on CUDA/ROCm) ",
        None: "",
    }[cont.dtype]
    lib = {
        Lib.TORCH: "torch tensor", Lib.NUMPY: "numpy array", Lib.CTYPES: "ctypes array",
        None: "table",
    }[cont.lib]
    text = f"{dtype}{lib}"
    return f"an {text}" if text.startswith(("int", "a", "e", "o")) else f"a {text}"


def carries_address(value: Val | None) -> bool:
    """Whether *value* is, or holds, raw addresses."""
    if value is None:
        return False
    if value.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY):
        return True
    if value.kind is Kind.TUPLE:
        return any(carries_address(v) for v in value.items)
    return False


def _is_slice(target: ast.Subscript | None) -> bool:
    if target is None:
        return False
    if isinstance(target.slice, ast.Slice):
        return True
    return isinstance(target.slice, ast.Tuple) and any(
        isinstance(e, ast.Slice) for e in target.slice.elts
    )


def looks_like_table(target: ast.Subscript) -> bool:
    """For containers of unknown type: a slice index or an address-table name."""
    if _is_slice(target):
        return True
    if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return False  # a string key: a dict
    name = last_name(target.value)
    return name is not None and bool(TABLE_NAME_RE.search(name))


def store_verdict(cont: Val | None, value: Val | None, target: ast.Subscript | None) -> Verdict:
    """Rule for ``cont[idx] = value`` (or ``cont.fill_(value)`` when *target* is None)."""
    if not carries_address(value):
        return None
    assert value is not None
    if cont is not None and cont.kind in (Kind.MAPPING, Kind.PLAIN_LIST, Kind.ADDR_SEQ):
        return None
    if cont is not None and cont.kind not in (Kind.ARRAY, Kind.ADDR_ARRAY):
        return None
    if cont is None and (target is None or not looks_like_table(target)):
        return None
    if cont is None and value.checked is not None:
        return None  # a DevicePtr's encoded value into a container of unknown dtype
    if cont is None and value.by_name:
        return None  # two guesses (container and value both known only by name) are too weak
    if cont is None and value.kind is Kind.ADDR_SEQ and not _is_slice(target):
        return None  # a whole list stored under one key: a dict of lists, not a table row
    what = _describe(cont)
    if value.checked is not None and value.kind is not Kind.ADDR_ARRAY and cont is not None:
        if cont.dtype is value.checked and (cont.lib is Lib.NUMPY or value.checked is DType.I64):
            return None  # DevicePtr.addr into uint64 numpy, DevicePtr.signed into int64
    if value.kind is Kind.ADDR_ARRAY:
        if cont is not None and cont.dtype is DType.U64 and value.dtype is DType.U64:
            return Rule.DP006, f"address array computed by hand and written into {what}"
        if value.dtype is DType.U64 and (cont is None or cont.dtype is None):
            return Rule.DP006, f"uint64 address array computed by hand and written into {what}"
        return Rule.DP001, f"address array written into {what} (dtype mismatch wraps silently)"
    if cont is not None and cont.lib is Lib.CTYPES:
        return Rule.DP006, f"raw device address written into {what}: wraps silently, unchecked"
    if cont is not None and cont.lib is Lib.TORCH:
        return Rule.DP001, (
            f"raw device address stored into {what}: torch setitem rejects addresses >= 2**63 "
            "(int64 always, uint64 before torch 2.14)"
        )
    if cont is not None and cont.dtype is DType.U64:
        return Rule.DP006, f"raw device address stored into {what} without devptr"
    if cont is None or cont.dtype is None:
        return Rule.DP001, (
            f"raw device address stored into {what}: an int64 table overflows for addresses "
            ">= 2**63 and a uint64 tensor rejects them before torch 2.14"
        )
    return Rule.DP001, f"raw device address stored into {what}: addresses >= 2**63 overflow"


def table_verdict(data: Val | None, dtype: DType | None, ctor: str) -> Verdict:
    """Rule for a table constructor (``torch.tensor(data, dtype=...)``) over *data*."""
    if data is None or data.kind not in (Kind.ADDR, Kind.ADDR_SEQ, Kind.TUPLE):
        return None
    if not carries_address(data):
        return None
    if data.checked is not None and data.checked is dtype:
        return None  # [p.addr ...] as uint64, [p.signed ...] as int64: encoded by devptr
    if dtype is DType.U64:
        return Rule.DP006, f"{ctor}() builds a uint64 table from raw addresses without devptr"
    spelled = {
        DType.I64: "dtype int64",
        DType.OTHER: "a non-64-bit dtype",
        DType.BRANCH: "a per-platform dtype (int64 on CUDA/ROCm)",
        None: "no explicit uint64 dtype",
    }[dtype]
    return Rule.DP002, f"{ctor}() builds an integer table from raw addresses with {spelled}"


def arith_verdict(addr: Val, other: Val) -> Verdict:
    """Rule for ``addr op other`` where *addr* is a raw address and *other* an array."""
    if other.lib is Lib.TORCH:
        return Rule.DP003, (
            "raw address combined with a torch tensor: int64 overflows for addresses >= 2**63 "
            "and uint64 tensors have no arithmetic"
        )
    if other.dtype is DType.U64:
        return None
    if other.dtype is DType.OTHER:
        return Rule.DP003, "raw address combined with a non-uint64 array (precision or overflow)"
    if addr.np_scalar:
        return Rule.DP003, (
            "np.uint64 address combined with a signed array: numpy promotes to float64 "
            "and loses the low address bits"
        )
    return Rule.DP003, (
        "raw address combined with an int64 (or untyped) array: overflows for addresses >= 2**63"
    )
