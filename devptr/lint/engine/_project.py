"""Summaries of the functions of a scanned tree, so calls across modules are understood.

A :class:`ProjectIndex` maps fully qualified function names (``pkg.utils.make_ptr_table``)
to their :class:`~devptr.lint.engine._values.Summary`. :func:`devptr.lint.engine.analyze_paths`
builds it in a first pass; :func:`~devptr.lint.engine.analyze_source` accepts one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from devptr.lint.engine._values import Summary


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted module name of *path* (climbing while folders have ``__init__.py``) and
    whether it is a package ``__init__``."""
    path = path.resolve() if not path.is_absolute() else path
    is_package = path.name == "__init__.py"
    parts: list[str] = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    return ".".join(reversed(parts)), is_package


class ProjectIndex:
    """Function summaries of the modules of a scanned tree.

    Parameters
    ----------
    summaries
        Fully qualified function name -> summary. Only functions callers learn something
        from are kept.
    modules
        Dotted module name -> file, for modules the index may summarize on demand.
    """

    def __init__(self, summaries: Mapping[str, Summary] | None = None,
                 modules: Mapping[str, Path] | None = None) -> None:
        self._summaries: dict[str, Summary] = {
            k: v for k, v in (summaries or {}).items() if v.interesting
        }
        self.modules: dict[str, Path] = dict(modules or {})
        self._short: frozenset[str] | None = None

    def add(self, module: str, functions: Mapping[str, Summary]) -> None:
        """Record the summaries of *module*'s functions (``Class.method`` keys included)."""
        for name, summary in functions.items():
            if summary.interesting:
                self._summaries[f"{module}.{name}" if module else name] = summary
        self._short = None

    def lookup(self, qualname: str) -> Summary | None:
        """The summary of the function called *qualname*, if it is known and informative."""
        return self._summaries.get(qualname)

    def interesting_names(self) -> frozenset[str]:
        """Last names of the informative functions (for cheap text triggers)."""
        if self._short is None:
            self._short = frozenset(k.rpartition(".")[2] for k in self._summaries)
        return self._short

    def module_of(self, qualname: str) -> str | None:
        """The longest known module that *qualname* could be defined in."""
        parts = qualname.split(".")
        for n in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:n])
            if mod in self.modules:
                return mod
        return None

    def __len__(self) -> int:
        return len(self._summaries)

    def items(self) -> Iterable[tuple[str, Summary]]:
        """``(qualified name, summary)`` pairs."""
        return self._summaries.items()
