"""Enforcement of the devptr convention: the address-provenance engine, its rule and name
catalogues, the ``devptr check`` command and the mypy plugin.

- :mod:`devptr.lint.engine`: the analysis (``analyze_source``, ``analyze_paths``,
  :class:`~devptr.lint.engine.Finding` with spans and a safe/unsafe
  :class:`~devptr.lint.engine.Fix`); ``devptr migrate`` rewrites from its findings.
- :mod:`devptr.lint.rules`: rules, categories (defect / convention / host), defaults.
- :mod:`devptr.lint.catalogue`: the one table of address sources, sinks and encoders.
- :mod:`devptr.lint.mypy_plugin` (registered as ``devptr.mypy_plugin``).

Importing this package imports neither torch, mypy nor libcst.
"""

from devptr.lint.engine import (
    FileResult,
    Finding,
    Fix,
    FixKind,
    ProjectIndex,
    Span,
    analyze_files,
    analyze_paths,
    analyze_source,
)
from devptr.lint.rules import DEFAULT_RULES, RULES, Category, Rule, RuleInfo

__all__ = [
    "DEFAULT_RULES",
    "RULES",
    "Category",
    "FileResult",
    "Finding",
    "Fix",
    "FixKind",
    "ProjectIndex",
    "Rule",
    "RuleInfo",
    "Span",
    "analyze_files",
    "analyze_paths",
    "analyze_source",
]
