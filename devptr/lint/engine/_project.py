"""Summaries of the functions of a scanned tree, so calls across modules are understood.

A :class:`ProjectIndex` maps fully qualified function names (``pkg.utils.make_ptr_table``)
to their :class:`~devptr.lint.engine._values.Summary`. :func:`devptr.lint.engine.analyze_paths`
builds it in a first pass; :func:`~devptr.lint.engine.analyze_source` accepts one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from devptr.lint.engine._values import Summary, Val


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted module name of *path* (climbing while folders have ``__init__.py``) and
    whether it is a package ``__init__``."""
    return ModuleNamer()(path)


class ModuleNamer:
    """:func:`module_name` for many files: each folder's package prefix is looked up once.

    Holds what it saw of the file system, so use one per scan (a folder that gains an
    ``__init__.py`` later is not noticed).
    """

    def __init__(self) -> None:
        self._prefix: dict[Path, tuple[str, ...]] = {}
        self._real: dict[Path, Path] = {}

    def _package(self, folder: Path) -> tuple[str, ...]:
        known = self._prefix.get(folder)
        if known is None:
            if not (folder / "__init__.py").is_file():
                known = ()
            elif folder.parent == folder:
                known = (folder.name,)
            else:
                known = (*self._package(folder.parent), folder.name)
            self._prefix[folder] = known
        return known

    def __call__(self, path: Path) -> tuple[str, bool]:
        """``(dotted name, is a package __init__)`` of the module at *path*."""
        if path.is_absolute():
            folder = path.parent
        elif path.is_symlink():
            path = path.resolve()
            folder = path.parent
        else:  # resolve each folder once, not each file
            folder = self._real.get(path.parent) or self._real.setdefault(
                path.parent, path.parent.resolve()
            )
        is_package = path.name == "__init__.py"
        parts = self._package(folder)
        return ".".join(parts if is_package else (*parts, path.stem)), is_package


class ProjectIndex:
    """Function summaries of the modules of a scanned tree (those that say something about
    addresses: they return addresses, encode them, or store a parameter into a table).

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
            k: v for k, v in (summaries or {}).items() if v.exported
        }
        self.modules: dict[str, Path] = dict(modules or {})
        self._spellings: dict[str, frozenset[str]] | None = None
        self.properties: dict[str, dict[str, Val]] = {}
        """Dotted module name -> property name -> the addresses reading it gives (its
        classes' properties returning ``data_ptr()``), for the modules importing it."""

    def add_properties(self, module: str, properties: Mapping[str, Val]) -> None:
        """Record *module*'s properties that give addresses."""
        if properties:
            self.properties.setdefault(module, {}).update(properties)

    def property_names(self) -> frozenset[str]:
        """Every property name recorded, whichever module it is in."""
        return frozenset(a for props in self.properties.values() for a in props)

    def add(self, module: str, functions: Mapping[str, Summary]) -> None:
        """Record the summaries of *module*'s functions (``Class.method`` keys included)."""
        for name, summary in functions.items():
            if summary.exported and "." not in name:  # module functions (not methods)
                self._summaries[f"{module}.{name}" if module else name] = summary
        self._spellings = None

    def lookup(self, qualname: str) -> Summary | None:
        """The summary of the function called *qualname*, if it is known and informative."""
        return self._summaries.get(qualname)

    def source_spellings(self) -> dict[str, frozenset[str]]:
        """Functions returning addresses whatever their arguments, as what a module calling
        one must spell: its last name -> the last components of the modules defining it.

        A module of the tree that calls ``pkg.mod.f`` through its imports spells both
        ``f`` and ``mod`` (``from pkg.mod import f``, ``from pkg import mod``, ``import
        pkg.mod``, ``from .mod import f``); an empty component (a package ``__init__`` or a
        module outside the tree, reachable as ``from pkg import f`` or by a bare name)
        requires nothing more than ``f``.
        """
        if self._spellings is None:
            out: dict[str, set[str]] = {}
            for key, summary in self._summaries.items():
                if not summary.source:
                    continue
                mod, _, short = key.rpartition(".")
                where = self.modules.get(mod)
                word = "" if where is None or where.name == "__init__.py" else (
                    mod.rpartition(".")[2]
                )
                out.setdefault(short, set()).add(word)
            self._spellings = {k: frozenset(v) for k, v in out.items()}
        return self._spellings

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
