"""``devptr migrate``: libcst codemods that move existing code onto the devptr convention.

One codemod per rule of :mod:`devptr.lint.rules` (DP001-DP005). Importing this package needs
libcst (the ``migrate`` extra); ``devptr`` itself does not.

>>> from devptr.migrate import migrate_source
>>> print(migrate_source("import torch\\nt = torch.tensor([x.data_ptr()])\\n").new, end="")
import torch
import devptr
<BLANKLINE>
t = devptr.ptr_tensor([x], encoding=devptr.Encoding.I64)
"""

from devptr.migrate._base import TODO_PREFIX, RuleCodemod
from devptr.migrate._engine import CODEMODS, Outcome, migrate_file, migrate_source
from devptr.migrate._runner import Summary, collect_files, iter_outcomes, parse_select
from devptr.migrate.dp001_store import StoreCodemod
from devptr.migrate.dp002_table import TableCodemod
from devptr.migrate.dp003_arith import ArithmeticCodemod
from devptr.migrate.dp004_twos import TwosComplementCodemod
from devptr.migrate.dp005_dtype import PlatformDtypeCodemod

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
    "parse_select",
]
