"""``devptr migrate``: libcst codemods that move existing code onto the devptr convention.

The fixes follow the findings of the address-provenance engine behind ``devptr check``
(:mod:`devptr.lint.engine`): safe fixes of the selected rules are applied, unsafe ones
only on request, and every finding left gets a ``# TODO[devptr]: DPxxx <why>`` comment
(see ``docs/migrate.md``). The codemod edits only at the spans of the engine's fixes; one
builder per fix kind (``dp001_store`` stores, ``dp002_table`` tables, ``dp004_twos`` two's
complement, ``dp005_dtype`` dtype branches), see ``BUILDERS``. The codemod needs libcst
(the ``migrate`` extra); this package imports it only when one of its names is first
used, so the ``devptr`` command
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
    from devptr.migrate._apply import BUILDERS
    from devptr.migrate._base import TODO_PREFIX
    from devptr.migrate._engine import Outcome, migrate_file, migrate_source
    from devptr.migrate._runner import (
        Summary,
        collect_files,
        iter_outcomes,
        parse_rules,
    )

_HOMES = {
    "TODO_PREFIX": "_base",
    "BUILDERS": "_apply",
    "Outcome": "_engine",
    "migrate_file": "_engine",
    "migrate_source": "_engine",
    "Summary": "_runner",
    "collect_files": "_runner",
    "iter_outcomes": "_runner",
    "parse_rules": "_runner",
}


def __getattr__(name: str) -> Any:
    """Import libcst-backed names on first use, so ``devptr.migrate.command`` stays light."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'devptr.migrate' has no attribute {name!r}")
    return getattr(importlib.import_module(f"devptr.migrate.{home}"), name)


__all__ = [
    "BUILDERS",
    "TODO_PREFIX",
    "Outcome",
    "Summary",
    "collect_files",
    "iter_outcomes",
    "migrate_file",
    "migrate_source",
    "parse_rules",
]
