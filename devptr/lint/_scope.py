"""Scopes and value helpers shared by the statement walker and the expression evaluator."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from devptr.lint import _patterns as pat
from devptr.lint._sinks import carries_address
from devptr.lint._values import DType, Kind, Val

ADDR_BY_NAME: Final = Val(Kind.ADDR, by_name=True)
CHECKED_U64: Final = Val(Kind.ADDR, checked=DType.U64)
CHECKED_I64: Final = Val(Kind.ADDR, checked=DType.I64)
ADDR_SEQ_BY_NAME: Final = Val(Kind.ADDR_SEQ, by_name=True)


class Scope:
    """Names visible in one function body, plus the enclosing class (for ``self.x``)."""

    def __init__(self, env: dict[str, Val], cls: str | None) -> None:
        self.env = env
        self.cls = cls
        self.returns: list[Val | None] = []

    def child(self, cls: str | None = None) -> Scope:
        """A nested scope seeing a copy of this one's names."""
        return Scope(dict(self.env), cls if cls is not None else self.cls)


def seq_of(items: Iterable[Val | None]) -> Val | None:
    """The sequence value holding *items*: None without addresses; keeps a shared encoding
    (all from ``DevicePtr.addr``) and whether every address is only known by name."""
    found: list[Val] = []
    for v in items:
        if v is None:
            continue
        if v.kind is Kind.TUPLE:
            inner = seq_of(v.items)
            if inner is not None:
                found.append(inner)
        elif carries_address(v):
            found.append(v)
    if not found:
        return None
    checked = {v.checked for v in found}
    return Val(
        Kind.ADDR_SEQ,
        checked=checked.pop() if len(checked) == 1 else None,
        by_name=all(v.by_name for v in found),
    )


def holds_addr(v: Val | None) -> bool:
    return v is not None and (
        v.kind in (Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC) or (carries_address(v) and not v.by_name)
    )


def by_name(name: str) -> Val | None:
    """An otherwise unknown name that says it holds an address (``base_addr``, ``src_ptr``)."""
    if pat.ADDRESS_SCALAR_NAME_RE.search(name):
        return ADDR_BY_NAME
    if pat.ADDRESS_LIST_NAME_RE.search(name):
        return ADDR_SEQ_BY_NAME
    return None
