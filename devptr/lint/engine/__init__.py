"""The address-provenance engine behind ``devptr check``, ``devptr migrate`` and the
mypy plugin's catalogue.

Stdlib :mod:`ast` only (no torch, mypy or libcst). It follows device addresses from the
sources of :mod:`devptr.lint.catalogue` (``data_ptr()``, symmetric-memory peer lists,
allocator and IPC results, CuPy pointers, ``__cuda_array_interface__``...) through
assignments, containers, concatenation, ``append``/``extend`` loops, comprehensions,
tuples, and function and lambda summaries (also across the modules of a scanned tree) to
the table sinks, knowing which values are already encoded (``DevicePtr.signed``, a
two's-complement helper). Each :class:`Finding` has the rule, its category, the span of
the offending expression as written, and a :class:`Fix` when a mechanical rewrite exists.

Entry points: :func:`analyze_source` (one module), :func:`analyze_paths` (a tree, with a
:class:`ProjectIndex` built in a first pass) and :func:`iter_python_files` (the one file
walker, honouring ``[tool.devptr] exclude``).
"""

from devptr.lint.engine._files import (
    Problem,
    Source,
    Stamp,
    iter_python_files,
    read_source,
)
from devptr.lint.engine._finding import Finding
from devptr.lint.engine._fix import Fix, FixKind, Safety, Span
from devptr.lint.engine._project import ProjectIndex, module_name
from devptr.lint.engine._run import (
    FileResult,
    analyze_files,
    analyze_paths,
    analyze_source,
    may_have_findings,
)
from devptr.lint.engine._suppress import is_suppressed, suppressions
from devptr.lint.engine.rules import RULES, Category, Rule
from devptr.lint.errors import SourceError

__all__ = [
    "RULES",
    "Category",
    "FileResult",
    "Finding",
    "Fix",
    "FixKind",
    "Problem",
    "ProjectIndex",
    "Rule",
    "Safety",
    "Source",
    "SourceError",
    "Span",
    "Stamp",
    "analyze_files",
    "analyze_paths",
    "analyze_source",
    "is_suppressed",
    "iter_python_files",
    "may_have_findings",
    "module_name",
    "read_source",
    "suppressions",
]
