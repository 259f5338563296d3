"""``[tool.devptr]`` configuration from ``pyproject.toml``.

Keys: ``select`` and ``ignore`` (lists of rule codes or prefixes such as ``"DP00"``),
``exclude`` (glob patterns matched against paths relative to the pyproject's folder, and
against every path component).
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from devptr._errors import DevPtrError
from devptr.lint.rules import Rule

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git", ".hg", ".venv", "venv", "__pycache__", "build", "dist", ".tox", ".mypy_cache",
    "node_modules",
)


class ConfigError(DevPtrError, ValueError):
    """An invalid ``[tool.devptr]`` table or command-line rule list."""


@attrs.frozen
class Config:
    """Which rules run and which paths are skipped.

    Parameters
    ----------
    select
        Codes or prefixes to enable (default: every rule).
    ignore
        Codes or prefixes to disable (applied after ``select``).
    exclude
        Glob patterns of paths to skip.
    root
        Folder that relative exclude patterns are matched against.
    """

    select: tuple[str, ...] = ("DP",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    root: Path = attrs.field(factory=Path.cwd)

    def rules(self) -> frozenset[Rule]:
        """The enabled rules."""

        def hit(rule: Rule, prefixes: Iterable[str]) -> bool:
            return any(rule.value.startswith(p.upper()) for p in prefixes)

        return frozenset(r for r in Rule if hit(r, self.select) and not hit(r, self.ignore))

    def is_excluded(self, path: Path) -> bool:
        """Whether *path* matches an exclude pattern (or a default one like ``.git``)."""
        try:
            rel = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        parts = set(path.parts)
        if parts.intersection(DEFAULT_EXCLUDE):
            return True
        for pattern in self.exclude:
            pat = pattern.rstrip("/")
            if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat + "/*"):
                return True
            if fnmatch.fnmatch(path.as_posix(), pat) or any(
                fnmatch.fnmatch(p, pat) for p in path.parts
            ):
                return True
        return False


def _codes(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.devptr] {key} must be a list of strings (got {value!r})")
    for code in value:
        if key != "exclude" and not any(r.value.startswith(code.upper()) for r in Rule):
            raise ConfigError(f"[tool.devptr] {key}: unknown rule code {code!r}")
    return tuple(value)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above *start*."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with path.open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)
    return data


def load_config(pyproject: Path | None) -> Config:
    """Read ``[tool.devptr]`` from *pyproject* (defaults when None or absent)."""
    if pyproject is None:
        return Config()
    table = _load_toml(pyproject).get("tool", {}).get("devptr", {})
    if not isinstance(table, dict):
        raise ConfigError("[tool.devptr] must be a table")
    unknown = set(table) - {"select", "ignore", "exclude"}
    if unknown:
        raise ConfigError(f"[tool.devptr] unknown keys: {sorted(unknown)}")
    return Config(
        select=_codes(table.get("select", ["DP"]), "select"),
        ignore=_codes(table.get("ignore", []), "ignore"),
        exclude=_codes(table.get("exclude", []), "exclude"),
        root=pyproject.parent,
    )


def with_overrides(
    config: Config,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    exclude: Sequence[str] | None,
) -> Config:
    """Apply command-line ``--select``/``--ignore`` (replace) and ``--exclude`` (extend)."""
    return attrs.evolve(
        config,
        select=_codes(list(select), "select") if select else config.select,
        ignore=(*config.ignore, *_codes(list(ignore), "ignore")) if ignore else config.ignore,
        exclude=(*config.exclude, *exclude) if exclude else config.exclude,
    )
