"""``devptr migrate``: libcst codemods that move existing code onto the devptr convention.

The fixes follow the findings of the address-provenance engine behind ``devptr check``
(:mod:`devptr.lint.engine`): safe fixes of the selected rules are applied, unsafe ones
only on request, and every finding left gets a ``# TODO[devptr]: DPxxx <why>`` comment
(see ``docs/migrate.md``). One codemod per mechanical fix (stores, tables, arithmetic,
two's complement, dtype branches). The codemods need libcst (the ``migrate`` extra); this
package imports it only when one of its names is first used, so the ``devptr`` command
line works without it.

>>> from devptr.migrate import migrate_source
>>> print(migrate_source("import torch\\nt = torch.tensor([x.data_ptr()])\\n").new, end="")
import torch
import devptr
<BLANKLINE>
t = devptr.ptr_tensor([x], encoding=devptr.Encoding.I64)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devptr.migrate._base import TODO_PREFIX, RuleCodemod
    from devptr.migrate._engine import CODEMODS, Outcome, migrate_file, migrate_source
    from devptr.migrate._runner import (
        Summary,
        collect_files,
        iter_outcomes,
        parse_rules,
        parse_select,
    )
    from devptr.migrate.dp001_store import StoreCodemod
    from devptr.migrate.dp002_table import TableCodemod
    from devptr.migrate.dp003_arith import ArithmeticCodemod
    from devptr.migrate.dp004_twos import TwosComplementCodemod
    from devptr.migrate.dp005_dtype import PlatformDtypeCodemod

_HOMES = {
    "TODO_PREFIX": "_base",
    "RuleCodemod": "_base",
    "CODEMODS": "_engine",
    "Outcome": "_engine",
    "migrate_file": "_engine",
    "migrate_source": "_engine",
    "Summary": "_runner",
    "collect_files": "_runner",
    "iter_outcomes": "_runner",
    "parse_rules": "_runner",
    "parse_select": "_runner",
    "StoreCodemod": "dp001_store",
    "TableCodemod": "dp002_table",
    "ArithmeticCodemod": "dp003_arith",
    "TwosComplementCodemod": "dp004_twos",
    "PlatformDtypeCodemod": "dp005_dtype",
}


def __getattr__(name: str) -> Any:
    """Import libcst-backed names on first use, so ``devptr.migrate.command`` stays light."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'devptr.migrate' has no attribute {name!r}")
    return getattr(importlib.import_module(f"devptr.migrate.{home}"), name)


__all__ = [
    "CODEMODS",
    "TODO_PREFIX",
    "ArithmeticCodemod",
    "Outcome",
    "PlatformDtypeCodemod",
    "RuleCodemod",
    "StoreCodemod",
    "Summary",
    "TableCodemod",
    "TwosComplementCodemod",
    "collect_files",
    "iter_outcomes",
    "migrate_file",
    "migrate_source",
    "parse_rules",
    "parse_select",
]
