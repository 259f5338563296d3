"""The error lists of the README ("Errors") and docs/architecture.md ("The error taxonomy")
name every error class the package defines, each under its built-in family."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import devptr
from devptr import DevPtrError

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = (TypeError, ValueError, IndexError, OverflowError, TimeoutError, RuntimeError, ImportError)


def _errors() -> dict[str, type[DevPtrError]]:
    """Every DevPtrError subclass defined in devptr (its modules all imported)."""
    for info in pkgutil.walk_packages(devptr.__path__, "devptr."):
        importlib.import_module(info.name)
    found: dict[str, type[DevPtrError]] = {}
    todo = list(DevPtrError.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("devptr."):
            found[cls.__name__] = cls
    return found


def _family(cls: type) -> str:
    return next(f.__name__ for f in cls.__mro__ if f in FAMILIES)


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _rows(section: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]


def _names(cell: str) -> set[str]:
    """The class names in a cell: `Name` or `module.Name` in backticks, last component."""
    return {m.rsplit(".", 1)[-1] for m in re.findall(r"`([\w.]+)`", cell)}


ERRORS = _errors()


def test_the_package_defines_the_errors_we_expect_at_least() -> None:
    assert {"PtrTypeError", "MissingDependencyError", "AddrParamError", "StaleBufferError"} <= set(ERRORS)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_readme_lists_each_error_under_its_family(name: str) -> None:
    section = _section((ROOT / "README.md").read_text(), "### Errors")
    rows = [r for r in _rows(section) if len(r) >= 2 and name in _names(r[0])]
    assert rows, f"README's Errors section does not list {name}"
    family = _family(ERRORS[name])
    assert f"`{family}`" in rows[0][1], f"README lists {name} as {rows[0][1]}, it is a {family}"


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_architecture_lists_each_error_under_its_family(name: str) -> None:
    section = _section((ROOT / "docs" / "architecture.md").read_text(), "## The error taxonomy")
    rows = [r for r in _rows(section) if len(r) >= 2 and name in _names(r[1])]
    assert len(rows) == 1, f"docs/architecture.md's taxonomy lists {name} {len(rows)} times"
    family = _family(ERRORS[name])
    assert f"`{family}`" in rows[0][0], f"architecture lists {name} under {rows[0][0]}, it is a {family}"


def test_no_listed_error_is_unknown_to_the_package() -> None:
    section = _section((ROOT / "docs" / "architecture.md").read_text(), "## The error taxonomy")
    listed = set().union(*(_names(r[1]) for r in _rows(section)[1:]))
    assert listed - set(ERRORS) == set()


ERROR_MODULES = {
    "devptr._errors": "core (testing and interop included)",
    "devptr.kernels._errors": "kernels",
    "devptr.adapters._errors": "adapters",
    "devptr.lint.errors": "lint",
    "devptr.migrate.errors": "migrate",
}
"""The one errors module of each layer (docs/architecture.md, "Where the errors are
defined"). The vendorable module declares its own classes, replaced inside devptr by
devptr._errors' (tests/vendor/test_parity.py)."""


def test_each_layer_defines_its_errors_in_one_module() -> None:
    modules = {name: cls.__module__ for name, cls in ERRORS.items()}
    stray = {name: mod for name, mod in modules.items() if mod not in ERROR_MODULES}
    assert not stray, f"error classes outside their layer's errors module: {stray}"
    assert set(modules.values()) == set(ERROR_MODULES)
