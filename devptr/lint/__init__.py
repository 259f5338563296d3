"""Enforcement of the devptr convention: rule catalogue, AST checker, mypy plugin.

``devptr check`` is :func:`devptr.lint.checker.check_paths` behind a typer command
(:mod:`devptr.lint.command`); the mypy plugin is :mod:`devptr.lint.mypy_plugin`
(registered as ``devptr.mypy_plugin``). Importing this package imports neither mypy nor libcst.
"""

from devptr.lint._findings import Finding
from devptr.lint.checker import FileResult, check_file, check_paths, check_source
from devptr.lint.rules import RULES, Rule, RuleInfo

__all__ = [
    "RULES",
    "FileResult",
    "Finding",
    "Rule",
    "RuleInfo",
    "check_file",
    "check_paths",
    "check_source",
]
