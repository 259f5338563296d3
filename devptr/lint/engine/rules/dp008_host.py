"""DP008 host-address-table: a host address (mmap'd, pinned or registered host memory) in an
integer table (reported for audits only).

Detection: a store, table or ctypes array that DP001, DP002 or DP006 would report, where
every address in the value is a host address (host sources of the catalogue, pinned or
``device="cpu"`` tensors, classes that declare themselves host-only). It asks those
units' message functions, so it finds the same sites whichever rules are selected. Fix:
the STORE and TABLE fixes of DP001 and DP002 (built there).
"""

from __future__ import annotations

import ast
from typing import ClassVar, Final

from devptr.lint.engine._fix import FixKind
from devptr.lint.engine._values import DType, Val, is_host
from devptr.lint.engine.rules import dp001_store, dp002_table, dp006_unchecked
from devptr.lint.engine.rules._unit import Category, Rule, RuleUnit

MESSAGE: Final = "host address (below 2**47) written into an integer table"


class HostAddressTable(RuleUnit):
    """DP008."""

    rule: ClassVar[Rule] = Rule.DP008
    name: ClassVar[str] = "host-address-table"
    category: ClassVar[Category] = "host"
    summary: ClassVar[str] = "host address (mmap'd, pinned or registered host memory) in an integer table"
    why: ClassVar[str] = (
        "host addresses are below 2**47 on every platform, so the >= 2**63 failures "
        "cannot happen; reported for audits only"
    )
    fix: ClassVar[str] = "nothing required; devptr.store/ptr_tensor keep it uniform"
    mypy_code: ClassVar[str] = "devptr-host-address"
    in_mypy_plugin: ClassVar[bool] = False
    fix_kinds: ClassVar[tuple[FixKind, ...]] = (FixKind.STORE, FixKind.TABLE)

    def store(
        self, cont: Val | None, value: Val, target: ast.Subscript | None, *, fill: bool
    ) -> str | None:
        if not is_host(value):
            return None
        if dp001_store.store_message(cont, value, target, fill) is None and (
            dp006_unchecked.store_message(cont, value, target, fill) is None
        ):
            return None
        return MESSAGE

    def table(self, data: Val, dtype: DType | None, ctor: str) -> str | None:
        if not is_host(data):
            return None
        if dp002_table.table_message(data, dtype, ctor) is None and (
            dp006_unchecked.table_message(data, dtype, ctor) is None
        ):
            return None
        return MESSAGE

    def ctypes_array(self, data: Val) -> str | None:
        return MESSAGE if is_host(data) else None


UNIT = HostAddressTable()
